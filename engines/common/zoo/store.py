"""Building (training on first use) and loading zoo models, with a cross-process build lock."""
from __future__ import annotations

import fcntl
import importlib
import json
import logging
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from .catalog import config_hash, entry, external_source, resolve_config
from .configs import ZooConfig

ProgressFn = Callable[[float, str], None]
log = logging.getLogger("paperlab.zoo")


class ZooCacheError(RuntimeError):
    """A cached zoo model cannot be read, even after rebuilding it."""


class Progress:
    """Maps a sub-task's [0, 1] onto [start, stop] of a JobContext, a callable, or nothing; checks cancellation."""

    def __init__(self, target: Any = None, start: float = 0.0, stop: float = 1.0):
        self.target, self.start, self.stop = target, start, stop

    def __call__(self, fraction: float, message: str = "") -> None:
        f = self.start + (self.stop - self.start) * min(1.0, max(0.0, fraction))
        t = self.target
        if t is None:
            return
        if isinstance(t, Progress):
            t(f, message)
        elif hasattr(t, "progress"):
            t.progress(f, message)
            t.check_cancelled()
        else:
            t(f, message)

    def sub(self, a: float, b: float) -> "Progress":
        return Progress(self, a, b)

    def check_cancelled(self) -> None:
        t = self.target
        while isinstance(t, Progress):
            t = t.target
        if t is not None and hasattr(t, "check_cancelled"):
            t.check_cancelled()


def _as_progress(ctx: Any) -> Progress:
    return ctx if isinstance(ctx, Progress) else Progress(ctx)


@contextmanager
def _lock(path: Path, progress: Progress, name: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        waited = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    progress(0.0, f"waiting for another process that is building {name}")
                    waited = True
                progress.check_cancelled()
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(name: str, config: ZooConfig | dict | None = None, ctx: Any = None, force: bool = False) -> Path:
    """Train ``name`` with ``config`` unless it is cached; return its directory. ``ctx``: JobContext or callable."""
    from engines.common.settings import get_settings

    e = entry(name)
    cfg = resolve_config(name, config)
    h = config_hash(name, cfg)
    d = get_settings().zoo_dir / name / h
    progress = _as_progress(ctx)
    if (d / "zoo.json").exists() and not force:
        return d
    with _lock(d.parent / f"{h}.lock", progress, name):
        if (d / "zoo.json").exists() and not force:
            return d
        if not force and _install_release(name, h, d, progress):
            return d
        tmp = d.parent / f"{h}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            mod = importlib.import_module(f"engines.common.zoo.{e.module}")
            progress(0.0, f"training zoo model {name}")
            t0, c0 = time.perf_counter(), time.process_time()
            metrics = dict(mod.train(cfg, tmp, progress) or {})
            curve = metrics.pop("curve", None)  # the training / validation curve goes beside the metrics
            meta = {
                "name": name, "hash": h, "version": e.version, "config": cfg.model_dump(mode="json"),
                "train_seconds": round(time.perf_counter() - t0, 1), "metrics": metrics,
                # CPU seconds of all threads: on a shared machine wall time overstates the cost.
                "train_cpu_seconds": round(time.process_time() - c0, 1), "threads": _threads(),
                "built_at": time.strftime("%Y-%m-%d %H:%M:%S"), "code": _code_version(),
                **({"curve": curve} if curve else {}),
            }
            (tmp / "zoo.json").write_text(json.dumps(meta, indent=1))
            if d.exists():
                shutil.rmtree(d)
            os.replace(tmp, d)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        progress(1.0, f"zoo model {name} built")
    return d


def _install_release(name: str, h: str, d: Path, progress: Progress) -> bool:
    """The shipped weights of this exact configuration (``release/zoo/<name>/<hash>``), verified, no training."""
    from engines.common import release

    m = release.install("zoo", f"{name}/{h}", d, progress)
    if m is None:
        return False
    progress(1.0, f"zoo model {name} installed from release v{m['release']}")
    return True


def _threads() -> int | None:
    import sys

    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


def _code_version() -> str:
    from engines.common.release import code_version

    return code_version()


_SHARED: dict[tuple, Any] = {}


def _may_be_damage(e: BaseException) -> bool:
    """False for failures that say nothing about the files (the process is shutting down, out of memory):
    deleting a good model folder then would break every other process that shares the data directory."""
    if sys.is_finalizing() or isinstance(e, MemoryError):
        return False
    return not (isinstance(e, RuntimeError) and "shutdown" in str(e))


def _load_cached(name: str, cfg: ZooConfig, ctx: Any, mod: Any, device: str) -> Any:
    """Load the cached model; an unreadable cache (a corrupt or truncated file) is deleted and built again once
    (reinstalled from the release when it ships, retrained otherwise); a second failure is a clear error."""
    d = build(name, cfg, ctx)
    try:
        return mod.load(d, cfg, device)
    except Exception as e:  # a damaged file: safetensors header, truncated tensor, bad JSON, missing file …
        if not _may_be_damage(e):
            raise
        log.warning("zoo model %s: the cached files in %s cannot be read (%s: %s); rebuilding them", name, d,
                    type(e).__name__, str(e)[:200])
        first = e
    h = config_hash(name, cfg)
    with _lock(d.parent / f"{h}.lock", _as_progress(ctx), name):
        shutil.rmtree(d, ignore_errors=True)
    d = build(name, cfg, ctx)
    try:
        return mod.load(d, cfg, device)
    except Exception as e:
        raise ZooCacheError(f"the zoo model {name} cannot be read even after rebuilding it ({type(e).__name__}; "
                            f"first error: {type(first).__name__}); check the disk and the data directory") from e


def load(name: str, config: ZooConfig | dict | None = None, ctx: Any = None, device: str = "cpu", shared: bool = False) -> Any:
    """The zoo model ``name``: trained and cached on first use, then loaded from safetensors.

    With no ``config`` and a hub id / local path configured for the entry (``PAPERLAB_CLIP_MODEL``,
    ``PAPERLAB_DIFFUSION_MODEL``, ``PAPERLAB_ZOO_<NAME>``) the paper-scale model is loaded instead.
    ``shared=True`` returns one process-wide instance (callers must not modify it); otherwise every
    call returns a fresh object that the caller may change.
    """
    e = entry(name)
    mod = importlib.import_module(f"engines.common.zoo.{e.module}")
    src = external_source(name) if config is None else ""
    cfg = resolve_config(name, config)
    key = (name, src or config_hash(name, cfg), device)
    if shared and key in _SHARED:
        return _SHARED[key]
    if src:
        obj = mod.load_external(src, device)
    else:
        obj = _load_cached(name, cfg, ctx, mod, device)
    if shared:
        _SHARED[key] = obj
    return obj

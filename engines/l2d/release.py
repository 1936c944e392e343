"""The tiny models of L2D: frozen base GPT-2, its L2D path and the matched LoRA baseline.

They live in a cache directory ``<data_dir>/l2d/<key>/`` (``base.safetensors``, ``l2d.safetensors``,
``lora.safetensors``, ``l2d.json`` with the config, training records and validation curves, sha256 of
every file, and ``example.json``, the worked example the tab opens on). The key hashes the config and
``CODE_VERSION``. The default models ship in the project's model release as ``release/l2d/<key>/``
(``engines.common.release``): on a fresh clone ``load()`` installs them (sha256-verified), nothing trains.
Rebuild and publish (≈ 4 CPU-minutes on the shared 2-core machine):

    flock "$HOME/.paperlab-heavy.lock" python -m engines.l2d.release build

The test profile never reads the release: it trains micro models in seconds (its key differs).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from engines.common import release as shared_release
from engines.common.settings import get_settings

from . import models
from .flow import Adapter, FlowPath, freeze

CODE_VERSION = 2  # bump when the training code changes what gets built (2: LoRA stored as its adapter)
KIND = "l2d"
META = "l2d.json"
FILES = {"base": "base.safetensors", "l2d": "l2d.safetensors", "lora": "lora.safetensors"}
REBUILD = 'flock "$HOME/.paperlab-heavy.lock" python -m engines.l2d.release build'

_lock = threading.Lock()
_cache: dict[str, "Bundle"] = {}


class Bundle:
    """The frozen base, its L2D path and (optionally) the LoRA baseline, in eval mode."""

    def __init__(self, base, flow: FlowPath, lora, cfg: models.TinyConfig, manifest: dict, source: str):
        self.base, self.flow, self.lora, self.cfg, self.manifest, self.source = base, flow, lora, cfg, manifest, source
        self.adapter = Adapter(base)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def key_for(cfg: models.TinyConfig) -> str:
    blob = json.dumps({"config": cfg.to_dict(), "code": CODE_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_dir(cfg: models.TinyConfig) -> Path:
    return get_settings().data_dir / "l2d" / key_for(cfg)


def read_manifest(folder: Path) -> dict:
    p = folder / META
    return json.loads(p.read_text()) if p.exists() else {}


def _write_manifest(folder: Path, man: dict) -> None:
    (folder / META).write_text(json.dumps(man, indent=1))


def released_dir() -> Path | None:
    """``release/l2d/<key>`` of the default config, when the release holds it (no torch needed)."""
    d = shared_release.artifact_dir(KIND, key_for(models.TinyConfig()))
    return d if (d / "manifest.json").exists() else None


def _save(folder: Path, key: str, tensors: dict, man: dict, record: dict) -> None:
    path = folder / FILES[key]
    seen, out = set(), {}
    for k, v in tensors.items():  # tied weights (GPT-2's lm_head = wte) are stored once
        if v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        out[k] = v.detach().contiguous()
    save_file(out, str(path))
    man.setdefault("files", {})[FILES[key]] = {"sha256": sha256(path), "bytes": path.stat().st_size}
    man.setdefault("training", {})[key] = record
    _write_manifest(folder, man)


def build(folder: Path, stages=("base", "l2d", "lora"), cfg: models.TinyConfig | None = None,
          progress=None, cancelled=lambda: False) -> dict:
    """Train the requested stages (later stages load the earlier ones from ``folder``)."""
    cfg = cfg or models.TinyConfig()
    folder.mkdir(parents=True, exist_ok=True)
    man = read_manifest(folder)
    if "base" not in stages and man.get("config") and man["config"] != cfg.to_dict():
        raise ValueError("the release's config differs from the requested one: rebuild the base first")
    man["config"] = cfg.to_dict()
    man["torch"] = torch.__version__
    say = progress or (lambda f, m: print(m, flush=True))
    if "base" in stages:
        man = {"config": cfg.to_dict(), "torch": torch.__version__, "built": time.strftime("%Y-%m-%d")}
        base, rec = models.train_base(cfg, say, cancelled)
        _save(folder, "base", base.state_dict(), man, rec)
    base = _load_base(folder, cfg)
    flow = None
    if "l2d" in stages:
        before = {k: v.clone() for k, v in base.state_dict().items()}
        flow, rec = models.train_l2d(base, cfg, say, cancelled)
        rec["base_bit_identical"] = all(torch.equal(before[k], v) for k, v in base.state_dict().items())
        _save(folder, "l2d", flow.state_dict(), man, rec)
    if "lora" in stages:
        if flow is None:
            flow = _load_flow(folder, base, cfg)
        lm, rec = models.train_lora(base, cfg, flow.n_params(), say, cancelled)
        _save(folder, "lora", models.lora_state(lm), man, rec)
    return man


def _load_base(folder: Path, cfg: models.TinyConfig):
    base = models.make_base(cfg)
    base.load_state_dict(load_file(str(folder / FILES["base"])), strict=False)
    base.tie_weights()
    return freeze(base)


def _load_flow(folder: Path, base, cfg: models.TinyConfig) -> FlowPath:
    flow = FlowPath(Adapter(base), cfg.flow)
    flow.load_state_dict(load_file(str(folder / FILES["l2d"])))
    return flow.eval()


def _load_lora(folder: Path, base):
    """The LoRA baseline: the stored adapter (rank from the manifest) merged into a copy of the frozen base."""
    p = folder / FILES["lora"]
    rank = read_manifest(folder).get("training", {}).get("lora", {}).get("rank")
    if not p.exists() or rank is None:
        return None
    return models.merged_lora(base, int(rank), load_file(str(p)))


def verify(folder: Path) -> list[str]:
    """Files whose sha256 differs from the manifest's (empty = all good)."""
    man = read_manifest(folder)
    return [f for f, meta in man.get("files", {}).items()
            if not (folder / f).exists() or sha256(folder / f) != meta["sha256"]]


def micro_dir() -> Path:
    return cache_dir(models.MICRO)


def _complete(folder: Path, cfg: models.TinyConfig) -> bool:
    return (read_manifest(folder).get("config") == cfg.to_dict() and not verify(folder)
            and all((folder / f).exists() for f in FILES.values()))


def load(progress=None) -> Bundle:
    """The models for the current profile (cached per process): the release's, or micro models (test)."""
    profile = get_settings().profile
    with _lock:
        if profile in _cache:
            return _cache[profile]
        cfg = models.profile_config()
        folder = cache_dir(cfg)
        shared_release.ensure_installed(
            KIND, key_for(cfg), folder, lambda: _complete(folder, cfg),
            lambda: build(folder, cfg=cfg, progress=progress or (lambda f, m: None)), "L2D", REBUILD, progress)
        source = ("micro models (test profile)" if profile == "test"
                  else f"released tiny models (release/{KIND}/{key_for(cfg)})")
        man = read_manifest(folder)
        base = _load_base(folder, cfg)
        b = Bundle(base, _load_flow(folder, base, cfg), _load_lora(folder, base), cfg, man, source)
        b.folder = folder
        _cache[profile] = b
        return b


def write_example(folder: Path) -> Path:
    """The tab opens on this worked example (solved with these models; no torch at start-up)."""
    from .experiment import solve
    from .params import EXAMPLE

    res = solve({"problem": EXAMPLE})
    path = folder / "example.json"
    path.write_text(json.dumps(res))
    return path


def publish(folder: Path, cfg: models.TinyConfig) -> dict:
    """Ship ``folder`` as ``release/l2d/<key>`` (float32: the L2D path was trained on these exact base weights)."""
    man = read_manifest(folder)
    tr = man["training"]
    metrics = {"base_val_acc": tr["base"]["val_acc"], "l2d_val_acc_n8": tr["l2d"]["val_acc_n8"],
               "lora_val_acc": tr["lora"]["curve"][-1]["val_acc"]}
    record = {k: {f: v.get(f) for f in ("steps", "batch", "cpu_seconds", "wall_seconds", "threads", "params", "rank")
                  if f in v} for k, v in tr.items()}
    record.update(hardware=shared_release.hardware(), code=shared_release.code_version())
    return shared_release.publish(KIND, key_for(cfg), folder, config=cfg.to_dict(), record=record, metrics=metrics,
                                  half=False, files=[*FILES.values(), META, "example.json"],
                                  label="l2d: tiny GPT-2 + L2D path + LoRA baseline", rebuild=REBUILD)


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "build":
        print(__doc__)
        return 2
    stages = tuple(argv[1:]) or ("base", "l2d", "lora")
    torch.set_num_threads(1)  # OpenMP threads spin on the shared 2-core machine: one is faster
    t0 = time.time()
    cfg = models.TinyConfig()
    folder = cache_dir(cfg)
    if "base" in stages:
        shutil.rmtree(folder, ignore_errors=True)
    build(folder, stages=stages, cfg=cfg)
    _cache.clear()
    write_example(folder)
    m = publish(folder, cfg)
    old = shared_release.retire(KIND, m["key"])
    print(f"built {stages} in {time.time() - t0:.0f} s wall; published release/{KIND}/{m['key']}"
          + (f" (replaces {', '.join(old)})" if old else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

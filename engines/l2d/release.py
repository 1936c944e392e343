"""The shipped tiny models: frozen base GPT-2, its L2D path and the matched LoRA baseline.

``engines/l2d/release/`` holds ``base.safetensors``, ``l2d.safetensors``, ``lora.safetensors`` and
``manifest.json`` (config, training records with validation curves, sha256 of every file), so the tab
works on a fresh clone without training. Rebuild (≈ 10-15 CPU-minutes on 2 cores):

    flock "$HOME/.paperlab-heavy.lock" python -m engines.l2d.release build [base] [l2d] [lora]

The test profile never reads the release: it trains micro models in seconds (``load`` caches them
under the data directory).
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from engines.common.settings import get_settings

from . import models
from .flow import Adapter, FlowPath, freeze

RELEASE_DIR = Path(__file__).resolve().parent / "release"
MANIFEST = "manifest.json"
FILES = {"base": "base.safetensors", "l2d": "l2d.safetensors", "lora": "lora.safetensors"}

_lock = threading.Lock()
_cache: dict[str, "Bundle"] = {}


class Bundle:
    """The frozen base, its L2D path and (optionally) the LoRA baseline, in eval mode."""

    def __init__(self, base, flow: FlowPath, lora, cfg: models.TinyConfig, manifest: dict, source: str):
        self.base, self.flow, self.lora, self.cfg, self.manifest, self.source = base, flow, lora, cfg, manifest, source
        self.adapter = Adapter(base)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(folder: Path = RELEASE_DIR) -> dict:
    p = folder / MANIFEST
    return json.loads(p.read_text()) if p.exists() else {}


def _write_manifest(folder: Path, man: dict) -> None:
    (folder / MANIFEST).write_text(json.dumps(man, indent=1))


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


def build(folder: Path = RELEASE_DIR, stages=("base", "l2d", "lora"), cfg: models.TinyConfig | None = None,
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
        _save(folder, "lora", lm.state_dict(), man, rec)
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


def _load_lora(folder: Path, cfg: models.TinyConfig):
    p = folder / FILES["lora"]
    if not p.exists():
        return None
    lm = models.make_base(cfg)
    lm.load_state_dict(load_file(str(p)), strict=False)
    lm.tie_weights()
    return freeze(lm)


def verify(folder: Path = RELEASE_DIR) -> list[str]:
    """Files whose sha256 differs from the manifest's (empty = all good)."""
    man = read_manifest(folder)
    return [f for f, meta in man.get("files", {}).items()
            if not (folder / f).exists() or sha256(folder / f) != meta["sha256"]]


def micro_dir() -> Path:
    return get_settings().data_dir / "l2d" / "micro"


def load(progress=None) -> Bundle:
    """The models for the current profile (cached per process): the release, or micro models (test)."""
    profile = get_settings().profile
    with _lock:
        if profile in _cache:
            return _cache[profile]
        if profile == "test":
            import fcntl

            folder = micro_dir()
            cfg = models.MICRO
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / ".lock", "w") as lk:  # processes sharing the data dir build once
                fcntl.flock(lk, fcntl.LOCK_EX)
                complete = all((folder / f).exists() for f in FILES.values())
                if read_manifest(folder).get("config") != cfg.to_dict() or verify(folder) or not complete:
                    build(folder, cfg=cfg, progress=progress or (lambda f, m: None))
            source = "micro models (test profile)"
        else:
            folder = RELEASE_DIR
            man = read_manifest(folder)
            if not man.get("files"):
                raise FileNotFoundError(f"{folder} has no released models: python -m engines.l2d.release build")
            bad = verify(folder)
            if bad:
                raise RuntimeError(f"released L2D files do not match their sha256 in the manifest: {bad}")
            cfg = models.TinyConfig.from_dict(man["config"])
            source = f"released tiny models ({man.get('built', '?')})"
        man = read_manifest(folder)
        base = _load_base(folder, cfg)
        b = Bundle(base, _load_flow(folder, base, cfg), _load_lora(folder, cfg), cfg, man, source)
        _cache[profile] = b
        return b


def write_example(folder: Path = RELEASE_DIR) -> Path:
    """The tab opens on this worked example (solved with the released models, no torch at start-up)."""
    from .experiment import solve
    from .params import EXAMPLE

    res = solve({"problem": EXAMPLE})
    path = folder / "example.json"
    path.write_text(json.dumps(res))
    return path


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "build":
        print(__doc__)
        return 2
    stages = tuple(argv[1:]) or ("base", "l2d", "lora")
    torch.set_num_threads(1)  # OpenMP threads spin on the shared 2-core machine: one is faster
    t0 = time.time()
    build(stages=stages)
    write_example()
    print(f"built {stages} in {time.time() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

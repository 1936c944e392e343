"""The tiny DPSDP models: π_ref actor and critic (SFT), the DPSDP-trained pair, the naive-DPO actor and the
single-agent model, all from one run of the pipeline (``engines.dpsdp.pipeline.build``).

They live in ``<data_dir>/dpsdp/<key>/`` (one ``<role>.safetensors`` per model, ``dpsdp.json`` with the
config, training records and sha256 of every file, ``tree.json`` (one training problem's DP tree) and
``example.json``, the transcript the tab opens on). The key hashes the config and ``CODE_VERSION``. The
default models ship in the model release as ``release/dpsdp/<key>/``: on a fresh clone ``load()``
installs them (sha256-verified), nothing trains. Rebuild and publish (≈ 10 CPU-minutes on 2 cores):

    flock "$HOME/.paperlab-heavy.lock" python -m engines.dpsdp.release build

The test profile never reads the release: it trains micro models in seconds (its key differs).
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from pathlib import Path

from engines.common import release as shared_release
from engines.common.settings import get_settings

CODE_VERSION = 4  # bump when the pipeline changes what gets built
KIND = "dpsdp"
META = "dpsdp.json"
ROLES = ("base", "ref_actor", "ref_critic", "dpsdp_actor", "dpsdp_critic", "naive_actor", "single_ref", "single")
REBUILD = 'flock "$HOME/.paperlab-heavy.lock" python -m engines.dpsdp.release build'

_lock = threading.Lock()
_cache: dict[str, "Bundle"] = {}


def _cfg(profile: str | None = None):
    from .config import MICRO, TinyConfig

    return MICRO if (profile or get_settings().profile) == "test" else TinyConfig()


def key_for(cfg) -> str:
    blob = json.dumps({"config": cfg.to_dict(), "code": CODE_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_dir(cfg) -> Path:
    return get_settings().data_dir / KIND / key_for(cfg)


def read_manifest(folder: Path) -> dict:
    p = folder / META
    return json.loads(p.read_text()) if p.exists() else {}


def released_file(name: str) -> dict | None:
    """A JSON file of the released default models, read without torch (the tab at start-up)."""
    from .config import TinyConfig

    p = shared_release.artifact_dir(KIND, key_for(TinyConfig())) / name
    try:
        return json.loads(p.read_text()) if p.exists() else None
    except ValueError:
        return None


class Bundle:
    def __init__(self, models: dict, cfg, manifest: dict, source: str, folder: Path):
        self.models, self.cfg, self.manifest, self.source, self.folder = models, cfg, manifest, source, folder

    def pair(self, variant: str):
        """(actor, critic, critic_mode) of a variant of the tab."""
        roles = {"dpsdp": ("dpsdp_actor", "dpsdp_critic"), "reference": ("ref_actor", "ref_critic"),
                 "single_agent": ("single", "single"), "naive_dpo": ("naive_actor", "ref_critic"),
                 "oracle_critic": ("ref_actor", None)}[variant]
        # a pipeline built without some ablations lacks their roles: look up only the variant's own
        actor, critic = (self.models[r] if r else None for r in roles)
        return actor, critic, "model" if critic is not None else "oracle"


def save(folder: Path, cfg, models: dict, record: dict, preview: dict) -> dict:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for role in ROLES:
        path = folder / f"{role}.safetensors"
        # lm_head shares wte's storage (tied): store it once
        save_file({k: v.detach().contiguous() for k, v in models[role].state_dict().items() if k != "lm_head.weight"},
                  str(path))
        files[path.name] = {"sha256": shared_release.sha256(path), "bytes": path.stat().st_size}
    (folder / "tree.json").write_text(json.dumps(preview))
    man = {"config": cfg.to_dict(), "code": CODE_VERSION, "training": record, "files": files,
           "built": time.strftime("%Y-%m-%d")}
    (folder / META).write_text(json.dumps(man, indent=1))
    return man


def _complete(folder: Path, cfg) -> bool:
    man = read_manifest(folder)
    return (man.get("config") == cfg.to_dict() and all(
        (folder / f).exists() and shared_release.sha256(folder / f) == meta["sha256"] for f, meta in man.get("files", {}).items())
        and len(man.get("files", {})) == len(ROLES))


def load_models(folder: Path, cfg) -> dict:
    from safetensors.torch import load_file

    from .models import make_model

    out = {}
    for role in ROLES:
        m = make_model(cfg)
        m.load_state_dict(load_file(str(folder / f"{role}.safetensors")), strict=False)
        m.tie_weights()
        out[role] = m.eval()
    return out


def build(folder: Path, cfg, progress=None, cancelled=lambda: False) -> dict:
    from . import pipeline

    models, rec, prev = pipeline.build(cfg, progress or (lambda f, m: print(m, flush=True)), cancelled)
    return save(folder, cfg, models, rec, prev)


def load(progress=None) -> Bundle:
    """The models of the current profile (cached per process): the release's, or micro models (test)."""
    profile = get_settings().profile
    with _lock:
        if profile in _cache:
            return _cache[profile]
        cfg = _cfg(profile)
        folder = cache_dir(cfg)
        shared_release.ensure_installed(
            KIND, key_for(cfg), folder, lambda: _complete(folder, cfg),
            lambda: build(folder, cfg, progress=progress or (lambda f, m: None)), "DPSDP", REBUILD, progress)
        source = ("micro models (test profile)" if profile == "test"
                  else f"released tiny models (release/{KIND}/{key_for(cfg)})")
        b = Bundle(load_models(folder, cfg), cfg, read_manifest(folder), source, folder)
        _cache[profile] = b
        return b


def publish(folder: Path, cfg, metrics: dict) -> dict:
    man = read_manifest(folder)
    tr = man["training"]
    record = {k: {f: v.get(f) for f in ("steps", "batch", "pairs", "final_loss") if isinstance(v, dict) and f in v}
              for k, v in tr.items() if isinstance(v, dict)}
    record.update(wall_seconds=tr["wall_seconds"], cpu_seconds=tr["cpu_seconds"], threads=tr["threads"],
                  params=tr["params"], hardware=shared_release.hardware(), code=shared_release.code_version())
    return shared_release.publish(KIND, key_for(cfg), folder, config=cfg.to_dict(), record=record, metrics=metrics,
                                  half=False, files=[f"{r}.safetensors" for r in ROLES] + [META, "tree.json", "example.json"],
                                  label="dpsdp: tiny GPT-2 actor/critic (π_ref, DPSDP, naive-DPO, single agent)",
                                  rebuild=REBUILD)


def main(argv: list[str]) -> int:
    import shutil

    import torch

    if not argv or argv[0] != "build":
        print(__doc__)
        return 2
    torch.set_num_threads(2)
    t0 = time.time()
    cfg = _cfg("default")
    folder = cache_dir(cfg)
    shutil.rmtree(folder, ignore_errors=True)
    build(folder, cfg)
    _cache.clear()
    from .experiment import validation_metrics, write_example

    write_example(folder)
    m = publish(folder, cfg, validation_metrics(load_models(folder, cfg)))
    print(f"built in {time.time() - t0:.0f} s wall; published release/{KIND}/{m['key']}: {m['metrics']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

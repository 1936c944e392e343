"""The shipped tiny in-context learner: ``python -m engines.emloc.release build`` trains it (fixed seed) and
publishes ``release/emloc/<key>/`` (``icl.safetensors`` + ``icl.json``: configs, loss curve, validation
accuracy of the plain model at 8/64/256 shots). ``load()`` installs it into the data directory on first use
(sha256-verified) and never trains; the test profile trains the micro schedule instead (seconds, own key).
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

CODE_VERSION = 1
KIND = "emloc"
REBUILD = 'flock "$HOME/.paperlab-heavy.lock" python -m engines.emloc.release build'
_lock = threading.Lock()
_cache: dict = {}


def _cfgs(profile: str | None = None):
    from .model import MICRO, ModelConfig, TrainConfig

    return (MICRO if (profile or get_settings().profile) == "test" else TrainConfig()), ModelConfig()


def key_for(tcfg, mcfg) -> str:
    blob = json.dumps({"train": tcfg.to_dict(), "model": mcfg.to_dict(), "code": CODE_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _save(folder: Path, model, record: dict) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(folder / "icl.safetensors"))
    record = {**record, "sha256": shared_release.sha256(folder / "icl.safetensors"), "built": time.strftime("%Y-%m-%d")}
    (folder / "icl.json").write_text(json.dumps(record, indent=1))


def _complete(folder: Path) -> bool:
    try:
        rec = json.loads((folder / "icl.json").read_text())
        return shared_release.sha256(folder / "icl.safetensors") == rec["sha256"]
    except (OSError, ValueError, KeyError):
        return False


def _train_into(folder: Path, tcfg, mcfg, progress=None) -> dict:
    from . import model

    m, rec = model.train(tcfg, mcfg, progress)
    # the test profile's micro model is measured on a few short episodes (its full measurement took 20 s)
    return _measure_and_save(folder, m, rec, micro=tcfg == model.MICRO)


def _measure_and_save(folder: Path, m, rec: dict, micro: bool = False) -> dict:
    from . import model, task

    shots = (8, 32) if micro else (8, 64, 128, 256)
    rec["val_accuracy_full_context"] = {
        str(n): round(model.full_context_accuracy(m, task.episodes(5 if micro else 100 if n < 256 else 40, n, 5,
                                                                   "val")), 4)
        for n in shots}
    _save(folder, m, rec)
    return rec


def load(profile: str | None = None):
    """(model, record) of the default profile's released model (test profile: the micro model)."""
    import torch
    from safetensors.torch import load_file

    from .model import ModelConfig, TinyICL

    tcfg, mcfg = _cfgs(profile)
    key = key_for(tcfg, mcfg)
    with _lock:
        if key in _cache:
            return _cache[key]
        folder = get_settings().data_dir / KIND / key
        shared_release.ensure_installed(KIND, key, folder, lambda: _complete(folder),
                                        lambda: _train_into(folder, tcfg, mcfg), "EMLoC in-context learner", REBUILD)
        rec = json.loads((folder / "icl.json").read_text())
        m = TinyICL(ModelConfig(**rec["model"]))
        m.load_state_dict(load_file(str(folder / "icl.safetensors")))
        m.eval()
        for p in m.parameters():
            p.requires_grad_(False)
        torch.manual_seed(0)
        _cache[key] = (m, rec)
        return _cache[key]


def build() -> dict:
    import tempfile

    import torch

    tcfg, mcfg = _cfgs("default")
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        rec = _train_into(Path(tmp), tcfg, mcfg, lambda f, m: print(m, flush=True) if m.split("/")[0].endswith("01") else None)
        publish(Path(tmp), rec)
    return rec


def publish(folder: Path, rec: dict) -> None:
    """Ship the model saved in ``folder`` (``icl.safetensors`` + ``icl.json``) as the default profile's release."""
    tcfg, mcfg = _cfgs("default")
    metrics = {f"val_full_context_acc_{n}shot": v for n, v in rec["val_accuracy_full_context"].items()}
    shared_release.publish(KIND, key_for(tcfg, mcfg), folder, config={"train": tcfg.to_dict(), "model": mcfg.to_dict()},
                           record={k: v for k, v in rec.items() if k != "loss_curve"}, metrics=metrics, half=False,
                           label=f"EMLoC tiny multimodal in-context learner ({rec['params'] / 1e3:.0f}k)",
                           rebuild=REBUILD)
    print(json.dumps(metrics), flush=True)


def write_example() -> dict:
    """The tab's worked example (``engines/emloc/example.json``), computed with the released model."""
    from .experiment import build_memory

    res = build_memory({})
    (Path(__file__).resolve().parent / "example.json").write_text(json.dumps(res))
    return res


if __name__ == "__main__":
    if sys.argv[1:] not in (["build"], ["example"]):
        sys.exit("usage: python -m engines.emloc.release build|example")
    if sys.argv[1] == "build":
        build()
    write_example()

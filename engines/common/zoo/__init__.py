"""The shared model zoo: tiny CLIP, a tiny latent Stable-Diffusion pipeline and minicanvas judges.

``load(name, config=None, ctx=None, device="cpu", shared=False)`` returns a model, training and
caching it (safetensors under ``settings.zoo_dir``) on first use. See README.md in this folder.
Importing this package does not import torch.
"""
from .catalog import ENTRIES, config_hash, entry, is_built, model_dir, read_meta, resolve_config, status
from .configs import ClipConfig, JudgeConfig, T2IConfig, UNetConfig, VaeConfig
from .store import Progress, build, load

NAMES = list(ENTRIES)

__all__ = [
    "NAMES", "ENTRIES", "load", "build", "is_built", "status", "model_dir", "read_meta", "resolve_config",
    "config_hash", "entry", "Progress", "ClipConfig", "VaeConfig", "UNetConfig", "T2IConfig", "JudgeConfig",
]

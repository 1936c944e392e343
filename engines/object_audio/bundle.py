"""Loading the trained models (process-wide cache, so interactive clicks reuse them)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from . import train as T


@dataclass
class Base:
    clap: object
    ae: object
    cls: object
    meta: dict


@dataclass
class Bundle:
    base: Base
    attn: object
    unet: object
    ddim: object
    meta: dict  # attention_var, attention_mean, patches, ...

    @property
    def grid(self) -> int:
        return int(round(self.meta["patches"] ** 0.5))


def _load(module, path):
    from safetensors.torch import load_file

    module.load_state_dict(load_file(str(path)))
    return module.eval()


@lru_cache(maxsize=4)
def load_base(b: T.BaseConfig) -> Base:
    from .models import AudioClassifier, MelAutoencoder, TinyCLAP

    d = T.base_dir(b)
    meta = json.loads((d / "meta.json").read_text())
    clap = _load(TinyCLAP(width=meta["clap_width"], dim=64, audio_width=meta["clap_audio_width"]), d / "clap.safetensors")
    cls = _load(AudioClassifier(width=meta["cls_width"]), d / "classifier.safetensors")
    ae = _load(MelAutoencoder(width=b.ae_width), d / "autoencoder.safetensors")
    for m in (clap, cls, ae):
        m.requires_grad_(False)
    return Base(clap, ae, cls, meta)


@lru_cache(maxsize=4)
def load_bundle(b: T.BaseConfig, dc: T.DiffusionConfig) -> Bundle:
    from .models import ObjectAttention, make_schedulers, make_unet

    d = T.diffusion_dir(b, dc)
    meta = json.loads((d / "meta.json").read_text())
    attn = _load(ObjectAttention(text_dim=meta["text_dim"], vis_dim=meta["vis_dim"], d_k=dc.d_k,
                                 patches=meta["patches"], out_dim=64, kind=dc.attention,
                                 value_pe=dc.value_pe), d / "attention.safetensors")
    unet = _load(make_unet(dc.channels, cross_dim=64, latent_channels=meta["latent_channels"]), d / "unet.safetensors")
    attn.requires_grad_(False)
    unet.requires_grad_(False)
    _, ddim = make_schedulers()
    return Bundle(load_base(b), attn, unet, ddim, meta)


def is_trained(b: T.BaseConfig, dc: T.DiffusionConfig) -> bool:
    """Trained here or shipped in the model release (installed on first use)."""
    from engines.common import release

    return all((d / "meta.json").exists() or release.manifest("object_audio", d.name) is not None
               for d in (T.base_dir(b), T.pretrain_dir(b, dc), T.diffusion_dir(b, dc)))

"""FedAG's paper-scale path (spec §5), by configuration, through the code the tiny setting runs.

Three switches, each read from a ``PAPERLAB_FEDAG_*`` environment variable (``PaperScale.from_env``) or passed
as a ``PaperScale`` to ``federation.build_setup``; all paths are local and nothing is downloaded from a hub:

- ``PAPERLAB_FEDAG_CLIP_DIR``: a folder holding a ``transformers.CLIPModel`` and its tokenizer (e.g. a local copy
  of ``openai/clip-vit-base-patch32``), loaded with ``local_files_only=True``. The server's frozen image and text
  features then come from it (``FedagClip``: the zoo's CLIP wrapper, preprocessing from the folder's
  ``preprocessor_config.json`` when there is one). Empty: the zoo's tiny CLIP.
- ``PAPERLAB_FEDAG_CLIENT_MODEL``: ``cnn`` (the small CNN, default) or a timm model name, e.g.
  ``vit_tiny_patch16_224`` (spec: ``timm.create_model("vit_tiny_patch16_224", num_classes=C)``).
  ``PAPERLAB_FEDAG_CLIENT_CHECKPOINT``: a local weights file (``.safetensors`` / ``.pth`` / ``.bin``) for it
  (timm adapts the classifier to C classes); empty means random initialisation (``pretrained=False``).
  ``PAPERLAB_FEDAG_CLIENT_IMG_SIZE``: the ViT's input size (default: the model's own, 224); images are resized
  to it inside the client model. The penultimate features (timm's ``pre_logits``) feed the quality prototypes
  exactly as the CNN's do.
- ``PAPERLAB_FEDAG_SD_DIR``: a folder holding a diffusers ``StableDiffusionPipeline`` (e.g. a local copy of
  ``stabilityai/stable-diffusion-2-1-base``), loaded with ``local_files_only=True``; the server's synthetic data
  is then generated from the prompts "a {domain style} of a {class}" (``diffusion_prompt``) instead of the
  deformed public-pool digits. ``PAPERLAB_FEDAG_SD_STEPS`` / ``PAPERLAB_FEDAG_SD_GUIDANCE`` /
  ``PAPERLAB_FEDAG_SD_RESOLUTION`` set the sampler. Any ``StableDiffusionPipeline`` object works
  (``synthesise_diffusion``), the zoo's tiny text-to-image model included.

A missing or malformed path raises ``PaperScaleError`` naming the setting. ``paper_scale_smoke`` (acceptance
check 7) builds CLIP ViT-B/32, ViT-tiny and SD 2.1-base from their full configurations written as local json
(random weights) and runs one forward of each through this module's feature, client and generator code.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engines.common.zoo.clip import CLIP_MEAN, CLIP_STD, ZooClip
from engines.common.zoo.tensors import to_tensor01

from .params import SD_DIR_SETTING

SETTINGS = {
    "clip_dir": "PAPERLAB_FEDAG_CLIP_DIR",
    "client_model": "PAPERLAB_FEDAG_CLIENT_MODEL",
    "client_checkpoint": "PAPERLAB_FEDAG_CLIENT_CHECKPOINT",
    "client_img_size": "PAPERLAB_FEDAG_CLIENT_IMG_SIZE",
    "sd_dir": SD_DIR_SETTING,
    "sd_steps": "PAPERLAB_FEDAG_SD_STEPS",
    "sd_guidance": "PAPERLAB_FEDAG_SD_GUIDANCE",
    "sd_resolution": "PAPERLAB_FEDAG_SD_RESOLUTION",
}
#: the paper's models (spec §5), for the docs and the smoke check
PAPER_CLIP = "openai/clip-vit-base-patch32"
PAPER_CLIENT = "vit_tiny_patch16_224"
PAPER_SD = "stabilityai/stable-diffusion-2-1-base"

#: the "{domain style}" of the diffusion prompts, per domain
DOMAIN_STYLES = {"tint": "colour-tinted photo", "rotate": "rotated photo", "noise": "noisy photo",
                 "blur": "blurred photo", "invert": "colour-inverted photo"}


class PaperScaleError(ValueError):
    """A paper-scale setting is missing, points nowhere, or holds the wrong kind of model."""


@dataclass(frozen=True)
class PaperScale:
    """Which server CLIP, client model and synthetic-data generator a federation uses (defaults: the tiny ones)."""

    clip_dir: str = ""
    client_model: str = "cnn"
    client_checkpoint: str = ""
    client_img_size: int = 0  # 0: the timm model's own input size
    client_kwargs: dict = field(default_factory=dict)  # extra timm.create_model arguments (tests: depth, width)
    sd_dir: str = ""
    sd_steps: int = 25
    sd_guidance: float = 7.5
    sd_resolution: int = 0  # 0: the pipeline's own (512 for SD 2.1-base)
    device: str = "cpu"  # CLIP and the diffusion pipeline; clients train on the CPU

    @classmethod
    def from_env(cls, env: dict | None = None) -> "PaperScale":
        env = os.environ if env is None else env
        kw = {}
        for name, var in SETTINGS.items():
            raw = env.get(var, "").strip()
            if not raw:
                continue
            typ = {"client_img_size": int, "sd_steps": int, "sd_resolution": int, "sd_guidance": float}.get(name, str)
            try:
                kw[name] = typ(raw)
            except ValueError:
                raise PaperScaleError(f"{var}={raw!r} is not a valid {typ.__name__}") from None
        if kw.get("clip_dir") or kw.get("sd_dir"):
            from engines.common.settings import get_settings

            kw["device"] = get_settings().resolved_device()
        return cls(**kw)

    @property
    def is_tiny(self) -> bool:
        return not self.clip_dir and self.client_model == "cnn" and not self.sd_dir

    def describe(self) -> dict:
        return {"clip": self.clip_dir or "zoo tiny CLIP", "client": self.client_model
                + (f" ({self.client_checkpoint})" if self.client_checkpoint else ""),
                "synthetic": self.sd_dir or "deformed public-pool digits"}

    # ---- the three components -------------------------------------------------------------------------------------
    def load_clip(self, progress=None):
        """The server's frozen CLIP: the local folder's, else the zoo's tiny CLIP."""
        if not self.clip_dir:
            from engines.common import zoo

            return zoo.load("clip", ctx=progress, shared=True)
        return load_clip(self.clip_dir, self.device)

    def client_factory(self, n_classes: int) -> Callable[[], nn.Module]:
        """A zero-argument constructor of one client model (every client, student copy and FedAvg model)."""
        if self.client_model in ("", "cnn"):
            from .model import ClientNet

            return lambda: ClientNet(n_classes)
        ckpt = _local_file(self.client_checkpoint, "client_checkpoint") if self.client_checkpoint else None
        name, size, kw = self.client_model, self.client_img_size or None, dict(self.client_kwargs)
        make_timm_client(name, n_classes, ckpt, size, **kw)  # fail now, with the setting's name, not in round 1
        return lambda: make_timm_client(name, n_classes, ckpt, size, **kw)

    def load_pipeline(self):
        """The local StableDiffusionPipeline, or None (synthetic data from the deformed public-pool digits)."""
        return load_sd(self.sd_dir, self.device) if self.sd_dir else None


def _dir(path: str, setting: str, needs: tuple[str, ...]) -> Path:
    var = SETTINGS[setting]
    if not path:
        raise PaperScaleError(f"{var} is empty: set it to a local folder (nothing is downloaded)")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise PaperScaleError(f"{var}={path!r} is not a local folder (paths only; hub ids are not fetched)")
    missing = [n for n in needs if not (p / n).exists()]
    if missing:
        raise PaperScaleError(f"{var}={path!r} has no {', '.join(missing)}: expected a saved "
                              f"{'CLIPModel and tokenizer' if setting == 'clip_dir' else 'StableDiffusionPipeline'} "
                              "(save_pretrained layout)")
    return p


def _local_file(path: str, setting: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise PaperScaleError(f"{SETTINGS[setting]}={path!r} is not a local file (a .safetensors/.pth/.bin "
                              "checkpoint; nothing is downloaded)")
    return p


# ---- server: any transformers CLIPModel ------------------------------------------------------------------------------

@dataclass
class FedagClip(ZooClip):
    """The zoo's CLIP wrapper (``encode_images`` / ``encode_texts``) over any ``CLIPModel``, with the folder's own
    image normalisation (CLIP's mean/std when the folder has no preprocessor config)."""

    mean: tuple = CLIP_MEAN
    std: tuple = CLIP_STD

    def pixel_values(self, images) -> torch.Tensor:
        x = to_tensor01(images, self.device)
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bicubic", align_corners=False).clamp(0, 1)
        m = torch.tensor(self.mean, device=x.device, dtype=x.dtype)[None, :, None, None]
        s = torch.tensor(self.std, device=x.device, dtype=x.dtype)[None, :, None, None]
        return (x - m) / s

    @property
    def feature_dim(self) -> int:
        return int(self.model.config.projection_dim)


def clip_from_model(model, tokenizer, processor=None) -> FedagClip:
    from transformers import CLIPModel

    if not isinstance(model, CLIPModel):
        raise PaperScaleError(f"{SETTINGS['clip_dir']}: the folder holds a {type(model).__name__}, not a CLIPModel")
    ip = getattr(processor, "image_processor", processor)
    mean = tuple(getattr(ip, "image_mean", None) or CLIP_MEAN)
    std = tuple(getattr(ip, "image_std", None) or CLIP_STD)
    return FedagClip(model.eval().requires_grad_(False), tokenizer, mean, std)


def load_clip(path: str, device: str = "cpu") -> FedagClip:
    """``CLIPModel`` + tokenizer (+ image processor if saved) from a local folder, ``local_files_only=True``."""
    from transformers import AutoTokenizer, CLIPImageProcessor, CLIPModel

    d = _dir(path, "clip_dir", ("config.json",))
    cfg = json.loads((d / "config.json").read_text())
    if cfg.get("model_type") != "clip":
        raise PaperScaleError(f"{SETTINGS['clip_dir']}={path!r}: config.json is a {cfg.get('model_type')!r} model, "
                              "not a CLIPModel ('clip')")
    try:
        model = CLIPModel.from_pretrained(d, local_files_only=True)
        tok = AutoTokenizer.from_pretrained(d, local_files_only=True)
    except (OSError, ValueError) as e:
        raise PaperScaleError(f"{SETTINGS['clip_dir']}={path!r} cannot be loaded as a CLIPModel with its "
                              f"tokenizer: {str(e).splitlines()[0][:300]}") from e
    proc = CLIPImageProcessor.from_pretrained(d, local_files_only=True) if (d / "preprocessor_config.json").exists() else None
    return clip_from_model(model.to(device), tok, proc)


# ---- clients: a timm model beside the CNN ----------------------------------------------------------------------------

class TimmClient(nn.Module):
    """A timm classifier with the client interface of ``ClientNet``: ``forward`` gives logits, ``features`` the
    penultimate layer h(x) (timm's ``forward_head(..., pre_logits=True)``: the ViT's normed class token).

    Inputs are the clients' (N, 3, H, W) tensors normalised to [-1, 1] (``model.to_tensor``, which is ViT-tiny's
    own mean = std = 0.5 normalisation); they are resized to the model's input size here."""

    def __init__(self, net: nn.Module, img_size: int):
        super().__init__()
        self.net = net
        self.img_size = int(img_size)

    def _fit(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.img_size or x.shape[-2] != self.img_size:
            x = F.interpolate(x, size=(self.img_size, self.img_size), mode="bilinear", align_corners=False)
        return x

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.forward_head(self.net.forward_features(self._fit(x)), pre_logits=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self._fit(x))


def make_timm_client(name: str, n_classes: int, checkpoint: str | Path | None = None, img_size: int | None = None,
                     **kwargs) -> TimmClient:
    """``timm.create_model(name, pretrained=False, num_classes=C)``, or with weights from a local ``checkpoint``
    file (timm's own loader: the classifier is re-initialised for C classes, position embeddings resampled)."""
    import timm

    if not timm.is_model(name):
        raise PaperScaleError(f"{SETTINGS['client_model']}={name!r} is neither 'cnn' nor a timm model name "
                              f"(e.g. {PAPER_CLIENT!r})")
    if img_size:
        kwargs["img_size"] = int(img_size)
    if checkpoint is not None:
        ckpt = _local_file(str(checkpoint), "client_checkpoint")
        # file= and no hub id / url: timm reads the local file and never looks anywhere else
        overlay = dict(file=str(ckpt), source="", hf_hub_id="", url="")
        try:
            net = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=n_classes,
                                    **kwargs)
        except (RuntimeError, KeyError, OSError, ValueError) as e:
            raise PaperScaleError(f"{SETTINGS['client_checkpoint']}={str(checkpoint)!r} does not fit {name}: "
                                  f"{str(e).splitlines()[0][:300]}") from e
        # timm only warns about a checkpoint of another architecture: refuse one that leaves tensors unloaded
        from timm.models import load_state_dict

        have = set(load_state_dict(str(ckpt)))
        head = net.pretrained_cfg.get("classifier") or "head"
        heads = (head,) if isinstance(head, str) else tuple(head)
        missing = [k for k in net.state_dict() if k not in have and not k.startswith(tuple(h + "." for h in heads))]
        if missing:
            raise PaperScaleError(f"{SETTINGS['client_checkpoint']}={str(checkpoint)!r} does not fit {name}: "
                                  f"{len(missing)} of its tensors are not in the file (e.g. {missing[0]!r})")
    else:
        net = timm.create_model(name, pretrained=False, num_classes=n_classes, **kwargs)
    size = img_size or net.pretrained_cfg.get("input_size", (3, 224, 224))[-1]
    return TimmClient(net, size)


# ---- server synthetic data: a StableDiffusionPipeline ----------------------------------------------------------------

def load_sd(path: str, device: str = "cpu"):
    """``StableDiffusionPipeline.from_pretrained(path, local_files_only=True)``, no safety checker."""
    from diffusers import StableDiffusionPipeline

    from engines.common.zoo.t2i import _quiet

    d = _dir(path, "sd_dir", ("model_index.json", "unet", "vae", "text_encoder", "tokenizer", "scheduler"))
    _quiet()
    try:
        pipe = StableDiffusionPipeline.from_pretrained(d, local_files_only=True, safety_checker=None,
                                                       requires_safety_checker=False)
    except (OSError, ValueError, EnvironmentError) as e:
        raise PaperScaleError(f"{SETTINGS['sd_dir']}={path!r} cannot be loaded as a StableDiffusionPipeline: "
                              f"{str(e).splitlines()[0][:300]}") from e
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def diffusion_prompt(domain: str, k: int) -> str:
    """The paper's prompt "a {domain style} of a {class}" for class ``k`` (a digit) of ``domain``."""
    from engines.common.data.greyscale import DIGIT_NAMES

    return f"a {DOMAIN_STYLES[domain]} of a handwritten digit {DIGIT_NAMES[k]}"


@torch.no_grad()
def generate_images(pipe, prompts: list[str], seed: int, steps: int, guidance: float, resolution: int = 0,
                    batch: int = 8, cancelled: Callable[[], bool] = lambda: False) -> np.ndarray:
    """(N, H, W, 3) float images in [0, 1] from ``pipe`` (one generator per call; batches of ``batch`` prompts)."""
    from engines.common.context import JobCancelled

    g = torch.Generator(device="cpu").manual_seed(seed)
    size = {"height": resolution, "width": resolution} if resolution else {}
    out = []
    for i in range(0, len(prompts), batch):
        if cancelled():
            raise JobCancelled("synthetic-data generation cancelled")
        r = pipe(list(prompts[i:i + batch]), num_inference_steps=steps, guidance_scale=guidance, generator=g,
                 output_type="np", **size)
        out.append(np.clip(np.asarray(r.images, np.float32), 0, 1))
    return np.concatenate(out)


def synthesise_diffusion(pipe, domain: str, n: int, corruption: float, seed: int = 0, size: int = 32,
                         steps: int = 25, guidance: float = 7.5, resolution: int = 0,
                         cancelled: Callable[[], bool] = lambda: False):
    """The server's synthetic set of ``domain`` from a text-to-image pipeline: ``n`` prompted samples (balanced
    classes), resized to the clients' ``size``. As ``domains.synthesise`` does, a ``corruption`` share is
    deliberately wrong (drawn from another class's prompt, the prompted label kept), for quality scoring to find."""
    from .domains import SyntheticSet
    from .params import DOMAIN_LABELS

    rng = np.random.default_rng([seed, 5, list(DOMAIN_LABELS).index(domain)])
    y = np.arange(n) % 10
    rng.shuffle(y)
    bad = np.zeros(n, bool)
    bad[rng.choice(n, int(round(corruption * n)), replace=False)] = True
    drawn = np.where(bad, (y + rng.integers(1, 10, n)) % 10, y)
    imgs = generate_images(pipe, [diffusion_prompt(domain, int(k)) for k in drawn], seed * 131 + 17, steps, guidance,
                           resolution, cancelled=cancelled)
    x = torch.from_numpy(imgs).permute(0, 3, 1, 2)
    if x.shape[-1] != size or x.shape[-2] != size:
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    x = x.clamp(0, 1).permute(0, 2, 3, 1).numpy().astype(np.float32)
    return SyntheticSet(domain, x, y.astype(np.int64), bad)


# ---- acceptance check 7 ----------------------------------------------------------------------------------------------

def clip_vit_b32_config() -> dict:
    """``openai/clip-vit-base-patch32``'s architecture (written from the paper's model card, not downloaded)."""
    return {
        "model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 512, "logit_scale_init_value": 2.6592,
        "text_config": {"vocab_size": 49408, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12,
                        "num_attention_heads": 8, "max_position_embeddings": 77, "hidden_act": "quick_gelu",
                        "projection_dim": 512, "bos_token_id": 49406, "eos_token_id": 49407, "pad_token_id": 1},
        "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "image_size": 224, "patch_size": 32, "hidden_act": "quick_gelu",
                          "projection_dim": 512},
    }


def sd21_base_configs() -> dict[str, dict]:
    """``stabilityai/stable-diffusion-2-1-base``'s UNet, VAE, text encoder (OpenCLIP ViT-H text tower) and
    scheduler configurations (written from the model card, not downloaded)."""
    return {
        "unet": {"_class_name": "UNet2DConditionModel", "sample_size": 64, "in_channels": 4, "out_channels": 4,
                 "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                      "DownBlock2D"],
                 "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
                 "block_out_channels": [320, 640, 1280, 1280], "layers_per_block": 2, "attention_head_dim": [5, 10, 20, 20],
                 "cross_attention_dim": 1024, "use_linear_projection": True, "norm_num_groups": 32, "norm_eps": 1e-5,
                 "act_fn": "silu", "flip_sin_to_cos": True, "freq_shift": 0, "downsample_padding": 1,
                 "center_input_sample": False, "dual_cross_attention": False, "mid_block_scale_factor": 1},
        "vae": {"_class_name": "AutoencoderKL", "in_channels": 3, "out_channels": 3, "latent_channels": 4,
                "down_block_types": ["DownEncoderBlock2D"] * 4, "up_block_types": ["UpDecoderBlock2D"] * 4,
                "block_out_channels": [128, 256, 512, 512], "layers_per_block": 2, "norm_num_groups": 32,
                "act_fn": "silu", "sample_size": 512},
        "text_encoder": {"model_type": "clip_text_model", "architectures": ["CLIPTextModel"], "vocab_size": 49408,
                         "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 23,
                         "num_attention_heads": 16, "max_position_embeddings": 77, "hidden_act": "gelu",
                         "projection_dim": 512, "bos_token_id": 49406, "eos_token_id": 49407, "pad_token_id": 1},
        "scheduler": {"_class_name": "PNDMScheduler", "num_train_timesteps": 1000, "beta_start": 0.00085,
                      "beta_end": 0.012, "beta_schedule": "scaled_linear", "prediction_type": "epsilon",
                      "set_alpha_to_one": False, "skip_prk_steps": True, "steps_offset": 1},
    }


def _write_configs(root: Path) -> dict[str, Path]:
    paths = {"clip": root / "clip-vit-base-patch32"}
    paths["clip"].mkdir(parents=True, exist_ok=True)
    (paths["clip"] / "config.json").write_text(json.dumps(clip_vit_b32_config(), indent=1))
    for name, cfg in sd21_base_configs().items():
        p = root / "stable-diffusion-2-1-base" / name
        p.mkdir(parents=True, exist_ok=True)
        fn = "scheduler_config.json" if name == "scheduler" else "config.json"
        (p / fn).write_text(json.dumps(cfg, indent=1))
        paths[name] = p
    return paths


def paper_scale_smoke(root: str | Path, n_images: int = 2, sd_resolution: int = 64, log=print) -> dict:
    """Acceptance check 7: the paper's classes from their full configurations (local json, random weights, no
    download), each run once through FedAG's own code: ``FedagClip`` features of images and class prompts,
    a ``vit_tiny_patch16_224`` client's logits and prototype features (via ``algorithm.prototypes`` and
    ``score_synthetic``), and one ``synthesise_diffusion`` call through an SD 2.1-base pipeline (1 denoising step
    at ``sd_resolution`` px: every UNet/VAE/text-encoder block runs; the 512 px default only changes the latent
    grid). Returns what ran and its shapes; raises on any failure."""
    import time

    from diffusers import AutoencoderKL, PNDMScheduler, UNet2DConditionModel
    from transformers import CLIPConfig, CLIPModel, CLIPTextConfig, CLIPTextModel

    from engines.common.data.greyscale import digit_caption
    from engines.common.zoo.t2i import assemble
    from engines.common.zoo.tokenizer import clip_tokenizer

    from . import algorithm as alg

    paths = _write_configs(Path(root))
    rng = np.random.default_rng(0)
    x = rng.random((n_images, 32, 32, 3), dtype=np.float32)
    y = np.arange(n_images) % 10
    out: dict = {}
    t = time.perf_counter()
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig.from_pretrained(paths["clip"], local_files_only=True))
    clip = clip_from_model(model, clip_tokenizer(77))
    with torch.no_grad():
        z = clip.encode_images(x, normalize=False)
        txt = clip.encode_texts([digit_caption(k) for k in range(10)], normalize=False)
    proj = clip_vit_b32_config()["projection_dim"]
    assert z.shape == (n_images, proj) and txt.shape == (10, proj) and torch.isfinite(z).all()
    out["clip"] = {"params_M": round(sum(p.numel() for p in model.parameters()) / 1e6, 1), "image_features":
                   list(z.shape), "text_features": list(txt.shape), "s": round(time.perf_counter() - t, 1)}
    log(f"check 7: CLIP ViT-B/32 {out['clip']}")
    del model, clip

    t = time.perf_counter()
    scale = PaperScale(client_model=PAPER_CLIENT)
    net = scale.client_factory(10)()
    from .model import to_tensor

    with torch.no_grad():
        logits = net(to_tensor(x))
    protos = alg.prototypes(net, x, y, 10)
    q = alg.score_synthetic(net, protos, x, y)
    assert logits.shape == (n_images, 10) and protos.shape == (10, 192) and np.allclose(q, 1.0, atol=1e-4)
    out["client"] = {"params_M": round(sum(p.numel() for p in net.parameters()) / 1e6, 1), "img_size": net.img_size,
                     "logits": list(logits.shape), "prototypes": list(protos.shape), "s": round(time.perf_counter() - t, 1)}
    log(f"check 7: timm {PAPER_CLIENT} {out['client']}")
    del net

    t = time.perf_counter()
    unet = UNet2DConditionModel.from_config(UNet2DConditionModel.load_config(paths["unet"], local_files_only=True))
    vae = AutoencoderKL.from_config(AutoencoderKL.load_config(paths["vae"], local_files_only=True))
    te = CLIPTextModel(CLIPTextConfig.from_pretrained(paths["text_encoder"], local_files_only=True))
    sched = PNDMScheduler.from_config(PNDMScheduler.load_config(paths["scheduler"], local_files_only=True))
    pipe = assemble(vae.eval(), te.eval(), clip_tokenizer(77), unet.eval(), sched)
    n_params = sum(p.numel() for m in (unet, vae, te) for p in m.parameters())
    syn = synthesise_diffusion(pipe, "blur", n_images, 0.5, seed=0, size=32, steps=1, guidance=7.5,
                               resolution=sd_resolution)
    assert syn.x.shape == (n_images, 32, 32, 3) and np.isfinite(syn.x).all() and syn.corrupted.sum() == n_images // 2
    out["sd"] = {"params_M": round(n_params / 1e6, 1), "unet_cross_attention_dim": unet.config.cross_attention_dim,
                 "synthetic": list(syn.x.shape), "resolution": sd_resolution, "s": round(time.perf_counter() - t, 1)}
    log(f"check 7: SD 2.1-base {out['sd']}")
    return out

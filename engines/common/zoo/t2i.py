"""The tiny latent text-to-image model, assembled as a real diffusers ``StableDiffusionPipeline``.

Components as in Stable Diffusion v1: ``AutoencoderKL`` (here 32×32×3 ↔ 8×8×8), a
``UNet2DConditionModel`` whose cross-attention blocks attend to the CLIP text encoder's last hidden
states (so hook points such as ``up_blocks.1.attentions.1`` exist), a frozen ``CLIPTextModel`` (the
zoo's tiny CLIP text tower) with the real CLIP tokenizer, DDPM training with ε-prediction and
10% caption dropout, and a DDIM scheduler for sampling with classifier-free guidance. No safety checker.
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .configs import T2IConfig, UNetConfig
from .tensors import Curve, lr_at, set_lr

# Stable Diffusion v1's noise schedule.
SD_SCHEDULE = dict(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", prediction_type="epsilon")


def make_unet(u: UNetConfig, cross_attention_dim: int, sample_size: int = 8, latent_channels: int = 4):
    from diffusers import UNet2DConditionModel

    n = len(u.block_out_channels)
    return UNet2DConditionModel(
        sample_size=sample_size, in_channels=latent_channels, out_channels=latent_channels,
        down_block_types=("DownBlock2D",) + ("CrossAttnDownBlock2D",) * (n - 1),
        up_block_types=("CrossAttnUpBlock2D",) * (n - 1) + ("UpBlock2D",),
        block_out_channels=tuple(u.block_out_channels), layers_per_block=u.layers_per_block,
        cross_attention_dim=cross_attention_dim, attention_head_dim=u.attention_head_dim, norm_num_groups=u.norm_num_groups,
    )


def make_schedulers(train_timesteps: int = 1000):
    from diffusers import DDIMScheduler, DDPMScheduler

    ddpm = DDPMScheduler(num_train_timesteps=train_timesteps, clip_sample=False, **SD_SCHEDULE)
    ddim = DDIMScheduler(num_train_timesteps=train_timesteps, clip_sample=False, set_alpha_to_one=False, steps_offset=1, **SD_SCHEDULE)
    return ddpm, ddim


def text_encoder_from_clip(clip_model):
    """A ``CLIPTextModel`` holding the text tower of a ``CLIPModel`` (what Stable Diffusion calls text_encoder)."""
    from transformers import CLIPTextModel

    te = CLIPTextModel(clip_model.config.text_config)
    getattr(te, "text_model", te).load_state_dict(clip_model.text_model.state_dict())  # transformers 4 / 5 layouts
    return te.eval()


def assemble(vae, text_encoder, tokenizer, unet, scheduler):
    """A ``StableDiffusionPipeline`` from components (no safety checker, no feature extractor)."""
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
        safety_checker=None, feature_extractor=None, image_encoder=None, requires_safety_checker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


@torch.no_grad()
def generate(pipe, prompts: list[str], seed: int = 0, steps: int = 25, guidance_scale: float = 4.0, negative_prompt=None,
             cancelled=None) -> np.ndarray:
    """Images for ``prompts`` as uint8 NHWC (one torch.Generator seeded per call).

    ``cancelled`` (a job's ``ctx.cancelled``) is checked after every denoising step (``JobCancelled``):
    a batch of a few hundred images takes tens of seconds on a busy CPU."""
    dev = pipe.unet.device
    g = torch.Generator(device="cpu").manual_seed(seed)
    extra = {}
    if cancelled is not None:
        def _check(_pipe, _step, _t, kwargs):
            if cancelled():
                from engines.common.context import JobCancelled

                raise JobCancelled("image generation cancelled")
            return kwargs

        extra["callback_on_step_end"] = _check
    out = pipe(list(prompts), num_inference_steps=steps, guidance_scale=guidance_scale, generator=g,
               negative_prompt=negative_prompt, output_type="np", **extra)
    del dev
    return (np.clip(out.images, 0, 1) * 255 + 0.5).astype(np.uint8)


@torch.no_grad()
def _encode_latents(vae, images: np.ndarray, batch: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    from .vae import images_to_model

    means, stds = [], []
    for i in range(0, len(images), batch):
        d = vae.encode(images_to_model(images[i : i + batch])).latent_dist
        means.append(d.mean)
        stds.append(d.std)
    return torch.cat(means), torch.cat(stds)


def train(cfg: T2IConfig, out_dir: Path, progress) -> dict:
    from engines.common import data

    from . import store

    zc = store.load("clip", cfg.clip, ctx=progress.sub(0.0, 0.2))
    vae = store.load("vae", cfg.vae, ctx=progress.sub(0.2, 0.35))
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    progress(0.36, "encoding training images and captions")
    ds = data.minicanvas(cfg.n_images, seed=cfg.seed + 400, size=cfg.vae.image_size, held_out="exclude")
    mean, std = _encode_latents(vae, ds.images)
    sf = vae.config.scaling_factor
    captions = sorted(set(ds.captions))
    cap_id = {c: i + 1 for i, c in enumerate(captions)}  # 0 = the empty prompt (unconditional)
    with torch.no_grad():
        states = torch.cat([zc.text_states([""] + captions[i : i + 256]) if i == 0 else zc.text_states(captions[i : i + 256])
                            for i in range(0, len(captions), 256)])
    cid = torch.tensor([cap_id[c] for c in ds.captions])
    unet = make_unet(cfg.unet, zc.model.config.text_config.hidden_size, sample_size=mean.shape[-1], latent_channels=mean.shape[1])
    ema = copy.deepcopy(unet).eval().requires_grad_(False)
    ddpm, ddim = make_schedulers(cfg.train_timesteps)
    acp = ddpm.alphas_cumprod
    opt = torch.optim.AdamW(unet.parameters(), lr=cfg.lr, weight_decay=1e-2)
    unet.train()
    losses = []
    curve = Curve(cfg.steps, "held-out denoising loss (EMA weights; 256 images of never-trained prompt combinations)")
    val_loss = _val_loss_fn(cfg, zc, vae, acp)
    for step in range(cfg.steps):
        if curve.due(step):
            curve.add(step, losses, {"loss": val_loss(ema)})
        set_lr(opt, lr_at(step, cfg.steps, cfg.lr, warmup=min(200, cfg.steps // 10 + 1)))
        j = torch.randint(0, len(mean), (cfg.batch_size,), generator=gen)
        z0 = (mean[j] + std[j] * torch.randn(mean[j].shape, generator=gen)) * sf
        c = cid[j].clone()
        c[torch.rand(len(c), generator=gen) < cfg.cond_dropout] = 0
        t = torch.randint(0, cfg.train_timesteps, (len(j),), generator=gen)
        eps = torch.randn(z0.shape, generator=gen)
        a = acp[t].sqrt()[:, None, None, None]
        s = (1 - acp[t]).sqrt()[:, None, None, None]
        loss = F.mse_loss(unet(a * z0 + s * eps, t, states[c]).sample, eps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
        opt.step()
        decay = min(0.999, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), unet.parameters()):
                pe.lerp_(p, 1 - decay)
        losses.append(float(loss.detach()))
        if step % 20 == 0 or step == cfg.steps - 1:
            progress(0.4 + 0.55 * (step + 1) / cfg.steps, f"diffusion step {step + 1}/{cfg.steps}, loss {np.mean(losses[-50:]):.4f}")
    curve.add(cfg.steps, losses, {"loss": val_loss(ema)})
    pipe = assemble(vae, text_encoder_from_clip(zc.model), zc.tokenizer, ema, ddim)
    pipe.save_pretrained(out_dir, safe_serialization=True)
    return {
        "final_loss": float(np.mean(losses[-100:])), "unet_parameters": int(sum(p.numel() for p in unet.parameters())),
        "sample_steps": cfg.sample_steps, "guidance_scale": cfg.guidance_scale, "curve": curve.data,
    }


def _val_loss_fn(cfg: T2IConfig, zc, vae, acp):
    """ε-prediction MSE on held-out prompt combinations with fixed noise and timesteps (own generator:
    the training draws are untouched)."""
    from engines.common import data

    g = torch.Generator().manual_seed(cfg.seed + 10_500)
    n = min(256, cfg.n_images)
    ds = data.minicanvas(n, seed=cfg.seed + 10_400, size=cfg.vae.image_size, held_out="only")
    mean, _ = _encode_latents(vae, ds.images)
    with torch.no_grad():
        states = zc.text_states(list(ds.captions))
    z0 = mean * vae.config.scaling_factor
    t = torch.randint(0, cfg.train_timesteps, (n,), generator=g)
    eps = torch.randn(z0.shape, generator=g)
    x = acp[t].sqrt()[:, None, None, None] * z0 + (1 - acp[t]).sqrt()[:, None, None, None] * eps

    @torch.no_grad()
    def loss(model) -> float:
        return float(F.mse_loss(model(x, t, states).sample, eps))

    return loss


def _quiet() -> None:
    import diffusers
    import transformers

    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()


def load(d: Path, cfg: T2IConfig | None = None, device: str = "cpu"):
    from diffusers import StableDiffusionPipeline

    _quiet()
    pipe = StableDiffusionPipeline.from_pretrained(d, local_files_only=True, safety_checker=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def load_external(src: str, device: str = "cpu"):
    """A paper-scale pipeline: hub id (``CompVis/stable-diffusion-v1-4``) or a local diffusers directory."""
    from diffusers import StableDiffusionPipeline

    _quiet()
    pipe = StableDiffusionPipeline.from_pretrained(src, safety_checker=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)

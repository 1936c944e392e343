"""The autoencoder of the tiny latent diffusion model: diffusers ``AutoencoderKL``, 32×32×3 ↔ 8×8×8.

Trained here on minicanvas with an L1 reconstruction loss and a tiny KL term (as Stable Diffusion's
KL-f8 autoencoder, minus the perceptual and GAN terms). ``scaling_factor`` is set so the scaled
latents have unit standard deviation (Stable Diffusion uses 0.18215 for the same purpose).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .configs import VaeConfig
from .tensors import Curve, lr_at, set_lr


def make_vae(cfg: VaeConfig):
    from diffusers import AutoencoderKL

    n = len(cfg.block_out_channels)
    return AutoencoderKL(
        in_channels=3, out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * n, up_block_types=("UpDecoderBlock2D",) * n,
        block_out_channels=tuple(cfg.block_out_channels), layers_per_block=cfg.layers_per_block,
        latent_channels=cfg.latent_channels, norm_num_groups=cfg.norm_num_groups, sample_size=cfg.image_size,
    )


def images_to_model(images_uint8: np.ndarray | torch.Tensor) -> torch.Tensor:
    """uint8 NHWC → float NCHW in [-1, 1] (Stable Diffusion's pixel convention)."""
    t = torch.as_tensor(np.array(images_uint8))
    return t.permute(0, 3, 1, 2).float() / 127.5 - 1.0


@torch.no_grad()
def reconstruct(vae, images_uint8: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Encode (posterior mean) and decode; uint8 NHWC in, uint8 NHWC out."""
    out = []
    dev = next(vae.parameters()).device
    for i in range(0, len(images_uint8), batch_size):
        x = images_to_model(images_uint8[i : i + batch_size]).to(dev)
        y = vae.decode(vae.encode(x).latent_dist.mode()).sample
        out.append(((y.clamp(-1, 1) + 1) * 127.5 + 0.5).byte().permute(0, 2, 3, 1).cpu().numpy())
    return np.concatenate(out)


def train(cfg: VaeConfig, out_dir: Path, progress) -> dict:
    from engines.common import data

    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    vae = make_vae(cfg)
    imgs = torch.from_numpy(np.array(data.minicanvas(cfg.n_images, seed=cfg.seed + 200, size=cfg.image_size).images))
    opt = torch.optim.AdamW(vae.parameters(), lr=cfg.lr, weight_decay=0.0)
    vae.train()
    losses = []
    val = images_to_model(data.minicanvas(128, seed=cfg.seed + 10_500, size=cfg.image_size).images)
    curve = Curve(cfg.steps, "held-out L1 (128 images, posterior mean)")

    def val_l1() -> dict[str, float]:
        vae.eval()
        with torch.no_grad():
            out = {"l1": float(F.l1_loss(vae.decode(vae.encode(val).latent_dist.mode()).sample, val))}
        vae.train()
        return out

    for step in range(cfg.steps):
        if curve.due(step):
            curve.add(step, losses, val_l1())
        set_lr(opt, lr_at(step, cfg.steps, cfg.lr, warmup=min(100, cfg.steps // 10 + 1)))
        x = images_to_model(imgs[torch.randint(0, len(imgs), (cfg.batch_size,), generator=gen)])
        post = vae.encode(x).latent_dist
        y = vae.decode(post.sample(generator=gen)).sample
        rec = F.l1_loss(y, x)
        kl = post.kl().mean() / x[0].numel()
        loss = rec + cfg.kl_weight * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(rec.detach()))
        if step % 20 == 0 or step == cfg.steps - 1:
            progress(0.95 * (step + 1) / cfg.steps, f"autoencoder step {step + 1}/{cfg.steps}, L1 {np.mean(losses[-20:]):.4f}")
    curve.add(cfg.steps, losses, val_l1())
    vae.eval()
    with torch.no_grad():
        test = data.minicanvas(256, seed=cfg.seed + 10_200, size=cfg.image_size).images
        z = torch.cat([vae.encode(images_to_model(test[i : i + 128])).latent_dist.mode() for i in range(0, len(test), 128)])
        std = float(z.std())
        rec = reconstruct(vae, test)
        mae = float(np.abs(rec.astype(float) - test.astype(float)).mean() / 255)
    vae.register_to_config(scaling_factor=1.0 / max(std, 1e-6))
    vae.save_pretrained(out_dir)  # config.json + diffusion_pytorch_model.safetensors
    return {"test_mae": mae, "latent_std": std, "final_l1": float(np.mean(losses[-50:])), "curve": curve.data}


def load(d: Path, cfg: VaeConfig | None = None, device: str = "cpu"):
    from diffusers import AutoencoderKL

    return AutoencoderKL.from_pretrained(d, local_files_only=True).to(device).eval()


def load_external(src: str, device: str = "cpu"):
    from diffusers import AutoencoderKL

    return AutoencoderKL.from_pretrained(src, subfolder="vae").to(device).eval()

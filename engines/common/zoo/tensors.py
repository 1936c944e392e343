"""Small shared helpers: image arrays ↔ tensors, augmentation, the learning-rate schedule."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def to_tensor01(images, device: str | torch.device = "cpu") -> torch.Tensor:
    """uint8 / float [0,1] arrays (N, H, W, 3), PIL images, or a tensor (N, 3, H, W) in [0,1] → float NCHW [0,1]."""
    if isinstance(images, torch.Tensor):
        t = images.float()
        if t.ndim == 3:
            t = t[None]
        if t.shape[1] != 3 and t.shape[-1] == 3:
            t = t.permute(0, 3, 1, 2)
        return t.to(device)
    if isinstance(images, (list, tuple)) and images and not isinstance(images[0], np.ndarray):
        images = np.stack([np.asarray(im.convert("RGB")) for im in images])
    a = np.asarray(images)
    if a.ndim == 3:
        a = a[None]
    if a.dtype == np.uint8:
        a = a.astype(np.float32) / 255.0
    return torch.from_numpy(np.array(a, dtype=np.float32)).permute(0, 3, 1, 2).to(device)


def random_translate(x: torch.Tensor, max_shift: int, gen: torch.Generator) -> torch.Tensor:
    """Shift each image by up to ``max_shift`` pixels (edge-replicated), independently per image."""
    if max_shift <= 0:
        return x
    n, _, h, w = x.shape
    pad = F.pad(x, (max_shift,) * 4, mode="replicate")
    dx = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen)
    dy = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen)
    rows = (dy[:, None] + torch.arange(h)[None]).long()
    cols = (dx[:, None] + torch.arange(w)[None]).long()
    idx_n = torch.arange(n)[:, None, None]
    return pad.permute(0, 2, 3, 1)[idx_n, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous()


def random_blur(x: torch.Tensor, max_sigma: float, gen: torch.Generator) -> torch.Tensor:
    """Gaussian blur with a random sigma in [0, max_sigma] per image (3×3 kernel)."""
    if max_sigma <= 0:
        return x
    n = x.shape[0]
    sig = torch.rand(n, generator=gen) * max_sigma + 1e-3
    k1 = torch.exp(-torch.tensor([1.0, 0.0, 1.0])[None] / (2 * sig[:, None] ** 2))
    k1 = k1 / k1.sum(1, keepdim=True)
    k2 = (k1[:, :, None] * k1[:, None, :])  # (n, 3, 3)
    c = x.shape[1]
    weight = k2[:, None].repeat(1, c, 1, 1).reshape(n * c, 1, 3, 3)
    y = F.conv2d(F.pad(x.reshape(1, n * c, *x.shape[2:]), (1, 1, 1, 1), mode="replicate"), weight, groups=n * c)
    return y.reshape_as(x)


def lr_at(step: int, total: int, base: float, warmup: int = 100) -> float:
    """Linear warm-up then cosine decay to 5% of ``base``."""
    if step < warmup:
        return base * (step + 1) / warmup
    p = (step - warmup) / max(1, total - warmup)
    return base * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for g in opt.param_groups:
        g["lr"] = lr


class Curve:
    """A training curve: mean training loss and a held-out validation point about every 5% of the steps
    (how convergence is judged; kept in the build record and the release manifest)."""

    def __init__(self, steps: int, val_name: str, points: int = 20):
        self.every = max(1, steps // points) if steps >= 100 else steps + 1  # micro models: the final point only
        self.data = {"val_name": val_name, "step": [], "train_loss": [], "val": []}

    def due(self, step: int) -> bool:
        return step > 0 and step % self.every == 0

    def add(self, step: int, losses: list[float], val: dict[str, float]) -> None:
        self.data["step"].append(int(step))
        self.data["train_loss"].append(float(np.mean(losses[-self.every:])) if losses else float("nan"))
        self.data["val"].append({k: round(float(v), 5) for k, v in val.items()})

"""Forward hooks on a diffusers UNet: activation collection and the SAeUron intervention (spec §1 step 5).

A cross-attention block (``Transformer2DModel``) returns ``(h,)`` with ``h`` [2B, C, H, W] under
classifier-free guidance, the unconditional half first. Each spatial position is one token.
``StepTracker`` (a forward pre-hook on the UNet) tells the hooks which sampling step is running.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn


class HookPointError(ValueError):
    pass


def locate_block(unet: nn.Module, path: str) -> nn.Module:
    """``unet.up_blocks[1].attentions[1]`` for ``"up_blocks.1.attentions.1"`` (clear error if absent)."""
    block = unet
    for part in path.split("."):
        try:
            block = block[int(part)] if part.isdigit() else getattr(block, part)
        except (IndexError, AttributeError, TypeError):
            names = [n for n, m in unet.named_modules() if type(m).__name__ == "Transformer2DModel"]
            raise HookPointError(f"hook point {path!r} does not exist in this UNet; cross-attention blocks: {names}") from None
    return block


def to_tokens(h: Tensor) -> Tensor:
    """[B, C, H, W] → [B, H·W, C]."""
    return h.permute(0, 2, 3, 1).reshape(h.shape[0], h.shape[2] * h.shape[3], h.shape[1])


def from_tokens(t: Tensor, H: int, W: int) -> Tensor:
    return t.reshape(t.shape[0], H, W, t.shape[2]).permute(0, 3, 1, 2)


def _sample(output):
    return output[0] if isinstance(output, tuple) else output.sample


def _replace(output, h: Tensor):
    if isinstance(output, tuple):
        return (h,) + tuple(output[1:])
    output.sample = h
    return output


class StepTracker:
    """Counts UNet calls (one per sampling step under CFG) and records the current timestep."""

    def __init__(self):
        self.step = -1
        self.n_steps = 1
        self.t: float | None = None
        self.cfg = True

    def reset(self, n_steps: int, cfg: bool = True) -> None:
        self.step, self.n_steps, self.t, self.cfg = -1, max(1, n_steps), None, cfg

    @property
    def fraction(self) -> float:
        return self.step / max(1, self.n_steps - 1)

    def __call__(self, module, args, kwargs):
        t = args[1] if len(args) > 1 else kwargs.get("timestep")
        self.t = float(t.flatten()[0]) if isinstance(t, Tensor) else float(t)
        self.step += 1


class ActivationCollector:
    """Stores the conditional half of a block's output at every step: list of [B, H·W, C] (CPU, float32)."""

    def __init__(self, tracker: StepTracker, branch: str = "cond"):
        self.tracker, self.branch = tracker, branch
        self.steps: list[Tensor] = []
        self.timesteps: list[float] = []

    def __call__(self, module, args, output):
        h = _sample(output)
        if self.tracker.cfg:
            unc, cond = h.chunk(2)
            h = cond if self.branch == "cond" else unc
        self.steps.append(to_tokens(h).detach().float().cpu())
        self.timesteps.append(self.tracker.t)
        return None

    def stacked(self) -> Tensor:
        """[B, T, H·W, C]."""
        return torch.stack(self.steps, dim=1)


@dataclass
class EditPlan:
    """Precomputed per statistics-timestep: selected units, their scales γ·μ(i,t,c), masks' thresholds, ranges."""

    timesteps: Tensor  # [T_stats] timestep values the statistics were computed at
    feats: list[Tensor]  # per stats step: LongTensor [m_t] (concatenated over concepts)
    scale: list[Tensor]  # per stats step: [m_t]  γ_c · μ(i, t, c)
    thresh: list[Tensor]  # per stats step: [m_t]  mean over all concepts of μ(i, t, ·)
    start: list[Tensor]  # per stats step: [m_t]  active range of each unit's concept (fractions)
    end: list[Tensor]

    def index(self, t: float | None, fraction: float) -> int:
        if t is None:
            return min(int(round(fraction * (len(self.timesteps) - 1))), len(self.timesteps) - 1)
        return int((self.timesteps - t).abs().argmin())


@dataclass
class Capture:
    """Latents of the selected units at one sampling step (for heatmaps): [B, H·W, m] of the cond branch."""

    at_step: int
    feats: Tensor | None = None
    z: Tensor | None = None
    hw: tuple[int, int] = (0, 0)
    extra: dict = field(default_factory=dict)


class SAeUronHook:
    """The intervention: encode each token with per-token TopK, scale the selected features where they exceed
    their all-concept mean, z_i ← γ·μ(i,t,c)·z_i, decode, add back the reconstruction error x − x̂.

    ``sae=None`` gives the raw-channel baseline: the same rule on the block's channels directly.
    """

    def __init__(self, plan: EditPlan, tracker: StepTracker, sae=None, preserve_error: bool = True,
                 apply_uncond: bool = True, capture: Capture | None = None):
        self.plan, self.tracker, self.sae = plan, tracker, sae
        self.preserve_error, self.apply_uncond, self.capture = preserve_error, apply_uncond, capture

    @torch.no_grad()
    def __call__(self, module, args, output):
        h = _sample(output)
        B2, C, H, W = h.shape
        i = self.plan.index(self.tracker.t, self.tracker.fraction)
        feats = self.plan.feats[i]
        frac = self.tracker.fraction
        active = (self.plan.start[i] <= frac + 1e-9) & (frac <= self.plan.end[i] + 1e-9)
        x = to_tokens(h).reshape(B2 * H * W, C)
        if self.sae is None:
            z = x.clone()
            err = None
        else:
            z = self.sae.encode(x)
            x_hat = self.sae.decode(z)
            err = x.float() - x_hat if self.preserve_error else None
        if len(feats):
            sel = z[:, feats]
            mask = (sel > self.plan.thresh[i].to(sel)) & active.to(sel.device)
            if self.tracker.cfg and not self.apply_uncond:
                mask[: len(mask) // 2] = False  # unconditional half untouched
            z[:, feats] = torch.where(mask, sel * self.plan.scale[i].to(sel), sel)
        cap = self.capture
        if cap is not None and self.tracker.step == cap.at_step:
            zz = z.reshape(B2, H * W, -1)
            half = zz[B2 // 2:] if self.tracker.cfg else zz
            src = (self.sae.encode(x) if self.sae is not None else x).reshape(B2, H * W, -1)
            src = src[B2 // 2:] if self.tracker.cfg else src
            cap.feats, cap.z, cap.hw = feats.clone(), src[:, :, feats].clone(), (H, W)
            cap.extra["edited"] = half[:, :, feats].clone()
        if self.sae is None:
            out = z
        else:
            out = self.sae.decode(z)
            if err is not None:
                out = out + err
        return _replace(output, from_tokens(out.reshape(B2, H * W, C).to(h.dtype), H, W))


@contextmanager
def hooked(unet: nn.Module, hooks: dict[str, object], tracker: StepTracker):
    """Register ``{hook point: forward hook or list of hooks}`` plus the step tracker; remove them on exit."""
    handles = [unet.register_forward_pre_hook(tracker, with_kwargs=True)]
    try:
        for path, fns in hooks.items():
            for fn in fns if isinstance(fns, (list, tuple)) else [fns]:
                handles.append(locate_block(unet, path).register_forward_hook(fn))
        yield tracker
    finally:
        for h in handles:
            h.remove()

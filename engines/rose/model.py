"""The ROSE network (spec §1): patching, a PatchTST-style encoder shared by several frequency-masked views,
a time-series register (VQ codebook) prepended as prompt tokens, a reconstruction tower and a prediction tower
(weight copy + straight-through), one linear head per horizon.

Shapes: a batch of univariate series x [B, L] (channels are folded into the batch: channel independence);
patches [B, N, P] with N = L / P; tokens [B, T + N, d] with T = num_token register tokens.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .masking import freq_multi_views, patch_multi_views, patchify


@dataclass(frozen=True)
class RoseConfig:
    context: int = 256
    patch_len: int = 32
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    n_layers: int = 2  # shared encoder
    tower_layers: int = 2  # reconstruction / prediction towers
    n_embedding: int = 32  # register codebook size (0 = no register)
    num_token: int = 1  # register tokens per series
    horizons: tuple[int, ...] = (24, 48, 96)
    dropout: float = 0.1
    head_dropout: float = 0.1
    mask_nums: int = 4  # K_f views
    tau_max: float = 0.4  # τ ~ U(0, tau_max)
    p_low: float = 0.5  # probability that a view zeroes the LOW band
    patch_mask_ratio: float = 0.4  # for the patch-masking ablation
    mask_mode: str = "freq_multi"
    top_k: int = 3  # register top-k at transfer
    pad_prob: float = 0.25  # pre-training: left-pad this share of contexts (variable-length history)
    extra: dict = field(default_factory=dict)

    @property
    def num_patch(self) -> int:
        return self.context // self.patch_len

    @property
    def use_register(self) -> bool:
        return self.n_embedding > 0 and self.num_token > 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["horizons"] = list(self.horizons)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RoseConfig":
        d = dict(d)
        d["horizons"] = tuple(d.get("horizons", (24, 48, 96)))
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


TINY = RoseConfig()
MICRO = RoseConfig(context=64, patch_len=16, d_model=16, n_heads=2, d_ff=32, n_layers=1, tower_layers=1,
                   n_embedding=8, horizons=(8, 16, 24), mask_nums=2)
# The released configuration of decisionintelligence/ROSE (script/pretrain/Pretrain.sh): ≈ 8M parameters.
PAPER = RoseConfig(context=512, patch_len=64, d_model=256, n_heads=16, d_ff=512, n_layers=3, tower_layers=3,
                   n_embedding=128, num_token=3, horizons=(96, 192, 336, 720), dropout=0.2, head_dropout=0.2)


def sincos_table(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return (pe - pe.mean()) / (pe.std() * 10)  # PatchTST's normalised sincos


class TokenBatchNorm(nn.Module):
    """BatchNorm over d_model for token sequences [B, N, d] (PatchTST's 'BatchNorm' option)."""

    def __init__(self, d: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x):
        return self.bn(x.transpose(1, 2)).transpose(1, 2)


class EncoderLayer(nn.Module):
    """Post-norm Transformer layer: MHA → add & BatchNorm → ReLU MLP → add & BatchNorm."""

    def __init__(self, d: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.norm_attn = TokenBatchNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.norm_ffn = TokenBatchNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        B, N, d = x.shape
        h = self.heads
        q, k, v = (lin(x).view(B, N, h, d // h).transpose(1, 2) for lin in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, d)
        x = self.norm_attn(x + self.drop(self.o(a)))
        x = self.norm_ffn(x + self.drop(self.ff2(self.drop(F.relu(self.ff1(x))))))
        return x


class Stack(nn.Module):
    def __init__(self, n: int, d: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d, heads, d_ff, dropout) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def revin(x: torch.Tensor, valid: torch.Tensor | None = None, eps: float = 1e-5):
    """Reversible instance normalisation over the observed part of each context: (x_norm, mean, std)."""
    if valid is None:
        mean = x.mean(1, keepdim=True)
        std = (x.var(1, keepdim=True, unbiased=False) + eps).sqrt()
    else:
        w = valid.float()
        n = w.sum(1, keepdim=True).clamp_min(1)
        mean = (x * w).sum(1, keepdim=True) / n
        std = ((((x - mean) * w) ** 2).sum(1, keepdim=True) / n + eps).sqrt()
    xn = (x - mean) / std
    if valid is not None:
        xn = xn * valid  # padded positions are exactly 0 after normalisation
    return xn, mean, std


class ROSE(nn.Module):
    def __init__(self, cfg: RoseConfig = TINY):
        super().__init__()
        self.cfg = cfg
        d, N, P, T = cfg.d_model, cfg.num_patch, cfg.patch_len, cfg.num_token if cfg.use_register else 0
        self.T = T
        self.patch_embed = nn.Linear(P, d)
        self.pos = nn.Parameter(sincos_table(N + T, d), requires_grad=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Stack(cfg.n_layers, d, cfg.n_heads, cfg.d_ff, cfg.dropout)
        self.tower_rec = Stack(cfg.tower_layers, d, cfg.n_heads, cfg.d_ff, cfg.dropout)
        self.tower_pred = Stack(cfg.tower_layers, d, cfg.n_heads, cfg.d_ff, cfg.dropout)
        self.rec_head = nn.Linear(d, P)
        self.heads = nn.ModuleDict({str(h): nn.Linear(N * d, h) for h in cfg.horizons})
        self.head_drop = nn.Dropout(cfg.head_dropout)
        if T:
            # (b) Time-series register: query projection of the whole context, codebook, low-rank adapter u·vᵀ.
            self.register_proj = nn.Linear(N * P, T * d)
            self.codebook = nn.Embedding(cfg.n_embedding, T * d)
            self.codebook.weight.data.uniform_(-1.0 / d, 1.0 / d)
            self.u = nn.Parameter(torch.zeros(T, 1))
            self.v = nn.Parameter(torch.rand(1, d))
        self.copy_tower()

    # ------------------------------------------------------------------ pieces
    def copy_tower(self) -> None:
        """The prediction tower is a frozen weight copy of the reconstruction tower (re-copied every step)."""
        for pr, pp in zip(self.tower_rec.parameters(), self.tower_pred.parameters()):
            pp.data.copy_(pr.data)
            pp.requires_grad_(False)

    def register_query(self, patches: torch.Tensor) -> torch.Tensor:
        return self.register_proj(patches.flatten(1))  # [B, T*d]

    def code_distances(self, q: torch.Tensor) -> torch.Tensor:
        e = self.codebook.weight.detach()
        return (q[:, None, :] - e[None]).pow(2).sum(-1)  # [B, K]

    def select_register(self, q: torch.Tensor, mode: str = "argmin", k: int | None = None):
        """Quantise the query: nearest code (pre-training) or the mean of the top-k nearest codes (transfer).

        Returns (straight-through register [B, T*d], codes [B, k], distances [B, K], selected vectors)."""
        dist = self.code_distances(q)
        k = 1 if mode == "argmin" else (k or self.cfg.top_k)
        idx = dist.topk(min(k, dist.shape[1]), dim=1, largest=False).indices  # [B, k]
        e = self.codebook(idx).mean(1)
        return q + (e - q).detach(), idx, dist, e

    def encode(self, patches: torch.Tensor, register: torch.Tensor | None) -> torch.Tensor:
        """Patch tokens (+ register tokens in front) through the shared encoder; register tokens dropped after."""
        z = self.patch_embed(patches)
        if self.T:
            z = torch.cat([register.view(-1, self.T, self.cfg.d_model), z], dim=1)
        z = self.encoder(self.drop(z + self.pos))
        return z[:, self.T:]

    def forecast_heads(self, z: torch.Tensor, horizons=None) -> dict[int, torch.Tensor]:
        flat = self.head_drop(z.flatten(1))
        return {int(h): head(flat) for h, head in self.heads.items() if horizons is None or int(h) in horizons}

    # ------------------------------------------------------------------ pre-training (spec §1 (a) + (b))
    def pretrain_loss(self, x: torch.Tensor, future: torch.Tensor, valid: torch.Tensor | None = None,
                      mode: str | None = None) -> dict[str, torch.Tensor]:
        """x [B, L] context, future [B, max H]. L = L_rec + Σ_H L_pred,H + L_codebook + L_commit."""
        cfg = self.cfg
        mode = mode or cfg.mask_mode
        xn, mean, std = revin(x, valid)
        yn = (future - mean) / std
        patches = patchify(xn, cfg.patch_len)  # [B, N, P]
        K = cfg.mask_nums
        if mode == "freq_multi":
            views, _ = freq_multi_views(xn, K, cfg.tau_max, cfg.p_low)  # [K, B, L]
        else:
            views = patch_multi_views(xn, K, cfg.patch_len, cfg.patch_mask_ratio)
        view_patches = patchify(views.reshape(K * x.shape[0], -1), cfg.patch_len)
        losses = {}
        reg = None
        if self.T:
            q = self.register_query(patches)
            reg, _, _, e = self.select_register(q, "argmin")
            losses["codebook"] = F.mse_loss(e, q.detach())  # ‖sg[q] − e‖²
            losses["commit"] = F.mse_loss(q, e.detach())  # ‖q − sg[e]‖²
        # Reconstruction: encode every view (same register), average the K encodings token-wise.
        reg_views = None if reg is None else reg.repeat(K, 1)
        zv = self.encode(view_patches, reg_views).view(K, x.shape[0], cfg.num_patch, -1).mean(0)
        rec = self.rec_head(self.tower_rec(zv))
        losses["rec"] = F.mse_loss(rec, patches)
        # Forecasting: unmasked series → prediction tower (frozen copy) with the straight-through trick.
        z = self.encode(patches, reg)
        self.copy_tower()
        zp = (self.tower_pred(z) - z).detach() + z
        for h, yhat in self.forecast_heads(zp).items():
            losses[f"pred_{h}"] = F.mse_loss(yhat, yn[:, :h])
        losses["total"] = sum(losses.values())
        return losses

    # ------------------------------------------------------------------ downstream (zero-shot / few-shot)
    def forward(self, x: torch.Tensor, horizon: int, valid: torch.Tensor | None = None,
                select: str = "argmin", adapter: bool = False, return_info: bool = False):
        """Forecast [B, horizon] from contexts x [B, L]. Zero-shot: nearest code (as the released
        ROSE_predict); few-shot: mean of the top-k codes times the low-rank adapter u·vᵀ (ROSE_lowrank)."""
        cfg = self.cfg
        h = self.head_for(horizon)
        xn, mean, std = revin(x, valid)
        patches = patchify(xn, cfg.patch_len)
        reg, info = None, {}
        if self.T:
            q = self.register_query(patches)
            reg, idx, dist, _ = self.select_register(q, select)
            if adapter:
                prompt = (self.u @ self.v).reshape(1, -1)  # [1, T*d]
                reg = reg * prompt
            info = {"codes": idx, "distances": dist}
        z = self.tower_rec(self.encode(patches, reg))
        y = self.forecast_heads(z, [h])[h][:, :horizon]
        y = y * std + mean
        return (y, info) if return_info else y

    def forecast_channels(self, x: torch.Tensor, horizon: int, **kw) -> torch.Tensor:
        """Channel-independent multivariate forecast: x [B, L, C] → [B, horizon, C]."""
        B, L, C = x.shape
        y = self(x.permute(0, 2, 1).reshape(B * C, L), horizon, **kw)
        return y.view(B, C, horizon).permute(0, 2, 1)

    def head_for(self, horizon: int) -> int:
        ok = [h for h in self.cfg.horizons if h >= horizon]
        if not ok:
            raise ValueError(f"horizon {horizon} exceeds the longest head ({max(self.cfg.horizons)})")
        return min(ok)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())

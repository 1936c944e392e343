"""The TopK sparse autoencoder of SAeUron (spec §1 step 2), in the upstream on-disk layout.

``z = TopK(ReLU(W_enc (x − b_dec) + b_enc))``, ``x̂ = zᵀ W_dec + b_dec``. Training selects the
k·B largest pre-activations of a batch of B tokens (BatchTopK); inference keeps the k largest per
token. Loss = FVU + α·AuxK, where AuxK asks the top k_aux = d_in/2 *dead* latents to predict the
residual x − x̂. Decoder rows are kept at unit norm and the gradient component parallel to each row
is removed before every optimiser step.

Layout as in ``cywinski/SAeUron`` (EleutherAI ``sae`` lineage): a directory with ``cfg.json`` (fields
``d_in``, ``expansion_factor``, ``normalize_decoder``, ``num_latents``, ``k``, ``multi_topk``,
``batch_topk``, ``sample_topk``, ``input_unit_norm``) and ``sae.safetensors`` with tensors
``encoder.weight`` [n, d_in], ``encoder.bias`` [n], ``W_dec`` [n, d_in], ``b_dec`` [d_in].
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor, nn


@dataclass
class SaeConfig:
    expansion_factor: int = 16
    normalize_decoder: bool = True
    num_latents: int = 0  # 0 → d_in · expansion_factor
    k: int = 32
    multi_topk: bool = False
    batch_topk: bool = False  # True while training (BatchTopK); loaders reset it for inference
    sample_topk: bool = False
    input_unit_norm: bool = False

    @classmethod
    def from_dict(cls, d: dict) -> "SaeConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})  # unknown upstream fields are dropped


class SaeFormatError(ValueError):
    """A directory that is not an SAeUron-format SAE (names the missing file or tensor)."""


class TopKSae(nn.Module):
    def __init__(self, d_in: int, cfg: SaeConfig, seed: int | None = None):
        super().__init__()
        self.cfg = cfg
        self.d_in = int(d_in)
        self.num_latents = int(cfg.num_latents or d_in * cfg.expansion_factor)
        if cfg.k > self.num_latents:
            raise ValueError(f"k = {cfg.k} exceeds the number of latents {self.num_latents}")
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        w = torch.empty(self.num_latents, self.d_in)
        bound = 1.0 / math.sqrt(self.d_in)
        w.uniform_(-bound, bound, generator=g)
        self.encoder = nn.Linear(self.d_in, self.num_latents)
        self.encoder.weight.data.copy_(w)
        self.encoder.bias.data.zero_()
        self.W_dec = nn.Parameter(w.clone())  # decoder initialised as the encoder's transpose
        self.b_dec = nn.Parameter(torch.zeros(self.d_in))
        if cfg.normalize_decoder:
            self.set_decoder_norm_to_unit_norm()

    # ------------------------------------------------------------------ encode / decode
    def pre_acts(self, x: Tensor) -> Tensor:
        """ReLU(W_enc (x − b_dec) + b_enc) for tokens x [..., d_in]."""
        return torch.relu(self.encoder(x.to(self.W_dec.dtype) - self.b_dec))

    def select_topk(self, pre: Tensor, k: int | None = None, batch_topk: bool | None = None) -> Tensor:
        """Dense latents [N, n] keeping the k largest per token, or the k·N largest of the batch (BatchTopK)."""
        k = self.cfg.k if k is None else k
        batch_topk = self.cfg.batch_topk if batch_topk is None else batch_topk
        if batch_topk:
            flat = pre.flatten()
            vals, idx = flat.topk(min(k * pre.shape[0], flat.numel()), sorted=False)
            return torch.zeros_like(flat).scatter(0, idx, vals).view_as(pre)
        vals, idx = pre.topk(k, dim=-1, sorted=False)
        return torch.zeros_like(pre).scatter(-1, idx, vals)

    def encode(self, x: Tensor) -> Tensor:
        """Dense sparse code z [N, n] of tokens x [N, d_in] (per-token TopK unless cfg.batch_topk)."""
        return self.select_topk(self.pre_acts(x))

    def decode(self, z: Tensor) -> Tensor:
        return z @ self.W_dec + self.b_dec

    def forward(self, x: Tensor) -> Tensor:
        return self.decode(self.encode(x))

    # ------------------------------------------------------------------ losses
    def losses(self, x: Tensor, dead_mask: Tensor | None = None) -> dict[str, Tensor]:
        """FVU, AuxK loss and the latents of a batch of tokens x [N, d_in]."""
        pre = self.pre_acts(x)
        z = self.select_topk(pre)
        x_hat = self.decode(z)
        e = x - x_hat
        total_var = (x - x.mean(0)).pow(2).sum().clamp_min(1e-12)
        fvu = e.pow(2).sum() / total_var
        auxk = x.new_zeros(())
        n_dead = int(dead_mask.sum()) if dead_mask is not None else 0
        if n_dead > 0:
            k_aux = max(1, x.shape[-1] // 2)
            scale = min(n_dead / k_aux, 1.0)
            k_aux = min(k_aux, n_dead)
            aux_pre = torch.where(dead_mask[None], pre, torch.zeros_like(pre))
            z_aux = self.select_topk(aux_pre, k=k_aux, batch_topk=False)
            e_hat = z_aux @ self.W_dec  # dead latents predict the residual (no decoder bias)
            auxk = scale * (e_hat - e.detach()).pow(2).sum() / total_var
        return {"fvu": fvu, "auxk": auxk, "z": z}

    # ------------------------------------------------------------------ decoder constraints
    @torch.no_grad()
    def set_decoder_norm_to_unit_norm(self) -> None:
        eps = torch.finfo(self.W_dec.dtype).eps
        self.W_dec.data /= self.W_dec.data.norm(dim=1, keepdim=True) + eps

    @torch.no_grad()
    def remove_gradient_parallel_to_decoder_directions(self) -> None:
        if self.W_dec.grad is None:
            return
        par = (self.W_dec.grad * self.W_dec.data).sum(dim=1, keepdim=True)
        self.W_dec.grad -= par * self.W_dec.data

    # ------------------------------------------------------------------ disk layout
    def save_to_disk(self, path: Path | str, extra: dict | None = None) -> Path:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        tensors = {"encoder.weight": self.encoder.weight, "encoder.bias": self.encoder.bias,
                   "W_dec": self.W_dec, "b_dec": self.b_dec}
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(path / "sae.safetensors"))
        cfg = {**asdict(self.cfg), "d_in": self.d_in, **(extra or {})}
        (path / "cfg.json").write_text(json.dumps(cfg, indent=1))
        return path

    @staticmethod
    def load_from_disk(path: Path | str, device: str = "cpu", inference: bool = True) -> "TopKSae":
        """Load an SAeUron-format directory; ``inference`` resets BatchTopK to per-token TopK (as upstream)."""
        from safetensors.torch import load_file

        path = Path(path)
        for f in ("cfg.json", "sae.safetensors"):
            if not (path / f).is_file():
                raise SaeFormatError(f"{path} is not an SAeUron-format SAE: '{f}' is missing "
                                     "(expected cfg.json + sae.safetensors, as in bcywinski/SAeUron/<hookpoint>/)")
        d = json.loads((path / "cfg.json").read_text())
        if "d_in" not in d:
            raise SaeFormatError(f"{path / 'cfg.json'} has no 'd_in' field")
        cfg = SaeConfig.from_dict(d)
        if inference:
            cfg.batch_topk = False
            cfg.sample_topk = False
        with torch.device("meta"):
            sae = TopKSae(int(d["d_in"]), cfg)
        state = load_file(str(path / "sae.safetensors"), device=device)
        need = {"encoder.weight", "encoder.bias", "W_dec", "b_dec"}
        if missing := sorted(need - set(state)):
            raise SaeFormatError(f"{path / 'sae.safetensors'} lacks tensors {missing}")
        if tuple(state["W_dec"].shape) != (sae.num_latents, sae.d_in):
            raise SaeFormatError(f"W_dec has shape {tuple(state['W_dec'].shape)}, cfg.json implies "
                                 f"({sae.num_latents}, {sae.d_in})")
        sae.load_state_dict({k: state[k] for k in need}, assign=True)
        return sae.eval()


# ---------------------------------------------------------------------------- training


def geometric_median(x: Tensor, iters: int = 50, eps: float = 1e-5) -> Tensor:
    """Weiszfeld's algorithm (the decoder-bias initialisation of the upstream trainer)."""
    y = x.mean(0)
    for _ in range(iters):
        w = 1.0 / (x - y).norm(dim=1).clamp_min(eps)
        y_new = (w[:, None] * x).sum(0) / w.sum()
        if (y_new - y).norm() < eps * (1 + y.norm()):
            return y_new
        y = y_new
    return y


@dataclass
class TrainStats:
    fvu: float
    dead_fraction: float
    steps: int
    tokens: int
    curve: list[float]


def train_sae(acts: Tensor, d_in: int, cfg: SaeConfig, *, epochs: int = 5, batch_size: int = 4096, lr: float = 4e-4,
              auxk_alpha: float = 1 / 32, dead_after_tokens: int = 10_000_000, seed: int = 0,
              progress: Callable[[float, str], None] | None = None) -> tuple[TopKSae, TrainStats]:
    """Train a TopK SAE on tokens ``acts`` [N, d_in] (all timesteps pooled; the timestep is not an input).

    Adam, linear learning-rate decay without warm-up, gradient clipping at 1, BatchTopK during
    training, AuxK on latents that have not fired for ``dead_after_tokens`` tokens.
    """
    cfg = SaeConfig(**{**asdict(cfg), "batch_topk": True})
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    sae = TopKSae(d_in, cfg, seed=seed)
    acts = acts.float()
    n = len(acts)
    batch_size = min(batch_size, n)
    sae.b_dec.data = geometric_median(acts[torch.randperm(n, generator=g)[:8192]])
    opt = torch.optim.Adam(sae.parameters(), lr=lr, eps=6.25e-10)
    per_epoch = max(1, n // batch_size)
    total = per_epoch * epochs
    since_fired = torch.zeros(sae.num_latents, dtype=torch.long)
    curve: list[float] = []
    step = 0
    for _ in range(epochs):
        perm = torch.randperm(n, generator=g)
        for b in range(per_epoch):
            x = acts[perm[b * batch_size:(b + 1) * batch_size]]
            if cfg.normalize_decoder:
                sae.set_decoder_norm_to_unit_norm()
            out = sae.losses(x, dead_mask=since_fired > dead_after_tokens if auxk_alpha > 0 else None)
            loss = out["fvu"] + auxk_alpha * out["auxk"]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0)
            if cfg.normalize_decoder:
                sae.remove_gradient_parallel_to_decoder_directions()
            for pg in opt.param_groups:  # linear decay, no warm-up
                pg["lr"] = lr * (1 - step / total)
            opt.step()
            with torch.no_grad():
                fired = (out["z"] > 0).any(0)
                since_fired += len(x)
                since_fired[fired] = 0
            curve.append(float(out["fvu"].detach()))
            step += 1
            if progress is not None and (step % 10 == 0 or step == total):
                progress(step / total, f"SAE step {step}/{total}, FVU {sum(curve[-10:]) / len(curve[-10:]):.3f}")
    if cfg.normalize_decoder:
        sae.set_decoder_norm_to_unit_norm()
    sae.cfg.batch_topk = False  # inference: per-token TopK
    sae.eval()
    fvu = evaluate_fvu(sae, acts)
    return sae, TrainStats(fvu=fvu, dead_fraction=float((since_fired > dead_after_tokens).float().mean()),
                           steps=step, tokens=step * batch_size, curve=curve)


@torch.no_grad()
def evaluate_fvu(sae: TopKSae, acts: Tensor, batch: int = 16384) -> float:
    """Fraction of variance unexplained with per-token TopK."""
    acts = acts.float()
    mu = acts.mean(0)
    err = tot = 0.0
    for i in range(0, len(acts), batch):
        x = acts[i:i + batch]
        err += float((x - sae(x)).pow(2).sum())
        tot += float((x - mu).pow(2).sum())
    return err / max(tot, 1e-12)

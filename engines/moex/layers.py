"""The MLP blocks compared in the paper: dense GELU/ReLU MLP, top-k MoE (Switch-style), MoE-X, and a post-hoc SAE.

MoE as a wide sparse MLP (paper Sec. 4.1): with experts z_j(x) = σ(W_enc^j x + b_j) ∈ R^D,

    y = Σ_{j∈S(x)} ω_j(x) W_dec^j z_j(x) = W_dec · h(x),   h(x) = [ω_1 z_1; …; ω_M z_M] ∈ R^{M·D}

(unselected blocks zero). The interpretable units are the M·D coordinates of h. ``MoELayer.forward`` runs the
experts by dispatch (only the routed tokens per expert); ``MoELayer.wide_form`` builds h explicitly and
multiplies by the stacked decoder, which acceptance check 1 compares with the dispatch output.

MoE-X = ReLU experts (Design 1) + sparsity-aware routing (Design 2): each expert's firing probability is
estimated from the statistics of its encoder rows, u ~ N(μ_j·x + b̄_j, s_j²·(x⊙x) + var(b_j)),
p_j(x) = Φ(m/√v); the router keeps the k experts with the lowest expected density D·p_j(x).
"""
from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

Activation = Literal["gelu", "relu"]
Router = Literal["topk_linear", "sparsity_gaussian", "sparsity_exact"]


def act_fn(name: str):
    if name == "gelu":
        return lambda u: F.gelu(u, approximate="tanh")  # GPT-2's gelu_new
    if name == "relu":
        return F.relu
    raise ValueError(f"unknown activation {name!r} (gelu or relu)")


class DenseMLP(nn.Module):
    """GPT-2's MLP: W2 σ(W1 x + b1) + b2; the hidden code h = σ(W1 x + b1) is what gets probed."""

    def __init__(self, d: int, hidden: int, activation: Activation = "gelu"):
        super().__init__()
        self.fc, self.proj, self.activation = nn.Linear(d, hidden), nn.Linear(hidden, d), activation
        self.act = act_fn(activation)
        self.last_h: torch.Tensor | None = None
        self.record = False
        self.aux_loss = torch.zeros(())

    @property
    def width(self) -> int:
        return self.fc.out_features

    def forward(self, x):
        h = self.act(self.fc(x))
        if self.record:
            self.last_h = h.detach()
        return self.proj(h)


class MoELayer(nn.Module):
    """M experts of hidden size D, top-k routing; ``router`` picks the gate (``topk_linear`` = Switch/TopK)."""

    def __init__(self, d: int, n_experts: int, expert_hidden: int, top_k: int, activation: Activation = "relu",
                 router: Router = "sparsity_gaussian", temperature: float = 1.0, balance_coef: float = 0.01,
                 l1_coef: float = 0.0):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be between 1 and n_experts={n_experts} (got {top_k})")
        M, D = n_experts, expert_hidden
        self.M, self.D, self.k, self.activation, self.router = M, D, top_k, activation, router
        self.temperature, self.balance_coef, self.l1_coef = temperature, balance_coef, l1_coef
        self.act = act_fn(activation)
        s = 1 / math.sqrt(d)
        self.w_enc = nn.Parameter(torch.empty(M, d, D).uniform_(-s, s))
        self.b_enc = nn.Parameter(torch.zeros(M, D))
        self.w_dec = nn.Parameter(torch.empty(M, D, d).uniform_(-1 / math.sqrt(D), 1 / math.sqrt(D)))
        self.b_dec = nn.Parameter(torch.zeros(d))
        self.gate = nn.Linear(d, M, bias=False) if router == "topk_linear" else None
        self.aux_loss = torch.zeros(())
        self.record = False
        self.last_h: torch.Tensor | None = None
        self.last_route: dict | None = None

    @property
    def width(self) -> int:
        return self.M * self.D

    # ---------------------------------------------------------------- routing
    def firing_probability(self, x: torch.Tensor) -> torch.Tensor:
        """p_j(x): estimated fraction of expert j's units with positive pre-activation (…, M), Gaussian reading."""
        mu = self.w_enc.mean(dim=2)  # (M, d): mean over the D rows of W_enc^j, per input coordinate
        var = self.w_enc.var(dim=2, unbiased=False)  # (M, d)
        m = x @ mu.T + self.b_enc.mean(dim=1)  # (…, M)
        v = (x * x) @ var.T + self.b_enc.var(dim=1, unbiased=False) + 1e-8
        return 0.5 * (1 + torch.erf(m / torch.sqrt(2 * v)))

    def expert_codes(self, x: torch.Tensor) -> torch.Tensor:
        """z_j(x) for every expert (…, M, D) (the exact, expensive path)."""
        return self.act(torch.einsum("...d,mdh->...mh", x, self.w_enc) + self.b_enc)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """Router scores (…, M): higher = preferred."""
        if self.router == "topk_linear":
            return self.gate(x)
        if self.router == "sparsity_gaussian":
            return -self.firing_probability(x) / self.temperature
        if self.router == "sparsity_exact":
            return -(self.expert_codes(x) > 0).float().mean(-1) / self.temperature
        raise ValueError(f"unknown router {self.router!r}")

    def route(self, x: torch.Tensor):
        """(top-k expert indices, their weights ω summing to 1, all scores) for tokens x (N, d)."""
        sc = self.scores(x)
        top, idx = sc.topk(self.k, dim=-1)
        return idx, torch.softmax(top, dim=-1), sc

    # ---------------------------------------------------------------- forward
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        xf = x.reshape(-1, shape[-1])
        idx, w, sc = self.route(xf)
        out = torch.zeros_like(xf)
        need_h = self.record or self.l1_coef > 0
        h = xf.new_zeros(xf.shape[0], self.M, self.D) if need_h else None
        for j in range(self.M):  # dispatch: only the tokens routed to expert j run it
            tok, slot = (idx == j).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            z = self.act(xf[tok] @ self.w_enc[j] + self.b_enc[j])
            wz = w[tok, slot, None] * z
            out.index_add_(0, tok, wz @ self.w_dec[j])
            if h is not None:
                h[tok, j] = wz
        out = out + self.b_dec
        aux = xf.new_zeros(())
        if self.training and self.balance_coef > 0:  # Switch load balancing: M Σ_j f_j P_j
            frac = F.one_hot(idx, self.M).float().sum(1).mean(0) / self.k
            aux = aux + self.balance_coef * self.M * (frac * torch.softmax(sc, -1).mean(0)).sum()
        if self.l1_coef > 0 and h is not None:
            aux = aux + self.l1_coef * h.abs().sum(-1).sum(-1).mean()
        self.aux_loss = aux
        if self.record:
            self.last_h = h.reshape(*shape[:-1], self.M * self.D).detach()
            self.last_route = {"idx": idx.reshape(*shape[:-1], self.k).detach(),
                               "scores": sc.reshape(*shape[:-1], self.M).detach()}
        return out.reshape(shape)

    def wide_form(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(h, y): the explicit wide sparse MLP, h ∈ R^{M·D} with unselected blocks zero, y = W_dec h + b_dec."""
        shape = x.shape
        xf = x.reshape(-1, shape[-1])
        idx, w, _ = self.route(xf)
        gate = xf.new_zeros(xf.shape[0], self.M).scatter(1, idx, w)  # ω_j, 0 for unselected experts
        h = (gate[..., None] * self.expert_codes(xf)).reshape(xf.shape[0], -1)
        y = h @ self.w_dec.reshape(self.M * self.D, -1) + self.b_dec
        return h.reshape(*shape[:-1], -1), y.reshape(shape)


class SAE(nn.Module):
    """ReLU sparse autoencoder on a dense MLP's hidden code (the post-hoc baseline): f = ReLU(W_e(h − b_d) + b_e)."""

    def __init__(self, d_in: int, width: int, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(width, d_in, generator=g)
        w = w / w.norm(dim=1, keepdim=True)
        self.w_dec = nn.Parameter(w.clone())  # (width, d_in), unit-norm rows
        self.w_enc = nn.Parameter(w.T.clone() * 0.5)
        self.b_enc = nn.Parameter(torch.zeros(width))
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def encode(self, h):
        return F.relu((h - self.b_dec) @ self.w_enc + self.b_enc)

    def forward(self, h):
        f = self.encode(h)
        return f @ self.w_dec + self.b_dec, f


def train_sae(acts: torch.Tensor, width: int, l1: float, steps: int, seed: int = 0, lr: float = 3e-3,
              batch: int = 512, cancelled=None) -> tuple[SAE, dict]:
    """Train on activations (N, d_in): MSE + l1 · Σ|f_i|·‖W_dec,i‖ (Anthropic's 2024 recipe, simplified)."""
    torch.manual_seed(seed)
    sae = SAE(acts.shape[1], width, seed)
    scale = acts.pow(2).sum(1).mean().sqrt().clamp_min(1e-6)
    x_all = acts / scale
    sae.b_dec.data = x_all.median(0).values
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    for step in range(steps):
        x = x_all[torch.randint(0, len(x_all), (batch,), generator=g)]
        xh, f = sae(x)
        loss = (xh - x).pow(2).sum(1).mean() + l1 * (f * sae.w_dec.norm(dim=1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if cancelled is not None and step % 100 == 0 and cancelled():
            # Raise, never return a half-trained SAE: the caller would cache it as the tab's model.
            from engines.common.context import JobCancelled

            raise JobCancelled("SAE training cancelled")
    with torch.no_grad():
        xh, f = sae(x_all)
        fvu = float((xh - x_all).pow(2).sum() / (x_all - x_all.mean(0)).pow(2).sum())
        l0 = float((f > 0).float().sum(1).mean())
    sae.scale = float(scale)
    return sae, {"fvu": fvu, "l0": l0, "l1": l1, "width": width, "steps": steps}

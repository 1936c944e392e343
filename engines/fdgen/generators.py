"""Graph generators with FDGen's fairness regulariser (torch).

* ``GraphDiffusion`` — the paper's family (its acceptance summary: a fairness
  regulariser added to a diffusion-based generation framework). GraphMaker-style
  joint diffusion of node features and edges, conditioned on each node's
  template (s, y): Gaussian DDPM on X, and edge-flip diffusion with the
  marginal prior q(a_t | a_0) = ᾱ_t·δ(a_0) + (1 − ᾱ_t)·Bern(ρ) on A. A GCN
  denoiser on the noisy graph predicts the clean features x̂₀ and edge
  probabilities p̂₀; sampling walks the exact discrete posteriors back from
  pure noise.
* ``VGAE`` — a one-shot variational graph auto-encoder, the fast CPU surrogate
  (samples from the posterior q(z | G)).

``fit`` adds λ_f·L_feat(x̂₀) + λ_s·L_struct(p̂₀) to the backbone's loss.
"""
from __future__ import annotations

from engines.common.threads import torch_threads
import math
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import Graph, edges_from_dense
from .losses import feature_loss, structure_loss

HIDDEN = 64
KEY = 32


def normalise(A: torch.Tensor) -> torch.Tensor:
    """D^{-1/2}(A + I)D^{-1/2}."""
    A = A + torch.eye(A.shape[0], dtype=A.dtype)
    d = A.sum(1).rsqrt()
    return d[:, None] * A * d[None, :]


def template(s: torch.Tensor, y: torch.Tensor, condition_on_s: bool = True) -> torch.Tensor:
    """One-hot of the node's (s, y) cell: the conditioning every generated node carries. Without
    ``condition_on_s`` only y is given (the s half stays zero): a generator unaware of the sensitive attribute."""
    return F.one_hot(2 * s * int(condition_on_s) + y, 4).float()


class EdgeHead(nn.Module):
    """Symmetric bilinear edge logits ℓ_ij = ⟨q_i, k_j⟩ + ⟨k_i, q_j⟩ (scaled)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.q, self.k = nn.Linear(hidden, KEY), nn.Linear(hidden, KEY)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        q, k = self.q(h), self.k(h)
        return (q @ k.T + k @ q.T) / (2 * math.sqrt(KEY))


def _triu(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.triu_indices(n, n, 1).unbind(0)


def edge_bce(logits: torch.Tensor, A: torch.Tensor, rho: float, pairs: torch.Tensor | None = None) -> torch.Tensor:
    """Edge NLL over all node pairs, per expected edge (mean BCE / density); logits and A are symmetric.
    With ``pairs`` (a symmetric boolean n × n mask, diagonal False) only those pairs count."""
    n = A.shape[0]
    bce = F.binary_cross_entropy_with_logits(logits, A, reduction="none")
    if pairs is not None:
        return bce[pairs].sum() / pairs.sum() / rho
    return (bce.sum() - bce.diagonal().sum()) / (n * (n - 1)) / rho


def holdout_pairs(g: Graph, fraction: float, seed: int) -> np.ndarray:
    """Validation pairs for choosing how long to train: a symmetric boolean n × n mask holding out
    round(fraction · m) of the graph's edges and round(fraction · non-edges) of its non-edges (stratified, like
    link-prediction validation of graph auto-encoders), drawn uniformly with ``seed``; the diagonal is never held out."""
    n = g.n
    rng = np.random.default_rng(seed + 104729)
    i, j = np.triu_indices(n, 1)
    is_edge = g.adjacency()[i, j] > 0
    keep = np.zeros(len(i), bool)
    for cls in (True, False):
        idx = np.flatnonzero(is_edge == cls)
        k = int(round(fraction * len(idx)))
        keep[rng.choice(idx, k, replace=False)] = True
    hold = np.zeros((n, n), bool)
    hold[i[keep], j[keep]] = True
    return hold | hold.T


def sample_edges(logits: torch.Tensor, gen: torch.Generator, m_target: int | None) -> np.ndarray:
    """Bernoulli edges from upper-triangle logits; with ``m_target`` a shared logit shift first makes
    the expected edge count equal m_target (bisection)."""
    n = logits.shape[0]
    i, j = _triu(n)
    lg = logits[i, j].double()
    if m_target is not None:
        lo, hi = -80.0, 80.0
        for _ in range(70):
            mid = (lo + hi) / 2
            if torch.sigmoid(lg + mid).sum().item() > m_target:
                hi = mid
            else:
                lo = mid
        lg = lg + (lo + hi) / 2
    keep = torch.rand(lg.shape, generator=gen, dtype=torch.float64) < torch.sigmoid(lg)
    return torch.stack([i[keep], j[keep]], 1).numpy().astype(np.int64)


class GraphDiffusion(nn.Module):
    def __init__(self, d: int, steps: int, rho: float):
        super().__init__()
        self.T, self.rho = steps, rho
        # Cosine schedule (Nichol & Dhariwal), ᾱ_0 = 1.
        t = torch.arange(steps + 1, dtype=torch.float64) / steps
        f = torch.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        ab = (f / f[0]).clamp(1e-5, 1.0)
        self.register_buffer("abar", ab.float())
        self.t_mlp = nn.Sequential(nn.Linear(16, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, HIDDEN))
        self.inp = nn.Linear(d + 4, HIDDEN)
        self.gc1, self.gc2 = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.x_head = nn.Sequential(nn.Linear(HIDDEN + d, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, d))
        self.edge = EdgeHead(HIDDEN)
        self.edge_t = nn.Linear(HIDDEN, 2)  # γ(t)·a_t + β(t): how much of the noisy edge to keep

    def t_embed(self, t: int) -> torch.Tensor:
        freqs = torch.exp(-math.log(1000.0) * torch.arange(8) / 8)
        ang = (t / self.T) * 1000.0 * freqs
        return self.t_mlp(torch.cat([ang.sin(), ang.cos()])[None])

    def denoise(self, Xt, At, t: int, cond):
        te = self.t_embed(t)
        h = F.silu(self.inp(torch.cat([Xt, cond], 1)) + te)
        An = normalise(At)
        h = h + F.silu(An @ self.gc1(h))
        h = h + F.silu(An @ self.gc2(h))
        x0 = self.x_head(torch.cat([h, Xt], 1))
        g, b = self.edge_t(te)[0]
        logits = self.edge(h) + g * At + b
        return x0, logits

    def noisy(self, X0, A0, t: int, hold: torch.Tensor | None = None):
        """A draw of q(X_t, A_t | X_0, A_0). Pairs in ``hold`` (held-out validation pairs) carry no trace of
        their true state: they are drawn from the prior Bern(ρ) at every t."""
        ab = self.abar[t]
        Xt = ab.sqrt() * X0 + (1 - ab).sqrt() * torch.randn_like(X0)
        p = ab * A0 + (1 - ab) * self.rho
        if hold is not None:
            p = torch.where(hold, torch.full_like(p, self.rho), p)
        At = torch.triu((torch.rand_like(A0) < p).float(), 1)
        return Xt, At + At.T

    def training_step(self, X0, A0, cond, hold=None, pairs=None):
        t = int(torch.randint(1, self.T + 1, (1,)))
        Xt, At = self.noisy(X0, A0, t, hold)
        x0, logits = self.denoise(Xt, At, t, cond)
        loss = F.mse_loss(x0, X0) + edge_bce(logits, A0, self.rho, pairs)
        return loss, x0, logits

    def edge_posterior(self, At, p0, t: int):
        """p(a_{t-1} = 1 | a_t, p̂₀) = Σ_{a₀} p̂₀(a₀)·q(a_{t-1} = 1 | a_t, a₀)."""
        ab_prev, ab_t = self.abar[t - 1], self.abar[t]
        a = ab_t / ab_prev  # one-step keep probability α_t
        rho = self.rho
        L1 = torch.where(At > 0, a + (1 - a) * rho, (1 - a) * (1 - rho))  # q(a_t | a_{t-1} = 1)
        L0 = torch.where(At > 0, (1 - a) * rho, a + (1 - a) * (1 - rho))  # q(a_t | a_{t-1} = 0)
        out = torch.zeros_like(p0)
        for a0, w in ((1.0, p0), (0.0, 1 - p0)):
            prior1 = ab_prev * a0 + (1 - ab_prev) * rho
            post1 = L1 * prior1 / (L1 * prior1 + L0 * (1 - prior1))
            out = out + w * post1
        return out

    @torch.no_grad()
    def reverse_chain(self, n: int, d: int, cond, gen: torch.Generator | None = None, states: list | None = None):
        """Run the reverse process from pure noise; returns the last step's (x̂₀, edge logits).
        With ``states`` every visited (t, X_t, A_t) is appended to it."""
        Xt = torch.randn(n, d, generator=gen)
        At = torch.triu((torch.rand(n, n, generator=gen) < self.rho).float(), 1)
        At = At + At.T
        for t in range(self.T, 0, -1):
            if states is not None:
                states.append((t, Xt, At))
            x0, logits = self.denoise(Xt, At, t, cond)
            if t == 1:
                return x0, logits
            ab_t, ab_prev = self.abar[t], self.abar[t - 1]
            beta = 1 - ab_t / ab_prev
            c1 = ab_prev.sqrt() * beta / (1 - ab_t)
            c2 = (ab_t / ab_prev).sqrt() * (1 - ab_prev) / (1 - ab_t)
            var = beta * (1 - ab_prev) / (1 - ab_t)
            Xt = c1 * x0 + c2 * Xt + var.sqrt() * torch.randn(Xt.shape, generator=gen)
            p = torch.triu(self.edge_posterior(At, torch.sigmoid(logits), t), 1)
            At = torch.triu((torch.rand(p.shape, generator=gen) < p).float(), 1)
            At = At + At.T
        raise AssertionError("unreachable")

    @torch.no_grad()
    def sample(self, n: int, d: int, cond, gen: torch.Generator, m_target: int | None):
        x0, logits = self.reverse_chain(n, d, cond, gen)
        return x0, sample_edges(logits, gen, m_target)


class VGAE(nn.Module):
    LATENT = 16
    BETA = 1e-2

    def __init__(self, d: int, rho: float):
        super().__init__()
        self.rho = rho
        self.e1 = nn.Linear(d + 4, HIDDEN)
        self.e_mu, self.e_lv = nn.Linear(HIDDEN, self.LATENT), nn.Linear(HIDDEN, self.LATENT)
        self.dec = nn.Sequential(nn.Linear(self.LATENT + 4, HIDDEN), nn.SiLU())
        self.x_head = nn.Linear(HIDDEN, d)
        self.edge = EdgeHead(HIDDEN)
        self.bias = nn.Parameter(torch.tensor(math.log(rho / (1 - rho))))
        self.resid_std: torch.Tensor | None = None

    def encode(self, X, An, cond):
        h = F.silu(An @ self.e1(torch.cat([X, cond], 1)))
        return An @ self.e_mu(h), (An @ self.e_lv(h)).clamp(-8, 8)

    def decode(self, z, cond):
        h = self.dec(torch.cat([z, cond], 1))
        return self.x_head(h), self.edge(h) + self.bias

    def training_step(self, X0, A0, cond, An, pairs=None):
        mu, lv = self.encode(X0, An, cond)
        z = mu + (0.5 * lv).exp() * torch.randn_like(mu)
        x0, logits = self.decode(z, cond)
        kl = -0.5 * (1 + lv - mu.pow(2) - lv.exp()).sum(1).mean()
        loss = F.mse_loss(x0, X0) + edge_bce(logits, A0, self.rho, pairs) + self.BETA * kl
        return loss, x0, logits

    @torch.no_grad()
    def sample(self, X0, An, cond, gen: torch.Generator, m_target: int | None):
        mu, lv = self.encode(X0, An, cond)
        z = mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=gen)
        x0, logits = self.decode(z, cond)
        if self.resid_std is None:
            self.resid_std = (X0 - self.decode(mu, cond)[0]).std(0)
        Xs = x0 + self.resid_std * torch.randn(x0.shape, generator=gen)
        return Xs, sample_edges(logits, gen, m_target)


class FairGenerator:
    """A backbone trained with L = L_gen + λ_f·L_feat + λ_s·L_struct on one real graph."""

    def __init__(self, backbone: str, steps: int = 12, lr: float = 1e-2, reg_every: int = 4,
                 condition_on_s: bool = True):
        self.backbone, self.steps, self.lr, self.reg_every = backbone, steps, lr, reg_every
        self.condition_on_s = condition_on_s
        self.model: nn.Module | None = None
        self.holdout: torch.Tensor | None = None
        self.history: list[dict[str, float]] = []

    def fit(self, g: Graph, lambda_f: float, lambda_s: float, epochs: int, seed: int,
            feat_mode: str = "unconditional", on_progress: Callable[[float, str], None] | None = None,
            holdout: np.ndarray | None = None):
        """Train on ``g``. With ``holdout`` (a mask from ``holdout_pairs``) those node pairs are validation pairs:
        their true state is erased before training (it is in no loss, no noisy input A_t — drawn from Bern(ρ)
        there —, no encoder adjacency, and not in the density ρ), so ``validation_loss`` can judge them."""
        with torch_threads(1):
            return self._fit(g, lambda_f, lambda_s, epochs, seed, feat_mode, on_progress, holdout)

    def _fit(self, g, lambda_f, lambda_s, epochs, seed, feat_mode, on_progress, holdout=None):
        torch.manual_seed(seed)
        self.graph = g
        X0 = torch.from_numpy(g.X).float()
        A0 = torch.from_numpy(g.adjacency())
        self.s, self.y = torch.from_numpy(g.s), torch.from_numpy(g.y)
        self.cond = template(self.s, self.y, self.condition_on_s)
        n, d = X0.shape
        hold = pairs = None
        if holdout is None:
            rho = max(float(2 * g.m / (n * (n - 1))), 1e-4)
        else:
            hold = torch.from_numpy(np.asarray(holdout, bool))
            pairs = ~hold & ~torch.eye(n, dtype=torch.bool)
            A0 = torch.where(hold, torch.zeros_like(A0), A0)  # the held-out pairs' truth never enters the fit
            rho = max(float(A0[pairs].sum() / pairs.sum()), 1e-4)
        self.holdout = hold
        if self.backbone == "diffusion":
            self.model = GraphDiffusion(d, self.steps, rho)
            step = lambda: self.model.training_step(X0, A0, self.cond, hold, pairs)  # noqa: E731
        else:
            self.An = normalise(A0)
            self.model = VGAE(d, rho)
            step = lambda: self.model.training_step(X0, A0, self.cond, self.An, pairs)  # noqa: E731
        opt = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs, eta_min=self.lr / 10)
        self.model.train()
        fair = lambda_f > 0 or lambda_s > 0
        last = {"feat": 0.0, "struct": 0.0}
        for ep in range(epochs):
            l_gen, x0, logits = step()
            loss = l_gen
            fair_step = fair
            if fair and self.backbone == "diffusion":
                # The regulariser judges the denoiser on the states its own reverse process visits
                # (a trajectory refreshed every ``reg_every`` iterations), not on noised real graphs:
                # on those it learns to subtract the real graph's bias, which over-corrects once chained.
                if ep % self.reg_every == 0:
                    states = []
                    self.model.reverse_chain(n, d, self.cond, states=states)
                t_s, Xs, As = states[int(torch.randint(len(states), (1,)))]
                x0, logits = self.model.denoise(Xs, As, t_s, self.cond)
            if fair_step and lambda_f > 0:
                l_feat = feature_loss(x0, self.s, self.y, X0, self.y, feat_mode)
                loss = loss + lambda_f * l_feat
                last["feat"] = l_feat.item()
            if fair_step and lambda_s > 0:
                P = torch.sigmoid(logits) * (1 - torch.eye(n))
                l_struct = structure_loss(P, self.s, rho)
                loss = loss + lambda_s * l_struct
                last["struct"] = l_struct.item()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            opt.step()
            sched.step()
            if ep % 10 == 0 or ep == epochs - 1:
                rec = {"epoch": ep, "gen": l_gen.item(), **last}
                self.history.append(rec)
                if on_progress is not None:
                    on_progress((ep + 1) / epochs, f"epoch {ep + 1}/{epochs}: L_gen {rec['gen']:.3f}, "
                                f"L_feat {rec['feat']:.4f}, L_struct {rec['struct']:.4f}")
        self.model.eval()
        return self

    def sample(self, seed: int, match_edges: bool = True) -> Graph:
        """One synthetic graph G̃ = (Ã, X̃, s̃, ỹ); s̃, ỹ are the templates of the training nodes."""
        g = self.graph
        gen = torch.Generator().manual_seed(seed)
        m_target = g.m if match_edges else None
        with torch_threads(1):
            if self.backbone == "diffusion":
                X, edges = self.model.sample(g.n, g.X.shape[1], self.cond, gen, m_target)
            else:
                X, edges = self.model.sample(torch.from_numpy(g.X).float(), self.An, self.cond, gen, m_target)
        return Graph(edges.reshape(-1, 2), X.numpy().astype(np.float32), g.s.copy(), g.y.copy(),
                     g.feature_names, f"{g.name} (generated)", g.s_name, g.y_name)


def validation_loss(gen: FairGenerator, g: Graph, draws: int = 4, seed: int = 123) -> float:
    """Edge BCE per expected edge on the held-out pairs of a generator fitted with ``holdout`` on ``g``, with fixed
    noise draws. Diffusion: averaged over every step t = 1..T (``draws`` noisy graphs each, the held-out pairs drawn
    from the prior as in training, so the denoiser must infer them from the rest of the graph); VGAE: ``draws``
    posterior samples. Features are not scored: they are per node and no node is held out."""
    if gen.holdout is None:
        raise ValueError("the generator was fitted without held-out pairs")
    m, hold = gen.model, gen.holdout
    X0, A_true = torch.from_numpy(g.X).float(), torch.from_numpy(g.adjacency())
    A_seen = torch.where(hold, torch.zeros_like(A_true), A_true)
    losses = []
    with torch_threads(1), torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(seed)
        if isinstance(m, GraphDiffusion):
            for t in range(1, m.T + 1):
                for _ in range(draws):
                    Xt, At = m.noisy(X0, A_seen, t, hold)
                    _, logits = m.denoise(Xt, At, t, gen.cond)
                    losses.append(float(edge_bce(logits, A_true, m.rho, hold)))
        else:
            mu, lv = m.encode(X0, gen.An, gen.cond)
            for _ in range(draws):
                _, logits = m.decode(mu + (0.5 * lv).exp() * torch.randn_like(mu), gen.cond)
                losses.append(float(edge_bce(logits, A_true, m.rho, hold)))
    return float(np.mean(losses))


__all__ = ["FairGenerator", "GraphDiffusion", "VGAE", "edges_from_dense", "holdout_pairs", "validation_loss"]

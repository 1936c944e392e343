"""FDGen's fairness regulariser: L = L_gen + λ_f·L_feat + λ_s·L_struct (torch).

Both terms act on what the generator predicts for the clean graph — the
generated features X̂ and the edge probabilities P̂ = E[Ã] — so they can be
added to any backbone's training loss (the diffusion denoiser's x̂₀ / p̂₀, or
the VGAE decoder's output). The paper's exact formulas could not be read (see
docs/methods/fdgen.md); these are the spec's forms:

* L_feat (feature bias): each sensitive group's generated features must be
  distributed like the real population (MMD², mixture kernel: linear + three
  Gaussians); ``conditional`` does so within each class y, which keeps
  legitimate, label-explained group differences.
* L_struct (structural bias, in the spirit of FairWire's intra/inter-edge
  analysis): every group-pair block and every group's mean degree must match
  the real graph's overall density and mean degree.

Anchoring both terms to the real population (rather than only closing the
gap between groups) keeps them from being satisfied by a degenerate graph:
with the regulariser on the sampler's output, "all features equal" or "no
edges" would otherwise close every gap.
"""
from __future__ import annotations

import torch

BANDWIDTHS = (0.5, 1.0, 2.0)


def _kernel(u: torch.Tensor, v: torch.Tensor, med: torch.Tensor) -> torch.Tensor:
    dist = torch.cdist(u, v).pow(2)
    out = u @ v.T / u.shape[1]
    for bw in BANDWIDTHS:
        out = out + torch.exp(-dist / (2 * bw * bw * med))
    return out


def mmd2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Biased MMD² with the mixture kernel ⟨x, x'⟩/d + Σ_b exp(−‖x−x'‖² / (2 b² med²))."""
    if len(a) < 2 or len(b) < 2:
        return a.sum() * 0.0 + b.sum() * 0.0
    with torch.no_grad():
        D = torch.cdist(b, b).pow(2)
        med = D[D > 0].median() if (D > 0).any() else torch.tensor(1.0)
    return _kernel(a, a, med).mean() + _kernel(b, b, med).mean() - 2 * _kernel(a, b, med).mean()


def feature_loss(X: torch.Tensor, s: torch.Tensor, y: torch.Tensor, X_real: torch.Tensor, y_real: torch.Tensor,
                 mode: str = "unconditional") -> torch.Tensor:
    """L_feat = Σ_g MMD²(X̃ | s̃=g, X_real): every group's generated features look like the whole population
    (zero iff X̃ ⊥ s̃ and the population is kept). ``conditional``: Σ_{g,c} π_c MMD²(X̃ | s̃=g, ỹ=c, X_real | y=c),
    which removes the dependence on s within each class and keeps label-explained differences."""
    total = X.sum() * 0.0
    if mode == "unconditional":
        for g in (0, 1):
            total = total + mmd2(X[s == g], X_real)
        return total
    for c in (0, 1):
        w = (y == c).float().mean()
        for g in (0, 1):
            total = total + w * mmd2(X[(s == g) & (y == c)], X_real[y_real == c])
    return total


def structure_loss(P: torch.Tensor, s: torch.Tensor, rho: float) -> torch.Tensor:
    """L_struct on the expected adjacency P (n×n, symmetric, zero diagonal): every group-pair block
    (0-0, 0-1, 1-1) has the real graph's overall edge density ρ, and every group has the overall mean
    degree — i.e. edges independent of s (dyadic parity, FairWire's intra/inter gap) without shrinking
    the graph. Squared relative errors."""
    n = P.shape[0]
    off = 1.0 - torch.eye(n, dtype=P.dtype)
    g = [(s == 0).float(), (s == 1).float()]
    loss = P.sum() * 0.0
    for a, b in ((0, 0), (0, 1), (1, 1)):
        mask = g[a][:, None] * g[b][None, :] * off
        p = (P * mask).sum() / mask.sum().clamp_min(1)
        loss = loss + ((p - rho) / rho) ** 2
    deg = (P * off).sum(1)
    mean_deg = rho * (n - 1)
    for k in (0, 1):
        if g[k].sum() > 0:
            loss = loss + ((deg[g[k] > 0].mean() - mean_deg) / mean_deg) ** 2
    return loss

"""The paper's two-layer CNN with polynomial ReLU, batched over many models, with exact gradients.

For class j ∈ {−1, +1} (output index 0 and 1):

    F_j(W, x) = scale · Σ_{r=1..m} mean_p σ(⟨w_{j,r}, x^{(p)}⟩ + b_{j,r}),   σ(z) = max(0, z)^q

and the logits are (F_{−1}, F_{+1}); training minimises the cross-entropy by full-batch gradient
descent. The official script is a ``Conv1d`` with kernel = stride = patch length (so a matmul over
patches), bias on, q = 3 and scale 1; the MNIST script uses one patch (the whole image), no bias and
scale 1/m.

Many models are trained as one tensor program. Models are arranged in *groups* that share a data
set: data ``X`` has shape (G, N, P, d) and weights ``W`` (G, R, F, d) with F = 2m filters, the first m
of class −1. Gradients are written out by hand, which also gives the per-sample gradients EWC's
Fisher needs and the exact signal/noise coefficient updates of the paper's decomposition.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engines.common.threads import torch_threads


one_thread = torch_threads  # the name this package uses


@dataclass
class Net:
    """Weights of G×R models: ``W`` (G, R, F, d), ``b`` (G, R, F) or None."""

    W: torch.Tensor
    b: torch.Tensor | None
    q: float = 3.0
    scale: float = 1.0

    @property
    def m(self) -> int:
        return self.W.shape[2] // 2

    def clone(self) -> "Net":
        return Net(self.W.clone(), None if self.b is None else self.b.clone(), self.q, self.scale)

    def expand(self, r: int) -> "Net":
        """Repeat each model r times along the R axis (same weights: one start for several variants)."""
        W = self.W.repeat_interleave(r, dim=1)
        b = None if self.b is None else self.b.repeat_interleave(r, dim=1)
        return Net(W, b, self.q, self.scale)

    def regroup(self, g: int) -> "Net":
        """View the G·R models as g groups (e.g. per seed → per (seed, angle))."""
        G, R, F, d = self.W.shape
        W = self.W.reshape(g, G * R // g, F, d)
        b = None if self.b is None else self.b.reshape(g, G * R // g, F)
        return Net(W, b, self.q, self.scale)


def init_net(groups: int, models: int, m: int, d: int, gen: torch.Generator, bias: bool = True,
             q: float = 3.0, scale: float = 1.0) -> Net:
    """PyTorch's default Conv1d/Linear initialisation: U(−1/√d, 1/√d) for weights and bias."""
    bound = 1.0 / d ** 0.5
    W = (torch.rand(groups, models, 2 * m, d, generator=gen) * 2 - 1) * bound
    b = (torch.rand(groups, models, 2 * m, generator=gen) * 2 - 1) * bound if bias else None
    return Net(W, b, q, scale)


def preactivations(net: Net, X: torch.Tensor) -> torch.Tensor:
    """z = ⟨w_{j,r}, x^{(p)}⟩ + b: (G, N, P, R, F)."""
    G, N, P, d = X.shape
    _, R, F, _ = net.W.shape
    z = torch.bmm(X.reshape(G, N * P, d), net.W.reshape(G, R * F, d).transpose(1, 2)).reshape(G, N, P, R, F)
    if net.b is not None:
        z = z + net.b[:, None, None]
    return z


def hidden(net: Net, X: torch.Tensor) -> torch.Tensor:
    """Per-filter activations averaged over patches, mean_p σ(z): (G, N, R, F) (the 'feature' layer)."""
    return torch.relu(preactivations(net, X)).pow(net.q).mean(2)


def logits(net: Net, X: torch.Tensor) -> torch.Tensor:
    """(F_{−1}, F_{+1}): (G, N, R, 2)."""
    h = hidden(net, X)
    m = net.m
    return net.scale * torch.stack([h[..., :m].sum(-1), h[..., m:].sum(-1)], -1)


def error_rate(net: Net, X: torch.Tensor, y: torch.Tensor, chunk: int = 500) -> torch.Tensor:
    """Test error per model, (G, R); ``y`` (G, N) in {0, 1}. Chunked over samples to bound memory."""
    wrong = torch.zeros(net.W.shape[:2])
    for s in range(0, X.shape[1], chunk):
        o = logits(net, X[:, s:s + chunk])
        pred = (o[..., 1] > o[..., 0]).long()
        wrong += (pred != y[:, s:s + chunk, None]).float().sum(1)
    return wrong / X.shape[1]


@dataclass
class Backward:
    loss: torch.Tensor  # (G, R) mean cross-entropy
    gW: torch.Tensor  # (G, R, F, d) gradient of the mean loss
    gb: torch.Tensor | None  # (G, R, F)
    dz: torch.Tensor  # (G, N, P, R, F) ∂ℓ_i/∂z_{i,p} (per sample, not divided by N)


def _powers(a: torch.Tensor, q: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(a^q, a^(q−1)) with the cheap products for the script's q = 3."""
    if q == 3.0:
        a2 = a * a
        return a2 * a, a2
    a1 = a.pow(q - 1)
    return a1 * a, a1


def backward(net: Net, X: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None = None) -> Backward:
    """Cross-entropy and its exact gradient. ``y`` (G, N) in {0, 1} (index of class +1 is 1).

    ``w`` (G, N): optional 0/1 sample mask, so groups with different numbers of samples can share a
    batch (padding rows get weight 0); the loss is then the mean over the unmasked samples.

    With two logits, ∂ℓ/∂F_{+1} = p_{+1} − 1[y = +1] =: s and ∂ℓ/∂F_{−1} = −s, so filter f of class
    j_f gets ∂ℓ/∂h_f = scale·j_f·s and ∂ℓ/∂z_{p,f} = scale·j_f·s·(q/P)·max(0, z_{p,f})^{q−1}.
    """
    G, N, P, d = X.shape
    _, R, F, _ = net.W.shape
    m, q = net.m, net.q
    z = preactivations(net, X)
    a = torch.relu_(z)
    aq, aq1 = _powers(a, q)
    h = aq.mean(2).reshape(G, N, R, 2, m).sum(-1)  # (G, N, R, 2)
    margin = net.scale * (h[..., 1] - h[..., 0])  # F_{+1} − F_{−1}
    ypm = (2 * y - 1).to(margin.dtype)[:, :, None]  # ±1
    ell = torch.nn.functional.softplus(-ypm * margin)
    s = torch.sigmoid(margin) - (y[:, :, None] == 1).to(margin.dtype)  # (G, N, R)
    if w is None:
        loss = ell.mean(1)
    else:
        wn = (w / w.sum(1, keepdim=True)).to(margin.dtype)[:, :, None]  # (G, N, 1)
        loss = (ell * wn).sum(1)
        s = s * (wn * N)
    j = torch.cat([-torch.ones(m), torch.ones(m)]).to(margin.dtype) * (net.scale * q / P)
    dz = aq1 * (s[:, :, None, :, None] * j)  # (G, N, P, R, F)
    gW = torch.bmm(dz.reshape(G, N * P, R * F).transpose(1, 2), X.reshape(G, N * P, d)).reshape(G, R, F, d) / N
    gb = dz.sum((1, 2)) / N if net.b is not None else None
    return Backward(loss, gW, gb, dz)


def fisher_diagonal(net: Net, X: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Empirical Fisher of EWC, Σ_i (∂ log p(y_i|x_i)/∂θ)², summed over the samples.

    The official script divides the summed squares by its number of mini-batches, which is one
    (the whole task-1 training set), so its Fisher is this sum; λ = 10⁶ refers to it.
    """
    bw = backward(net, X, y)
    G, N, P, d = X.shape
    _, R, F, _ = net.W.shape
    # per-sample gradient of ℓ_i w.r.t. w_f: Σ_p dz_{i,p,f} x_{i,p}
    per = torch.einsum("gnprf,gnpd->gnrfd", bw.dz, X)
    fW = per.pow(2).sum(1)
    fb = bw.dz.sum(2).pow(2).sum(1) if net.b is not None else None
    return fW, fb

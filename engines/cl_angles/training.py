"""Full-batch gradient descent on one task for many models at once, with EWC and the γ/ρ trace.

EWC (Kirkpatrick et al.) adds (λ/2)·Σ F·(θ − θ*)² with the Fisher F and weights θ* of task 1;
λ is per model, so plain and EWC models train in the same batch (λ = 0 for the plain ones). The
penalty is applied by an implicit (proximal) step, θ ← (θ − η·∇ℓ + ηλF·θ*) / (1 + ηλF): it equals the
script's explicit step while ηλF ≪ 1 and, unlike it, does not diverge when ηλ·max F > 2 (which
happens with λ = 10⁶ after 1500 task-1 epochs, where max F ≈ 3·10⁻⁴).

The trace is the paper's signal–noise decomposition (Sec. 3): gradient descent only ever adds
multiples of the training patches to a filter, so

    w_{j,r}^{(t)} = w_{j,r}^{(0)} + j·Σ_k γ_{j,r,k}^{(t)}·μ_k/‖μ_k‖² + Σ_i ρ_{j,r,i}^{(t)}·ξ_i/‖ξ_i‖²

holds exactly, with the updates
    γ_{j,r,k} ← γ_{j,r,k} − j·(η/n)·‖μ_k‖²·Σ_{i ∈ task k} ∂ℓ_i/∂z_{i,signal}·y_i
    ρ_{j,r,i} ← ρ_{j,r,i} − (η/n)·‖ξ_i‖²·∂ℓ_i/∂z_{i,noise}
(γ = signal learned, ρ = noise memorised). It is recorded for two-patch data only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from .network import Net, backward, error_rate


@dataclass
class EWC:
    lam: torch.Tensor  # (G, R) λ per model, 0 = no penalty
    FW: torch.Tensor  # (G, R, F, d)
    Fb: torch.Tensor | None
    W_star: torch.Tensor
    b_star: torch.Tensor | None


@dataclass
class SampleInfo:
    """Per-sample facts the γ/ρ trace needs (two-patch data)."""

    task: torch.Tensor  # (G, N) long: 0 = task 1, 1 = task 2
    sig: torch.Tensor  # (G, N) long: index of the signal patch
    y: torch.Tensor  # (G, N) ±1
    xi_sq: torch.Tensor  # (G, N) ‖ξ_i‖²
    mu_sq: tuple[float, float]  # ‖μ₁‖², ‖μ₂‖²


@dataclass
class History:
    epochs: list[int] = field(default_factory=list)
    loss: list[torch.Tensor] = field(default_factory=list)  # (G, R) each
    errors: dict[str, list[torch.Tensor]] = field(default_factory=dict)  # name -> (G', R') each
    gamma: list[torch.Tensor] = field(default_factory=list)  # (G, R, F, 2) each
    rho_max: list[torch.Tensor] = field(default_factory=list)  # (G, R, F): max_i ρ_{j,r,i}
    rho_min: list[torch.Tensor] = field(default_factory=list)  # (G, R, F): min_i ρ_{j,r,i}
    rho: torch.Tensor | None = None  # (G, R, F, N) all ρ_{j,r,i} at the end
    weights: list = field(default_factory=list)  # Net snapshots at the recorded epochs (if asked)


def _eval(net: Net, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Test error of every model on a test set shared by groups of models (X has G' ≤ G groups)."""
    g = X.shape[0]
    G, R = net.W.shape[:2]
    return error_rate(net.regroup(g) if g != G else net, X, y).reshape(G, R)


def gradient_descent(
    net: Net,
    X: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    lr: float,
    ewc: EWC | None = None,
    info: SampleInfo | None = None,
    evals: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    record: list[int] | None = None,
    on_progress: Callable[[float], None] | None = None,
    w: torch.Tensor | None = None,
    snapshots: bool = False,
) -> History:
    """Train ``net`` in place on (X, y) — (G, N, P, d), (G, N) in {0, 1} — for ``epochs`` full-batch steps.

    ``evals``: test sets {name: (X', y')} with X' of G' groups dividing the models (per seed, per
    (seed, angle), ...); recorded with the loss and the trace at the epochs in ``record`` and at the
    end. ``w``: optional 0/1 sample mask (G, N) for groups of unequal size.
    """
    G, N = y.shape
    R, F = net.W.shape[1], net.W.shape[2]
    m = F // 2
    hist = History()
    evals = evals or {}
    for k in evals:
        hist.errors[k] = []
    dt = X.dtype
    acc = None  # Σ over past epochs of ∂ℓ_i/∂z_{i,p}: γ and ρ are linear in it (η is constant)
    if info is not None:
        j = torch.cat([-torch.ones(m), torch.ones(m)]).to(dt)  # class of each filter
        onehot = torch.nn.functional.one_hot(info.task, 2).to(dt)  # (G, N, 2)
        mu_sq = torch.tensor(info.mu_sq, dtype=dt)
        sig_idx = info.sig[:, :, None, None, None].expand(G, N, 1, R, F)
        acc = torch.zeros(G, N, X.shape[2], R, F, dtype=dt)
    if ewc is not None:  # the proximal step's constants
        cW = lr * ewc.lam[..., None, None] * ewc.FW
        invW, cW_star = 1 / (1 + cW), cW * ewc.W_star
        if net.b is not None:
            cb = lr * ewc.lam[..., None] * ewc.Fb
            invb, cb_star = 1 / (1 + cb), cb * ewc.b_star
    steps_report = max(1, epochs // 50)
    marks = set(record or ())

    def trace() -> tuple[torch.Tensor, torch.Tensor]:
        """γ (G, R, F, 2) and ρ (G, R, F, N) from the accumulated per-sample gradients."""
        a_sig = acc.gather(2, sig_idx).squeeze(2)  # (G, N, R, F)
        a_noise = acc.gather(2, 1 - sig_idx).squeeze(2)
        s = torch.einsum("gnrf,gn,gnk->grfk", a_sig, info.y, onehot)  # Σ_{i ∈ task k} y_i·Σ_t dz
        gamma = -j[None, None, :, None] * (lr / N) * mu_sq * s
        rho = -(lr / N) * info.xi_sq[:, None, None, :] * a_noise.permute(0, 2, 3, 1)
        return gamma, rho

    for e in range(epochs + 1):
        rec = e == epochs or e in marks
        bw = backward(net, X, y, w)
        if rec:
            hist.epochs.append(e)
            hist.loss.append(bw.loss)
            if snapshots:
                hist.weights.append(net.clone())
            for k, (Xe, ye) in evals.items():
                hist.errors[k].append(_eval(net, Xe, ye))
            if info is not None:
                gamma, rho = trace()
                hist.gamma.append(gamma)
                hist.rho_max.append(rho.max(-1).values)
                hist.rho_min.append(rho.min(-1).values)
                hist.rho = rho
        if e == epochs:
            break
        if acc is not None:
            acc += bw.dz
        if ewc is None:
            net.W.sub_(bw.gW, alpha=lr)
            if net.b is not None:
                net.b.sub_(bw.gb, alpha=lr)
        else:  # gradient step on the cross-entropy, implicit (proximal) step on the EWC penalty
            net.W.copy_((net.W - lr * bw.gW + cW_star) * invW)
            if net.b is not None:
                net.b.copy_((net.b - lr * bw.gb + cb_star) * invb)
        if on_progress is not None and e % steps_report == 0:
            on_progress(e / epochs)
    return hist

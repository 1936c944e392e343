"""Objectives the workers minimise, with per-coordinate heavy-tailed gradient noise (spec §4).

Every task exposes stochastic gradients vectorised over a leading replica axis (R configurations of one
method run side by side on common random numbers) and over the workers a process simulates:
``grads(W[R, n, d], workers, rngs) -> [R, n, d]``. Each worker owns one numpy ``Generator`` and draws, per
inner step, its minibatch and then its noise vector, so a gloo rank holding worker i reproduces the
simulator's draws exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from engines.common.settings import get_settings

from .params import ProblemParams


def draw_noise(rng: np.random.Generator, kind: str, nu: float, size: int) -> np.ndarray:
    """ξ ~ t_ν (Cauchy = t₁), standard normal, or zero, per coordinate."""
    if kind == "cauchy":
        return rng.standard_cauchy(size)
    if kind == "student_t":
        return rng.standard_t(nu, size)
    if kind == "gaussian":
        return rng.standard_normal(size)
    return np.zeros(size)


def worker_rngs(seed: int, workers: list[int]) -> list[np.random.Generator]:
    return [np.random.default_rng([seed, int(i), 7]) for i in workers]


@dataclass
class Task:
    name: str
    dim: int
    n_workers: int
    p: ProblemParams
    x0: torch.Tensor
    dtype: torch.dtype = torch.float64
    f_star: float = 0.0  # min of the global objective (0 when unknown: report the loss itself)
    noise_unit: float = 1.0  # s = 1 means noise of the median |∇F_i(x₀)| coordinate
    has_optimum: bool = True
    extra: dict = field(default_factory=dict)

    # -- per-task hooks ------------------------------------------------------------------------------
    def clean_grads(self, W: torch.Tensor, workers: list[int], idx: list[np.ndarray]) -> torch.Tensor:
        raise NotImplementedError

    def loss(self, X: torch.Tensor) -> np.ndarray:
        """Global objective F(x) = (1/N) Σ F_i(x) for each row of X [R, d]."""
        raise NotImplementedError

    def metrics(self, x: torch.Tensor) -> dict[str, float]:
        return {}

    def n_samples(self, i: int) -> int:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------------
    def grads(self, W: torch.Tensor, workers: list[int], rngs: list[np.random.Generator]) -> torch.Tensor:
        idx, noise = [], []
        for i, rng in zip(workers, rngs):
            idx.append(rng.integers(0, self.n_samples(i), size=min(self.p.batch, self.n_samples(i))))
            noise.append(draw_noise(rng, self.p.noise, self.p.tail_index, self.dim))
        g = self.clean_grads(W, workers, idx)
        if self.p.noise != "none" and self.p.noise_scale > 0:
            xi = torch.as_tensor(np.stack(noise), dtype=self.dtype) * (self.p.noise_scale * self.noise_unit)
            g = g + xi.unsqueeze(0)
        return g

    def excess(self, X: torch.Tensor) -> np.ndarray:
        return self.loss(X) - self.f_star

    def full_grads(self, x: torch.Tensor) -> torch.Tensor:
        """∇F_i(x) for every worker, on all of its data: [N, d]."""
        W = x.reshape(1, 1, -1).expand(1, self.n_workers, -1)
        idx = [np.arange(self.n_samples(i)) for i in range(self.n_workers)]
        return self.clean_grads(W, list(range(self.n_workers)), idx)[0]


def _lbfgs_min(fun_grad, x0: np.ndarray) -> float:
    from scipy.optimize import minimize

    r = minimize(fun_grad, x0, jac=True, method="L-BFGS-B", options=dict(maxiter=5000, gtol=1e-10, ftol=1e-15))
    return float(r.fun)


class _FeatureTask(Task):
    """Shared code of the linear, logistic and softmax tasks: per-worker design matrices A_i and targets."""

    A: list[torch.Tensor]
    Y: list[torch.Tensor]

    def n_samples(self, i: int) -> int:
        return self.A[i].shape[0]

    def _batch(self, workers, idx):
        Ab = torch.stack([self.A[i][j] for i, j in zip(workers, idx)])  # [n, b, f]
        Yb = torch.stack([self.Y[i][j] for i, j in zip(workers, idx)])
        return Ab, Yb

    def _stacked(self):
        if "A_all" not in self.extra:
            self.extra["A_all"] = torch.cat(self.A)
            self.extra["Y_all"] = torch.cat(self.Y)
        return self.extra["A_all"], self.extra["Y_all"]


class LinearTask(_FeatureTask):
    """F_i(x) = ‖A_i x − y_i‖² / (2 n_i), anisotropic columns (scales log-uniform in [0.1, 10])."""

    def clean_grads(self, W, workers, idx):
        Ab, Yb = self._batch(workers, idx)
        r = torch.einsum("nbd,rnd->rnb", Ab, W) - Yb.unsqueeze(0)
        return torch.einsum("nbd,rnb->rnd", Ab, r) / Ab.shape[1]

    def loss(self, X):
        A, Y = self._stacked()
        r = X @ A.T - Y
        return (0.5 * (r**2).mean(-1)).numpy()


class LogisticTask(_FeatureTask):
    """F_i(x) = mean log(1 + exp(−y a·x)) + λ‖x‖²/2 with heavy-tailed features and 10% label flips."""

    lam = 1e-3

    def clean_grads(self, W, workers, idx):
        Ab, Yb = self._batch(workers, idx)
        m = Yb.unsqueeze(0) * torch.einsum("nbd,rnd->rnb", Ab, W)
        s = -Yb.unsqueeze(0) * torch.sigmoid(-m)
        return torch.einsum("nbd,rnb->rnd", Ab, s) / Ab.shape[1] + self.lam * W

    def loss(self, X):
        A, Y = self._stacked()
        m = Y * (X @ A.T)
        return (torch.nn.functional.softplus(-m).mean(-1) + 0.5 * self.lam * (X**2).sum(-1)).numpy()


class DigitsTask(_FeatureTask):
    """Softmax regression on scikit-learn's 8×8 digits (64 pixels + bias → 10 classes), λ‖W‖²/2."""

    lam = 1e-3
    C = 10

    def _logits(self, A, W):  # A [.., b, 65], W [.., 650]
        return A @ W.reshape(*W.shape[:-1], 65, self.C)

    def clean_grads(self, W, workers, idx):
        Ab, Yb = self._batch(workers, idx)  # Yb [n, b] class ids
        R, n, _ = W.shape
        Wm = W.reshape(R, n, 65, self.C)
        P = torch.softmax(torch.einsum("nbf,rnfc->rnbc", Ab, Wm), -1)
        P = P - torch.nn.functional.one_hot(Yb, self.C).to(P.dtype).unsqueeze(0)
        G = torch.einsum("nbf,rnbc->rnfc", Ab, P) / Ab.shape[1]
        return G.reshape(R, n, -1) + self.lam * W

    def loss(self, X):
        A, Y = self._stacked()
        Z = torch.einsum("bf,rfc->rbc", A, X.reshape(-1, 65, self.C))
        ce = torch.nn.functional.cross_entropy(Z.permute(0, 2, 1), Y.unsqueeze(0).expand(X.shape[0], -1),
                                               reduction="none").mean(-1)
        return (ce + 0.5 * self.lam * (X**2).sum(-1)).numpy()

    def metrics(self, x):
        At, Yt = self.extra["test"]
        pred = (At @ x.reshape(65, self.C)).argmax(-1)
        return {"test_accuracy": float((pred == Yt).double().mean())}


def _sizes(task: str) -> dict:
    test = get_settings().profile == "test"
    if task in ("linear", "logistic"):
        return dict(d=20, n=64) if test else dict(d=100, n=512)
    return {}


def _finish_optimum(task: _FeatureTask, dim: int) -> None:
    A, Y = task._stacked()
    An, Yn = A.numpy(), Y.numpy()
    if isinstance(task, LinearTask):
        xs, *_ = np.linalg.lstsq(An, Yn, rcond=None)
        task.f_star = float(task.loss(torch.as_tensor(xs)[None])[0])
        task.extra["x_star"] = xs
        return
    Xt = torch.zeros(1, dim, dtype=torch.float64)

    def fg(x):
        t = torch.as_tensor(x, dtype=torch.float64)[None].requires_grad_(True)
        f = task.loss_t(t)
        (g,) = torch.autograd.grad(f.sum(), t)
        return float(f.detach()), g[0].numpy()

    task.f_star = _lbfgs_min(fg, Xt[0].numpy())


def _loss_t(self, X):
    """Differentiable copy of ``loss`` (L-BFGS reference optimum)."""
    if isinstance(self, LogisticTask):
        A, Y = self._stacked()
        return torch.nn.functional.softplus(-(Y * (X @ A.T))).mean(-1) + 0.5 * self.lam * (X**2).sum(-1)
    A, Y = self._stacked()
    Z = torch.einsum("bf,rfc->rbc", A, X.reshape(-1, 65, self.C))
    ce = torch.nn.functional.cross_entropy(Z.permute(0, 2, 1), Y.unsqueeze(0).expand(X.shape[0], -1),
                                           reduction="none").mean(-1)
    return ce + 0.5 * self.lam * (X**2).sum(-1)


LogisticTask.loss_t = _loss_t
DigitsTask.loss_t = _loss_t


def _noise_unit(task: Task) -> float:
    g = task.full_grads(task.x0).abs()
    return float(torch.median(g[g > 0])) if (g > 0).any() else 1.0


def make_task(p: ProblemParams, optimum: bool = True) -> Task:
    """Build the task deterministically from the problem parameters (same data in every process).

    ``optimum=False`` skips the reference minimum F* (gloo ranks do not need it)."""
    rng = np.random.default_rng([p.seed, 12345])
    N = p.workers
    if p.task in ("linear", "logistic"):
        s = _sizes(p.task)
        d, n = s["d"], s["n"]
        col = 10.0 ** rng.uniform(-1, 1, d)
        x_true = rng.standard_normal(d)
        A, Y = [], []
        for _ in range(N):
            shift = p.non_iid * rng.standard_normal(d)
            subset = rng.random(d) < 0.5 * p.non_iid  # columns this worker sees at a different scale
            scale = np.where(subset, 10.0 ** rng.uniform(-0.5, 0.5, d), 1.0)
            Z = rng.standard_t(3.0, (n, d)) if p.task == "logistic" else rng.standard_normal((n, d))
            Ai = (Z + shift) * col * scale
            if p.task == "linear":
                yi = Ai @ x_true + 0.1 * rng.standard_normal(n)
            else:
                Ai = Ai / np.sqrt(d)
                prob = 1 / (1 + np.exp(-(Ai @ x_true)))
                yi = np.where(rng.random(n) < prob, 1.0, -1.0)
                yi = np.where(rng.random(n) < 0.1, -yi, yi)  # 10% label flips
            A.append(torch.as_tensor(Ai))
            Y.append(torch.as_tensor(yi))
        cls = LinearTask if p.task == "linear" else LogisticTask
        task = cls(p.task, d, N, p, torch.zeros(d, dtype=torch.float64))
        task.A, task.Y = A, Y
        if optimum:
            _finish_optimum(task, d)
    elif p.task == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        perm = rng.permutation(len(y))
        X = np.hstack([X / 16.0, np.ones((len(y), 1))])[perm]
        y = y[perm]
        n_test = len(y) // 5
        Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
        per = 64 if get_settings().profile == "test" else len(ytr) // N
        A, Y = [], []
        for i in range(N):
            home = np.isin(ytr, [(2 * i) % 10, (2 * i + 1) % 10])
            w = np.where(home, 1.0 + 20.0 * p.non_iid, 1.0)
            j = rng.choice(len(ytr), size=per, replace=False, p=w / w.sum())
            A.append(torch.as_tensor(Xtr[j]))
            Y.append(torch.as_tensor(ytr[j]))
        dim = 65 * 10
        task = DigitsTask("digits", dim, N, p, torch.zeros(dim, dtype=torch.float64))
        task.A, task.Y = A, Y
        task.extra["test"] = (torch.as_tensor(Xte), torch.as_tensor(yte))
        if optimum:
            _finish_optimum(task, dim)
    elif p.task == "transformer":
        from .transformer import make_transformer_task

        return make_transformer_task(p, rng)
    else:  # pragma: no cover - guarded by the Literal
        raise ValueError(f"unknown task {p.task!r}")
    task.noise_unit = _noise_unit(task)
    return task


def probe_scale(task: Task, seed: int) -> float:
    """Auto-threshold scale: median |g| of one stochastic gradient per worker at x₀, on a separate stream."""
    rngs = [np.random.default_rng([seed, i, 99]) for i in range(task.n_workers)]
    W = task.x0.reshape(1, 1, -1).expand(1, task.n_workers, -1).contiguous()
    g = task.grads(W, list(range(task.n_workers)), rngs).abs()
    return float(torch.median(g[g > 0])) if (g > 0).any() else 1.0

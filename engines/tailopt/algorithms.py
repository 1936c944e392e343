"""The TailOPT framework (Algorithm 1) and its baselines as pure functions on flat parameter tensors.

One round t: broadcast x_t; every worker runs z inner steps x ← x − η_ℓ·Inner(g); it sends
Δ^i = x^i_{t,z} − x_t; the server averages Δ_t = (1/N)Σ Δ^i and applies the outer optimiser.
All tensors carry a leading replica axis R (several hyper-parameter settings of one method on common
random numbers); workers add an axis n (the workers this process simulates: all N in the simulator,
one per gloo rank). The same ``run_method`` drives both engines through a ``Comm`` object, so they agree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .biclip import bi_clip, clip_fractions, l2_clip, threshold_schedule
from .params import METHOD_LABELS, HyperParams
from .tasks import Task, probe_scale, worker_rngs


@dataclass(frozen=True)
class MethodDef:
    inner: str  # sgd | l2clip | biclip | adam | adam_avg
    outer: str  # avg | adam | yogi | adagrad | rmsprop | biclip | nesterov
    tunes: tuple[str, ...]  # hyper-parameters searched when tuning


METHODS: dict[str, MethodDef] = {
    "fedavg": MethodDef("sgd", "avg", ("lr_in",)),
    "fedavg_clip": MethodDef("l2clip", "avg", ("lr_in", "u_in")),
    "fedadam": MethodDef("sgd", "adam", ("lr_in", "lr_out")),
    "fedyogi": MethodDef("sgd", "yogi", ("lr_in", "lr_out")),
    "fedadagrad": MethodDef("sgd", "adagrad", ("lr_in", "lr_out")),
    "local_adam": MethodDef("adam_avg", "avg", ("lr_in",)),
    "adam2": MethodDef("adam", "adam", ("lr_in", "lr_out")),
    "diloco": MethodDef("adam", "nesterov", ("lr_in", "lr_out")),
    "adam_tailopt": MethodDef("biclip", "adam", ("lr_in", "lr_out", "u_in")),
    "adagrad_tailopt": MethodDef("biclip", "adagrad", ("lr_in", "lr_out", "u_in")),
    "rmsprop_tailopt": MethodDef("biclip", "rmsprop", ("lr_in", "lr_out", "u_in")),
    "bi2clip": MethodDef("biclip", "biclip", ("lr_in", "lr_out", "u_in", "u_out")),
}
NESTEROV_MU = 0.9
DIVERGED = 1e12  # a loss above this (or NaN/inf) marks the run diverged


class Comm:
    """What the engines differ in: which workers live here and how deltas are averaged."""

    workers: list[int]
    n_total: int

    def __init__(self):
        self.floats_sent = 0  # floats one worker sent to the server, summed over rounds (per replica)

    def mean(self, t: torch.Tensor) -> torch.Tensor:  # [R, n, ...] → [R, ...] averaged over all N workers
        raise NotImplementedError

    def _count(self, t: torch.Tensor) -> None:
        self.floats_sent += t[0, 0].numel()


class LocalComm(Comm):
    def __init__(self, n: int):
        super().__init__()
        self.workers, self.n_total = list(range(n)), n

    def mean(self, t):
        self._count(t)
        return t.mean(1)


def _stack_hp(hps: list[HyperParams], key: str, dtype) -> torch.Tensor:
    return torch.tensor([getattr(h, key) for h in hps], dtype=dtype)


@dataclass
class Resolved:
    """Per-replica hyper-parameters as [R] tensors, thresholds made absolute."""

    lr_in: torch.Tensor
    lr_out: torch.Tensor
    d_in: torch.Tensor
    u_in: torch.Tensor
    d_out: torch.Tensor
    u_out: torch.Tensor
    gamma: float
    mu: float
    beta1: float
    beta2: float
    eps: float


def resolve(hps: list[HyperParams], scale: float, z: int, dim: int, dtype) -> Resolved:
    """Auto thresholds: inner (d, u)·s with s the probe median |g|; outer (d̃, ũ)·η_ℓ·z·s, the size of Δ
    when every step moved a coordinate by η_ℓ·s; L2 clip level u·s·√dim."""
    h0 = hps[0]
    S = lambda k: _stack_hp(hps, k, dtype)  # noqa: E731
    auto = torch.tensor([float(h.auto_thresholds) for h in hps], dtype=dtype)
    one = torch.ones_like(auto)
    s_in = torch.where(auto > 0, scale * one, one)
    s_out = torch.where(auto > 0, S("lr_in") * z * scale, one)
    return Resolved(S("lr_in"), S("lr_out"), S("d_in") * s_in, S("u_in") * s_in, S("d_out") * s_out,
                    S("u_out") * s_out, h0.gamma, h0.server_momentum, h0.beta1, h0.beta2, h0.eps)


@dataclass
class Trace:
    loss: np.ndarray  # [R, T+1] global objective per round
    diverged_at: list[int | None]
    clip_in: np.ndarray  # [R, T, 2] fraction clipped down / raised up per inner step (BiClip / L2 clip)
    clip_out: np.ndarray  # [R, T, 2]
    x: torch.Tensor  # [R, d] final parameters
    state_worker: float  # extra optimiser floats per parameter per worker (counted from the state tensors)
    state_server: float
    floats_per_round: float  # floats one worker sends per round (counted in Comm.mean)
    scale: float


def run_method(task: Task, method: str, hps: list[HyperParams], rounds: int, comm: Comm, seed: int,
               on_round: Callable[[int, np.ndarray], None] | None = None) -> Trace:
    """Algorithm 1 for ``len(hps)`` replicas of ``method``; ``on_round(t, loss[R])`` may raise to stop."""
    md = METHODS[method]
    z, dim, dt = task.p.local_steps, task.dim, task.dtype
    scale = probe_scale(task, seed)
    h = resolve(hps, scale, z, dim, dt)
    R, n = len(hps), len(comm.workers)
    rngs = worker_rngs(seed, comm.workers)
    X = task.x0.to(dt).reshape(1, dim).repeat(R, 1)
    inner: dict[str, torch.Tensor] = {}
    if md.inner in ("adam", "adam_avg"):
        inner = {"m": torch.zeros(R, n, dim, dtype=dt), "v": torch.zeros(R, n, dim, dtype=dt)}
    outer = outer_state(md.outer, h, R, dim, dt)

    losses = np.full((R, rounds + 1), np.nan)
    losses[:, 0] = task.loss(X)
    clip_in = np.zeros((R, rounds, 2))
    clip_out = np.zeros((R, rounds, 2))
    diverged: list[int | None] = [None] * R
    step = 0
    for t in range(rounds):
        W, cf, step = local_round(task, md.inner, h, X, comm.workers, rngs, t, inner, step)
        clip_in[:, t] = (cf / z).numpy()
        delta = comm.mean(W - X.unsqueeze(1))  # one d-float message per worker
        if md.inner == "adam_avg":  # local Adam with averaged moments: 2d more floats each way
            inner["m"] = comm.mean(inner["m"]).unsqueeze(1).repeat(1, n, 1)
            inner["v"] = comm.mean(inner["v"]).unsqueeze(1).repeat(1, n, 1)
        X = outer_step(md.outer, h, X, delta, outer, t, clip_out[:, t])
        losses[:, t + 1] = task.loss(X)
        for r in range(R):
            if diverged[r] is None and not (np.isfinite(losses[r, t + 1]) and losses[r, t + 1] < DIVERGED):
                diverged[r] = t + 1
                X[r] = float("nan")
        if on_round is not None:
            on_round(t + 1, losses[:, t + 1])
    st_w = sum(v[0, 0].numel() for v in inner.values()) / dim
    st_s = sum(v[0].numel() for v in outer.values()) / dim
    return Trace(losses, diverged, clip_in, clip_out, X, st_w, st_s, comm.floats_sent / max(rounds, 1), scale)


def local_round(task: Task, kind: str, h: Resolved, X: torch.Tensor, workers: list[int],
                rngs: list[np.random.Generator], t: int, inner: dict, step: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """One round's z inner steps of the workers ``workers`` from x_t = X [R, d] (Algorithm 1, lines 4-7).

    Returns their iterates W [R, n, d], the clip fractions [R, 2] summed over the z steps, and the inner-step
    counter (local Adam's bias correction). ``inner`` holds local Adam's moments [R, n, d] (updated in place);
    each worker draws from its own generator in ``rngs``, so any subset of workers gives the same numbers."""
    R, n, dt, z = X.shape[0], len(workers), task.dtype, task.p.local_steps
    col = lambda v: v.reshape(R, 1, 1)  # noqa: E731
    d_t, u_t = threshold_schedule(h.d_in, h.u_in, t, h.gamma)
    W = X.unsqueeze(1).repeat(1, n, 1)
    cf = torch.zeros(R, 2, dtype=dt)
    for _k in range(z):
        g = task.grads(W, workers, rngs)
        step += 1
        if kind == "sgd":
            upd = g
        elif kind == "l2clip":
            upd = l2_clip(g, col(u_t))
            cf[:, 0] += (g.norm(dim=-1) > u_t.reshape(R, 1)).to(dt).mean(1)
        elif kind == "biclip":
            upd = bi_clip(g, col(d_t), col(u_t))
            down, up = clip_fractions(g, col(d_t), col(u_t))
            cf += torch.stack([down.mean(1), up.mean(1)], -1)
        else:  # Adam on the worker, bias-corrected, step counter = inner steps so far
            inner["m"].mul_(h.beta1).add_(g, alpha=1 - h.beta1)
            inner["v"].mul_(h.beta2).addcmul_(g, g, value=1 - h.beta2)
            mh = inner["m"] / (1 - h.beta1**step)
            vh = inner["v"] / (1 - h.beta2**step)
            upd = mh / (vh.sqrt() + h.eps)
        W = W - col(h.lr_in) * upd
    return W, cf, step


def outer_state(kind: str, h: Resolved, R: int, dim: int, dt) -> dict[str, torch.Tensor]:
    """The server optimiser's state tensors [R, d] (empty for FedAvg and Bi²Clip without momentum)."""
    if kind in ("adam", "yogi"):
        return {"m": torch.zeros(R, dim, dtype=dt), "v": torch.zeros(R, dim, dtype=dt)}
    if kind in ("adagrad", "rmsprop"):
        return {"v": torch.zeros(R, dim, dtype=dt)}
    if kind == "nesterov" or (kind == "biclip" and h.mu > 0):
        return {"m": torch.zeros(R, dim, dtype=dt)}
    return {}


def outer_step(kind: str, h: Resolved, X: torch.Tensor, delta: torch.Tensor, st: dict, t: int,
               clip_out: np.ndarray) -> torch.Tensor:
    """Server update from the averaged delta Δ_t (a descent direction: x + Δ is the workers' average)."""
    R = X.shape[0]
    lr = h.lr_out.reshape(R, 1)
    if kind == "avg":  # FedAvg: x_{t+1} = x_t + Δ_t (server lr 1)
        return X + delta
    if kind in ("adam", "yogi", "adagrad", "rmsprop"):
        if kind in ("adam", "yogi"):
            st["m"].mul_(h.beta1).add_(delta, alpha=1 - h.beta1)
        d2 = delta * delta
        if kind == "adam" or kind == "rmsprop":
            st["v"].mul_(h.beta2).add_(d2, alpha=1 - h.beta2)
        elif kind == "yogi":
            st["v"].sub_((1 - h.beta2) * d2 * torch.sign(st["v"] - d2))
        else:
            st["v"].add_(d2)
        num = st["m"] if kind in ("adam", "yogi") else delta
        return X + lr * num / (st["v"].sqrt() + h.eps)
    if kind == "nesterov":  # DiLoCo's outer SGD with Nesterov momentum on the pseudo-gradient −Δ
        st["m"].mul_(NESTEROV_MU).add_(delta)
        return X + lr * (delta + NESTEROV_MU * st["m"])
    if kind == "biclip":  # Bi²Clip: x_{t+1} = x_t + η·BiClip_{ũ_t, d̃_t}(Δ_t)
        d_t, u_t = threshold_schedule(h.d_out, h.u_out, t, h.gamma)
        v = delta
        if "m" in st:
            st["m"].mul_(h.mu).add_(delta, alpha=1 - h.mu)
            v = st["m"]
        down, up = clip_fractions(v, d_t.reshape(R, 1), u_t.reshape(R, 1))
        clip_out[:] = torch.stack([down, up], -1).numpy()
        return X + lr * bi_clip(v, d_t.reshape(R, 1), u_t.reshape(R, 1))
    raise ValueError(f"unknown outer optimiser {kind!r}")


def label(method: str) -> str:
    return METHOD_LABELS[method]

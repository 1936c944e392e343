"""Task 1, then task 2 at many angles: CL, Replay, EWC and EWC-Replay as one batched program.

This is the official ``synthetic/cl_cnn_replay_ewc.py`` protocol: train on task 1 from a random
start; from the task-1 weights, train on task 2 whose signal μ₂ is μ₁ rotated by θ, either on the
task-2 set alone (CL), on (1 − f) of it plus f·n task-1 samples (Replay, f = 10 %), with the EWC
penalty (λ = 10⁶), or both; report the task-1 test error ("Forgetting") after task 2.

One seed = one task-1 data set, start and task-1 run, shared by every angle and variant of that
seed (the script trains task 1 once as well). Models are grouped (seed, angle, data set) × (λ).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch

from . import signal_noise as sn
from .network import Net, error_rate, fisher_diagonal, hidden, init_net
from .selection import select
from .training import EWC, History, SampleInfo, gradient_descent

VARIANTS: tuple[str, ...] = ("cl", "replay", "ewc", "replay_ewc")
VARIANT_LABELS = {"cl": "CL", "replay": "Replay", "ewc": "EWC", "replay_ewc": "EWC-Replay"}


@dataclass(frozen=True)
class Setting:
    """The synthetic setting; defaults are the official script's."""

    d: int = 100  # patch length
    m: int = 10  # filters per class
    mu_norm: float = 8.0  # ‖μ‖ (bmu)
    noise_std: float = 1.0  # σ of ξ
    n_train: int = 100
    n_test: int = 1000
    lr: float = 0.01
    epochs1: int = 3000
    epochs2: int = 3000
    buffer_frac: float = 0.1  # share of task-1 samples in the replay training set
    selector: str = "random"
    ewc_lambda: float = 1e6
    bias: bool = True  # Conv1d's default in the script; the theory's filters have none
    q: float = 3.0


@dataclass
class TwoTaskRun:
    angles: list[float]
    variants: list[str]
    forgetting: np.ndarray  # (S, A, V) task-1 test error after task 2
    task2_error: np.ndarray  # (S, A, V) task-2 test error after task 2
    task1_error_before: np.ndarray  # (S,) task-1 test error after task 1
    buffer_idx: np.ndarray  # (S, n₁) indices of the replayed task-1 samples
    phase1: History
    phase2: History
    net0: Net  # (S, 1) initial weights
    net1: Net  # (S, 1) task-1 weights
    net2: Net  # (S·A·D, R) final weights
    layout: tuple[int, int, int, int]  # S, A, D (data sets), R (λ values)
    data_kinds: list[str]  # "plain" / "mixed" per D
    ewc_on: list[bool]  # per R


def buffer_sizes(s: Setting) -> tuple[int, int]:
    """(n₁ replayed task-1 samples, n₂ task-2 samples) of the replay training set (n₁ + n₂ = n)."""
    n1 = int(round(s.buffer_frac * s.n_train))
    return n1, s.n_train - n1


@dataclass
class Task1:
    """Everything before task 2 that does not depend on θ, the buffer or EWC (cached per setting)."""

    d1: sn.Draw
    t1: sn.Draw
    d2: sn.Draw  # task-2 draws (labels, noise, patch order): μ₂ is added per angle
    t2: sn.Draw
    perm2: torch.Tensor  # (S, n) order in which task-2 samples are kept in Replay's set
    net0: Net
    net1: Net
    hist: History
    snapshots: list[Net]  # weights at the recorded epochs


_TASK1_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 4


def train_task1(s: Setting, seeds: tuple[int, ...], track: bool, record: tuple[int, ...],
                on_progress: Callable[[float], None] | None = None) -> Task1:
    """Draw both tasks' samples and train on task 1, for every seed (one model per seed).

    The result depends only on the task-1 fields of ``s``, so it is cached (a few entries): moving the
    angle, the buffer or λ of the live run reuses task 1 and trains only task 2.
    """
    key = (replace(s, epochs2=0, buffer_frac=0.0, selector="random", ewc_lambda=0.0), seeds, track, record)
    if key in _TASK1_CACHE:
        _TASK1_CACHE.move_to_end(key)
        return _TASK1_CACHE[key]
    out = _train_task1(key[0], seeds, track, record, on_progress)
    _TASK1_CACHE[key] = out
    while len(_TASK1_CACHE) > _CACHE_SIZE:
        _TASK1_CACHE.popitem(last=False)
    return out


def _train_task1(s: Setting, seeds: tuple[int, ...], track: bool, record: tuple[int, ...],
                 on_progress: Callable[[float], None] | None) -> Task1:
    S, d, n = len(seeds), s.d, s.n_train
    gens = [torch.Generator().manual_seed(int(sd)) for sd in seeds]
    d1 = _stack([sn.draw((), n, d, s.noise_std, g) for g in gens])
    t1 = _stack([sn.draw((), s.n_test, d, s.noise_std, g) for g in gens])
    d2 = _stack([sn.draw((), n, d, s.noise_std, g) for g in gens])
    t2 = _stack([sn.draw((), s.n_test, d, s.noise_std, g) for g in gens])
    net = Net(*_init(gens, s))
    net0 = net.clone()
    perm2 = torch.stack([torch.randperm(n, generator=g) for g in gens])
    mu1 = sn.signal(0.0, d, s.mu_norm)
    info1 = _info(d1, torch.zeros(S, n, dtype=torch.long), s) if track else None
    h1 = gradient_descent(net, sn.build(d1, mu1), d1.y01, s.epochs1, s.lr, info=info1,
                          evals={"task1": (sn.build(t1, mu1), t1.y01)}, record=list(record), snapshots=bool(record),
                          on_progress=on_progress)
    return Task1(d1, t1, d2, t2, perm2, net0, net, h1, h1.weights)


def run(s: Setting, angles: list[float], seeds: list[int], variants: tuple[str, ...] = VARIANTS,
        track: bool = False, record: tuple[list[int], list[int]] | None = None,
        on_progress: Callable[[float, str], None] | None = None) -> TwoTaskRun:
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise ValueError(f"unknown variants {bad}; choose from {', '.join(VARIANTS)}")
    prog = on_progress or (lambda f, msg="": None)
    S, A = len(seeds), len(angles)
    d, n = s.d, s.n_train

    prog(0.0, "task 1")
    p1 = train_task1(s, tuple(int(x) for x in seeds), track, tuple(record[0]) if record else (),
                     on_progress=lambda f: prog(0.3 * f, "task 1"))
    d1, t1, d2, t2, net = p1.d1, p1.t1, p1.d2, p1.t2, p1.net1
    mu1 = sn.signal(0.0, d, s.mu_norm)
    mu2 = sn.signal(torch.tensor(angles, dtype=torch.float32), d, s.mu_norm)  # (A, d)
    X1, y1 = sn.build(d1, mu1), d1.y01  # (S, n, 2, d)
    X1t, y1t = sn.build(t1, mu1), t1.y01
    # task 2 at every angle, common random numbers across angles
    X2 = sn.build(_unsqueeze(d2), mu2[None, :, None, :])  # (S, A, n, 2, d)
    X2t = sn.build(_unsqueeze(t2), mu2[None, :, None, :]).reshape(S * A, s.n_test, 2, d)
    y2t = t2.y01[:, None].expand(S, A, s.n_test).reshape(S * A, s.n_test)
    h1 = History(epochs=p1.hist.epochs, loss=p1.hist.loss, errors=dict(p1.hist.errors), gamma=p1.hist.gamma,
                 rho_max=p1.hist.rho_max, rho_min=p1.hist.rho_min, rho=p1.hist.rho)
    if A == 1 and p1.snapshots:  # the task-2 test error while training task 1
        h1.errors["task2"] = [error_rate(w, X2t, y2t) for w in p1.snapshots]
    err1 = h1.errors["task1"][-1][:, 0].numpy()
    prog(0.3, "task 1 done")

    # ---- replay buffer, selected by the task-1 network (class-balanced)
    n1, n2 = buffer_sizes(s)
    feats = hidden(net, X1)[:, :, 0].numpy()  # (S, n, F)
    buf = []
    for i, sd in enumerate(seeds):
        rng = np.random.default_rng(int(sd) + 7919)
        idx = select(feats[i], y1[i].numpy(), n1 // 2, s.selector, rng) if n1 >= 2 else np.zeros(0, int)
        if len(idx) < n1:  # odd n₁ or a short class: top up at random
            rest = np.setdiff1d(np.arange(n), idx)
            idx = np.concatenate([idx, rng.permutation(rest)[: n1 - len(idx)]])
        buf.append(np.sort(idx))
    buf_idx = torch.as_tensor(np.stack(buf), dtype=torch.long)  # (S, n₁)
    keep2 = p1.perm2[:, :n2].contiguous()  # (S, n₂)

    kinds = [k for k in ("plain", "mixed") if any((v.startswith("replay")) == (k == "mixed") for v in variants)]
    ewc_on = [e for e in (False, True) if any(v.endswith("ewc") == e for v in variants)]
    D, R = len(kinds), len(ewc_on)
    Xs, ys, infos = [], [], []
    for k in kinds:
        if k == "plain":
            Xk = X2
            yk = d2.y01[:, None].expand(S, A, n)
            dk = d2
            task = torch.ones(S, n, dtype=torch.long)
        else:
            i2 = keep2[:, None, :, None, None].expand(S, A, n2, 2, d)
            i1 = buf_idx[:, :, None, None].expand(S, n1, 2, d)
            Xk = torch.cat([X2.gather(2, i2), X1.gather(1, i1)[:, None].expand(S, A, n1, 2, d)], 2)
            yk = torch.cat([d2.y01.gather(1, keep2), y1.gather(1, buf_idx)], 1)[:, None].expand(S, A, n)
            dk = sn.Draw(torch.cat([d2.y.gather(1, keep2), d1.y.gather(1, buf_idx)], 1),
                         torch.cat([d2.xi.gather(1, keep2[..., None].expand(S, n2, d)),
                                    d1.xi.gather(1, buf_idx[..., None].expand(S, n1, d))], 1),
                         torch.cat([d2.sig.gather(1, keep2), d1.sig.gather(1, buf_idx)], 1))
            task = torch.cat([torch.ones(S, n2, dtype=torch.long), torch.zeros(S, n1, dtype=torch.long)], 1)
        Xs.append(Xk)
        ys.append(yk)
        infos.append((dk, task))
    Xp = torch.stack(Xs, 2).reshape(S * A * D, n, 2, d)
    yp = torch.stack(ys, 2).reshape(S * A * D, n)

    net2 = net.expand(A * D * R).regroup(S * A * D)
    ewc = None
    if True in ewc_on:
        FW, Fb = fisher_diagonal(net, X1, y1)  # (S, 1, F, d)
        grow = lambda t: None if t is None else t.repeat_interleave(A * D * R, 1).reshape(  # noqa: E731
            S * A * D, R, *t.shape[2:])
        lam = torch.tensor([s.ewc_lambda if e else 0.0 for e in ewc_on]).expand(S * A * D, R).contiguous()
        ewc = EWC(lam, grow(FW), grow(Fb), net2.W.clone(), None if net2.b is None else net2.b.clone())
    info2 = None
    if track:
        parts = infos
        ysg = torch.stack([p[0].y for p in parts], 1)  # (S, D, n)
        sig = torch.stack([p[0].sig for p in parts], 1)
        xi_sq = torch.stack([p[0].xi.pow(2).sum(-1) for p in parts], 1)
        task = torch.stack([p[1] for p in parts], 1)
        rep = lambda t: t[:, None].expand(S, A, *t.shape[1:]).reshape(S * A * D, n)  # noqa: E731
        info2 = SampleInfo(rep(task), rep(sig), rep(ysg), rep(xi_sq), (s.mu_norm ** 2, s.mu_norm ** 2))
    h2 = gradient_descent(net2, Xp, yp, s.epochs2, s.lr, ewc=ewc, info=info2,
                          evals={"task1": (X1t, y1t), "task2": (X2t, y2t)},
                          record=record[1] if record else None,
                          on_progress=lambda f: prog(0.3 + 0.7 * f, "task 2"))

    f_err = h2.errors["task1"][-1].reshape(S, A, D, R)
    t2_err = h2.errors["task2"][-1].reshape(S, A, D, R)
    V = len(variants)
    forg = np.zeros((S, A, V))
    t2e = np.zeros((S, A, V))
    for vi, v in enumerate(variants):
        di = kinds.index("mixed" if v.startswith("replay") else "plain")
        ri = ewc_on.index(v.endswith("ewc"))
        forg[:, :, vi] = f_err[:, :, di, ri].numpy()
        t2e[:, :, vi] = t2_err[:, :, di, ri].numpy()
    return TwoTaskRun([float(a) for a in angles], list(variants), forg, t2e, err1, buf_idx.numpy(), h1, h2,
                      p1.net0, net, net2, (S, A, D, R), kinds, ewc_on)


def _init(gens: list[torch.Generator], s: Setting):
    nets = [init_net(1, 1, s.m, s.d, g, bias=s.bias, q=s.q) for g in gens]
    W = torch.cat([t.W for t in nets])
    b = torch.cat([t.b for t in nets]) if s.bias else None
    return W, b, s.q, 1.0


def _stack(draws: list[sn.Draw]) -> sn.Draw:
    return sn.Draw(torch.stack([x.y for x in draws]), torch.stack([x.xi for x in draws]),
                   torch.stack([x.sig for x in draws]))


def _unsqueeze(dr: sn.Draw) -> sn.Draw:
    """Add an angle axis: (S, n) → (S, 1, n) so that μ₂ of shape (1, A, 1, d) broadcasts."""
    return sn.Draw(dr.y[:, None], dr.xi[:, None], dr.sig[:, None])


def _info(dr: sn.Draw, task: torch.Tensor, s: Setting) -> SampleInfo:
    return SampleInfo(task, dr.sig, dr.y, dr.xi.pow(2).sum(-1), (s.mu_norm ** 2, s.mu_norm ** 2))


def knee(angles: list[float] | np.ndarray, error: np.ndarray, level: float = 0.5) -> float | None:
    """θ_c: the first angle whose (seed-mean) task-1 error exceeds ``level``; None if none does."""
    for a, e in zip(angles, error):
        if e > level:
            return float(a)
    return None

"""Entry points: regret curves per method, and final regret against η.

Results are small JSON-able models; the tab and ``reproduce`` turn them into plots.
"""
from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate

from . import envs
from .algorithms import simulate
from .params import METHOD_LABELS, EtaSweepParams, RegretCurvesParams


class LogFit(BaseModel):
    """Reg(T) ≈ a + b·log T, with the coefficient of determination R²."""

    a: float
    b: float
    r2: float


class Curve(BaseModel):
    method: str
    label: str
    objective: str  # "kl" (KL-regularised regret) or "unregularised"
    horizons: list[int]
    mean: list[float]
    std: list[float]
    log_fit: LogFit
    sqrt_coef: float  # c of the least-squares fit Reg ≈ c·√T
    loglog_slope: float  # slope of log Reg against log T
    growth_16x: float | None  # Reg(16·T₀) / Reg(T₀) when both horizons were run
    # the same method scored on the other objective (unregularised for Gibbs methods, KL for UCB)
    alt_objective: str | None = None
    alt_mean: list[float] | None = None
    alt_growth_16x: float | None = None


class PolicySnapshot(BaseModel):
    """π_t(·|x₀) against π₀ and π* on the first context, seed 0."""

    rounds: list[int]
    pi0: list[float]
    pistar: list[float]
    policies: dict[str, list[list[float]]]  # method -> one policy per round
    kl_to_optimal: dict[str, list[float]]  # method -> mean over seeds of KL(π_t ‖ π*)


class BonusTrace(BaseModel):
    rounds: list[int]
    mean_bonus: list[float]  # mean KL-UCB bonus on the played action, window-averaged
    loglog_slope: float


class RegretCurvesResult(BaseModel):
    env: str
    eta: float
    curves: list[Curve]
    snapshot: PolicySnapshot | None
    bonus: BonusTrace | None
    elapsed_s: float


def log_fit(T: np.ndarray, reg: np.ndarray) -> LogFit:
    X = np.stack([np.ones_like(T, dtype=float), np.log(T)], 1)
    coef, *_ = np.linalg.lstsq(X, reg, rcond=None)
    pred = X @ coef
    ss_res = float(((reg - pred) ** 2).sum())
    ss_tot = float(((reg - reg.mean()) ** 2).sum())
    return LogFit(a=float(coef[0]), b=float(coef[1]), r2=1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0)


def loglog_slope(T: np.ndarray, reg: np.ndarray) -> float:
    reg = np.maximum(reg, 1e-12)
    return float(np.polyfit(np.log(T), np.log(reg), 1)[0])


def _growth_16x(T: np.ndarray, mean: np.ndarray) -> float | None:
    for i, t in enumerate(T):
        j = np.flatnonzero(T == 16 * t)
        if j.size:
            return float(mean[j[0]] / max(mean[i], 1e-12))
    return None


def _curve(method: str, T: np.ndarray, finals: np.ndarray, alt: np.ndarray | None = None) -> Curve:
    """``finals``: (seeds, len(T)) cumulative regret at each horizon; ``alt`` the same on the other objective."""
    mean = finals.mean(0)
    growth = _growth_16x(T, mean)
    alt_mean = None if alt is None else alt.mean(0)
    return Curve(
        method=method,
        label=METHOD_LABELS[method],
        objective="unregularised" if method == "ucb" else "kl",
        horizons=[int(t) for t in T],
        mean=[float(v) for v in mean],
        std=[float(v) for v in finals.std(0)],
        log_fit=log_fit(T.astype(float), mean),
        sqrt_coef=float((mean * np.sqrt(T)).sum() / T.sum()),
        loglog_slope=loglog_slope(T.astype(float), mean),
        growth_16x=growth,
        alt_objective=None if alt is None else ("kl" if method == "ucb" else "unregularised"),
        alt_mean=None if alt_mean is None else [float(v) for v in alt_mean],
        alt_growth_16x=None if alt_mean is None else _growth_16x(T, alt_mean),
    )


def linear_checkpoints(horizon: int) -> np.ndarray:
    """Log-spaced horizons, always including the round numbers of the spec's claims."""
    base = [1000, 2000, 5000, 10000, 20000, 50000, 100000]
    grid = np.geomspace(100, horizon, 12).astype(int)
    return np.unique(np.concatenate([grid, [b for b in base if b <= horizon], [horizon]]).astype(int))


def hard_horizons(horizon: int) -> np.ndarray:
    """The horizon-dependent family T/16, T/8, …, T (each with its own gap √(K/T))."""
    return np.unique(np.maximum(100, (horizon / 2.0 ** np.arange(4, -1, -1)).astype(int)))


def regret_curves(params: RegretCurvesParams | dict, ctx: JobContext | None = None) -> RegretCurvesResult:
    p = validate(RegretCurvesParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    seeds = [p.seed + s for s in range(p.seeds)]
    ctx.progress(0.0, f"{p.env} bandit, η = {p.eta}, T = {p.horizon}")
    snapshot = bonus = None

    if p.env == "linear":
        bandits = [envs.make(p, p.horizon, s) for s in seeds]
        trace = simulate(bandits, p.methods, p.eta, p.beta, p.ridge, p.horizon, p.seed,
                         on_progress=Subprogress(ctx, 0.0, 0.95))
        T = linear_checkpoints(p.horizon)
        cum = trace.regret.astype(np.float64).cumsum(-1)[:, :, T - 1]  # (M, S, len(T))
        alt = trace.regret_alt.astype(np.float64).cumsum(-1)[:, :, T - 1]
        curves = [_curve(m, T, cum[i], alt[i]) for i, m in enumerate(trace.methods)]
        b0 = bandits[0]
        from .gibbs import gibbs_policy

        snapshot = PolicySnapshot(
            rounds=[int(r) for r in trace.snapshot_rounds],
            pi0=b0.pi0[0].tolist(),
            pistar=gibbs_policy(b0.mean_reward[0], b0.pi0[0], p.eta).tolist(),
            policies={m: trace.snapshot_policy[i].tolist() for i, m in enumerate(trace.methods)},
            kl_to_optimal={m: trace.snapshot_kl[i].mean(0).tolist() for i, m in enumerate(trace.methods)},
        )
        if "kl_ucb" in trace.methods:
            bonus = bonus_trace(trace.bonus[trace.methods.index("kl_ucb")])
    else:
        T = hard_horizons(p.horizon)
        finals = np.zeros((len(p.methods), len(seeds), len(T)))
        finals_alt = np.zeros_like(finals)
        total = float(T.sum())
        done = 0.0
        for j, h in enumerate(T):
            bandits = [envs.make(p, int(h), s) for s in seeds]
            sub = Subprogress(ctx, 0.95 * done / total, 0.95 * (done + h) / total)
            trace = simulate(bandits, p.methods, p.eta, p.beta, p.ridge, int(h), p.seed, on_progress=sub)
            finals[:, :, j] = trace.regret.astype(np.float64).sum(-1)
            finals_alt[:, :, j] = trace.regret_alt.astype(np.float64).sum(-1)
            done += h
            ctx.progress(0.95 * done / total, f"hard instance T = {h} (gap {envs.hard_gap(p.arms, int(h)):.3f}) done")
        curves = [_curve(m, T, finals[i], finals_alt[i]) for i, m in enumerate(p.methods)]

    ctx.progress(1.0, "done")
    return RegretCurvesResult(env=p.env, eta=p.eta, curves=curves, snapshot=snapshot, bonus=bonus,
                              elapsed_s=time.perf_counter() - t0)


def bonus_trace(bonus: np.ndarray) -> BonusTrace:
    """Window-averaged KL-UCB bonus on played actions; ``bonus`` is (seeds, T)."""
    T = bonus.shape[-1]
    edges = np.unique(np.geomspace(10, T, 16).astype(int))
    mids, vals = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        mids.append(int(np.sqrt(lo * hi)))
        vals.append(float(bonus[:, lo:hi].mean()))
    m, v = np.array(mids, float), np.array(vals)
    return BonusTrace(rounds=mids, mean_bonus=vals, loglog_slope=loglog_slope(m, v))


class EtaSweepResult(BaseModel):
    env: str
    horizon: int
    etas: list[float]
    final_regret: dict[str, list[float]]  # method -> mean final KL regret per η
    final_std: dict[str, list[float]]
    elapsed_s: float


def eta_sweep(params: EtaSweepParams | dict, ctx: JobContext | None = None) -> EtaSweepResult:
    """Final KL-regularised regret of KL-UCB and KL-greedy for each η (regret grows with η)."""
    p = validate(EtaSweepParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    methods = ("kl_ucb", "kl_greedy")
    seeds = [p.seed + s for s in range(p.seeds)]
    bandits = [envs.make(p, p.horizon, s) for s in seeds]
    means = {m: [] for m in methods}
    stds = {m: [] for m in methods}
    for i, eta in enumerate(p.etas):
        sub = Subprogress(ctx, i / len(p.etas), (i + 1) / len(p.etas))
        trace = simulate(bandits, methods, eta, p.beta, p.ridge, p.horizon, p.seed, on_progress=sub)
        fin = trace.regret.astype(np.float64).sum(-1)
        for k, m in enumerate(methods):
            means[m].append(float(fin[k].mean()))
            stds[m].append(float(fin[k].std()))
        ctx.progress((i + 1) / len(p.etas), f"η = {eta}: KL-UCB regret {means['kl_ucb'][-1]:.2f}")
    return EtaSweepResult(env=p.env, horizon=p.horizon, etas=list(p.etas), final_regret=means,
                          final_std=stds, elapsed_s=time.perf_counter() - t0)

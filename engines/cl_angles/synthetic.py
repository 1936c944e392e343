"""Entry points on the synthetic signal–noise data: one angle with its dynamics, and the angle sweep."""
from __future__ import annotations

import math
import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate

from .params import VARIANT_LABELS, AngleRunParams, SweepParams, SyntheticParams
from .network import one_thread
from .two_tasks import Setting, knee, run


def setting(p: SyntheticParams) -> Setting:
    return Setting(d=p.d, m=p.m, mu_norm=p.mu_norm, noise_std=p.noise_std, n_train=p.n_train, n_test=p.n_test,
                   lr=p.lr, epochs1=p.epochs1, epochs2=p.epochs2, buffer_frac=p.buffer_frac, selector=p.selector,
                   ewc_lambda=p.ewc_lambda, bias=p.bias)


# ----------------------------------------------------------------------------- one angle


class FilterTrace(BaseModel):
    """The signal–noise decomposition of every filter over training, for one variant.

    ``gamma1``/``gamma2``/``rho_max``: one list per filter (first m of class −1, then m of class +1),
    one value per recorded epoch. ``xy_*``: filter coordinates in the (e₁, e₂) plane of μ₁ and μ₂.
    """

    gamma1: list[list[float]]
    gamma2: list[list[float]]
    rho_max: list[list[float]]
    xy_task1: list[list[float]]  # after task 1 (same for all variants)
    xy_final: list[list[float]]  # after task 2
    mu1_group: list[int]  # filters whose γ₁ after task 1 is among the largest of their class
    mu2_group: list[int]  # filters that learned most of μ₂ in task 2


class AngleRunResult(BaseModel):
    angle: float
    cos_theta: float
    variants: list[str]
    labels: list[str]
    m: int
    epochs1: int
    epochs: list[int]  # recorded epochs on one time axis (task 2 starts at epochs1)
    task1_error: dict[str, list[float]]
    task2_error: dict[str, list[float]]
    forgetting: dict[str, float]  # task-1 test error after task 2
    task2_final: dict[str, float]
    task1_before: float
    mu1: list[float]  # (e₁, e₂) coordinates of μ₁, μ₂
    mu2: list[float]
    xy_init: list[list[float]]
    traces: dict[str, FilterTrace]
    buffer: list[int]  # replayed task-1 samples (indices)
    regime: str  # "benign" (task-1 error < 0.5 after CL) or "harmful"
    elapsed_s: float


def log_epochs(epochs: int, points: int) -> list[int]:
    """About ``points`` epochs, log-spaced from 0 to ``epochs`` (learning is fast at first)."""
    import numpy as np

    return sorted({0, *np.unique(np.geomspace(1, epochs, points).round().astype(int)).tolist()})


def _groups(g1: np.ndarray, g2: np.ndarray, m: int) -> tuple[list[int], list[int]]:
    """Per class, the filters that dominate γ₁ (after task 1) and γ₂ (after task 2): above half the class max."""
    a, b = [], []
    for c in range(2):
        sl = slice(c * m, (c + 1) * m)
        for out, g in ((a, g1[sl]), (b, g2[sl])):
            top = g.max()
            if top > 0:
                out += [c * m + int(i) for i in np.flatnonzero(g >= 0.5 * top)]
    return a, b


def angle_run(params: AngleRunParams | dict, ctx: JobContext | None = None) -> AngleRunResult:
    p = validate(AngleRunParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    s = setting(p)
    record = (log_epochs(p.epochs1, p.eval_points), log_epochs(p.epochs2, p.eval_points))
    ctx.progress(0.0, f"θ = {p.angle:g}°: task 1")
    sub = Subprogress(ctx, 0.0, 0.97)
    with one_thread():
        r = run(s, [p.angle], [p.seed], tuple(p.variants), track=True, record=record,
                on_progress=lambda f, msg="": sub(f, msg))
    S, A, D, R = r.layout
    h1, h2 = r.phase1, r.phase2
    ep = list(h1.epochs) + [p.epochs1 + e for e in h2.epochs]
    t1_pre = [float(e[0, 0]) for e in h1.errors["task1"]]
    t2_pre = [float(e[0, 0]) for e in h1.errors["task2"]]
    g_pre = np.stack([g[0, 0].numpy() for g in h1.gamma], -1)  # (F, 2, T1)
    r_pre = np.stack([x[0, 0].numpy() for x in h1.rho_max], -1)  # (F, T1)
    W1 = r.net1.W[0, 0].numpy()
    xy1 = W1[:, :2].tolist()
    g1_end = g_pre[:, 0, -1]
    task1_err, task2_err, forg, t2fin, traces = {}, {}, {}, {}, {}
    for vi, v in enumerate(r.variants):
        di = r.data_kinds.index("mixed" if v.startswith("replay") else "plain")
        ri = r.ewc_on.index(v.endswith("ewc"))
        gi = di  # S = A = 1: group index = data set
        task1_err[v] = t1_pre + [float(e[gi, ri]) for e in h2.errors["task1"]]
        task2_err[v] = t2_pre + [float(e[gi, ri]) for e in h2.errors["task2"]]
        forg[v] = float(r.forgetting[0, 0, vi])
        t2fin[v] = float(r.task2_error[0, 0, vi])
        g_post = np.stack([g[gi, ri].numpy() for g in h2.gamma], -1)  # (F, 2, T2)
        g_post[:, 0] += g1_end[:, None]  # γ₁ continues from its task-1 value (replay adds to it)
        r_post = np.stack([x[gi, ri].numpy() for x in h2.rho_max], -1)
        gam = np.concatenate([g_pre, g_post], -1)
        a, b = _groups(g1_end, g_post[:, 1, -1], p.m)
        traces[v] = FilterTrace(
            gamma1=np.round(gam[:, 0], 5).tolist(), gamma2=np.round(gam[:, 1], 5).tolist(),
            rho_max=np.round(np.concatenate([r_pre, r_post], -1), 5).tolist(),
            xy_task1=xy1, xy_final=r.net2.W[gi, ri, :, :2].numpy().tolist(), mu1_group=a, mu2_group=b)
    th = math.radians(p.angle)
    res = AngleRunResult(
        angle=p.angle, cos_theta=math.cos(th), variants=list(r.variants),
        labels=[VARIANT_LABELS[v] for v in r.variants], m=p.m, epochs1=p.epochs1, epochs=ep,
        task1_error=task1_err, task2_error=task2_err, forgetting=forg, task2_final=t2fin,
        task1_before=float(r.task1_error_before[0]), mu1=[p.mu_norm, 0.0],
        mu2=[p.mu_norm * math.cos(th), p.mu_norm * math.sin(th)], xy_init=r.net0.W[0, 0, :, :2].numpy().tolist(),
        traces=traces, buffer=[int(i) for i in r.buffer_idx[0]],
        regime="harmful" if forg.get("cl", min(forg.values())) >= 0.5 else "benign",
        elapsed_s=time.perf_counter() - t0)
    ctx.progress(1.0, "done")
    return res


# ----------------------------------------------------------------------------- sweep


class SweepCurve(BaseModel):
    variant: str
    label: str
    mean: list[float]  # task-1 test error after task 2, mean over seeds, per angle
    std: list[float]
    per_seed: list[list[float]]
    task2_mean: list[float]
    knee: float | None  # θ_c: first angle with mean error > 0.5


class SweepResult(BaseModel):
    angles: list[float]
    seeds: int
    curves: list[SweepCurve]
    task1_before: list[float]
    spearman_cl: float | None  # Spearman(θ, CL error)
    replay_bound: float | None  # θ where cos θ = −(C₂+1)/2 with C₂ = −cos θ_c(CL): the theory's replay range
    epochs: tuple[int, int]
    buffer_frac: float
    elapsed_s: float


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.allclose(y, y[0]):
        return float("nan")
    return float(spearmanr(x, y).statistic)


def angle_sweep(params: SweepParams | dict, ctx: JobContext | None = None) -> SweepResult:
    p = validate(SweepParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    angles = p.angles()
    seeds = [p.seed + i for i in range(p.seeds)]
    ctx.progress(0.0, f"{len(angles)} angles × {len(seeds)} seeds × {len(p.variants)} variants "
                      f"(≈ {p.estimated_seconds():.0f} s)")
    sub = Subprogress(ctx, 0.0, 0.98)
    with one_thread():
        r = run(setting(p), angles, seeds, tuple(p.variants), on_progress=lambda f, msg="": sub(f, msg))
    curves = []
    for vi, v in enumerate(r.variants):
        e = r.forgetting[:, :, vi]
        mean = e.mean(0)
        curves.append(SweepCurve(variant=v, label=VARIANT_LABELS[v], mean=mean.tolist(), std=e.std(0).tolist(),
                                 per_seed=e.tolist(), task2_mean=r.task2_error[:, :, vi].mean(0).tolist(),
                                 knee=knee(angles, mean)))
    by = {c.variant: c for c in curves}
    rho = bound = None
    if "cl" in by:
        rho = spearman(np.array(angles), np.array(by["cl"].mean)) if len(angles) > 2 else None
        if rho is not None and math.isnan(rho):
            rho = None
        if by["cl"].knee is not None:
            c2 = -math.cos(math.radians(by["cl"].knee))
            bound = math.degrees(math.acos(max(-1.0, min(1.0, -(c2 + 1) / 2))))
    ctx.progress(1.0, "done")
    return SweepResult(angles=angles, seeds=len(seeds), curves=curves, task1_before=r.task1_error_before.tolist(),
                       spearman_cl=rho, replay_bound=bound, epochs=(p.epochs1, p.epochs2),
                       buffer_frac=p.buffer_frac, elapsed_s=time.perf_counter() - t0)

"""Entry points: compare methods (tuned on a validation seed, equal budget), probe the noise, check engines.

Results are small JSON-able models; the tab and ``reproduce`` turn them into plots and tables.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate
from engines.common.threads import torch_threads

from .algorithms import METHODS, LocalComm, Trace, run_method
from .params import (METHOD_LABELS, CompareParams, EquivalenceParams, HyperParams, NoiseParams,
                     ProblemParams)
from .tasks import Task, make_task

VALIDATION_OFFSET = 1000  # the validation seed is seed + 1000: other data, other noise draws
D_RATIO = 0.01  # lower thresholds are d = 0.01·u (inner and outer) when tuning


class MethodRun(BaseModel):
    method: str
    label: str
    hyper: dict  # the hyper-parameters used (tuned or given)
    rounds: list[int]
    excess: list[float | None]  # excess loss per plotted round; None after divergence (not plotted flat)
    final_excess: float | None  # mean excess over the last 10% of rounds; None = diverged
    diverged_at: int | None
    state_worker: float  # extra optimiser floats per parameter, per worker (counted)
    state_server: float
    floats_per_round: float  # floats one worker sends per round (counted)
    clip_in: list[float]  # mean fraction of inner coordinates clipped down / raised up
    clip_out: list[float]
    clip_in_curve: list[list[float]]  # per plotted round [down, up]
    metrics: dict[str, float]
    validation_score: float | None  # best validation score when tuned
    engine: str
    wall_s: float


class CompareResult(BaseModel):
    task: str
    noise: str
    tail_index: float
    dim: int
    workers: int
    local_steps: int
    rounds: int
    has_optimum: bool
    f_star: float
    runs: list[MethodRun]
    elapsed_s: float


def final_score(loss: np.ndarray, f_star: float, diverged: int | None) -> float:
    """Mean excess loss over the last 10% of rounds (inf when the run diverged)."""
    if diverged is not None:
        return math.inf
    T = loss.shape[-1] - 1
    k = max(1, T // 10)
    v = float(np.mean(loss[-k:]) - f_star)
    return v if math.isfinite(v) else math.inf


def _log_points(lo: float, hi: float, k: int) -> np.ndarray:
    return np.logspace(lo, hi, k) if k > 1 else np.array([10 ** ((lo + hi) / 2)])


def curvature(task: Task) -> float:
    """λ_max of the global Hessian at x₀ by power iteration on finite differences of ∇F (step sizes ∝ 1/L)."""
    if task.name == "transformer":
        return 1.0
    x0 = task.x0
    g0 = task.full_grads(x0).mean(0)
    v = torch.ones_like(x0) / math.sqrt(task.dim)
    lam = 1.0
    for _ in range(30):
        hv = (task.full_grads(x0 + 1e-4 * v).mean(0) - g0) / 1e-4
        lam = float(hv.norm())
        if lam <= 0:
            return 1.0
        v = hv / lam
    return lam


def tuning_grid(method: str, task: Task, budget: int, seed: int = 0) -> list[HyperParams]:
    """``budget`` configurations over the method's tuned hyper-parameters (log scale): a log grid for one
    hyper-parameter, a scrambled Sobol design for several. Every method gets the same budget."""
    md = METHODS[method]
    L = curvature(task)
    sgd_like = md.inner in ("sgd", "l2clip", "biclip")
    lr_in = ((math.log10(1e-3 / L), math.log10(2.0 / L)) if sgd_like else (-4.0, 0.0))
    ranges = {"lr_in": lr_in, "u_in": (math.log10(0.3), math.log10(30.0)), "u_out": (-1.0, 1.0),
              "lr_out": {"adam": (-3.0, -0.5), "yogi": (-3.0, -0.5), "adagrad": (-3.0, -0.5),
                         "rmsprop": (-3.0, -0.5), "nesterov": (-1.0, 0.0), "biclip": (-0.5, 0.5),
                         "avg": (0.0, 0.0)}[md.outer]}
    if md.inner == "l2clip":
        ranges["u_in"] = (-1.0, 1.0)
    keys = md.tunes
    if len(keys) == 1:
        pts = _log_points(*ranges[keys[0]], budget)[:, None]
    else:
        from scipy.stats import qmc

        with warnings.catch_warnings():  # budgets that are not powers of 2 lose Sobol balance: fine here
            warnings.simplefilter("ignore", UserWarning)
            u = qmc.Sobol(len(keys), scramble=True, seed=seed).random(budget)
        lo = np.array([ranges[k][0] for k in keys])
        hi = np.array([ranges[k][1] for k in keys])
        pts = 10 ** (lo + u * (hi - lo))
    out = []
    for row in pts:
        kw = dict(zip(keys, (float(v) for v in row)))
        if md.inner == "l2clip":
            kw["u_in"] = kw["u_in"] * math.sqrt(task.dim)  # the norm of a vector of scale-sized coordinates
        kw.setdefault("u_in", 10.0)
        kw.setdefault("u_out", 10.0)
        kw["d_in"] = D_RATIO * kw["u_in"]
        kw["d_out"] = D_RATIO * kw["u_out"]
        out.append(HyperParams(**kw))
    return out


def tune(p: ProblemParams, method: str, budget: int, on_round=None) -> tuple[HyperParams, float, list]:
    """Run the method's grid on the validation seed; return the best configuration and its score."""
    pv = p.model_copy(update={"seed": p.seed + VALIDATION_OFFSET})
    task = make_task(pv)
    grid = tuning_grid(method, task, budget, seed=p.seed)
    if task.name == "transformer":  # autograd per replica: run the grid one configuration at a time
        scores = []
        for h in grid:
            tr = run_method(task, method, [h], p.rounds, LocalComm(p.workers), pv.seed, on_round)
            scores.append(final_score(tr.loss[0], task.f_star, tr.diverged_at[0]))
    else:
        tr = run_method(task, method, grid, p.rounds, LocalComm(p.workers), pv.seed, on_round)
        scores = [final_score(tr.loss[r], task.f_star, tr.diverged_at[r]) for r in range(len(grid))]
    best = int(np.argmin(scores))
    return grid[best], float(scores[best]), scores


def _subsample(T: int, n: int = 200) -> np.ndarray:
    return np.unique(np.linspace(0, T, min(n, T + 1)).round().astype(int))


def method_run(task: Task, method: str, h: HyperParams, tr: Trace | dict, engine: str, wall: float,
               vscore: float | None) -> MethodRun:
    get = (lambda k: tr[k]) if isinstance(tr, dict) else (lambda k: getattr(tr, k))  # noqa: E731
    loss = np.asarray(get("loss"))[0]
    x = torch.as_tensor(np.asarray(get("x"))[0])
    div = get("diverged_at")[0] if not isinstance(tr, dict) else tr.get("diverged_at")
    T = loss.shape[0] - 1
    idx = _subsample(T)
    exc = [None if (div is not None and t >= div) or not math.isfinite(loss[t]) else float(loss[t] - task.f_star)
           for t in idx]
    fs = final_score(loss, task.f_star, div)
    cin, cout = np.asarray(get("clip_in"))[0], np.asarray(get("clip_out"))[0]
    metrics = task.metrics(x) if div is None else {}
    return MethodRun(method=method, label=METHOD_LABELS[method], hyper=h.model_dump(), rounds=[int(t) for t in idx],
                     excess=exc, final_excess=None if math.isinf(fs) else fs, diverged_at=div,
                     state_worker=float(get("state_worker")), state_server=float(get("state_server")),
                     floats_per_round=float(get("floats_per_round")), clip_in=cin.mean(0).tolist(),
                     clip_out=cout.mean(0).tolist(), clip_in_curve=cin[np.clip(idx, 1, T) - 1].tolist() if T else [],
                     metrics=metrics, validation_score=vscore, engine=engine, wall_s=wall)


def compare(params: CompareParams | dict, ctx: JobContext | None = None) -> CompareResult:
    p = validate(CompareParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    M = len(p.methods)
    per = 2 if p.tune else 1  # progress slots per method
    done = [0]

    def progress_for(k: int, what: str):
        def on_round(t, _loss):
            ctx.progress((k + t / max(p.rounds, 1)) / (M * per), f"{what}: round {t}/{p.rounds}")
            ctx.check_cancelled()
        return on_round

    with torch_threads(1):
        ctx.progress(0.0, f"building the {p.task} task")
        task = make_task(p)
        runs = []
        for i, m in enumerate(p.methods):
            vscore = None
            if p.tune:
                h, vscore, _ = tune(p, m, p.budget, progress_for(per * i, f"{METHOD_LABELS[m]}: tuning "
                                                                          f"{p.budget} configurations"))
            else:
                h = p.hyper
            w0 = time.perf_counter()
            on_round = progress_for(per * i + per - 1, f"{METHOD_LABELS[m]}: run")
            if p.engine == "gloo":
                from .distributed import run_gloo

                out = run_gloo(p, m, [h], p.seed, cancelled=ctx.cancelled,
                               on_progress=lambda f, k=per * i + per - 1: ctx.progress((k + f) / (M * per)))
                loss = out["loss"][0]
                bad = np.flatnonzero(~(np.isfinite(loss) & (loss < 1e12)))
                out["diverged_at"] = int(bad[0]) if bad.size else None
                runs.append(method_run(task, m, h, out, "gloo", time.perf_counter() - w0, vscore))
            else:
                tr = run_method(task, m, [h], p.rounds, LocalComm(p.workers), p.seed, on_round)
                runs.append(method_run(task, m, h, tr, "simulator", time.perf_counter() - w0, vscore))
            done[0] += 1
            r = runs[-1]
            ctx.progress((per * i + per) / (M * per), f"{r.label}: final excess "
                         + ("diverged" if r.final_excess is None else f"{r.final_excess:.4g}"))
    return CompareResult(task=p.task, noise=p.noise, tail_index=p.tail_index, dim=task.dim, workers=p.workers,
                         local_steps=p.local_steps, rounds=p.rounds, has_optimum=task.has_optimum,
                         f_star=task.f_star, runs=runs, elapsed_s=time.perf_counter() - t0)


class NoiseResult(BaseModel):
    task: str
    noise: str
    tail_index: float
    bins: list[float]  # log-spaced edges of |ξ|
    counts: list[int]
    hill_alpha: float  # Hill estimate of the tail index of |ξ| (top 2% order statistics)
    hill_k: int
    gaussian_counts: list[int]  # a Gaussian of the same median |ξ|, for reference
    n: int


def hill_estimator(x: np.ndarray, k: int) -> float:
    """α̂ = 1 / mean_{i ≤ k} log(X_(i) / X_(k+1)) over the k largest |x|."""
    a = np.sort(np.abs(x[np.isfinite(x)]))[::-1]
    k = max(2, min(k, len(a) - 1))
    return float(1.0 / np.mean(np.log(a[:k] / a[k])))


def noise_probe(params: NoiseParams | dict, ctx: JobContext | None = None) -> NoiseResult:
    """Stochastic minus full gradient at x₀ (minibatch noise + injected noise), per coordinate."""
    p = validate(NoiseParams, params)
    ctx = ctx or LocalContext()
    with torch_threads(1):
        task = make_task(p, optimum=False)
        full = task.full_grads(task.x0)  # [N, d]
        rngs = [np.random.default_rng([p.seed, i, 55]) for i in range(task.n_workers)]
        W = task.x0.reshape(1, 1, -1).expand(1, task.n_workers, -1).contiguous()
        xs = []
        for k in range(p.probes):
            xs.append((task.grads(W, list(range(task.n_workers)), rngs)[0] - full).abs().numpy().ravel())
            if k % 20 == 0:
                ctx.progress(k / p.probes, f"probe {k}/{p.probes}")
                ctx.check_cancelled()
    x = np.concatenate(xs)
    x = x[np.isfinite(x) & (x > 0)]
    lo, hi = np.quantile(x, 1e-3), x.max()
    bins = np.geomspace(lo, hi * 1.0001, 41)
    counts, _ = np.histogram(x, bins)
    rng = np.random.default_rng(0)
    gs = np.abs(rng.standard_normal(len(x))) * np.median(x) / 0.6745
    gcounts, _ = np.histogram(gs, bins)
    k = max(10, len(x) // 50)
    return NoiseResult(task=p.task, noise=p.noise, tail_index=p.tail_index, bins=bins.tolist(),
                       counts=counts.tolist(), hill_alpha=hill_estimator(x, k), hill_k=k,
                       gaussian_counts=gcounts.tolist(), n=len(x))


class EquivalenceResult(BaseModel):
    method: str
    workers: int
    rounds: int
    max_abs_diff: float
    max_abs_param: float
    floats_per_round_sim: float
    floats_per_round_gloo: float
    gloo_wall_s: float


def equivalence(params: EquivalenceParams | dict, ctx: JobContext | None = None) -> EquivalenceResult:
    """The same run in the simulator and on ``workers`` gloo processes: max |x_sim − x_gloo| after T rounds."""
    p = validate(EquivalenceParams, params)
    ctx = ctx or LocalContext()
    from .distributed import run_gloo

    with torch_threads(1):
        task = make_task(p, optimum=False)
        tr = run_method(task, p.method, [p.hyper], p.rounds, LocalComm(p.workers), p.seed)
    ctx.progress(0.3, f"simulator done; starting {p.workers} gloo processes")
    out = run_gloo(p, p.method, [p.hyper], p.seed, cancelled=ctx.cancelled)
    ctx.progress(1.0, "done")
    diff = float(np.max(np.abs(out["x"] - tr.x.numpy())))
    return EquivalenceResult(method=p.method, workers=p.workers, rounds=p.rounds, max_abs_diff=diff,
                             max_abs_param=float(np.abs(tr.x.numpy()).max()),
                             floats_per_round_sim=tr.floats_per_round,
                             floats_per_round_gloo=float(out["floats_per_round"]), gloo_wall_s=float(out["wall_s"]))

"""Entry points: compare algorithms on one instance, and sweep Multinoulli-SCG's T.

Results are small JSON-able models; selection views (storyboard, graph, design scatter)
are saved as artifacts and travel by reference.
"""
from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate

from . import baselines as bl
from .objectives import ObjectiveError, PartitionError, check_objective
from .params import METHOD_LABELS, CompareParams, InstanceParams, SweepParams
from .runs import Run
from .scg import multinoulli_scg
from .tasks import Instance, build
from .video import VideoError

MAX_CURVE = 300


class InstanceInfo(BaseModel):
    task: str
    title: str
    objective: str
    n: int
    blocks: int
    rank: int
    budgets: list[int]
    block_sizes: list[int]
    block_names: list[str]
    n_bases: float


class MethodRun(BaseModel):
    method: str
    label: str
    value: float
    evals: int
    seconds: float
    feasible: bool
    ratio_to_opt: float | None
    selection: list[int]
    curve_evals: list[int]
    curve_values: list[float]


class SCGDetail(BaseModel):
    relaxed: list[float]  # single-sample ME(q^t) estimates, t = 1..T
    relax_evals: int
    rounded_values: list[float]
    sampled_values: list[float]  # f of the same draws before padding: an unbiased estimate of ME(q^T)
    priors: list[list[float]]  # final per-block distribution (expected draws per element / B_k)
    snapshots: list[list[list[float]]]
    snapshot_t: list[int]
    estimator: str
    draws: str
    T: int


class CompareResult(BaseModel):
    instance: InstanceInfo
    runs: list[MethodRun]
    opt: float | None
    gamma: float | None  # (γ, β) given to distorted local search
    beta: float | None
    ratios_estimated: bool
    dls_guarantee: float | None
    scg: SCGDetail | None
    view: str | None  # artifact ref of the selection view
    elapsed_s: float


def _thin(xs: list, ys: list) -> tuple[list, list]:
    if len(xs) <= MAX_CURVE:
        return xs, ys
    idx = np.unique(np.linspace(0, len(xs) - 1, MAX_CURVE).round().astype(int))
    return [xs[i] for i in idx], [ys[i] for i in idx]


def instance_for(p: InstanceParams) -> Instance:
    """Build and check an instance; every problem becomes a ValueError naming it, before any algorithm runs."""
    try:
        inst = build(p)
        check_objective(inst.objective, inst.partition, seed=p.seed)
    except (PartitionError, ObjectiveError, VideoError) as e:
        raise ValueError(str(e)) from None
    return inst


def info(inst: Instance) -> InstanceInfo:
    part = inst.partition
    return InstanceInfo(task=inst.task, title=inst.title, objective=inst.objective.name, n=part.n, blocks=part.K,
                        rank=part.rank, budgets=part.budgets.tolist(), block_sizes=[int(b.size) for b in part.blocks],
                        block_names=part.names, n_bases=float(part.n_bases()))


COST = {"scg": 1.0, "greedy": 0.3, "residual_random_greedy": 0.3, "distorted_local_search": 4.0,
        "continuous_greedy": 1.0, "random": 0.01, "brute_force": 2.0}


def run_method(m: str, inst: Instance, p: CompareParams, gamma: float | None, beta: float | None,
               hook) -> Run:
    obj, part = inst.objective, inst.partition
    if m == "scg":
        return multinoulli_scg(obj, part, T=p.T, batch=p.batch, estimator=p.estimator, draws=p.draws,
                               rounding_samples=p.rounding_samples, pad=p.pad, seed=p.seed, on_step=hook)
    if m == "greedy":
        return bl.greedy(obj, part, on_step=hook)
    if m == "residual_random_greedy":
        return bl.residual_random_greedy(obj, part, seed=p.seed, on_step=hook)
    if m == "distorted_local_search":
        return bl.distorted_local_search(obj, part, gamma, beta, p.dls_epsilon, seed=p.seed, on_step=hook)
    if m == "continuous_greedy":
        return bl.continuous_greedy(obj, part, T=p.T, batch=p.batch, seed=p.seed, on_step=hook)
    if m == "random":
        return bl.random_base(obj, part, seed=p.seed)
    if m == "brute_force":
        return bl.brute_force(obj, part, limit=p.bruteforce_limit, on_step=hook)
    raise ValueError(f"unknown method {m!r}")


def compare(params: CompareParams | dict, ctx: JobContext | None = None) -> CompareResult:
    """Run the selected algorithms on one instance, each charged with its own f-evaluations."""
    p = validate(CompareParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    ctx.progress(0.0, "building the instance")
    inst = instance_for(p)
    part = inst.partition
    if "brute_force" in p.methods and part.n_bases() > p.bruteforce_limit:
        raise ValueError(f"brute force would enumerate {part.n_bases():,} sets (limit {p.bruteforce_limit:,}); "
                         "use fewer or smaller blocks, a smaller budget, or deselect brute force")
    gamma, beta, estimated = p.dls_gamma, p.dls_beta, False
    if "distorted_local_search" in p.methods and (gamma is None or beta is None):
        g_est, b_est = bl.estimate_ratios(inst.objective, part, seed=p.seed)
        gamma = gamma if gamma is not None else g_est
        beta = beta if beta is not None else b_est
        estimated = True
    ctx.progress(0.05, inst.title)
    order = sorted(p.methods, key=lambda m: m != "brute_force")  # OPT first when asked for
    total = sum(COST[m] for m in order)
    done = 0.0
    runs: dict[str, Run] = {}
    for m in order:
        sub = Subprogress(ctx, 0.05 + 0.85 * done / total, 0.05 + 0.85 * (done + COST[m]) / total)
        runs[m] = run_method(m, inst, p, gamma, beta, sub)
        done += COST[m]
        ctx.progress(0.05 + 0.85 * done / total, f"{METHOD_LABELS[m]}: {runs[m].value:.4g} "
                                                 f"with {runs[m].evals:,} evaluations")
        ctx.check_cancelled()
    opt = runs["brute_force"].value if "brute_force" in runs else None
    out = []
    for m in p.methods:
        r = runs[m]
        ce, cv = _thin(r.curve_evals, r.curve_values)
        out.append(MethodRun(method=m, label=METHOD_LABELS[m], value=r.value, evals=r.evals, seconds=r.seconds,
                             feasible=part.feasible(r.selection) and len(r.selection) == part.rank,
                             ratio_to_opt=(r.value / opt if opt else None), selection=r.selection,
                             curve_evals=ce, curve_values=cv))
    scg = None
    if "scg" in runs:
        e = runs["scg"].extra
        scg = SCGDetail(relaxed=e["relaxed"], relax_evals=e["relax_evals"], rounded_values=e["rounded_values"],
                        sampled_values=e["sampled_values"],
                        priors=e["priors"], snapshots=e["snapshots"], snapshot_t=e["snapshot_t"],
                        estimator=e["estimator"], draws=e["draws"], T=e["T"])
    ctx.progress(0.95, "drawing the selection")
    view = save_view(inst, runs, ctx)
    ctx.progress(1.0, "done")
    return CompareResult(instance=info(inst), runs=out, opt=opt, gamma=gamma, beta=beta,
                         ratios_estimated=estimated,
                         dls_guarantee=(bl.guarantee(gamma, beta) if gamma is not None else None),
                         scg=scg, view=view, elapsed_s=time.perf_counter() - t0)


def save_view(inst: Instance, runs: dict[str, Run], ctx: JobContext) -> str | None:
    from . import plots

    shown = "scg" if "scg" in runs else next(iter(runs))
    fig = plots.selection_figure(inst, runs[shown].selection, METHOD_LABELS[shown],
                                 other=runs.get("greedy").selection if "greedy" in runs and shown != "greedy" else None)
    return ctx.artifacts.save_figure("selection.png", fig) if fig is not None else None


# --------------------------------------------------------------------------- T sweep


class SweepResult(BaseModel):
    instance: InstanceInfo
    Ts: list[int]
    mean: list[float]
    std: list[float]
    relaxed_mean: list[float]  # ME(q^T): mean f of the rounding draws before padding
    evals: list[float]
    greedy: float
    greedy_evals: int
    elapsed_s: float


def sweep(params: SweepParams | dict, ctx: JobContext | None = None) -> SweepResult:
    """Multinoulli-SCG's rounded value (mean ± std over seeds) for each T, with greedy as a reference."""
    p = validate(SweepParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    inst = instance_for(p)
    obj, part = inst.objective, inst.partition
    g = bl.greedy(obj, part)
    total = sum(p.Ts) * p.seeds
    done = 0
    mean, std, relaxed, evals = [], [], [], []
    for T in p.Ts:
        vals, rel, ev = [], [], []
        for s in range(p.seeds):
            sub = Subprogress(ctx, done / total, (done + T) / total)
            r = multinoulli_scg(obj, part, T=T, estimator=p.estimator, draws=p.draws, pad=p.pad, seed=p.seed + s,
                                on_step=sub)
            vals.append(r.value)
            rel.append(float(np.mean(r.extra["sampled_values"])))
            ev.append(r.evals)
            done += T
        mean.append(float(np.mean(vals)))
        std.append(float(np.std(vals)))
        relaxed.append(float(np.mean(rel)))
        evals.append(float(np.mean(ev)))
        ctx.progress(done / total, f"T = {T}: value {mean[-1]:.4g} (greedy {g.value:.4g})")
    return SweepResult(instance=info(inst), Ts=list(p.Ts), mean=mean, std=std, relaxed_mean=relaxed, evals=evals,
                       greedy=g.value, greedy_evals=g.evals, elapsed_s=time.perf_counter() - t0)

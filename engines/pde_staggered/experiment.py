"""Entry points (``fn(params, ctx)``): train the surrogates, roll them out against the solver, rotate the
input, and the factorial benchmark on held-out initial conditions."""
from __future__ import annotations

import io
import time

import numpy as np
import torch
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import groups as G
from . import ics, metrics, plots, swe
from .config import Sizes, sizes
from .params import (ELEMENT_NAMES, SURROGATE_DT, BenchmarkParams, ICParams, RolloutParams, RotateParams,
                     TrainParams)
from .training import dataset, solver_config, train_variant


def _setup() -> None:
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def _device() -> str:
    from engines.common.settings import get_settings

    return get_settings().resolved_device()


def ensure_models(variants, sz: Sizes, ctx: JobContext, start: float, stop: float, seed: int = 0,
                  pushforward: bool = False, augment: bool = False, problem: str = "swe"):
    """Load or train each variant (progress mapped onto [start, stop])."""
    out, records = {}, []
    span = (stop - start) / len(variants)
    for i, v in enumerate(variants):
        sub = Subprogress(ctx, start + i * span, start + (i + 1) * span)
        m, rec = train_variant(v, sz, seed, pushforward, augment, progress=sub, device=_device(), problem=problem)
        out[v] = m
        records.append(rec)
    return out, records


# ----------------------------------------------------------------------------- training


class TrainResult(BaseModel):
    variants: list[str]
    params: dict[str, int]
    widths: dict[str, int]
    best_val: dict[str, float]
    seconds: dict[str, float]
    loss_plot: str
    records: list[dict]
    elapsed_s: float


@torch_threads(1)
def train(params: TrainParams | dict, ctx: JobContext | None = None) -> TrainResult:
    p = validate(TrainParams, params)
    ctx = ctx or LocalContext()
    _setup()
    t0 = time.perf_counter()
    sz = sizes(p.problem, steps=p.steps, width=p.width, noise=p.noise)
    _, recs = ensure_models(p.variants, sz, ctx, 0.0, 0.97, p.seed, p.pushforward, p.augment, p.problem)
    ref = ctx.artifacts.save_figure("losses.png", plots.loss_figure(recs))
    short = [{**{k: r[k] for k in ("variant", "params", "best_step", "best_val", "seconds")},
              "losses": r["losses"][:: max(1, len(r["losses"]) // 200)], "val": r["val"]} for r in recs]
    ctx.progress(1.0, "trained")
    return TrainResult(variants=list(p.variants), params={r["variant"]: r["params"] for r in recs},
                       widths={r["variant"]: r["width"] for r in recs},
                       best_val={r["variant"]: r["best_val"] for r in recs},
                       seconds={r["variant"]: r["seconds"] for r in recs}, loss_plot=ref, records=short,
                       elapsed_s=time.perf_counter() - t0)


# ----------------------------------------------------------------------------- initial conditions


def initial_condition(p: ICParams, n: int):
    """(cfg, ζ, u, v) with a batch axis of 1; raises SolverError (a ValueError) for unusable input."""
    if p.ic == "random":
        zeta = ics.random_bumps(np.random.default_rng(p.seed), n)
        _, u, v = swe.zeros(1, n)
        zeta = zeta[None]
    elif p.ic == "vortex":
        z, u, v = ics.vortex_pair(n, strength=0.75 * p.amplitude)
        zeta, u, v = z[None], u[None], v[None]
    else:
        if p.ic == "bump":
            z = ics.gaussian(n, p.bump_row * n, p.bump_col * n, p.bump_width * n, p.amplitude)
        elif p.ic == "l_shape":
            z = ics.l_shape(n, p.amplitude)
        else:
            z = ics.from_mask(np.asarray(p.mask, dtype=float), n, p.amplitude)
        zeta = z[None]
        _, u, v = swe.zeros(1, n)
    substeps = int(round(SURROGATE_DT / p.dt))
    cfg = swe.SWEConfig(n=n, dt=p.dt, substeps=substeps)
    swe.check_state(cfg, zeta, u, v)
    return cfg, zeta, u, v


# ----------------------------------------------------------------------------- rollout


class RolloutResult(BaseModel):
    variants: list[str]
    horizon: int
    n: int
    nrmse: dict[str, list[float]]
    corr: dict[str, list[float]]
    mass: dict[str, list[float]]
    corr_time: dict[str, float]
    threshold: float
    final_mass_drift: dict[str, float]
    wall_velocity: dict[str, float]
    diverged: dict[str, int]
    step_seconds: dict[str, float]
    fields: str  # artifact: npz with ζ (V+1, T+1, N, N), names
    animation: str  # artifact: GIF
    elapsed_s: float
    problem: str = "swe"
    conserved: str = "mass"  # what `mass` / `final_mass_drift` measure ("momentum" for turbulence)
    shown: str = "ζ"  # the displayed field
    max_divergence: dict[str, float] = {}


@torch_threads(1)
def rollout(params: RolloutParams | dict, ctx: JobContext | None = None) -> RolloutResult:
    p = validate(RolloutParams, params)
    ctx = ctx or LocalContext()
    _setup()
    if p.problem == "ins":
        from .turbulence import rollout_ins

        return rollout_ins(p, ctx)
    t0 = time.perf_counter()
    sz = sizes()
    cfg, zeta, u, v = initial_condition(p, sz.n)
    models, _ = ensure_models(p.variants, sz, ctx, 0.0, 0.6, p.train_seed)
    ctx.progress(0.6, f"solver: {p.horizon} steps")
    ts = time.perf_counter()
    ref = swe.rollout(cfg, zeta, u, v, p.horizon)
    solver_s = (time.perf_counter() - ts) / p.horizon
    names, fields = ["solver"], [ref[0][0]]
    nr, co, ma, ct, wall, div, sec = {}, {}, {}, {}, {}, {}, {"solver": solver_s}
    ma["solver"] = metrics.mass_drift(ref[0])[0].tolist()
    for i, v_ in enumerate(p.variants):
        ctx.check_cancelled()
        ctx.progress(0.65 + 0.3 * i / len(p.variants), f"{v_}: {p.horizon}-step rollout")
        ts = time.perf_counter()
        zs, us, vs, dv = metrics.surrogate_rollout(models[v_], zeta, u, v, p.horizon)
        sec[v_] = (time.perf_counter() - ts) / p.horizon
        names.append(v_)
        fields.append(zs[0])
        nr[v_] = metrics.nrmse(zs, ref[0])[0].tolist()
        c = metrics.correlation(zs, ref[0])
        co[v_] = c[0].tolist()
        ct[v_] = float(metrics.correlation_time(c[:, 1:])[0])
        ma[v_] = metrics.mass_drift(zs)[0].tolist()
        wall[v_] = metrics.wall_velocity(us, vs)
        div[v_] = int(dv[0])
    arr = np.stack(fields).astype(np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, zeta=arr, names=np.array(names))
    fref = ctx.artifacts.save_bytes("fields.npz", buf.getvalue())
    every = max(1, p.horizon // 60)
    gref = ctx.artifacts.save_bytes("rollout.gif", plots.animation_gif(arr, names, every=every))
    ctx.progress(1.0, "done")
    return RolloutResult(variants=list(p.variants), horizon=p.horizon, n=sz.n, nrmse=nr, corr=co, mass=ma,
                         corr_time=ct, threshold=metrics.CORR_THRESHOLD,
                         final_mass_drift={k: float(m[-1]) for k, m in ma.items()}, wall_velocity=wall,
                         diverged=div, step_seconds=sec, fields=fref, animation=gref,
                         elapsed_s=time.perf_counter() - t0)


# ----------------------------------------------------------------------------- rotate the input


class RotateResult(BaseModel):
    element: str
    steps: int
    errors: dict[str, float]  # after `steps` steps, relative
    one_step: dict[str, list[float]]  # one-step relative error for each of the 8 elements
    figure: str
    elapsed_s: float


@torch_threads(1)
def rotate(params: RotateParams | dict, ctx: JobContext | None = None) -> RotateResult:
    p = validate(RotateParams, params)
    ctx = ctx or LocalContext()
    _setup()
    if p.problem == "ins":
        from .turbulence import rotate_ins

        return rotate_ins(p, ctx)
    t0 = time.perf_counter()
    sz = sizes()
    _, zeta, u, v = initial_condition(p, sz.n)
    models, _ = ensure_models(p.variants, sz, ctx, 0.0, 0.8, p.train_seed)
    g = G.ELEMENTS[p.element]
    gx = G.act_state(zeta, u, v, g)
    panels, errs, one = {}, {}, {}
    for v_ in p.variants:
        m = models[v_]
        a = metrics.surrogate_rollout(m, zeta, u, v, p.steps)[0][0, -1]
        b = metrics.surrogate_rollout(m, *(np.ascontiguousarray(x) for x in gx), p.steps)[0][0, -1]
        ga = np.ascontiguousarray(G.spatial(a, g))
        err = float(np.linalg.norm(b - ga) / max(np.linalg.norm(ga - ga.mean()), 1e-30))
        panels[v_] = dict(Gx=a, Ggx=b, gGx=ga, error=err)
        errs[v_] = err
        one[v_] = metrics.equivariance_errors(m, zeta, u, v)
    fref = ctx.artifacts.save_figure("rotate.png", plots.rotate_figure(panels, ELEMENT_NAMES[p.element], p.steps))
    ctx.progress(1.0, "done")
    return RotateResult(element=ELEMENT_NAMES[p.element], steps=p.steps, errors=errs, one_step=one, figure=fref,
                        elapsed_s=time.perf_counter() - t0)


# ----------------------------------------------------------------------------- factorial benchmark


class BenchmarkResult(BaseModel):
    problem: str = "swe"
    conserved: str = "mass"
    max_divergence: dict[str, float] = {}
    variants: list[str]
    seeds: int
    horizon: int
    n_test: int
    train_frames: int
    nrmse_at: dict[str, float]  # median over ICs and seeds at the horizon
    nrmse_at_train: dict[str, float]  # ... at the training trajectory length
    corr_time: dict[str, float]  # median
    mass_drift: dict[str, float]  # max over ICs, seeds, steps
    wall_velocity: dict[str, float]
    equivariance: dict[str, list[float]]  # max over seeds, per element
    params: dict[str, int]
    nrmse_curve: dict[str, list[float]]
    corr_curve: dict[str, list[float]]
    step_seconds: dict[str, float]  # batch of n_test, CPU, one surrogate step
    ood_nrmse: dict[str, float]  # L-shaped bump, median over seeds at the horizon
    ordering: bool
    figure: str
    elapsed_s: float


@torch_threads(1)
def benchmark(params: BenchmarkParams | dict, ctx: JobContext | None = None) -> BenchmarkResult:
    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    _setup()
    if p.problem == "ins":
        from .turbulence import benchmark_ins

        return benchmark_ins(p, ctx)
    t0 = time.perf_counter()
    sz = sizes(steps=p.steps, n_test=p.n_test)
    variants = ["p1", "p1_M", "p4m", "p4m_M"]
    zt, ut, vt = dataset(sz, "test", frames=max(100, p.horizon), progress=Subprogress(ctx, 0.0, 0.05))
    zt, ut, vt = (a.astype(np.float64) for a in (zt, ut, vt))
    lcfg, lz, lu, lv = initial_condition(ICParams(ic="l_shape"), sz.n)
    lref = swe.rollout(lcfg, lz, lu, lv, p.horizon)[0]
    nr = {v: [] for v in variants}
    co = {v: [] for v in variants}
    cts = {v: [] for v in variants}
    md = {v: 0.0 for v in variants}
    wall = {v: 0.0 for v in variants}
    eq = {v: [0.0] * 8 for v in variants}
    ood = {v: [] for v in variants}
    nparams, last = {}, {}
    for s in range(p.seeds):
        models, recs = ensure_models(variants, sz, ctx, 0.05 + 0.85 * s / p.seeds, 0.05 + 0.85 * (s + 0.8) / p.seeds,
                                     seed=s)
        nparams.update({r["variant"]: r["params"] for r in recs})
        for v in variants:
            ctx.check_cancelled()
            zs, us, vs, _ = metrics.surrogate_rollout(models[v], zt[:, 0], ut[:, 0], vt[:, 0], p.horizon)
            ref = zt[:, : p.horizon + 1]
            nr[v].append(metrics.nrmse(zs, ref))
            c = metrics.correlation(zs, ref)
            co[v].append(c)
            cts[v].append(metrics.correlation_time(c[:, 1:]))
            md[v] = max(md[v], float(metrics.mass_drift(zs).max()))
            wall[v] = max(wall[v], metrics.wall_velocity(us, vs))
            e = metrics.equivariance_errors(models[v], zt[:4, 5], ut[:4, 5], vt[:4, 5])
            eq[v] = [max(a, b) for a, b in zip(eq[v], e)]
            lzs = metrics.surrogate_rollout(models[v], lz, lu, lv, p.horizon)[0]
            ood[v].append(float(metrics.nrmse(lzs, lref)[0, -1]))
        last = models
        ctx.progress(0.05 + 0.85 * (s + 1) / p.seeds, f"seed {s + 1}/{p.seeds} evaluated")
    k = min(sz.train_frames, p.horizon)
    nrmse_curve = {v: np.median(np.concatenate(nr[v]), 0).tolist() for v in variants}
    corr_curve = {v: np.median(np.concatenate(co[v]), 0).tolist() for v in variants}
    nrmse_at = {v: nrmse_curve[v][-1] for v in variants}
    nb = min(len(zt), 16)
    step_s = metrics.timing({v: last[v] for v in variants}, solver_config(sz), zt[:nb, 0], ut[:nb, 0], vt[:nb, 0])
    a = nrmse_at
    ordering = a["p4m_M"] < a["p4m"] < a["p1_M"] <= a["p1"]
    res = dict(variants=variants, seeds=p.seeds, horizon=p.horizon, n_test=len(zt), train_frames=sz.train_frames,
               nrmse_at=nrmse_at, nrmse_at_train={v: nrmse_curve[v][k] for v in variants},
               corr_time={v: float(np.median(np.concatenate(cts[v]))) for v in variants}, mass_drift=md,
               wall_velocity=wall, equivariance=eq, params=nparams, nrmse_curve=nrmse_curve, corr_curve=corr_curve,
               step_seconds=step_s, ood_nrmse={v: float(np.median(ood[v])) for v in variants}, ordering=ordering)
    fref = ctx.artifacts.save_figure("benchmark.png", plots.benchmark_figure(res))
    ctx.progress(1.0, "done")
    return BenchmarkResult(**res, figure=fref, elapsed_s=time.perf_counter() - t0)

"""The decaying-turbulence problem (periodic MAC grid): rollout, rotate-the-input and benchmark, mirroring the
shallow-water entry points in ``experiment.py`` (which dispatch here when ``problem == "ins"``). The compared
field is the vorticity at cell corners; the conserved quantity is momentum (mean velocity); the /M variants
output a stream function, so their updates are exactly divergence-free."""
from __future__ import annotations

import io
import time

import numpy as np

from engines.common.context import JobContext, Subprogress

from . import groups as G
from . import ins, metrics, plots
from .config import sizes
from .experiment import BenchmarkResult, RolloutResult, RotateResult, ensure_models
from .params import ELEMENT_NAMES, BenchmarkParams, ICParams, RolloutParams, RotateParams
from .training import dataset, ins_config


def initial_condition_ins(p: ICParams, n: int):
    cfg = ins_config(sizes("ins", n=n))
    if p.ic == "vortex":
        w = ins.vortex_pair(n, strength=p.amplitude / 0.2)
    else:
        w = ins.random_vorticity(np.random.default_rng(p.seed), n, cfg.k_peak)
    ins.check(cfg, w[None])
    return cfg, w[None]


def _act(state, g):
    return ins.act(*state, g)


def rollout_ins(p: RolloutParams, ctx: JobContext) -> RolloutResult:
    t0 = time.perf_counter()
    sz = sizes("ins")
    cfg, w = initial_condition_ins(p, sz.n)
    models, _ = ensure_models(p.variants, sz, ctx, 0.0, 0.6, p.train_seed, problem="ins")
    ctx.progress(0.6, f"solver: {p.horizon} steps")
    ts = time.perf_counter()
    ru, rv = ins.rollout(cfg, w, p.horizon)
    solver_s = (time.perf_counter() - ts) / p.horizon
    ref = ins.vorticity(ru, rv)
    names, fields = ["solver"], [ref[0]]
    nr, co, ma, ct, wall, div, sec, dmax = {}, {}, {}, {}, {}, {}, {"solver": solver_s}, {}
    ma["solver"] = metrics.momentum_drift(ru, rv)[0].tolist()
    dmax["solver"] = float(np.abs(ins.divergence(ru, rv)).max())
    for i, v_ in enumerate(p.variants):
        ctx.check_cancelled()
        ctx.progress(0.65 + 0.3 * i / len(p.variants), f"{v_}: {p.horizon}-step rollout")
        ts = time.perf_counter()
        (us, vs), dv = metrics.rollout_states(models[v_], (ru[:, 0], rv[:, 0]), p.horizon)
        sec[v_] = (time.perf_counter() - ts) / p.horizon
        om = ins.vorticity(us, vs)
        names.append(v_)
        fields.append(om[0])
        nr[v_] = metrics.nrmse(om, ref)[0].tolist()
        c = metrics.correlation(om, ref)
        co[v_] = c[0].tolist()
        ct[v_] = float(metrics.correlation_time(c[:, 1:])[0])
        ma[v_] = metrics.momentum_drift(us, vs)[0].tolist()
        dmax[v_] = float(np.abs(ins.divergence(us, vs)).max())
        wall[v_] = 0.0
        div[v_] = int(dv[0])
    arr = np.stack(fields).astype(np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, zeta=arr, names=np.array(names))
    fref = ctx.artifacts.save_bytes("fields.npz", buf.getvalue())
    gref = ctx.artifacts.save_bytes("rollout.gif", plots.animation_gif(arr, names, every=max(1, p.horizon // 60)))
    ctx.progress(1.0, "done")
    return RolloutResult(variants=list(p.variants), horizon=p.horizon, n=sz.n, nrmse=nr, corr=co, mass=ma,
                         corr_time=ct, threshold=metrics.CORR_THRESHOLD,
                         final_mass_drift={k: float(m[-1]) for k, m in ma.items()}, wall_velocity=wall,
                         diverged=div, step_seconds=sec, fields=fref, animation=gref,
                         elapsed_s=time.perf_counter() - t0, problem="ins", conserved="momentum", shown="ω",
                         max_divergence=dmax)


def rotate_ins(p: RotateParams, ctx: JobContext) -> RotateResult:
    t0 = time.perf_counter()
    sz = sizes("ins")
    cfg, w = initial_condition_ins(p, sz.n)
    u, v = ins.corner_velocity(w)
    models, _ = ensure_models(p.variants, sz, ctx, 0.0, 0.8, p.train_seed, problem="ins")
    g = G.ELEMENTS[p.element]  # vorticity is a pseudo-scalar: ins.vorticity of the acted velocities handles it
    gx = tuple(np.ascontiguousarray(a) for a in ins.act(u, v, g))
    panels, errs, one = {}, {}, {}
    for v_ in p.variants:
        m = models[v_]
        (ua, va), _ = metrics.rollout_states(m, (u, v), p.steps)
        (ub, vb), _ = metrics.rollout_states(m, gx, p.steps)
        a = ins.vorticity(ua[0, -1], va[0, -1])
        b = ins.vorticity(ub[0, -1], vb[0, -1])
        ga_u, ga_v = ins.act(ua[0, -1], va[0, -1], g)
        ga = ins.vorticity(np.ascontiguousarray(ga_u), np.ascontiguousarray(ga_v))
        err = float(np.sqrt(np.sum((ub[0, -1] - ga_u) ** 2) + np.sum((vb[0, -1] - ga_v) ** 2))
                    / max(np.sqrt(np.sum(ga_u ** 2) + np.sum(ga_v ** 2)), 1e-30))
        panels[v_] = dict(Gx=a, Ggx=b, gGx=ga, error=err)
        errs[v_] = err
        one[v_] = metrics.equivariance_errors_generic(m, (u, v), _act)
    fref = ctx.artifacts.save_figure("rotate.png", plots.rotate_figure(panels, ELEMENT_NAMES[p.element], p.steps,
                                                                       field="ω"))
    ctx.progress(1.0, "done")
    return RotateResult(element=ELEMENT_NAMES[p.element], steps=p.steps, errors=errs, one_step=one, figure=fref,
                        elapsed_s=time.perf_counter() - t0)


def benchmark_ins(p: BenchmarkParams, ctx: JobContext) -> BenchmarkResult:
    t0 = time.perf_counter()
    sz = sizes("ins", steps=p.steps, n_test=p.n_test)
    variants = ["p1", "p1_M", "p4m", "p4m_M"]
    ut, vt = dataset(sz, "test", frames=max(100, p.horizon), progress=Subprogress(ctx, 0.0, 0.05), problem="ins")
    ut, vt = ut.astype(np.float64), vt.astype(np.float64)
    ref = ins.vorticity(ut[:, : p.horizon + 1], vt[:, : p.horizon + 1])
    cfg, lw = initial_condition_ins(ICParams(problem="ins", ic="vortex"), sz.n)
    lu, lv = ins.rollout(cfg, lw, p.horizon)
    lref = ins.vorticity(lu, lv)
    nr = {v: [] for v in variants}
    co = {v: [] for v in variants}
    cts = {v: [] for v in variants}
    md = {v: 0.0 for v in variants}
    dmax = {v: 0.0 for v in variants}
    eq = {v: [0.0] * 8 for v in variants}
    ood = {v: [] for v in variants}
    nparams, last = {}, {}
    for s in range(p.seeds):
        models, recs = ensure_models(variants, sz, ctx, 0.05 + 0.85 * s / p.seeds,
                                     0.05 + 0.85 * (s + 0.8) / p.seeds, seed=s, problem="ins")
        nparams.update({r["variant"]: r["params"] for r in recs})
        for v in variants:
            ctx.check_cancelled()
            (us, vs), _ = metrics.rollout_states(models[v], (ut[:, 0], vt[:, 0]), p.horizon)
            om = ins.vorticity(us, vs)
            nr[v].append(metrics.nrmse(om, ref))
            c = metrics.correlation(om, ref)
            co[v].append(c)
            cts[v].append(metrics.correlation_time(c[:, 1:]))
            md[v] = max(md[v], float(metrics.momentum_drift(us, vs).max()))
            dmax[v] = max(dmax[v], float(np.abs(ins.divergence(us, vs)).max()))
            e = metrics.equivariance_errors_generic(models[v], (ut[:4, 5], vt[:4, 5]), _act)
            eq[v] = [max(a, b) for a, b in zip(eq[v], e)]
            (lus, lvs), _ = metrics.rollout_states(models[v], (lu[:, 0], lv[:, 0]), p.horizon)
            ood[v].append(float(metrics.nrmse(ins.vorticity(lus, lvs), lref)[0, -1]))
        last = models
        ctx.progress(0.05 + 0.85 * (s + 1) / p.seeds, f"seed {s + 1}/{p.seeds} evaluated")
    k = min(sz.train_frames, p.horizon)
    nrmse_curve = {v: np.median(np.concatenate(nr[v]), 0).tolist() for v in variants}
    corr_curve = {v: np.median(np.concatenate(co[v]), 0).tolist() for v in variants}
    nrmse_at = {v: nrmse_curve[v][-1] for v in variants}
    step_s = {}
    nb = min(len(ut), 16)
    t = time.perf_counter()
    ins.rollout(cfg, ins.vorticity(ut[:nb, 0], vt[:nb, 0]), 1)
    step_s["solver"] = time.perf_counter() - t
    import torch

    with torch.no_grad():
        x = tuple(torch.as_tensor(a[:nb, 0], dtype=torch.float32) for a in (ut, vt))
        for v in variants:
            last[v](*x)
            t = time.perf_counter()
            last[v](*x)
            step_s[v] = time.perf_counter() - t
    a = nrmse_at
    res = dict(variants=variants, seeds=p.seeds, horizon=p.horizon, n_test=len(ut), train_frames=sz.train_frames,
               nrmse_at=nrmse_at, nrmse_at_train={v: nrmse_curve[v][k] for v in variants},
               corr_time={v: float(np.median(np.concatenate(cts[v]))) for v in variants}, mass_drift=md,
               wall_velocity={v: 0.0 for v in variants}, equivariance=eq, params=nparams, nrmse_curve=nrmse_curve,
               corr_curve=corr_curve, step_seconds=step_s, ood_nrmse={v: float(np.median(ood[v])) for v in variants},
               ordering=a["p4m_M"] < a["p4m"] < a["p1_M"] <= a["p1"], problem="ins", conserved="momentum",
               max_divergence=dmax)
    fref = ctx.artifacts.save_figure("benchmark.png", plots.benchmark_figure(res))
    ctx.progress(1.0, "done")
    return BenchmarkResult(**res, figure=fref, elapsed_s=time.perf_counter() - t0)

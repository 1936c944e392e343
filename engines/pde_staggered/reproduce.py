"""``make reproduce METHOD=pde_staggered``: spec section 4 claims and section 8 acceptance checks.

Seeds: ``PDE_STAGGERED_SEEDS`` (default 3, as the spec asks; all three seeds of both problems ship in the model release). Trained weights are cached under the data directory, so a
second run only evaluates.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

from engines.common.results import Report

from . import groups as G
from . import ics, swe
from .config import sizes
from .experiment import benchmark, rollout, rotate
from .models import VARIANTS, build, n_params
from .plots import LABELS, curves_figure, loss_figure
from .training import load_model


def _d(model) -> dict:
    return json.loads(model.model_dump_json())


def meaningful(nrmse: dict, variants) -> tuple[bool, str]:
    """A comparison of NRMSEs is meaningful only when every model compared beats predicting zero (NRMSE ≤ 1)."""
    worse = [v for v in variants if not nrmse[v] <= 1.0]
    if not worse:
        return True, ""
    return False, (" — not meaningful: NRMSE > 1 (worse than predicting zero) for "
                   + ", ".join(LABELS[v] for v in worse) + ", so the ordering is not counted")


def cached_benchmark(params: dict) -> dict:
    """The factorial benchmark, cached as JSON next to the weights (keyed by sizes, params and versions), so
    a second ``make reproduce`` (or a pre-run of one problem) only re-renders."""
    from .config import cache_dir, key
    from .training import DATA_VERSION, MODEL_VERSION

    sz = sizes(params.get("problem", "swe"))
    path = cache_dir() / f"bench_{key(sz, [params, MODEL_VERSION, DATA_VERSION])}.json"
    if path.exists():
        return json.loads(path.read_text())
    res = _d(benchmark(params))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res))
    tmp.replace(path)  # atomic: an interrupted run leaves no truncated cache
    return res


def solver_claims(rep: Report) -> None:
    cfg = swe.SWEConfig(n=32)
    z, u, v = ics.batch_random(7, 4, 32)
    t0 = time.perf_counter()
    ref = swe.rollout(cfg, z, u, v, 125)  # 500 solver steps
    err = max(max(np.abs(a - b).max() for a, b in zip(swe.rollout(cfg, *G.act_state(z, u, v, g), 125),
                                                       G.act_state(*ref, g))) for g in G.ELEMENTS)
    m = ref[0].sum((-2, -1))
    drift = float(np.abs(m - m[:, :1]).max())
    rep.claim("Check 1-2: solver trajectories of g·IC equal g·(trajectory) for all 8 elements of D4, and ∑ζ is "
              "constant (32×32 closed basin, float64, 500 steps, 4 ICs)",
              "equivariant to machine precision; mass conserved (spec: < 1e-10, < 1e-12)",
              f"max |difference| {err:.1e}; max |∑ζ_t − ∑ζ_0| {drift:.1e} ({time.perf_counter() - t0:.1f} s)",
              err < 1e-10 and drift < 1e-12)


def ins_claims(rep: Report, seeds: int) -> None:
    """Decaying turbulence (periodic MAC grid): solver invariants, the /M stream-function output, ordering."""
    from . import ins
    from .plots import benchmark_figure

    cfg = ins.INSConfig(n=24)
    rng = np.random.default_rng(3)
    w = np.stack([ins.random_vorticity(rng, 24) for _ in range(3)])
    us, vs = ins.rollout(cfg, w, 30)
    err = max(max(np.abs(a - b).max() for a, b in zip(
        ins.rollout(cfg, np.ascontiguousarray(G.spatial(w, g)) * (-1.0 if g[0] else 1.0), 30), ins.act(us, vs, g)))
        for g in G.ELEMENTS)
    div = float(np.abs(ins.divergence(us, vs)).max())
    mom = float(max(np.abs(us.mean((-2, -1))).max(), np.abs(vs.mean((-2, -1))).max()))
    rep.claim("Turbulence solver (periodic MAC grid, pseudo-spectral, 24×24, 300 RK4 steps, 3 ICs): D4-equivariant "
              "(ω pseudo-scalar) < 1e-10, discrete divergence and mean velocity ≈ 0", "reference data are symmetric and "
              "incompressible", f"max |difference| {err:.1e}; max |div| {div:.1e}; max |mean velocity| {mom:.1e}",
              err < 1e-10 and div < 1e-12 and mom < 1e-12)
    horizon = 50
    b = cached_benchmark({"problem": "ins", "seeds": seeds, "horizon": horizon})
    eq, md, dv = b["equivariance"], b["mass_drift"], b["max_divergence"]
    rep.claim("Turbulence: trained p4m surrogates equivariant < 1e-5 under all 8 elements (ψ as a pseudo-scalar); "
              "p1 > 1e-2", "exact equivariance", ", ".join(f"{LABELS[v]} max {max(eq[v]):.1e}" for v in VARIANTS),
              max(max(eq["p4m"]), max(eq["p4m_M"])) < 1e-5 and min(min(eq["p1"][1:]), min(eq["p1_M"][1:])) > 1e-2)
    rep.claim(f"Check 4 (turbulence): /M (stream-function output) max |div u| < 1e-6 and momentum drift < 1e-7 "
              f"over {horizon} steps; ∅ models violate both", "M: divergence-free by construction; ρu conserved",
              "max |div|: " + ", ".join(f"{LABELS[v]} {dv[v]:.1e}" for v in VARIANTS) + "; momentum drift: "
              + ", ".join(f"{LABELS[v]} {md[v]:.1e}" for v in VARIANTS),
              max(dv["p1_M"], dv["p4m_M"]) < 1e-6 and max(md["p1_M"], md["p4m_M"]) < 1e-7 and dv["p1"] > 1e-3)
    at = {v: b["nrmse_curve"][v][horizon] for v in VARIANTS}
    ok, why = meaningful(at, VARIANTS)
    rep.claim(f"Turbulence: median {horizon}-step NRMSE(ω) ordering p4m/M < p4m/∅ < p1/M ≤ p1/∅ ({b['n_test']} "
              f"held-out ICs × {seeds} seeds; counted only when every NRMSE ≤ 1)", "p4m/M+ρu best; symmetry beats physics",
              ", ".join(f"{LABELS[v]} {at[v]:.4f}" for v in VARIANTS) + why,
              ok and at["p4m_M"] < at["p4m"] < at["p1_M"] <= at["p1"])
    ct = b["corr_time"]
    rep.claim("Turbulence: correlation time (ρ(ω) > 0.8, median) longest for p4m/M", "longest for p4m/M+ρu",
              ", ".join(f"{LABELS[v]} {ct[v]:g}" for v in VARIANTS), ct["p4m_M"] >= max(ct.values()))
    ood = b["ood_nrmse"]
    ok, why = meaningful(ood, ("p4m_M", "p1"))
    rep.claim(f"Turbulence OOD (vortex pair, step {horizon}): p4m/M beats p1/∅ (counted only when both NRMSE ≤ 1)",
              "better OOD generalisation", ", ".join(f"{LABELS[v]} {ood[v]:.4f}" for v in VARIANTS) + why,
              ok and ood["p4m_M"] < ood["p1"])
    rep.figure(benchmark_figure(b), "benchmark_ins", f"Turbulence: median NRMSE and correlation of ω over "
               f"{b['n_test']} held-out ICs × {seeds} seeds")
    rep.section("## Turbulence table\n\n| variant | params | NRMSE(ω)@50 | corr. time | momentum drift | max div | "
                "max equiv. err | vortex-pair NRMSE |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(
                    f"| {LABELS[v]} | {b['params'][v]:,} | {at[v]:.4f} | {ct[v]:g} | {md[v]:.1e} | {dv[v]:.1e} | "
                    f"{max(eq[v]):.1e} | {ood[v]:.4f} |" for v in VARIANTS))


def main():
    torch.set_num_threads(1)
    seeds = int(os.environ.get("PDE_STAGGERED_SEEDS", "3"))  # the spec's 3 (released: nothing trains)
    rep = Report("pde_staggered", "Geometric and physical constraints for PDE surrogates on staggered grids")
    solver_claims(rep)
    sz = sizes()
    counts = {v: n_params(build(v, sz.width, dict(zeta=1, vel=1, dzeta=1, dvel=1))) for v in VARIANTS}
    spread = max(abs(c - counts["p4m_M"]) / counts["p4m_M"] for c in counts.values())
    rep.claim("Check 7: all four variants within ±10% parameters (p1 channels chosen to match)",
              "matched parameter counts", ", ".join(f"{LABELS[v]} {c:,}" for v, c in counts.items())
              + f" (max deviation {100 * spread:.1f}%)", spread <= 0.10)

    parts = os.environ.get("PDE_STAGGERED_PARTS", "swe,ins").split(",")
    if "swe" in parts:
        swe_claims(rep, seeds, sz)
    else:
        rep.not_measured("Shallow-water claims 1-5 (equivariance, mass, NRMSE ordering, generalisation, pushforward)",
                         "see the spec", "PDE_STAGGERED_PARTS excluded `swe` in this run")
        rep.section("## Shallow-water factorial benchmark\n\n**Not measured in this run** (`PDE_STAGGERED_PARTS` "
                    "excluded `swe`): the surrogates had not finished training on the shared 2-core machine. Run "
                    "`make reproduce METHOD=pde_staggered` to measure claims 1-5 for shallow water.")
    if "ins" in parts:
        ins_claims(rep, seeds)
    return rep.write()


def swe_claims(rep: Report, seeds: int, sz) -> None:
    horizon = 100
    b = cached_benchmark({"problem": "swe", "seeds": seeds, "horizon": horizon})
    eq = b["equivariance"]
    rep.claim("Claim 1 / check 3: trained p4m surrogates are equivariant, ‖G(g·w) − g·G(w)‖/‖G(w) − w‖ < 1e-5 "
              "for every g in D4 (float32); p1 is not (> 1e-2)",
              "exact equivariance (escnn-style group convs + staggered I/O layers)",
              ", ".join(f"{LABELS[v]} max {max(eq[v]):.1e}" for v in VARIANTS)
              + f"; p1 min over g ≠ e {min(min(eq['p1'][1:]), min(eq['p1_M'][1:])):.2f}",
              max(max(eq["p4m"]), max(eq["p4m_M"])) < 1e-5 and min(min(eq["p1"][1:]), min(eq["p1_M"][1:])) > 1e-2)
    md = b["mass_drift"]
    rep.claim(f"Claim 2 / check 4: /M surrogates keep ∑ζ within 1e-5 relative over {horizon} steps and the walls "
              "closed (max over held-out ICs and seeds)", "conserved to float precision; unconstrained models drift",
              ", ".join(f"{LABELS[v]} {md[v]:.1e}" for v in VARIANTS)
              + f"; wall velocity of /M: {max(b['wall_velocity']['p1_M'], b['wall_velocity']['p4m_M']):g}",
              max(md["p1_M"], md["p4m_M"]) < 1e-5 and b["wall_velocity"]["p4m_M"] == 0.0)
    at50 = {v: b["nrmse_curve"][v][50] for v in VARIANTS}
    ok50, why50 = meaningful(at50, VARIANTS)
    order = ok50 and at50["p4m_M"] < at50["p4m"] < at50["p1_M"] <= at50["p1"]
    rep.claim(f"Claim 3 / check 6: median 50-step NRMSE(ζ) ordering p4m/M < p4m/∅ < p1/M ≤ p1/∅ "
              f"({b['n_test']} held-out ICs × {seeds} seeds; counted only when every NRMSE ≤ 1)",
              "p4m/M best; symmetry beats physics (p4m/∅ < p1/M)",
              ", ".join(f"{LABELS[v]} {at50[v]:.4f}" for v in VARIANTS) + why50, order)
    okp, whyp = meaningful(at50, ("p4m_M", "p4m", "p1"))
    partial = okp and at50["p4m_M"] < at50["p1"] and at50["p4m"] < at50["p1"]
    rep.claim("Claim 3 (weaker, spec check 5): both p4m variants beat p1/∅ at 50 steps", "p4m < p1",
              f"p4m/M {at50['p4m_M']:.4f}, p4m/∅ {at50['p4m']:.4f} vs p1/∅ {at50['p1']:.4f}" + whyp, partial)
    ct = b["corr_time"]
    rep.claim(f"Claim 3b: correlation time (steps with ρ > 0.8, median, horizon {horizon}) longest for p4m/M",
              "only p4m/M stays highly correlated over the long rollout",
              ", ".join(f"{LABELS[v]} {ct[v]:g}" for v in VARIANTS), ct["p4m_M"] >= max(ct.values()))
    tr = b["train_frames"]
    at_tr = {v: b["nrmse_curve"][v][tr] for v in VARIANTS}
    at_h = {v: b["nrmse_curve"][v][horizon] for v in VARIANTS}
    okh, whyh = meaningful(at_h, ("p4m_M", "p1"))
    rep.claim(f"Generalisation in time: at step {horizon} (2.5× the {tr}-step training trajectories) p4m/M still has "
              f"the lowest NRMSE, and its lead over p1/∅ does not shrink", "constrained models generalise to longer "
              "durations", f"step {tr}: p4m/M {at_tr['p4m_M']:.4f} vs p1/∅ {at_tr['p1']:.4f}; step {horizon}: p4m/M "
              f"{at_h['p4m_M']:.4f} vs p1/∅ {at_h['p1']:.4f} (best other {min(at_h[v] for v in VARIANTS if v != 'p4m_M'):.4f})"
              + whyh,
              okh and at_h["p4m_M"] <= min(at_h.values()) and at_h["p1"] / at_h["p4m_M"] >= at_tr["p1"] / at_tr["p4m_M"])
    ood = b["ood_nrmse"]
    rin, rood = at_h["p1"] / at_h["p4m_M"], ood["p1"] / ood["p4m_M"]
    oko, whyo = meaningful(ood, ("p4m_M", "p1"))
    rep.claim(f"Claim 4: on the L-shaped bump (OOD) p4m/M beats p1/∅ at step {horizon} by a larger relative margin "
              "than in distribution", "constrained models generalise better to new IC shapes",
              f"L-shape NRMSE: " + ", ".join(f"{LABELS[v]} {ood[v]:.4f}" for v in VARIANTS)
              + f"; p1/∅ ÷ p4m/M = {rood:.2f} (in distribution {rin:.2f})" + whyo, oko and rood > rin and rood > 1)
    s = b["step_seconds"]
    ratio = {v: s["solver"] / s[v] for v in VARIANTS}
    rep.claim("Speed: surrogate step ≥ 10× faster than the solver step (4 explicit solver steps) at the same batch "
              "(16 states, CPU, 1 thread)", "surrogates are faster than the solver (paper: 48-core solver vs GPU nets)",
              f"solver {1e3 * s['solver']:.2f} ms; " + ", ".join(f"{LABELS[v]} {1e3 * s[v]:.1f} ms "
                                                              f"(speed-up {ratio[v]:.2g}×)" for v in VARIANTS),
              min(ratio.values()) >= 10)
    pf = load_model("p4m_M", sz, 0, pushforward=True)
    claim5 = ("Claim 5: pushforward training (2-step unrolls in the second half) lowers p4m/M's 50-step NRMSE (seed 0)")
    if pf is None and os.environ.get("PDE_STAGGERED_TRAIN_PUSHFORWARD") == "1":
        from .training import train_variant

        train_variant("p4m_M", sz, 0, pushforward=True)
        pf = load_model("p4m_M", sz, 0, pushforward=True)
    if pf is None:
        rep.not_measured(claim5, "doubly-constrained models still benefit from pushforward",
                         "the pushforward-trained p4m/M model is not in the cache (about as long to train as one "
                         "variant; PDE_STAGGERED_TRAIN_PUSHFORWARD=1 trains it in this run)")
    else:
        from .metrics import nrmse, surrogate_rollout
        from .training import dataset

        zt, ut, vt = dataset(sz, "test", frames=100)
        base = load_model("p4m_M", sz, 0)[0]
        ref = zt[:, :51].astype(np.float64)
        e = {name: float(np.median(nrmse(surrogate_rollout(m, zt[:, 0], ut[:, 0], vt[:, 0], 50)[0], ref)[:, 50]))
             for name, m in (("plain", base), ("pushforward", pf[0]))}
        okf, whyf = meaningful({"p4m_M": e["plain"], "p4m": e["pushforward"]}, ("p4m_M", "p4m"))
        rep.claim(claim5, "doubly-constrained models still benefit from pushforward",
                  f"p4m/M {e['plain']:.4f} → with pushforward {e['pushforward']:.4f}" + whyf.replace("p4m/∅", "pushforward"),
                  okf and e["pushforward"] < e["plain"])
    from .plots import benchmark_figure

    rep.figure(benchmark_figure(b), "benchmark", f"Median NRMSE and correlation of ζ over {b['n_test']} held-out "
               f"ICs × {seeds} seeds; dotted line: training trajectory length")
    recs = [load_model(v, sz, 0)[1] for v in VARIANTS]
    rep.figure(loss_figure(recs), "losses", "Training losses, seed 0 (dashed: validation; best checkpoint kept)")

    r = _d(rollout({"ic": "l_shape", "horizon": horizon}))
    rep.figure(curves_figure(r), "lshape", "L-shaped bump (out of distribution): NRMSE, correlation and mass drift")
    rot = _d(rotate({"ic": "l_shape", "element": 5, "steps": 10}))
    rep.section("## Rotate-the-input check (tab)\n\nInput transformed by *flip + rot 90°*, 10 steps: relative "
                "error ‖G(g·x) − g·G(x)‖ " + ", ".join(f"{LABELS[v]} {e:.1e}" for v, e in rot["errors"].items()) + ".")
    rep.section("## Benchmark table\n\n| variant | params | NRMSE@50 | NRMSE@100 | corr. time | mass drift | max equiv. "
                "err | L-shape NRMSE@100 | ms / step |\n|---|---|---|---|---|---|---|---|---|\n" + "\n".join(
                    f"| {LABELS[v]} | {b['params'][v]:,} | {at50[v]:.4f} | {at_h[v]:.4f} | {ct[v]:g} | {md[v]:.1e} | "
                    f"{max(eq[v]):.1e} | {ood[v]:.4f} | {1e3 * s[v]:.1f} |" for v in VARIANTS)
                + f"\n\nSizes: N = {sz.n}, {sz.n_train} training trajectories × {sz.train_frames} steps, width "
                  f"{sz.width}, {sz.steps} Adam steps, batch {sz.batch}; solver ms/step {1e3 * s['solver']:.2f}.")


if __name__ == "__main__":
    main()

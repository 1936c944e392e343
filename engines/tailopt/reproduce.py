"""``make reproduce METHOD=tailopt``: the spec's acceptance checks 1-7 (section 9) and claims 1-5 (section 4).

Every method is tuned on a validation seed (seed + 1000: other data, other noise) with the same budget of
configurations, then run with the chosen hyper-parameters on held-out seeds; the median is reported.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np
import torch

from engines.common.results import Report
from engines.common.threads import torch_threads

from .algorithms import LocalComm, run_method
from .biclip import bi_clip, bi_clip_reference
from .experiment import equivalence, final_score, noise_probe, tune
from .params import ADAM_TYPE, METHOD_LABELS, HyperParams, ProblemParams
from .plots import loss_figure, noise_figure
from .tasks import make_task

BUDGET = 16
TEST_SEEDS = (1, 2, 3, 4, 5)
LINEAR = dict(task="linear", workers=8, local_steps=10, rounds=300, batch=16, non_iid=0.5, noise_scale=1.0)
CAUCHY_METHODS = ("fedavg", "fedavg_clip", "fedadam", "local_adam", "adam2", "diloco", "adam_tailopt", "bi2clip")
GAUSS_METHODS = ("fedavg", "bi2clip")
FLOWER_TOL = 1e-9  # Bi²Clip on Flower vs the simulator, float64 (the same operations in the same order)
PROCESSES = int(os.environ.get("TAILOPT_PROCESSES", "2"))  # methods tuned in parallel, one process each


def _fmt(v: float) -> str:
    return "diverged" if not math.isfinite(v) else f"{v:.4g}"


def study_one(p: ProblemParams, m: str, seeds=TEST_SEEDS, budget=BUDGET) -> dict:
    """Tune one method on the validation seed, run it on the held-out seeds (a picklable summary)."""
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    h, vscore, _ = tune(p, m, budget)
    finals, curves = [], []
    for s in seeds:
        ps = p.model_copy(update={"seed": s})
        task = make_task(ps)
        tr = run_method(task, m, [h], p.rounds, LocalComm(p.workers), s)
        finals.append(final_score(tr.loss[0], task.f_star, tr.diverged_at[0]))
        curves.append((tr.loss[0] - task.f_star, tr.diverged_at[0]))
    return dict(h=h, val=vscore, finals=finals, median=float(np.median(finals)), curves=curves,
                wall=time.perf_counter() - t0)


def tuned_study(p: ProblemParams, methods, seeds=TEST_SEEDS, budget=BUDGET, log=print, processes: int = 1):
    """``study_one`` for every method (methods are independent: optionally one process each)."""
    if processes > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(processes) as ex:
            futs = {m: ex.submit(study_one, p, m, seeds, budget) for m in methods}
            out = {m: f.result() for m, f in futs.items()}
    else:
        out = {m: study_one(p, m, seeds, budget) for m in methods}
    for m, s in out.items():
        h = s["h"]
        log(f"  {m:16s} median {_fmt(s['median'])} (val {_fmt(s['val'])}) {s['wall']:.0f} s "
            f"lr_in={h.lr_in:.3g} lr_out={h.lr_out:.3g} u_in={h.u_in:.3g} u_out={h.u_out:.3g}")
    return out


def _as_result(p: ProblemParams, study: dict, seed_index: int = 0) -> dict:
    """The first held-out seed's curves in the shape ``plots.loss_figure`` reads."""
    runs = []
    for m, s in study.items():
        exc, div = s["curves"][seed_index]
        T = len(exc) - 1
        idx = np.unique(np.linspace(0, T, min(200, T + 1)).round().astype(int))
        runs.append(dict(method=m, label=METHOD_LABELS[m], rounds=idx.tolist(), diverged_at=div,
                         excess=[None if (div is not None and t >= div) or not np.isfinite(exc[t]) else float(exc[t])
                                 for t in idx],
                         final_excess=None if not math.isfinite(s["finals"][seed_index]) else s["finals"][seed_index]))
    return dict(task=p.task, noise=p.noise, tail_index=p.tail_index, workers=p.workers, local_steps=p.local_steps,
                has_optimum=p.task != "transformer", runs=runs)


def main():
    rep = Report("tailopt", "Efficient distributed optimisation under heavy-tailed noise (TailOPT / Bi²Clip)")
    torch.set_num_threads(1)

    # Check 1: the BiClip operator.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100_000, generator=g, dtype=torch.float64) * 10 ** torch.empty(100_000, dtype=torch.float64).uniform_(-5, 3, generator=g)
    x[:1000] = 0
    d, u = 1e-3, 1.0
    y = bi_clip(x, d, u)
    a = y.abs()
    inv = bool((((a == 0) | ((a >= d) & (a <= u))).all() & (torch.sign(y) == torch.sign(x)).all()))
    ident = bool(torch.equal(bi_clip(x, 0.0, math.inf), x))
    signd = bool(torch.equal(bi_clip(x, 0.3, 0.3), 0.3 * torch.sign(x)))
    ref = bool(all(float(y[i]) == bi_clip_reference(float(x[i]), d, u) for i in range(0, 100_000, 97)))
    rep.claim("Check 1: BiClip output in {0} ∪ [d, u] with sign kept; identity for d = 0, u = ∞; sign·d for d = u; "
              "vectorised = scalar reference", "definition (spec §1)",
              f"10⁵ values over 8 decades: range+sign {inv}, identity {ident}, d = u {signd}, reference {ref}",
              inv and ident and signd and ref)

    # Check 2: counted optimiser state and communication.
    with torch_threads(1):
        pc = ProblemParams(**{**LINEAR, "rounds": 3, "workers": 4})
        task = make_task(pc)
        counted = {}
        for m in ("fedavg", "fedadam", "local_adam", "adam2", "bi2clip"):
            tr = run_method(task, m, [HyperParams(lr_in=1e-3, lr_out=0.01)], 3, LocalComm(4), 0)
            counted[m] = (tr.state_worker, tr.state_server, tr.floats_per_round / task.dim)
        tr = run_method(task, "bi2clip", [HyperParams(server_momentum=0.9)], 3, LocalComm(4), 0)
        mom = tr.state_server
    want = {"fedavg": (0, 0, 1), "fedadam": (0, 2, 1), "local_adam": (2, 0, 3), "adam2": (2, 2, 1), "bi2clip": (0, 0, 1)}
    ok = all(counted[m] == want[m] for m in want) and mom == 1
    rep.claim("Check 2 / claim 3: extra state per parameter and floats sent per round, counted from the tensors",
              "Bi²Clip 0 + 0 (1 with momentum); Adam² 2 + 2; d floats/round (3d for local Adam)",
              "; ".join(f"{m}: worker {w:g}, server {s:g}, {f:g}·d" for m, (w, s, f) in counted.items())
              + f"; Bi²Clip with server momentum: server {mom:g}", ok)

    # Checks 3 and 4: tuned methods on the anisotropic, non-IID linear task.
    print("== Cauchy noise, linear regression", flush=True)
    pcau = ProblemParams(**LINEAR, noise="cauchy")
    cau = tuned_study(pcau, CAUCHY_METHODS, processes=PROCESSES)
    bc, fa = cau["bi2clip"]["median"], cau["fedavg"]["median"]
    best_adam = min(ADAM_TYPE, key=lambda m: cau[m]["median"])
    ba = cau[best_adam]["median"]
    setting = (f"d = 100, N = 8 × 512, z = 10, T = 300, Cauchy s = 1; budget {BUDGET} configurations each on the "
               f"validation seed; median of {len(TEST_SEEDS)} held-out seeds")
    rep.claim("Check 3a / claim 1: under Cauchy noise Bi²Clip's final excess loss ≤ 0.5× tuned FedAvg's "
              "(or FedAvg diverges)", "unclipped methods degrade or diverge",
              f"Bi²Clip {_fmt(bc)} vs FedAvg {_fmt(fa)} (ratio {bc / fa if math.isfinite(fa) else 0:.3g}); {setting}",
              (not math.isfinite(fa)) or bc <= 0.5 * fa)
    rep.claim("Check 3b / claim 2: Bi²Clip ≤ 1.2× the best Adam-type method (FedAdam, local Adam, Adam², DiLoCo-lite)",
              "Bi²Clip matches Adam-type methods without state",
              f"Bi²Clip {_fmt(bc)} vs best {METHOD_LABELS[best_adam]} {_fmt(ba)} (ratio {bc / ba:.3g}); "
              + ", ".join(f"{m} {_fmt(cau[m]['median'])}" for m in ADAM_TYPE), bc <= 1.2 * ba)
    fc = cau["fedavg_clip"]["median"]
    rep.claim("Claim 2b: Bi²Clip strictly better than FedAvg + L2 clipping on the anisotropic task",
              "coordinate-wise beats norm clipping", f"Bi²Clip {_fmt(bc)} vs FedAvg + L2 clip {_fmt(fc)}", bc < fc)
    rep.reported("Adam-TailOPT (BiClip inner, Adam outer) under Cauchy noise (median final excess loss)", "—",
                 _fmt(cau["adam_tailopt"]["median"]))
    rep.figure(loss_figure(_as_result(pcau, cau), "Cauchy noise, linear regression (held-out seed 1, tuned methods)"),
               "cauchy", "Excess loss per round under Cauchy gradient noise; × marks a diverged run")

    print("== Gaussian noise, linear regression", flush=True)
    pg = ProblemParams(**LINEAR, noise="gaussian")
    gau = tuned_study(pg, GAUSS_METHODS, processes=PROCESSES)
    bg, fg = gau["bi2clip"]["median"], gau["fedavg"]["median"]
    rep.claim("Check 4 / claim 4: Gaussian noise, Bi²Clip within 10% of FedAvg (final excess ≤ 1.1× FedAvg's)",
              "light tails: no loss from clipping", f"Bi²Clip {_fmt(bg)} vs FedAvg {_fmt(fg)} (ratio {bg / fg:.3g})", bg <= 1.1 * fg)
    rep.figure(loss_figure(_as_result(pg, gau), "Gaussian noise, linear regression (held-out seed 1)"), "gaussian",
               "Excess loss per round under Gaussian gradient noise")

    # Noise histograms (reported).
    nc = noise_probe({"task": "linear", "noise": "cauchy", "probes": 200}).model_dump()
    ng = noise_probe({"task": "linear", "noise": "gaussian", "probes": 200}).model_dump()
    rep.reported("Hill tail index of the gradient noise at x₀ (Cauchy / Gaussian injection)", "α = 1 / light",
                 f"α̂ = {nc['hill_alpha']:.2f} / {ng['hill_alpha']:.2f}")
    rep.figure(noise_figure(nc), "noise", "Gradient-noise magnitudes under Cauchy injection (log-log) with a Gaussian "
               "of the same median")

    # Check 5: the real distributed engine.
    eq = equivalence({"task": "linear", "noise": "cauchy", "workers": 2, "local_steps": 10, "rounds": 3,
                      "method": "bi2clip", "hyper": {"lr_in": 0.003}})
    eq2 = equivalence({"task": "digits", "noise": "student_t", "tail_index": 1.5, "workers": 2, "local_steps": 5,
                       "rounds": 3, "method": "local_adam", "hyper": {"lr_in": 0.01}})
    rep.claim("Check 5: 2-rank torch.distributed (gloo, 127.0.0.1) reproduces the simulator's parameters after 3 rounds "
              "within 1e-6", "≤ 1e-6", f"Bi²Clip linear: max |Δx| = {eq.max_abs_diff:.1e}; local Adam digits "
              f"(3d floats/round): {eq2.max_abs_diff:.1e}; floats/round equal: "
              f"{eq.floats_per_round_gloo == eq.floats_per_round_sim and eq2.floats_per_round_gloo == eq2.floats_per_round_sim}",
              eq.max_abs_diff <= 1e-6 and eq2.max_abs_diff <= 1e-6
              and eq.floats_per_round_gloo == eq.floats_per_round_sim)

    # Check 6: tiny transformer on Zipf tokens (background-sized: fewer rounds and a smaller budget).
    print("== tiny transformer", flush=True)
    if os.environ.get("TAILOPT_SKIP_TRANSFORMER"):
        rep.not_measured("Check 6 / claim 5: tiny transformer, Bi²Clip validation loss < FedAvg's",
                         "Bi²Clip beats FedAvg on attention models",
                         "skipped (TAILOPT_SKIP_TRANSFORMER set): this run was on a shared 2-core machine at load ~25, "
                         "where the transformer study (4 methods × 4 runs × 15 rounds × 32 GPT-2 steps) did not fit "
                         "the session; `make reproduce METHOD=tailopt` runs it")
    else:
        pt = ProblemParams(task="transformer", noise="none", workers=4, local_steps=8, rounds=15, batch=16,
                           non_iid=0.5)
        tt = tuned_study(pt, ("fedavg", "fedadam", "adam2", "bi2clip"), seeds=(1,), budget=3)
        bt, ft = tt["bi2clip"]["median"], tt["fedavg"]["median"]
        ba_t = min(tt[m]["median"] for m in ("fedadam", "adam2"))
        rep.claim("Check 6 / claim 5a: tiny transformer (GPT-2, 2 layers, d 64) on Zipf tokens: Bi²Clip validation "
                  "loss < FedAvg's after T rounds", "Bi²Clip beats FedAvg on attention models",
                  f"Bi²Clip {bt:.4f} vs FedAvg {ft:.4f} (T = 15, z = 8, N = 4, budget 3 each, held-out seed 1)", bt < ft)
        rep.claim("Claim 5b: … and within 10% of the best Adam-type method", "matches Adam-type",
                  f"Bi²Clip {bt:.4f} vs best Adam-type {ba_t:.4f} (FedAdam {tt['fedadam']['median']:.4f}, "
                  f"Adam² {tt['adam2']['median']:.4f})", bt <= 1.1 * ba_t)
        rep.figure(loss_figure(_as_result(pt, tt), "Tiny transformer on Zipf tokens (validation loss)"),
                   "transformer", "Validation cross-entropy of the tiny GPT-2 per round")

    # Check 7: Bi²Clip as a Flower strategy (Ray simulation) next to the simulator and Flower's built-in FedAdam.
    print("== Flower simulation (Bi²Clip strategy, built-in FedAdam)", flush=True)
    name7 = "Check 7 (optional): Bi²Clip as a Flower strategy against built-in FedAdam, 2 rounds in Flower simulation"
    try:
        from .flower import flower_check

        s7 = TEST_SEEDS[0]
        fc = flower_check(pcau.model_copy(update={"seed": s7}), cau["bi2clip"]["h"], cau["fedadam"]["h"], s7, rounds=2)
    except ImportError as e:
        rep.not_measured(name7, "runs 2 rounds in Flower simulation", f"flwr is not importable here: {e}")
    else:
        fl = fc["flower"]
        fin = lambda v: all(math.isfinite(x) for x in v)  # noqa: E731
        loss = lambda v: " → ".join(f"{x:.4g}" for x in v)  # noqa: E731
        ok7 = (fc["max_abs_diff"] <= FLOWER_TOL and len(fl["fedadam"]["loss"]) == 3 and fin(fl["fedadam"]["loss"])
               and sorted(fl["fedadam"]["train_metrics"]) == [1, 2] and fin(fl["bi2clip"]["loss"]))
        rep.claim(name7, f"runs 2 rounds; Bi²Clip on Flower = simulator (max |Δx| ≤ {FLOWER_TOL:g})",
                  f"{pcau.workers} SuperNodes (Ray), the Cauchy study's task, tuned hyper-parameters and held-out seed "
                  f"{s7}: Bi²Clip strategy vs simulator max |Δx| = {fc['max_abs_diff']:.1e} (|x| ≤ "
                  f"{fc['max_abs_param']:.3g}); F(x_t), t = 0, 1, 2: Bi²Clip {loss(fl['bi2clip']['loss'])}, built-in "
                  f"FedAdam {loss(fl['fedadam']['loss'])} (simulator's FedAdam, no bias correction: "
                  f"{loss(fc['sim_loss']['fedadam'])}); {fl['wall_s']:.0f} s with the Ray start-up", ok7)
    rep.section("Chosen hyper-parameters (validation seed, Cauchy study): " + "; ".join(
        f"{METHOD_LABELS[m]}: lr_in {s['h'].lr_in:.3g}, lr_out {s['h'].lr_out:.3g}, u_in {s['h'].u_in:.3g}, "
        f"u_out {s['h'].u_out:.3g}" for m, s in cau.items()))
    rep.section("Final excess loss = mean of F(x_t) − F* over the last 10% of rounds; a run is diverged when its loss "
                "is NaN, infinite or above 1e12 (scored +∞, drawn only up to that round). Thresholds are multiples "
                "of the probe gradient scale (inner) and of η_ℓ·z·scale (outer), d = 0.01·u.")
    return rep.write()


if __name__ == "__main__":
    main()

"""``make reproduce METHOD=cl_angles``: spec section 4 claims 1-6 and acceptance checks 1-8."""
from __future__ import annotations

import json
import time

import numpy as np

from engines.common.results import Report

from .images import fashion_available
from .plots import (bins_figure, curves_figure, neurons_figure, selection_figure, selection_gallery,
                    sweep_figure)
from .real_data import angle_bins, buffer_selection
from .synthetic import angle_run, angle_sweep


def _d(model) -> dict:
    return json.loads(model.model_dump_json())


def synthetic_claims(rep: Report) -> None:
    sw = _d(angle_sweep({"angle_step": 10, "seeds": 3, "epochs1": 1500, "epochs2": 1500}))
    a = np.array(sw["angles"])
    by = {c["variant"]: c for c in sw["curves"]}
    cl, rp = np.array(by["cl"]["mean"]), np.array(by["replay"]["mean"])
    low = cl[a <= 60].max()
    rep.claim("Claim 1 / check 1: CL (no replay) task-1 error < 0.05 for every θ ≤ 60° and > 0.9 at θ = 180° "
              "(19 angles, 3 seeds, 1500 + 1500 epochs)",
              "≈ 0 for acute angles, ≈ 1 at 180° (synthetic figure)",
              f"max error at θ ≤ 60°: {low:.3f}; error at 180°: {cl[-1]:.3f}", low < 0.05 and cl[-1] > 0.9)
    rho = sw["spearman_cl"]
    drops = float(np.max(np.maximum.accumulate(cl) - cl))
    rep.claim("Claim 2 / check 2: CL error non-decreasing in θ (Spearman > 0.9)", "monotone rise with θ",
              f"Spearman ρ = {rho:.3f}; largest drop below the running maximum {drops:.3f}",
              rho is not None and rho > 0.9)
    k_cl, k_rp = by["cl"]["knee"], by["replay"]["knee"]
    worse = [(int(x), float(r - c)) for x, c, r in zip(a, cl, rp) if x >= 120 and r > c + 0.02]
    rep.claim("Claim 3 / check 3: replay (10 % task-1 samples) moves θ_c (first mean error > 0.5) by ≥ 10°, "
              "and replay error ≤ CL error + 0.02 at every θ ≥ 120°",
              "replay widens the benign range to cos θ ≥ −(C₂+1)/2 (Thm., constants unpublished here)",
              f"θ_c(CL) = {k_cl}°, θ_c(replay) = {k_rp}°; angles where replay is worse: {worse or 'none'}",
              k_cl is not None and k_rp is not None and k_rp >= k_cl + 10 and not worse)
    rep.claim("Claim 4 / check 4: θ_c(CL) > 90° (check: > 100°): acute and small obtuse angles forget benignly",
              "benign for −C₁ ≤ cos θ ≤ 1 (acute or small obtuse)", f"θ_c(CL) = {k_cl}° (cos θ_c = "
              f"{np.cos(np.radians(k_cl or 0)):.2f})", k_cl is not None and k_cl > 100)
    # Theory check on held-out seeds: C₂ is fitted from the CL knee of seed 0 alone, and the prediction it makes
    # (replay benign at least up to cos θ = −(C₂+1)/2) is tested on the replay knee of the other seeds.
    from .two_tasks import knee as knee_of

    cl_seeds, rp_seeds = np.array(by["cl"]["per_seed"]), np.array(by["replay"]["per_seed"])
    k_fit = knee_of(a, cl_seeds[0])
    k_test = knee_of(a, rp_seeds[1:].mean(0)) if len(rp_seeds) > 1 else None
    bound = None
    if k_fit is not None:
        c2 = -np.cos(np.radians(k_fit))
        bound = float(np.degrees(np.arccos(np.clip(-(c2 + 1) / 2, -1.0, 1.0))))
    claim = ("Theory check, fitted and tested on different seeds: C₂ ≈ −cos θ_c(CL) from seed 0's CL curve predicts "
             "replay is benign at least up to cos θ = −(C₂+1)/2; the replay knee of seeds 1-2 lies beyond that angle")
    if bound is None or k_test is None:
        rep.not_measured(claim, "−(C₂+1)/2 ≤ cos θ benign with replay",
                         f"no knee (seed-0 CL knee {k_fit}, seeds 1-2 replay knee {k_test}; needs ≥ 2 seeds)")
    else:
        rep.claim(claim, "−(C₂+1)/2 ≤ cos θ benign with replay",
                  f"seed-0 CL knee {k_fit}° → predicted bound {bound:.1f}°; seeds 1-2 replay knee {k_test}° "
                  f"(all-seed knees: CL {k_cl}°, replay {k_rp}°, EWC {by['ewc']['knee']}°, "
                  f"EWC-Replay {by['replay_ewc']['knee']}°)", k_test >= bound)
    rep.figure(sweep_figure(sw), "sweep", f"Task-1 test error after task 2 against θ (3 seeds, bands ± 1 std); "
                                          f"computed in {sw['elapsed_s']:.0f} s")

    runs, walls = {}, []
    for ang in (120, 150):  # the first call trains task 1, the second reuses it (the slider case)
        t0 = time.perf_counter()
        runs[ang] = _d(angle_run({"angle": ang}))
        walls.append(time.perf_counter() - t0)
    rep.claim("Check 8: one-angle tab run (4 variants, 1500 + 1500 epochs, γ/ρ trace) < 5 s on 2 CPU cores, "
              "first call (machine shared with other jobs)", "< 5 s (spec)",
              f"first call {walls[0]:.1f} s (θ = 120°); next angle {walls[1]:.1f} s (task 1 cached)", walls[0] < 5)
    for ang, r in runs.items():
        rep.figure(curves_figure(r), f"curves_{ang}", f"θ = {ang}°: test error during task 1 and task 2 (log epochs)")
        rep.figure(neurons_figure(r, "cl"), f"neurons_{ang}",
                   f"θ = {ang}°, CL: filters in the (e₁, e₂) plane and their coefficients γ, ρ")


def real_claims(rep: Report) -> None:
    b = _d(angle_bins({"dataset": "digits", "seeds": 5}))
    ang = ", ".join(f"{x['angle']:.1f}° ({x['task1']}→{x['task2']}): {x['mean_forgetting']:.3f}" for x in b["bins"])
    rep.claim("Claim 5 / check 6: digits polarity tasks at the targets 30°, 100°, 140°, 155° (closest class pairs): "
              "mean task-1 error after task 2 (buffers 0-20) rises with the angle (3 of 3 orderings)",
              "MNIST: 30.19° < 102.97° < 140.26° < 153.90° in forgetting", ang, b["increasing"])
    rep.figure(bins_figure(b), "bins_digits", "Digits: task-1 accuracy after task 2 against the replay-buffer size")
    if fashion_available():
        f = _d(angle_bins({"dataset": "fashion", "seeds": 3}))
        ang = ", ".join(f"{x['angle']:.1f}° ({x['task1']}→{x['task2']}): {x['mean_forgetting']:.3f}" for x in f["bins"])
        rep.claim("Claim 5 (Fashion-MNIST, 300 images per class, 3 seeds): forgetting rises across the angle bins",
                  "as above", ang, f["increasing"])
        rep.figure(bins_figure(f), "bins_fashion",
                   "Fashion-MNIST: task-1 accuracy after task 2 against the buffer size")
    else:
        rep.section("Fashion-MNIST is not installed here (`apt-get install dataset-fashion-mnist`): its angle-bin "
                    "row was skipped.")

    s = _d(buffer_selection({"dataset": "digits", "seeds": 5, "buffer_frac": 0.05, "feature_space": "pixels"}))
    o = {x["selector"]: x for x in s["outcomes"]}
    mid, rnd, sml, big = (o[k]["forgetting"] for k in ("mid", "random", "small", "big"))
    rep.claim("Claim 6 / check 7: digits 4/5 → 8/9, 5 % buffer chosen by cosine to the class-mean image, 5 seeds: "
              "forgetting(mid) ≤ min(random, small) + 0.5 pt and < big",
              "mid-angle sampling forgets least (MNIST preliminary; CIFAR-100 gain ≈ 1-2 %)",
              ", ".join(f"{x['label']} {x['forgetting']:.3f} ± {x['std']:.3f}" for x in s["outcomes"])
              + f"; no replay {s['no_replay']:.3f}",
              mid <= min(rnd, sml) + 0.005 and mid < big)
    rep.claim("Check 7 alone: forgetting(mid) < forgetting(big)", "mid < big", f"{mid:.3f} vs {big:.3f}", mid < big)
    rep.figure(selection_figure(s), "selection", "Digits: cosines to the class prototype with each selector's picks, "
                                                 "and the forgetting each buffer leaves (5 seeds)")
    rep.figure(selection_gallery(s), "gallery", "The replayed task-1 digits per selector (seed 0)")
    n = _d(buffer_selection({"dataset": "digits", "seeds": 5, "buffer_frac": 0.05, "feature_space": "network"}))
    on = {x["selector"]: x for x in n["outcomes"]}
    mid_best = on["mid"]["forgetting"] <= min(on["random"]["forgetting"], on["small"]["forgetting"]) + 0.005 \
        and on["mid"]["forgetting"] < on["big"]["forgetting"]
    rep.reported("Variant: the same with cosines in the task-1 network's feature layer (the Mammoth `fill_buffer` "
                 "variant)", "mid-angle best",
                 ", ".join(f"{x['label']} {x['forgetting']:.3f}" for x in n["outcomes"])
                 + f"; mid-angle best by the claim-6 rule: {'yes' if mid_best else 'no'}")
    rows = ["| buffer | " + " | ".join(x["label"] for x in s["outcomes"]) + " | no replay |",
            "|---" * (len(s["outcomes"]) + 2) + "|"]
    for frac in (0.02, 0.05, 0.1, 0.2):
        r = s if frac == 0.05 else _d(buffer_selection({"dataset": "digits", "seeds": 5, "buffer_frac": frac,
                                                         "feature_space": "pixels"}))
        rows.append(f"| {100 * frac:.0f} % ({r['k_per_class']}/class) | "
                    + " | ".join(f"{x['forgetting']:.3f}" for x in r["outcomes"]) + f" | {r['no_replay']:.3f} |")
    rep.section("Digits buffer selection (pixel cosines, 5 seeds): task-1 test error after task 2 per buffer size.\n\n"
                + "\n".join(rows))


def main():
    rep = Report("cl_angles", "Forgetting vs task angle (feature-learning theory of replay-based CL)")
    synthetic_claims(rep)
    real_claims(rep)
    rep.section(
        "Notes. Synthetic setting = the official `synthetic/cl_cnn_replay_ewc.py`: d = 100, two patches, ‖μ‖ = 8, "
        "σ = 1, 100 training / 1000 test samples per task, m = 10 filters per class, q = 3, Conv1d bias, "
        "η = 0.01; 1500 full-batch epochs per task (the spec's default grid; the script runs 3000). "
        "Per seed, task 2 uses the same labels, noise and patch order at every angle (common random numbers). "
        "EWC's penalty is applied by a proximal step (see docs/methods/cl_angles.md). Run times were measured "
        "on a machine shared with other jobs."
    )
    return rep.write()


if __name__ == "__main__":
    main()

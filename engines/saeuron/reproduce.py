"""``make reproduce METHOD=saeuron``: spec §8 acceptance checks 1-8 and the issue's claims.

Hyper-parameters (γ, features per timestep) are chosen on *validation* seeds and evaluated on separate
*test* seeds, for SAeUron and for the raw-channel baseline alike (same grid, same budget).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from engines.common.results import Report
from engines.common.settings import get_settings

from . import plots
from .benchmark import eval_prompts, evaluate_target, predict_all
from .hooks import SAeUronHook, StepTracker
from .params import STYLES, ConceptEdit
from .pipeline import anchor_prompts, build, collect, generate, hook_of, load_bundle
from .sae import TopKSae, evaluate_fvu
from .scores import concept_means, empty_plan, heavy_tail_share, importance, select_features

QUICK = dict(samples=1, val_samples=1, gammas=(-5.0,), top_ms=(4,), obj_targets=2, obj_gammas=(-5.0,), val_styles=2)
# The spec's sample count: 16 images per test prompt (issue 17: one image per prompt, 10 per style, cannot separate
# UA 0.45 from 0.41). SAEURON_SAMPLES / SAEURON_VAL_SAMPLES override it (the intervals on the page show what it buys).
FULL = dict(samples=int(os.environ.get("SAEURON_SAMPLES", "16")), val_samples=int(os.environ.get("SAEURON_VAL_SAMPLES", "4")),
            gammas=(-1.0, -5.0, -15.0), top_ms=(4, 8), obj_targets=4, obj_gammas=(-5.0, -15.0, -30.0), val_styles=3)


def ci95(rows: list[dict], key: str) -> float:
    """Half-width of the 95 % normal interval of the mean over targets of per-target proportions
    (each a binomial proportion over its own images: n_target for UA, n_other for IRA, n_all for CRA)."""
    nkey = {"UA": "n_target", "IRA": "n_other", "CRA": "n_all"}[key]
    var = sum(r[key] * (1 - r[key]) / max(r[nkey], 1) for r in rows)
    return float(1.96 * np.sqrt(var) / max(len(rows), 1))


def avg_ci95(rows: list[dict]) -> float:
    """Half-width for avg(UA, IRA, CRA) (covariances ignored)."""
    return float(np.sqrt(sum(ci95(rows, k) ** 2 for k in ("UA", "IRA", "CRA"))) / 3)
TEST_SEED, VAL_SEED = 50_000, 90_000


def sae_contract(b, bp) -> dict:
    """FVU and L0 on held-out prompts (new colours / seeds), save → load round trip."""
    prompts = [a[0] for a in anchor_prompts(bp, 1, offset=3)][:40]
    acts, _ = collect(b.pipe, prompts, [hook_of(bp, k) for k in ("style", "object")], bp.steps, bp.guidance, 31337)
    out = {}
    for kind in ("style", "object"):
        x = acts[hook_of(bp, kind)]
        x = x.reshape(-1, x.shape[-1])
        sae = b.saes[kind]
        with torch.no_grad():
            l0 = (sae.encode(x) > 0).sum(-1)
        with tempfile.TemporaryDirectory() as d:
            sae.save_to_disk(d)
            back = TopKSae.load_from_disk(d)
            same = bool(torch.equal(back(x[:512]), sae(x[:512])))
        out[kind] = dict(fvu=evaluate_fvu(sae, x), l0_min=int(l0.min()), l0_max=int(l0.max()), k=sae.cfg.k, same=same,
                         n=sae.num_latents, d=sae.d_in)
    return out


def identity_check(b, bp) -> float:
    prompts = ["a red star in striped style", "a blue circle in dotted style", "a green heart in wavy style",
               "a pink ring in checkered style"]
    ref = generate(b.pipe, prompts, 11, bp.steps, bp.guidance, as_float=True)
    tr = StepTracker()
    hooks = {hook_of(bp, k): SAeUronHook(empty_plan(b.stats[k].timesteps), tr, sae=b.saes[k]) for k in ("style", "object")}
    out = generate(b.pipe, prompts, 11, bp.steps, bp.guidance, hooks, tr, as_float=True)
    return float(np.abs(out - ref).max())


def score_sanity(b, top_m: int) -> dict:
    """Shape [T, n]; selected features' μ on the target above every other concept's; heavy tail."""
    st = b.stats["style"]
    M = concept_means(st.mu, st.labels, len(STYLES))
    ok = tot = 0
    shares, shape = [], None
    for c in sorted(set(st.labels.tolist())):
        sc = importance(st.mu, st.labels, c)
        shape = tuple(sc.shape)
        shares.append(heavy_tail_share(sc, 0.01))
        for t, f in enumerate(select_features(sc, "top_m", top_m)):
            others = [o for o in set(st.labels.tolist()) if o != c]
            for i in f.tolist():
                tot += 1
                ok += bool(all(M[c, t, i] > M[o, t, i] for o in others))
    return dict(shape=shape, frac=ok / max(1, tot), n=tot, heavy=float(np.mean(shares)))


def latency(b, bp) -> dict:
    edits = [ConceptEdit(concept="striped", gamma=-5.0, top_m=4)]
    from .erase import make_hooks

    prompt = ["a red star in striped style"]
    times = {"plain": [], "hooked": []}
    for _ in range(3):
        t0 = time.perf_counter()
        generate(b.pipe, prompt, 0, bp.steps, bp.guidance)
        times["plain"].append(time.perf_counter() - t0)
        tr = StepTracker()
        hooks, _ = make_hooks(b, edits, tr)
        t0 = time.perf_counter()
        generate(b.pipe, prompt, 0, bp.steps, bp.guidance, hooks, tr)
        times["hooked"].append(time.perf_counter() - t0)
    plain, hooked = min(times["plain"]), min(times["hooked"])
    return dict(plain=plain, hooked=hooked, overhead=hooked / plain - 1)


def paper_scale() -> dict:
    from .paper import PAPER_HOOKS, load_paper_sae, sd15_structured_unet, write_random_release
    from .hooks import hooked, locate_block
    from .scores import build_plan

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        write_random_release(Path(d), d_in=1280, expansion=16, k=32, kinds=("style",))
        sae = load_paper_sae("style", d)
        x = torch.randn(2 * 16 * 16, 1280)
        with torch.no_grad():
            l0 = int((sae.encode(x) > 0).sum(-1).max())
    unet = sd15_structured_unet(width=32)
    w = locate_block(unet, "up_blocks.1.attentions.2").out_channels
    small = TopKSae(w, sae.cfg.__class__(expansion_factor=16, k=32), seed=0)
    tr = StepTracker()
    tr.reset(1, cfg=False)
    plan, _ = build_plan(torch.rand(4, 1, small.num_latents), torch.tensor([0, 0, 1, 1]), 2, torch.tensor([999.0]),
                         [dict(c=0, gamma=-1.0, top_m=3)])
    xin, ehs = torch.randn(2, 4, 16, 16), torch.randn(2, 7, 64)
    with torch.no_grad():
        ref = unet(xin, 999, ehs).sample
        with hooked(unet, {PAPER_HOOKS["style"].removeprefix("unet."): SAeUronHook(plan, tr, sae=small)}, tr):
            out = unet(xin, 999, ehs).sample
    return dict(d_in=sae.d_in, n=sae.num_latents, k=sae.cfg.k, l0=l0, finite=bool(torch.isfinite(out).all()),
                changed=not torch.allclose(out, ref), seconds=time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(1)
    cfg = QUICK if ("--quick" in argv or get_settings().profile == "test") else FULL
    rep = Report("saeuron", "SAeUron: concept unlearning in diffusion models with sparse autoencoders")
    micro = get_settings().profile == "test"
    if micro:
        rep.section("**Micro models (PAPERLAB_PROFILE=test).** This page was produced with the test profile's micro zoo "
                    "models (a few training steps each): the text-to-image model does not render the concepts and the "
                    "judges are near chance, so checks 3-6 and the object row are *not* evidence about the method; they "
                    "show that the measurement pipeline runs end to end. Checks 1, 2, 7 and 8 are model-independent. "
                    "Run `make reproduce METHOD=saeuron` (default profile) once the zoo's default models are cached.")
    res = build({}, ctx=None)
    b = load_bundle({})
    bp = b.params
    steps, g = bp.steps, bp.guidance
    print(f"build {res.key}: {res.seconds:.0f} s, cached={res.cached}", flush=True)

    sc = sae_contract(b, bp)
    txt = "; ".join(f"{k}: n={v['n']} (d_in {v['d']}), L0 ∈ [{v['l0_min']}, {v['l0_max']}] (k={v['k']}), "
                    f"held-out FVU {v['fvu']:.3f}, round trip {'identical' if v['same'] else 'DIFFERS'}" for k, v in sc.items())
    rep.claim("Check 1 — SAE contract: per-token L0 = k, FVU ≤ 0.25, cfg.json + sae.safetensors round trip",
              "FVU 0.181 (up.1.1) / 0.198 (up.1.2), k = 32", txt,
              all(v["l0_min"] == v["l0_max"] == v["k"] and v["fvu"] <= 0.25 and v["same"] for v in sc.values()))
    dmax = identity_check(b, bp)
    rep.claim("Check 2 — identity: no features selected + error add-back ⇒ hooked = unhooked",
              "max |Δpixel| < 1e-4", f"max |Δpixel| = {dmax:.2e} (4 prompts, {steps} steps, both hooks)", dmax < 1e-4)

    val_prompts, val_truth1 = eval_prompts(bp.objects, bp.styles, 1, offset=4)
    test_prompts, test_truth1 = eval_prompts(bp.objects, bp.styles, 1, offset=2)
    vt = {k: np.tile(v, cfg["val_samples"]) for k, v in val_truth1.items()}
    tt = {k: np.tile(v, cfg["samples"]) for k, v in test_truth1.items()}
    base_val = predict_all(b, val_prompts, cfg["val_samples"], VAL_SEED, steps, g)
    base_test = predict_all(b, test_prompts, cfg["samples"], TEST_SEED, steps, g)
    acc_s = float((base_test["style"] == tt["style"]).mean())
    acc_o = float((base_test["object"] == tt["object"]).mean())
    print(f"unedited test accuracy: style {acc_s:.3f}, object {acc_o:.3f}", flush=True)

    def choose(units: str, names_list: list[list[str]], gammas, top_ms) -> tuple[float, int, list]:
        grid = []
        for gm in gammas:
            for m in top_ms:
                avgs = [evaluate_target(b, val_prompts, vt, base_val, names, gamma=gm, top_m=m, samples=cfg["val_samples"],
                                        seed=VAL_SEED, steps=steps, guidance=g, units=units)["avg"] for names in names_list]
                grid.append((float(np.mean(avgs)), gm, m))
                print(f"  validation {units} γ={gm} m={m}: avg {grid[-1][0]:.3f}", flush=True)
        best = max(grid)
        return best[1], best[2], grid

    styles = list(bp.styles)
    val_names = [[s] for s in styles[:: max(1, len(styles) // cfg["val_styles"])]][: cfg["val_styles"]]
    g_sae, m_sae, grid_sae = choose("sae", val_names, cfg["gammas"], cfg["top_ms"])
    g_raw, m_raw, grid_raw = choose("raw", val_names, cfg["gammas"], [m_sae])  # same budget m
    rows = {"sae": [], "raw": []}
    for s in styles:
        for units, gm in (("sae", g_sae), ("raw", g_raw)):
            m = evaluate_target(b, test_prompts, tt, base_test, [s], gamma=gm, top_m=m_sae, samples=cfg["samples"],
                                seed=TEST_SEED, steps=steps, guidance=g, units=units)
            rows[units].append(dict(target=s, UA0=1 - m["acc_target0"], n_all=m["n_target"] + m["n_other"],
                                    **{k: m[k] for k in ("UA", "IRA", "CRA", "IRA0", "CRA0", "avg", "n_target",
                                                         "n_other")}))
            print(f"  test {units} {s}: UA {m['UA']:.2f} IRA {m['IRA']:.2f} CRA {m['CRA']:.2f}", flush=True)
    mean = {u: {k: float(np.mean([r[k] for r in rs])) for k in ("UA", "IRA", "CRA", "IRA0", "CRA0", "avg", "UA0")}
            for u, rs in rows.items()}
    S = mean["sae"]
    in01 = all(0 <= r[k] <= 1 for rs in rows.values() for r in rs for k in ("UA", "IRA", "CRA"))
    rep.claim("Check 4 — style erasure (mean over styles): UA ≥ 0.80, IRA ≥ 0.85·IRA₀, CRA ≥ 0.90·CRA₀, metrics in [0, 1] "
              "(and the unedited model renders the styles: UA₀ ≤ 0.5)",
              "UA 95.80 / IRA 99.10 / CRA 99.40 (%)",
              f"UA {S['UA']:.3f} ± {ci95(rows['sae'], 'UA'):.3f}, IRA {S['IRA']:.3f} ± {ci95(rows['sae'], 'IRA'):.3f} "
              f"(IRA₀ {S['IRA0']:.3f}), CRA {S['CRA']:.3f} ± {ci95(rows['sae'], 'CRA'):.3f} (CRA₀ {S['CRA0']:.3f}; ± = 95 % "
              f"interval); "
              f"γ = {g_sae}, {m_sae} features/step chosen on validation seeds; {len(test_prompts) * cfg['samples']} test images per "
              f"style; unedited accuracy on the target styles {1 - mean['sae']['UA0']:.2f} (so UA₀ = {mean['sae']['UA0']:.2f})",
              S["UA"] >= 0.80 and S["IRA"] >= 0.85 * S["IRA0"] and S["CRA"] >= 0.90 * S["CRA0"] and in01
              and S["UA0"] <= 0.5)  # guard: the unedited model must render the styles (else UA is trivially high)
    R = mean["raw"]
    rep.claim("Check 5 — SAeUron beats raw-channel ablation at equal budget by ≥ 5 points of avg(UA, IRA, CRA)",
              "SAE features more selective than neurons",
              f"SAeUron {100 * S['avg']:.1f} ± {100 * avg_ci95(rows['sae']):.1f} vs raw channels {100 * R['avg']:.1f} ± "
              f"{100 * avg_ci95(rows['raw']):.1f} (95 % intervals; raw: UA {R['UA']:.2f}, IRA {R['IRA']:.2f}, "
              f"CRA {R['CRA']:.2f}; γ = {g_raw} from the same validation grid, {m_sae} channels/step)",
              S["avg"] >= R["avg"] + 0.05)
    pair = styles[1:3] if len(styles) >= 3 else styles[:2]
    pm = evaluate_target(b, test_prompts, tt, base_test, pair, gamma=g_sae, top_m=m_sae, samples=cfg["samples"],
                         seed=TEST_SEED, steps=steps, guidance=g)
    rep.claim(f"Check 6 — two styles at once with one SAE ({' + '.join(pair)}): UA ≥ 0.70 on both, IRA ≥ 0.80 on the rest",
              "sequential / multi-style unlearning stays stable",
              f"UA {', '.join(f'{k} {v:.2f}' for k, v in pm['UA_each'].items())}; IRA {pm['IRA']:.2f} (IRA₀ {pm['IRA0']:.2f}); "
              f"CRA {pm['CRA']:.2f}; UA₀ {1 - pm['acc_target0']:.2f}",
              min(pm["UA_each"].values()) >= 0.70 and pm["IRA"] >= 0.80 and 1 - pm["acc_target0"] <= 0.5)
    ss = score_sanity(b, m_sae)
    rep.claim("Check 3 — score sanity: score tensor [T, n]; selected features fire more on the target than on every other concept",
              "features specific to the concept", f"shape {ss['shape']}; {100 * ss['frac']:.1f}% of {ss['n']} selections "
              f"(feature, step) have μ(i,t,c) above every other style's", ss["frac"] >= 0.95)
    rep.claim("Spec claim 4 — heavy tail: the top 1% of features carry ≥ 50% of the positive score mass",
              "scores heavy-tailed, most ≈ 0", f"{100 * ss['heavy']:.1f}% (mean over styles and steps)", ss["heavy"] >= 0.5)
    lt = latency(b, bp)
    rep.claim("Check 7 — latency: one 32×32 image with intervention < 5 s; hook overhead < 25%",
              "overhead 1.9% at SD scale", f"{lt['hooked']:.2f} s with the hook vs {lt['plain']:.2f} s plain "
              f"({steps} steps, 1 thread): overhead {100 * lt['overhead']:.1f}%", lt["hooked"] < 5 and lt["overhead"] < 0.25)
    ps = paper_scale()
    rep.claim("Check 8 — paper scale offline: an SAeUron-format SAE (d_in 1280, n 20480, k 32) loads; the hook runs on a "
              "random SD-v1.5-structured UNet at up_blocks.1.attentions.2",
              "bcywinski/SAeUron layout", f"loaded d_in {ps['d_in']}, n {ps['n']}, k {ps['k']} (L0 {ps['l0']}); hooked UNet "
              f"output finite={ps['finite']}, changed={ps['changed']} ({ps['seconds']:.0f} s)",
              ps["d_in"] == 1280 and ps["n"] == 20480 and ps["k"] == 32 and ps["l0"] == 32 and ps["finite"] and ps["changed"])

    # Objects: the paper's harder case, γ grid per object on validation seeds (top-m fixed to the style choice).
    objs = list(bp.objects)[: cfg["obj_targets"]]
    orows = []
    for o in objs:
        best = max(((evaluate_target(b, val_prompts, vt, base_val, [o], gamma=gm, top_m=m_sae, samples=cfg["val_samples"],
                                     seed=VAL_SEED, steps=steps, guidance=g)["avg"], gm) for gm in cfg["obj_gammas"]))
        m = evaluate_target(b, test_prompts, tt, base_test, [o], gamma=best[1], top_m=m_sae, samples=cfg["samples"],
                            seed=TEST_SEED, steps=steps, guidance=g)
        orows.append(dict(target=o, gamma=best[1], UA0=1 - m["acc_target0"], n_all=m["n_target"] + m["n_other"],
                          **{k: m[k] for k in ("UA", "IRA", "CRA", "IRA0", "CRA0", "avg", "n_target", "n_other")}))
        print(f"  object {o}: γ={best[1]} UA {m['UA']:.2f} IRA {m['IRA']:.2f} CRA {m['CRA']:.2f}", flush=True)
    O = {k: float(np.mean([r[k] for r in orows])) for k in ("UA", "IRA", "CRA", "IRA0", "CRA0", "UA0")}
    rep.claim(f"Object erasure (harder case; γ per object from {list(cfg['obj_gammas'])} on validation seeds): "
              "UA ≥ 0.80, IRA ≥ 0.85·IRA₀, CRA ≥ 0.90·CRA₀",
              "UA 78.82 / IRA 95.47 / CRA 95.58 (%)",
              f"{len(objs)} objects, {cfg['samples']} images per test prompt: UA {O['UA']:.3f} ± {ci95(orows, 'UA'):.3f}, "
              f"IRA {O['IRA']:.3f} ± {ci95(orows, 'IRA'):.3f} (IRA₀ {O['IRA0']:.3f}), CRA {O['CRA']:.3f} "
              f"(CRA₀ {O['CRA0']:.3f}), UA₀ {O['UA0']:.2f}; γ chosen: " + ", ".join(f"{r['target']} {r['gamma']:g}" for r in orows),
              O["UA"] >= 0.80 and O["IRA"] >= 0.85 * O["IRA0"] and O["CRA"] >= 0.90 * O["CRA0"] and O["UA0"] <= 0.5)

    rep.figure(plots.benchmark_bars(rows["sae"], "SAeUron: style erasure per target (test seeds)"), "styles",
               "UA / IRA / CRA of SAeUron per erased style (judges on the tiny model's generations).")
    rep.figure(plots.benchmark_bars(rows["raw"], "raw-channel ablation, same budget"), "raw",
               "The same score and intervention on raw channels instead of SAE features.")
    rep.figure(_examples(b, bp, g_sae, m_sae), "examples", "Top: original; bottom: each style erased (γ and m as chosen).")
    lines = ["## Details", "",
             f"Tiny setting: zoo text-to-image model (latent 8×8×8, UNet (32, 64, 64)), hooks `{bp.hook_style}` (styles) and "
             f"`{bp.hook_object}` (objects); {res.n_anchor_prompts} anchor prompts × {res.timesteps} DDIM steps (guidance "
             f"{bp.guidance}); SAE expansion {bp.expansion}, k {bp.k}, {bp.epochs} epochs; statistics from "
             f"{res.n_stats_prompts} validation prompts. Unedited test accuracy: style judge {acc_s:.3f}, object judge {acc_o:.3f}.",
             "", "| style | SAeUron UA | IRA | CRA | raw UA | raw IRA | raw CRA |", "|---|---|---|---|---|---|---|"]
    for rs, rr in zip(rows["sae"], rows["raw"]):
        lines.append(f"| {rs['target']} | {rs['UA']:.2f} | {rs['IRA']:.2f} | {rs['CRA']:.2f} | {rr['UA']:.2f} | "
                     f"{rr['IRA']:.2f} | {rr['CRA']:.2f} |")
    lines += ["", f"Validation grid (mean avg over {[n[0] for n in val_names]}): " + ", ".join(f"γ {gm:g}/m {m}: {a:.3f}" for a, gm, m in grid_sae),
              "", "| object | γ | UA | IRA | CRA |", "|---|---|---|---|---|"]
    lines += [f"| {r['target']} | {r['gamma']:g} | {r['UA']:.2f} | {r['IRA']:.2f} | {r['CRA']:.2f} |" for r in orows]
    rep.section("\n".join(lines))
    if micro:
        command = "PAPERLAB_PROFILE=test make reproduce METHOD=saeuron (micro models)"
    elif cfg is QUICK:
        command = "python -c 'from engines.saeuron.reproduce import main; main([\"--quick\"])' (reduced γ / m grid)"
    else:
        command = None
    return rep.write(command)


def _examples(b, bp, gamma: float, top_m: int):
    from engines.common import figures

    from .erase import make_hooks

    styles = list(bp.styles)
    prompts = [f"a red star in {s} style" if "star" in bp.objects else f"a red {bp.objects[0]} in {s} style" for s in styles]
    orig = np.stack([generate(b.pipe, [q], 5, bp.steps, bp.guidance)[0] for q in prompts])  # same noise as below
    erased = []
    for i, s in enumerate(styles):
        tr = StepTracker()
        hooks, _ = make_hooks(b, [ConceptEdit(concept=s, gamma=gamma, top_m=top_m)], tr)
        erased.append(generate(b.pipe, [prompts[i]], 5, bp.steps, bp.guidance, hooks, tr)[0])
    fig, ax = figures.subplots(figsize=(1.3 * len(styles), 3))
    ax.imshow(plots.pair_grid(orig, np.stack(erased)))
    ax.set_xticks([4 * 32 / 2 + 4 + i * (4 * 32 + 4) for i in range(len(styles))], styles, rotation=30)
    ax.set_yticks([])
    return fig


if __name__ == "__main__":
    main()

"""``make reproduce METHOD=moex``: spec §8 acceptance checks 1-7 and the §4 orderings over 3 seeds.

The 6 variants x 3 seeds are trained once with the default recipe (``python -m engines.moex.train_grid``, cached
under the data directory; seed 0 of dense GELU, TopK MoE and MoE-X ship in the model release) and probed on
held-out games: units are labelled on the label split, thresholds chosen on the validation split, and every
figure below is measured on the test split. ``MOEX_REPRO_SEEDS`` changes the number of seeds.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

from engines.common.results import RESULTS_DIR, Report, code_version
from engines.common.threads import torch_threads

from . import data as D
from . import metrics as MT
from . import train as T
from .experiment import (RECIPE, SPARSITY_TEMPERATURE, analysis_record, default_train_config, evaluate, probe_sets,
                         public)
from .layers import MoELayer
from .model import TINY, VARIANT_LABELS, VARIANTS, build_model, upcycle
from .plots import grid_figure, router_figure

SEEDS = int(os.environ.get("MOEX_REPRO_SEEDS", 3))
AVAILABLE_ONLY = os.environ.get("MOEX_REPRO_AVAILABLE") == "1"
EVALUATED_ONLY = os.environ.get("MOEX_REPRO_EVALUATED") == "1"  # seeds ≥ 1: only models already measured


def _equivalence() -> tuple[float, bool]:
    torch.manual_seed(0)
    worst, bound = 0.0, True
    for router in ("topk_linear", "sparsity_gaussian", "sparsity_exact"):
        layer = MoELayer(TINY.n_embd, TINY.n_experts, TINY.expert_hidden, TINY.top_k, "relu", router)
        with torch.no_grad():
            layer.b_enc.normal_(0, 0.3)
        x = torch.randn(64, 32, TINY.n_embd)
        with torch.no_grad():
            h, yw = layer.wide_form(x)
            worst = max(worst, float((layer(x) - yw).abs().max()))
        bound &= bool(((h != 0).sum(-1) <= layer.k * layer.D).all())
    return worst, bound


def _metric_sanity() -> tuple[bool, str]:
    rng = np.random.default_rng(0)
    bsp = rng.random((600, 40)) < 0.2
    acts = bsp * rng.uniform(0.5, 1, bsp.shape)
    sp = lambda a: ((a[:300], bsp[:300]), (a[300:450], bsp[300:450]), (a[450:], bsp[450:]))  # noqa: E731
    perm = rng.permutation(40)
    c1, r1 = MT.coverage(acts, bsp)[0], MT.reconstruction(*sp(acts))["f1"]
    c2, r2 = MT.coverage(acts[:, perm], bsp)[0], MT.reconstruction(*sp(acts[:, perm]))["f1"]
    c3 = MT.coverage(rng.random((600, 40)), rng.random((600, 40)) < 0.05)[0]
    ok = abs(c1 - 1) < 1e-6 and abs(r1 - 1) < 1e-6 and abs(c2 - 1) < 1e-6 and abs(r2 - 1) < 1e-6 and c3 < 0.2
    return ok, f"identity: coverage {c1:.3f}, reconstruction {r1:.3f}; shuffled: {c2:.3f} / {r2:.3f}; random: {c3:.3f}"


def _data_check(gs: D.GameSet, n_games: int = 200) -> tuple[bool, str]:
    bad = 0
    checked = 0
    for g in range(min(n_games, len(gs.pgns))):
        try:  # the string is cut at the context length: its last token may be a partial move
            sans = D.parse_pgn(gs.pgns[g])
        except D.PGNError:
            sans = D.parse_pgn(gs.pgns[g].rsplit(" ", 1)[0])
        boards = D.replay(sans)
        for k in np.flatnonzero(gs.pos_game == g):
            plies = 2 * gs.pgns[g][:gs.pos_char[k]].count(".")
            if plies < len(boards):
                checked += 1
                bad += int(not np.array_equal(D.bsp_vector(boards[plies]), gs.bsp[k]))
    return bad == 0 and checked > 0, f"{checked} '.' positions of {n_games} test games replayed, {bad} mismatches"


def _eval_cached(variant: str, seed: int, may_skip: bool = False) -> dict | None:
    """The variant's measurements (cached per model and code version); None when the model is not trained and
    MOEX_REPRO_AVAILABLE=1 and ``may_skip`` (seeds ≥ 1: measure only what is trained; seed 0 is always trained)."""
    tc = default_train_config(variant, seed)
    f = T.moex_dir() / "evals" / f"{tc.key()}-{code_version('engines.moex.metrics', 'engines.moex.experiment')}.json"
    if f.exists():
        return json.loads(f.read_text())
    if EVALUATED_ONLY and may_skip:
        return None
    got = T.load(tc)
    if got is None and AVAILABLE_ONLY and may_skip:
        return None
    model, rec = got or T.ensure(tc, progress=lambda fr, m: None)
    full = evaluate(model, rec)
    ev = public(full)
    a = T.moex_dir() / "analysis" / f"{tc.key()}.json"
    if not a.exists():  # the tab's analysis of this model comes for free
        a.parent.mkdir(parents=True, exist_ok=True)
        a.write_text(json.dumps({"analysis": analysis_record(full), "eval": ev}))
    ids = torch.as_tensor(T.gameset("test", T.profile_splits().test, tc.model.ctx).ids[:64])
    ev["h_bound_all_layers"] = T.all_layers_h_bound(model, ids)
    ev["curve_first_loss"] = rec["curve"][0][1]
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(ev))
    return ev


def _mean(evs, key):
    return float(np.mean([e[key] for e in evs])) if evs else float("nan")  # nan: not measured → the claim misses


def main():
    rep = Report("moex", "MoE-X: mixture of experts made intrinsically interpretable (chess)")
    t0 = time.perf_counter()
    with torch_threads(1):
        # ---- check 1: equivalence
        worst, bound = _equivalence()
        rep.claim("Check 1: MoE layer (dispatch) = its wide sparse MLP W_dec·h(x) for random weights, all three "
                  "routers; ‖h‖_0 ≤ k·D", "max |Δ| < 1e-5", f"max |Δ| = {worst:.1e}; bound holds: {bound}",
                  worst < 1e-5 and bound)
        # ---- check 3 and 4
        ok, txt = _metric_sanity()
        rep.claim("Check 3: metric sanity (unit = BSP gives coverage = reconstruction = 1; shuffled units "
                  "keep 1.0; random units coverage < 0.2)", "1.0 / 1.0 / < 0.2", txt, ok)
        test_set = probe_sets(TINY.ctx)[2]
        ok, txt = _data_check(test_set)
        rep.claim("Check 4: generated PGNs replay legally; BSP vectors equal python-chess's board at every '.'",
                  "0 mismatches", txt, ok)
        # ---- the grid
        evs = {v: [] for v in VARIANTS}
        for s in range(SEEDS):
            for v in ("dense_gelu", "topk_gelu", "moex", "dense_relu", "topk_relu", "topk_gelu_sparsity"):
                print(f"evaluating {v} seed {s}", flush=True)
                ev = _eval_cached(v, s, may_skip=s > 0 or EVALUATED_ONLY)
                if ev is not None:
                    evs[v].append(ev)
        common = min(len(e) for e in evs.values())  # compare every variant on the same seeds
        evs = {v: e[:common] for v, e in evs.items()}
        n_seeds = {v: len(e) for v, e in evs.items()}
        seeds_txt = ", ".join(f"{VARIANT_LABELS[v]} {n}" for v, n in n_seeds.items())
        m = {v: {k: _mean(e, k) for k in ("coverage", "reconstruction", "val_loss", "l0", "nonzero_fraction")}
             for v, e in evs.items()}
        # ---- check 5: training smoke
        drops = {v: min(1 - e["val_loss"] / e["init_val_loss"] for e in es) for v, es in evs.items() if es}
        hb = all(e["h_bound_all_layers"] for v in ("topk_gelu", "topk_relu", "topk_gelu_sparsity", "moex")
                 for e in evs[v])
        rep.claim("Check 5: every variant's validation loss drops ≥ 30% from initialisation; MoE-X's non-zero "
                  "fraction of h < dense ReLU's; ‖h‖_0 ≤ k·D on every token of every MoE layer",
                  "≥ 30%; MoE-X < ReLU; bound", f"smallest drop {min(drops.values()):.0%} ({min(drops, key=drops.get)}); "
                  f"non-zero fraction MoE-X {m['moex']['nonzero_fraction']:.3f} vs dense ReLU "
                  f"{m['dense_relu']['nonzero_fraction']:.3f}; bound {hb}",
                  min(drops.values()) >= 0.3 and m["moex"]["nonzero_fraction"] < m["dense_relu"]["nonzero_fraction"]
                  and hb)
        # ---- §4 claim 1
        mx, dg, tk = m["moex"], m["dense_gelu"], m["topk_gelu"]
        rep.claim(f"§4.1a: MoE-X beats dense GELU on coverage and on reconstruction by ≥ 0.05 (mean of {n_seeds['moex']} seeds)",
                  "coverage 0.428 vs 0.356; reconstruction 0.840 vs 0.608 (Table 1)",
                  f"coverage {mx['coverage']:.3f} vs {dg['coverage']:.3f}; reconstruction {mx['reconstruction']:.3f} "
                  f"vs {dg['reconstruction']:.3f} (margin {mx['reconstruction'] - dg['reconstruction']:+.3f})",
                  mx["coverage"] > dg["coverage"] and mx["reconstruction"] - dg["reconstruction"] >= 0.05)
        rep.claim(f"§4.1b: MoE-X matches or beats TopK MoE (Switch, GELU) on coverage and reconstruction "
                  f"(mean of {n_seeds['moex']} seeds)", "0.428 vs 0.424; 0.840 vs 0.734 (Table 1)",
                  f"coverage {mx['coverage']:.3f} vs {tk['coverage']:.3f}; reconstruction {mx['reconstruction']:.3f} "
                  f"vs {tk['reconstruction']:.3f}",
                  mx["coverage"] >= tk["coverage"] and mx["reconstruction"] >= tk["reconstruction"])
        gap = mx["val_loss"] / dg["val_loss"] - 1
        rep.reported("§4.2 (reported, warn if violated): MoE-X validation loss within 3% of dense GELU",
                     "0.211 vs 0.213 (Table 1)", f"{mx['val_loss']:.4f} vs {dg['val_loss']:.4f} ({gap:+.1%})"
                     + ("" if abs(gap) <= 0.03 else " — WARNING: outside 3%"))
        # ---- §4 claim 3: ablation
        r = {v: m[v]["reconstruction"] for v in m}
        relu_gain, router_gain = r["topk_relu"] - r["topk_gelu"], r["topk_gelu_sparsity"] - r["topk_gelu"]
        rep.claim("§4.3: ablation on reconstruction: ReLU experts + sparsity router ≥ either alone; ReLU experts "
                  "contribute most", "0.840 ≥ 0.829 (ReLU), 0.740 (router); ReLU +0.095 vs router +0.006 (Table 3)",
                  f"both {r['moex']:.3f}, ReLU only {r['topk_relu']:.3f}, router only {r['topk_gelu_sparsity']:.3f}, "
                  f"neither {r['topk_gelu']:.3f}; ReLU gain {relu_gain:+.3f} vs router gain {router_gain:+.3f} (seeds: {seeds_txt})",
                  r["moex"] >= r["topk_relu"] and r["moex"] >= r["topk_gelu_sparsity"] and relu_gain > router_gain)
        # ---- §4 claim 4 and check 2: router
        rho_s = [e["routing"]["spearman_token_mean"] for e in evs["moex"]] or [float("nan")]
        rho_l = [e["routing"]["spearman_token_mean"] for e in evs["topk_relu"]] or [float("nan")]
        rho_lg = [e["routing"]["spearman_token_mean"] for e in evs["topk_gelu"]] or [float("nan")]
        pear = [e["routing"]["estimate_pearson"] for e in evs["moex"]]
        # the row's reason when the baseline, not the sparsity router, breaks the contrast
        gate_why = (" — the linear gate is not neutral here: trained jointly with its ReLU experts it also ranks the "
                    "sparser experts first (|ρ| ≥ 0.3, unlike the paper's Fig. 9)"
                    + ("; the sparsity router itself meets its bound" if np.mean(rho_s) <= -0.5 else "")
                    ) if abs(np.mean(rho_l)) >= 0.3 else ""
        rep.claim("§4.4: Spearman(router score, true expert L0) ≤ −0.5 for the sparsity router (MoE-X) and "
                  "|ρ| < 0.3 for the linear TopK gate (ReLU experts); per-token ρ over the experts, mean over "
                  f"test positions and {n_seeds['moex']} seeds", "strongly negative vs none (Fig. 9)",
                  f"sparsity router {np.mean(rho_s):+.3f} (pooled {np.mean([e['routing']['spearman_pooled'] for e in evs['moex']]):+.3f}); "
                  f"linear gate {np.mean(rho_l):+.3f} (GELU experts {np.mean(rho_lg):+.3f}){gate_why}",
                  np.mean(rho_s) <= -0.5 and abs(np.mean(rho_l)) < 0.3)
        rep.claim("Check 2: on the trained MoE-X, estimated vs actual expert firing (D·p_j(x) vs L0) Pearson ≥ 0.7",
                  "≥ 0.7", f"{np.mean(pear):.3f} (per seed {', '.join(f'{p:.2f}' for p in pear)})", np.mean(pear) >= 0.7)
        # ---- §4 claim 5: SAE (seed 0, via the release's SAE at MoE-X's L0)
        from .release import load_tab_models

        from .release import sae_key

        sae_file = T.moex_dir() / "analysis" / f"{sae_key(default_train_config('dense_gelu', 0).key())}.json"
        se = None
        if sae_file.exists() or not EVALUATED_ONLY:
            se = load_tab_models()["sae"]["eval"]
        if se is None or not evs["moex"]:
            rep.reported("§4.5 (reported): MoE-X units vs SAE-on-dense features on reconstruction at comparable L0",
                         "MoE-X > SAE (Figs. 3, 5)", "not measured in this run (the SAE was not trained in time)")
        else:
            rep.reported("§4.5 (reported, warn if violated): MoE-X units beat SAE-on-dense features on reconstruction "
                         "at comparable L0 (seed 0)", "MoE-X > SAE (Figs. 3, 5)",
                         f"MoE-X {evs['moex'][0]['reconstruction']:.3f} at L0 {evs['moex'][0]['l0']:.1f} vs SAE "
                         f"{se['reconstruction']:.3f} at L0 {se['l0']:.1f} (coverage {evs['moex'][0]['coverage']:.3f} vs "
                         f"{se['coverage']:.3f})" + ("" if evs['moex'][0]['reconstruction'] > se['reconstruction']
                                                     else " — WARNING: SAE ahead"))
        # ---- check 7: upcycling
        from dataclasses import replace

        cfg = replace(TINY, expert_hidden=TINY.dense_hidden)
        dense = build_model(cfg, "dense_relu", 0)
        up = upcycle(dense, cfg, "moex").eval()
        ids = torch.as_tensor(test_set.ids[:8])
        with torch.no_grad():
            diff = float((dense(input_ids=ids).logits - up(input_ids=ids).logits).abs().max())
        rep.claim("Check 7: upcycling copies a dense ReLU GPT-2 MLP into every expert; logits equal the dense "
                  "model's at initialisation", "equal", f"max |Δ logits| = {diff:.1e}", diff < 1e-4)
    rows = [{"variant": v, "seed": s, **{k: e[k] for k in ("coverage", "reconstruction", "val_loss", "l0")}}
            for v, es in evs.items() for s, e in enumerate(es)] + ([
        {"variant": "sae", "seed": 0, **{k: se[k] for k in ("coverage", "reconstruction", "l0")},
         "val_loss": evs["dense_gelu"][0]["val_loss"]}] if se else [])
    rep.figure(grid_figure(rows), "grid", f"Coverage, board reconstruction and validation loss (mean ± sd over "
               f"seeds per variant: {seeds_txt}; SAE: seed 0), held-out test games")
    rep.figure(router_figure({name: evs[v][0]["routing"] for name, v in (("MoE-X sparsity router", "moex"), (
        "TopK linear gate (ReLU experts)", "topk_relu"), ("TopK linear gate (GELU experts)", "topk_gelu")) if evs[v]}),
               "router",
               "Router score vs true expert L0 at the probed layer (seed 0; cf. paper Fig. 9)")
    dump = {"config": {"model": TINY.to_dict(), "recipe": RECIPE, "splits": T.TINY_SPLITS.__dict__,
                       "code": code_version("engines.moex")}, "evals": evs, "sae": se}
    (RESULTS_DIR / "moex_measurements.json").write_text(json.dumps(dump, default=float))
    table = ["| model | validation loss | coverage | reconstruction | hidden L0 (test '.') | units |", "|---|---|---|---|---|---|"]
    for v in VARIANTS:
        es = evs[v]
        if not es:
            table.append(f"| {VARIANT_LABELS[v]} | not measured in this run | | | | |")
            continue
        table.append(f"| {VARIANT_LABELS[v]} | {_mean(es, 'val_loss'):.4f} | {_mean(es, 'coverage'):.3f} ± "
                     f"{np.std([e['coverage'] for e in es]):.3f} | {_mean(es, 'reconstruction'):.3f} ± "
                     f"{np.std([e['reconstruction'] for e in es]):.3f} | {_mean(es, 'l0'):.1f} | {es[0]['units']} |")
    if se:
        table.append(f"| {VARIANT_LABELS['sae']} (seed 0) | — | {se['coverage']:.3f} | {se['reconstruction']:.3f} | "
                     f"{se['l0']:.1f} | {se['units']} |")
    rep.section(f"## Variants (mean ± sd over seeds; {seeds_txt}; held-out test games)\n\n" + "\n".join(table))
    rep.section(
        "## Setting\n\n"
        f"Chess GPT: transformers GPT2LMHeadModel, {TINY.n_layer} layers, d = {TINY.n_embd}, {TINY.n_head} heads, "
        f"context {TINY.ctx} characters of Karvonen-style PGN (32-character vocabulary); the MLP of every block "
        f"is the variant's: dense hidden {TINY.dense_hidden}; MoE {TINY.n_experts} experts × D = {TINY.expert_hidden}, "
        f"k = {TINY.top_k} (activated width {TINY.top_k * TINY.expert_hidden} = dense width, total "
        f"{TINY.n_experts * TINY.expert_hidden}); Switch load-balancing loss 0.01; sparsity router softmax "
        f"temperature T = {SPARSITY_TEMPERATURE} (chosen between 1 and 0.1 on the validation split's reconstruction "
        "of MoE-X seed 0: 0.366 vs 0.352). "
        f"Training: AdamW, lr {RECIPE['lr']}, batch {RECIPE['batch']} games, "
        f"{RECIPE['steps']} steps on {T.TINY_SPLITS.train} synthetic games (random legal moves, captures / checks "
        "/ development favoured). Probing: the hidden code of block "
        f"{TINY.probe_layer + 1} of {TINY.n_layer} at every '.'; {int(sum(1 for _ in D.FEATURE_NAMES))} BSPs "
        "(piece × square with blank and initial-state pieces masked, castling rights, check, pins, passed pawns), "
        "scored on those with ≥ 10 positives in the label split. Units are labelled (precision ≥ 0.95, ≥ 10 "
        f"activations) on {T.TINY_SPLITS.label} label games, the threshold is chosen on {T.TINY_SPLITS.val} "
        f"validation games and everything is reported on {T.TINY_SPLITS.test} test games (coverage: the unit and "
        "threshold per BSP chosen on the label split, F1 on test). SAE: 8× the dense width, ReLU + L1 on "
        "decoder-norm-weighted codes, L1 chosen from a grid so that its L0 on validation positions is nearest "
        "MoE-X's. Not run: the language-model experiments (Table 2), Monet/PEER/GEGLU/SoLU baselines and the "
        f"upcycling-vs-scratch comparison of Table 4 (the upcycling path itself is check 7).\n\nTotal time "
        f"{time.perf_counter() - t0:.0f} s (training is cached: `python -m engines.moex.train_grid`).")
    return rep.write()


if __name__ == "__main__":
    main()

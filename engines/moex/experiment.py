"""MoE-X entry points: evaluate a variant (coverage, reconstruction, L0, routing), the variant grid, the
position explorer and the feature search."""
from __future__ import annotations

import json
import time
from dataclasses import replace

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import data as D
from . import metrics as MT
from . import train as T
from .layers import MoELayer, train_sae
from .model import MICRO, TINY, VARIANT_LABELS, GPTConfig, TrainConfig, probe_mlp
from .params import ExploreParams, GridParams, SearchParams

RECIPE = {"steps": 500, "batch": 16, "lr": 3e-3}
# Sparsity-router temperature T in ω = softmax(−p_j/T): 0.1 beat 1.0 on the *validation* split's board
# reconstruction of MoE-X seed 0 (0.366 vs 0.352; at T = 1 the load-balancing loss on the nearly uniform
# softmax(−p) has no grip and 5 of 8 experts went unused). The paper's normalisation is not known to us.
SPARSITY_TEMPERATURE = 0.1
SPARSITY_ROUTED = ("moex", "topk_gelu_sparsity")
SAE_RECIPE = {"width_mult": 8, "steps": 1000, "l1_start": 0.01, "l1_trials": 3, "games": 400}


def default_train_config(variant: str, seed: int = 0, **over) -> TrainConfig:
    from engines.common.settings import get_settings

    test = get_settings().profile == "test"
    cfg = over.pop("model", None)
    if cfg is None:
        cfg = MICRO if test else TINY
        if variant in SPARSITY_ROUTED:  # the sparsity router's softmax temperature, chosen on validation
            cfg = replace(cfg, temperature=SPARSITY_TEMPERATURE)
    base = dict(steps=40 if test else RECIPE["steps"], batch=8 if test else RECIPE["batch"], lr=RECIPE["lr"],
                n_games=T.profile_splits().train)
    base.update(over)
    return TrainConfig(variant=variant, model=cfg, seed=seed, **base)


def probe_sets(ctx: int) -> tuple[D.GameSet, D.GameSet, D.GameSet]:
    s = T.profile_splits()
    return T.gameset("label", s.label, ctx), T.gameset("val", s.val, ctx), T.gameset("test", s.test, ctx)


def feature_mask(label: D.GameSet, min_pos: int = 10) -> np.ndarray:
    """BSPs that occur at least ``min_pos`` times in the labelling split (the others cannot be scored)."""
    return label.bsp.sum(0) >= min_pos


def routing_stats(model, gs: D.GameSet) -> dict:
    """Router score vs true expert L0 at the '.' positions of the probed layer (paper Fig. 9)."""
    layer = probe_mlp(model)
    if not isinstance(layer, MoELayer):
        return {}
    x = torch.as_tensor(T.residual_at_dots(model, gs))
    with torch.no_grad():
        l0 = (layer.expert_codes(x) > 0).float().sum(-1).numpy()  # (P, M) true expert L0
        est = (layer.firing_probability(x) * layer.D).numpy()
        sc = layer.scores(x).numpy()
    per_tok = [spearmanr(sc[i], l0[i]).statistic for i in range(len(sc)) if np.ptp(l0[i]) > 0 and np.ptp(sc[i]) > 0]
    return {"spearman_token_mean": float(np.mean(per_tok)) if per_tok else float("nan"),
            "spearman_pooled": float(spearmanr(sc.ravel(), l0.ravel()).statistic),
            "estimate_pearson": float(pearsonr(est.ravel(), l0.ravel()).statistic),
            "expert_load": np.bincount(np.argsort(-sc, 1)[:, :layer.k].ravel(), minlength=layer.M).tolist(),
            "sample": {"score": sc[:300].ravel().tolist(), "l0": l0[:300].ravel().tolist()}}


def evaluate_acts(label_h, val_h, test_h, sets, mask) -> dict:
    label, val, test = sets
    cols = np.flatnonzero(mask)  # only the scorable BSPs enter the (units × BSPs) tables
    cov = MT.coverage_heldout((label_h, label.bsp[:, cols]), (test_h, test.bsp[:, cols]))
    rec = MT.reconstruction((label_h, label.bsp[:, cols]), (val_h, val.bsp[:, cols]), (test_h, test.bsp[:, cols]))
    cov["pairs"]["names"] = [D.FEATURE_NAMES[c] for c in cols]
    return {"coverage": cov["coverage"], "coverage_label_split": cov["coverage_label_split"],
            "reconstruction": rec["f1"], "reconstruction_threshold": rec["threshold"],
            "reconstruction_val": rec["val_f1"],
            "labelled_units": rec["labelled_units"], "l0": T.hidden_l0(test_h), "units": int(test_h.shape[1]),
            "nonzero_fraction": float((test_h > 0).mean()), "dead_fraction": float((label_h.max(0) <= 0).mean()),
            "_pairs": cov["pairs"]}


def evaluate(model, rec: dict, with_routing: bool = True) -> dict:
    cfg: GPTConfig = model.moex_cfg
    sets = probe_sets(cfg.ctx)
    mask = feature_mask(sets[0])
    hs = [T.hidden_at_dots(model, s)["h"] for s in sets]
    out = evaluate_acts(*hs, sets, mask)
    out.update(val_loss=rec["val_loss"], init_val_loss=rec["init_val_loss"], variant=model.moex_variant,
               n_features=int(mask.sum()))
    if with_routing:
        out["routing"] = routing_stats(model, sets[2])
    return out


def analysis_record(ev: dict) -> dict:
    """What the tab needs without a model: each unit's best BSPs, each BSP's best unit (from the label split)."""
    p = ev["_pairs"]
    names = p["names"]
    return {"per_unit": {str(u): [[names[j], round(f, 3), t, round(pr, 3)] for j, f, t, pr in lab]
                         for u, lab in enumerate(p["per_unit"]) if lab},
            "per_feature": {names[b]: [int(p["bsp_unit"][b]), round(float(p["bsp_f1"][b]), 3),
                                       float(p["bsp_threshold"][b]), round(float(p["bsp_precision"][b]), 3)]
                            for b in range(len(names)) if p["bsp_f1"][b] > 0},
            "maxes": [float(m) if np.isfinite(m) else None for m in p["maxes"]]}


def public(ev: dict) -> dict:
    return {k: v for k, v in ev.items() if not k.startswith("_")}


# ----------------------------------------------------------------------------- SAE baseline


def sae_on_dense(dense_model, target_l0: float | None, seed: int = 0, cancelled=None, recipe=None):
    """Train SAEs on the dense model's probed-layer hidden code (all token positions of held-in games);
    the L1 coefficient whose L0 at the '.' positions of the validation split is nearest ``target_l0``."""
    recipe = recipe or SAE_RECIPE
    from engines.common.settings import get_settings

    test = get_settings().profile == "test"
    cfg = dense_model.moex_cfg
    tr = T.gameset("train", T.profile_splits().train, cfg.ctx)
    n = min(len(tr.ids), 60 if test else recipe["games"])
    layer = probe_mlp(dense_model)
    layer.record = True
    with torch.no_grad():
        dense_model(input_ids=torch.as_tensor(tr.ids[:n]))
    acts = layer.last_h.reshape(-1, layer.width).clone()
    layer.record = False
    val_h = torch.as_tensor(T.hidden_at_dots(dense_model, probe_sets(cfg.ctx)[1])["h"])
    best, l1 = None, recipe["l1_start"]
    for _ in range(1 if test or not target_l0 else recipe["l1_trials"]):
        sae, info = train_sae(acts, layer.width * recipe["width_mult"], l1, 30 if test else recipe["steps"], seed,
                              cancelled=cancelled)
        with torch.no_grad():
            info["val_l0"] = float((sae.encode(val_h / sae.scale) > 0).float().sum(1).mean())
        dist = abs(np.log(max(info["val_l0"], 0.1) / target_l0)) if target_l0 else 0.0
        if best is None or dist < best[2]:
            best = (sae, info, dist)
        if target_l0:  # geometric search on the L1 coefficient towards MoE-X's L0
            l1 *= float(np.clip(info["val_l0"] / target_l0, 0.25, 4.0))
    return best[0], best[1]


@torch.no_grad()
def sae_codes(sae, h: np.ndarray) -> np.ndarray:
    return sae.encode(torch.as_tensor(h) / sae.scale).numpy()


# ----------------------------------------------------------------------------- the grid (a job)


def grid(params: dict | GridParams, ctx: JobContext | None = None) -> dict:
    p = validate(GridParams, params)
    ctx = ctx or LocalContext()
    from engines.common.settings import get_settings

    base = MICRO if get_settings().profile == "test" else TINY
    cfg = replace(base, n_layer=p.n_layer, n_embd=p.n_embd, n_head=4 if p.n_embd % 4 == 0 else base.n_head,
                  dense_hidden=p.dense_hidden, n_experts=p.n_experts, top_k=p.top_k,
                  expert_hidden=p.dense_hidden // p.top_k, probe_layer=max(0, p.n_layer - 2))
    runs = [(v, s) for s in range(p.seeds) for v in p.variants]
    rows, curves, t0 = [], {}, time.perf_counter()
    with torch_threads(1):
        for i, (v, s) in enumerate(runs):
            ctx.check_cancelled()
            tc = default_train_config(v, s, model=cfg, steps=p.steps)
            sub = Subprogress(ctx, i / len(runs), (i + 0.8) / len(runs))
            model, rec = T.ensure(tc, sub, ctx.cancelled)
            ctx.progress((i + 0.85) / len(runs), f"probing {VARIANT_LABELS[v]} (seed {s})")
            ev = public(evaluate(model, rec))
            rows.append({"variant": v, "label": VARIANT_LABELS[v], "seed": s, **{k: ev[k] for k in (
                "val_loss", "coverage", "reconstruction", "l0", "units", "dead_fraction")},
                "router_spearman": ev.get("routing", {}).get("spearman_token_mean")})
            curves[f"{v} s{s}"] = rec["curve"]
            if p.with_sae and v == "dense_gelu" and s == 0:
                ctx.progress((i + 0.9) / len(runs), "training the SAE on the dense GELU model")
                sae, info = sae_on_dense(model, None, cancelled=ctx.cancelled)
                sets = probe_sets(cfg.ctx)
                hs = [sae_codes(sae, T.hidden_at_dots(model, st)["h"]) for st in sets]
                se = evaluate_acts(*hs, sets, feature_mask(sets[0]))
                rows.append({"variant": "sae", "label": VARIANT_LABELS["sae"], "seed": 0, "val_loss": rec["val_loss"],
                             **{k: se[k] for k in ("coverage", "reconstruction", "l0", "units", "dead_fraction")},
                             "router_spearman": None})
    ctx.progress(1.0, "done")
    return {"rows": rows, "curves": curves, "config": cfg.to_dict(), "elapsed_s": time.perf_counter() - t0}


# ----------------------------------------------------------------------------- explorer and search


def resolve_game(p: ExploreParams) -> tuple[str, list[str]]:
    if p.pgn.strip():
        return "your PGN", D.parse_pgn(p.pgn)
    kind, _, idx = p.game.partition(":")
    if kind == "real":
        games = D.real_games()
        try:  # the tab lists these titles on its next start
            (T.moex_dir() / "real_games.json").write_text(json.dumps([t for t, _ in games]))
        except OSError:
            pass
        if not games:
            raise ValueError("no real games: install the Debian package 'pychess' (its PGN files) or pick a "
                             "synthetic game")
        if int(idx) >= len(games):
            raise ValueError(f"real game index {idx} is out of range: {len(games)} real games are installed")
        return games[int(idx)]
    import random

    return f"random legal game #{idx}", D.random_game(random.Random(int(idx)), 40)


def shipped_models(progress=None, cancelled=None) -> dict:
    """The tab's models: (model, record, analysis) for dense_gelu, topk_gelu, moex, and the SAE.

    Installed from the release, or trained on first use (a profile without a release): ``progress``
    and ``cancelled`` reach that training, so a job that loads them can be stopped.
    """
    from . import release

    return release.load_tab_models(progress, cancelled)


def explore(params: dict | ExploreParams, ctx: JobContext | None = None) -> dict:
    p = validate(ExploreParams, params)
    ctx = ctx or LocalContext()
    title, sans = resolve_game(p)
    boards = D.replay(sans)
    ctx.progress(0.1, "loading the models")
    models = shipped_models(Subprogress(ctx, 0.1, 0.5), ctx.cancelled)
    ctx.check_cancelled()
    ctx.progress(0.5, "running the models")
    cfg = next(iter(models.values()))["model"].moex_cfg if any(m.get("model") is not None for m in models.values()) \
        else TINY
    pgn = D.to_pgn_string(sans)[:cfg.ctx]
    dots = D.dot_positions(pgn)
    n_pos = sum(1 for _, plies in dots if plies <= len(sans))
    if p.position > n_pos:
        raise ValueError(f"position {p.position} is beyond this game's {n_pos} positions within the model's "
                         f"{cfg.ctx}-character context")
    char, plies = dots[p.position - 1]
    board = boards[plies]
    truth = {str(n) for n in np.asarray(D.FEATURE_NAMES)[D.bsp_vector(board)]}
    out_models = {}
    with torch_threads(1):
        for name in p.models:
            m = models[name]
            h = T.hidden_at(m["model"], pgn)["h"][char] if name != "sae" else \
                sae_codes(m["sae"], T.hidden_at(models["dense_gelu"]["model"], pgn)["h"][char:char + 1])[0]
            order = np.argsort(-h)[:p.top_n]
            ana = m["analysis"]
            units = []
            for u in order:
                if h[u] <= 0:
                    break
                labs = ana["per_unit"].get(str(int(u)), [])
                mx = ana["maxes"][u] or 0.0
                units.append({"unit": int(u), "activation": float(h[u]), "relative": float(h[u] / mx) if mx else 0.0,
                              "labels": [{"feature": f, "f1": f1, "threshold": t, "precision": pr,
                                          "true_here": f in truth} for f, f1, t, pr in labs]})
            out_models[name] = {"label": VARIANT_LABELS[name], "units": units, "l0": int((h > 0).sum()),
                                "width": int(h.shape[0])}
    ctx.progress(1.0, "done")
    return {"title": title, "sans": sans, "position": p.position, "plies": plies, "fen": board.fen(),
            "n_positions": n_pos, "pgn": pgn, "char": char, "true_features": sorted(truth), "models": out_models}


def search(params: dict | SearchParams, analyses: dict) -> dict:
    """Feature search over the shipped analyses (no model needed): {feature: {model: best unit}}."""
    p = validate(SearchParams, params)
    q = " ".join(p.feature.lower().split())
    names = [n for n in D.FEATURE_NAMES if q in n.lower()]
    if not names:
        words = q.split()
        names = [n for n in D.FEATURE_NAMES if all(w in n.lower() for w in words)]
    if not names:
        raise ValueError(f"unknown feature {p.feature!r}: try e.g. 'white knight on f3', 'black queen', "
                         f"'castle', 'passed pawn', 'pinned', 'check'")
    out = {}
    for n in names[:p.top_n]:
        out[n] = {m: (dict(zip(("unit", "f1", "threshold", "precision"), a["per_feature"][n]))
                      if n in a["per_feature"] else None) for m, a in analyses.items()}
    return {"query": p.feature, "matches": len(names), "features": out}


def dump(obj) -> str:
    return json.dumps(obj, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def search_job(params: dict | SearchParams, ctx: JobContext | None = None) -> dict:
    """The feature search as a job: loads (or installs) the tab's models' analyses first."""
    p = validate(SearchParams, params)
    ctx = ctx or LocalContext()
    ctx.progress(0.1, "loading the analyses")
    models = shipped_models(Subprogress(ctx, 0.1, 0.9), ctx.cancelled)
    ctx.check_cancelled()
    out = search(p, {k: v["analysis"] for k, v in models.items()})
    out["labels"] = {k: VARIANT_LABELS[k] for k in models}
    ctx.progress(1.0, "done")
    return out

"""Entry points: run the refinement loop on one problem (interactive job), preview a training problem's DP
tree, evaluate every variant's accuracy-per-turn curves on held-out problems, train the tiny pipeline."""
from __future__ import annotations

import time

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import refine, task
from .params import VARIANT_LABELS, EvaluateParams, RefineParams, TrainParams, TreeParams


def _ctx(ctx: JobContext | None) -> JobContext:
    return ctx if ctx is not None else LocalContext()


def transcript(params, ctx: JobContext | None = None) -> dict:
    """One problem: the actor's answer, the critic's feedback and each refinement, the running majority."""
    from . import release

    p = validate(RefineParams, params)
    ctx = _ctx(ctx)
    t0 = time.perf_counter()
    problem = task.parse_problem(p.problem)
    with torch_threads(1):
        ctx.progress(0.1, "loading the models")
        bundle = release.load()
        actor, critic, mode = bundle.pair(p.variant)
        ctx.progress(0.3, "refining")
        tr = refine.run(actor, critic, [problem], p.turns, p.temperature, p.seed, mode, p.markovian)
    truth = task.final_answer(tr.truths[0])
    finals = tr.finals[0]
    turns = []
    for k, ans in enumerate(tr.answers[0]):
        running = refine.majority(finals[:k + 1])
        turns.append({"turn": k + 1, "answer": ans, "final": finals[k], "correct": finals[k] == truth,
                      "feedback": tr.feedback[0][k - 1] if k else None,
                      "feedback_valid": task.valid_feedback(tr.feedback[0][k - 1]) if k else None,
                      "majority": running, "majority_correct": running == truth})
    unparsable = sum(f is None for f in finals)
    ctx.progress(1.0, "done")
    return {"problem": tr.xs[0], "truth": tr.truths[0], "truth_final": truth, "variant": p.variant,
            "variant_label": VARIANT_LABELS[p.variant], "turns": turns, "majority": turns[-1]["majority"],
            "majority_correct": turns[-1]["majority_correct"], "unparsable": unparsable,
            "votes": {str(f): finals.count(f) for f in dict.fromkeys(f for f in finals if f is not None)},
            "markovian": p.markovian, "temperature": p.temperature, "model": bundle.source,
            "elapsed_s": time.perf_counter() - t0}


def tree(params, ctx: JobContext | None = None) -> dict:
    """Sample one training problem's refinement tree with π_ref and show its DP value targets and pairs."""
    from . import dp, release

    p = validate(TreeParams, params)
    ctx = _ctx(ctx)
    with torch_threads(1):
        bundle = release.load()
        cfg = bundle.cfg
        prob = task.sample(p.index + 1, cfg.seed, "train")[p.index]
        t = dp.sample_tree(bundle.models["ref_actor"], bundle.models["ref_critic"], [prob], cfg.k_answers,
                           cfg.m_refine, p.seed, lambda f, m: ctx.progress(0.9 * f, m), ctx.cancelled)
        prev = dp.preview(t, 0, cfg.margin, cfg.pairs_per_state)
        pairs = dp.dpsdp_pairs(t, cfg.margin, cfg.pairs_per_state)
    ctx.progress(1.0, "done")
    return {**prev, "pairs": {k: len(v) for k, v in pairs.items()}, "k": cfg.k_answers, "m": cfg.m_refine}


def evaluate_models(models: dict, problems: list, turns: int, variants, seed: int, progress=None,
                    cancelled=None) -> dict:
    """Accuracy per turn of each variant (greedy) and self-consistency of the same actors (T = 0.7)."""
    from .release import Bundle

    b = Bundle(models, None, {}, "", None)
    out, say = {}, progress or (lambda f, m: None)
    for i, v in enumerate(variants):
        actor, critic, mode = b.pair(v)
        out[v] = refine.metrics(refine.run(actor, critic, problems, turns, 0.0, seed, mode, cancelled=cancelled))
        say((i + 1) / (len(variants) + 3), f"{VARIANT_LABELS[v]}: m1@t{turns} {out[v]['m1'][-1]:.1%}")
    # the full-history state fits task.HISTORY_TURNS turns in the model's context: its curve stops there
    out["history"] = refine.metrics(refine.run(models["dpsdp_actor"], models["dpsdp_critic"], problems,
                                               min(turns, task.HISTORY_TURNS), 0.0, seed, "model", markovian=False,
                                               cancelled=cancelled))
    say((len(variants) + 1) / (len(variants) + 3), "non-Markovian ablation done")
    out["sc_reference"] = refine.metrics(refine.self_consistency(models["ref_actor"], problems, turns, 0.7, seed, cancelled))
    out["sc_dpsdp"] = refine.metrics(refine.self_consistency(models["dpsdp_actor"], problems, turns, 0.7, seed, cancelled))
    out["base"] = refine.metrics(refine.run(models["base"], None, problems, 1, 0.0, seed))
    say(1.0, "self-consistency done")
    return out


def evaluate(params, ctx: JobContext | None = None) -> dict:
    from . import release

    p = validate(EvaluateParams, params)
    ctx = _ctx(ctx)
    t0 = time.perf_counter()
    with torch_threads(1):
        bundle = release.load()
        problems = task.sample(p.n_problems, 0, p.split)
        res = evaluate_models(bundle.models, problems, p.turns, p.variants, p.seed, Subprogress(ctx, 0.05, 1.0),
                              ctx.cancelled)
    return {"curves": res, "variants": list(p.variants), "labels": VARIANT_LABELS, "n_problems": p.n_problems,
            "split": p.split, "turns": p.turns, "model": bundle.source, "elapsed_s": time.perf_counter() - t0}


def train(params, ctx: JobContext | None = None) -> dict:
    """The whole pipeline in the background (quick preset ≈ 3 min), then its pair on 200 test problems.

    The test profile shrinks both presets (quick → the micro recipe, full → the quick one)."""
    from dataclasses import replace

    from engines.common.settings import get_settings

    from . import pipeline
    from .config import MICRO, QUICK, TinyConfig

    p = validate(TrainParams, params)
    ctx = _ctx(ctx)
    recipes = {"quick": MICRO, "full": QUICK} if get_settings().profile == "test" else {"quick": QUICK, "full": TinyConfig()}
    cfg = replace(recipes[p.preset], seed=p.seed)
    sub = Subprogress(ctx, 0.0, 0.9)
    with torch_threads(2):
        models, rec, prev = pipeline.build(cfg, lambda f, m: sub(f, m), ctx.cancelled)
        ev = evaluate_models(models, task.sample(200, 0, "test"), 5, ("dpsdp", "reference"), 0,
                             Subprogress(ctx, 0.9, 1.0), ctx.cancelled)
    return {"record": rec, "preview": prev, "eval": ev, "config": cfg.to_dict()}


def validation_metrics(models: dict, n: int = 500) -> dict:
    """The release's numbers, on validation problems (the test split is for ``make reproduce``)."""
    res = evaluate_models(models, task.sample(n, 0, "val"), 5, ("dpsdp", "reference"), 0)
    return {"val_p1_t1_dpsdp": res["dpsdp"]["p1"][0], "val_m1_t5_dpsdp": res["dpsdp"]["m1"][-1],
            "val_p1_t1_reference": res["reference"]["p1"][0], "val_m1_t5_reference": res["reference"]["m1"][-1]}


def write_example(folder) -> None:
    import json

    from .params import EXAMPLE

    (folder / "example.json").write_text(json.dumps(transcript({"problem": EXAMPLE})))

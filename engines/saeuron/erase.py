"""Erasing concepts at inference time: entry ``erase(params, ctx)`` (original vs erased, same seeds).

Concepts are grouped by kind; each kind has its SAE at its own hook point, and several concepts of one
kind share one hook (their feature sets are concatenated per timestep, spec §1 "multi-concept").
"""
from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import LocalContext
from engines.common.params import ParamError, validate
from engines.common.threads import torch_threads

from .hooks import Capture, SAeUronHook, StepTracker
from .params import KIND, OBJECTS, STYLES, ConceptEdit, EraseParams
from .pipeline import Bundle, caption, generate, hook_of, load_bundle
from .scores import build_plan

CLASSES = {"style": STYLES, "object": OBJECTS}


class NoStatistics(ParamError):
    pass


def prompt_of(p) -> str:
    return p.prompt or caption(p.object, p.style, p.colour)


def make_hooks(b: Bundle, edits: tuple[ConceptEdit, ...] | list[ConceptEdit], tracker: StepTracker, *, selection: str = "top_m",
               units: str = "sae", preserve_error: bool = True, apply_uncond: bool = True,
               capture_step: int | None = None) -> tuple[dict, dict]:
    """({hook point: [hooks]}, {kind: (plan info, capture)}) for a list of concept edits."""
    hooks: dict[str, list] = {}
    diag: dict[str, tuple] = {}
    for kind in ("style", "object"):
        mine = [e for e in edits if KIND[e.concept] == kind]
        if not mine:
            continue
        st = b.stats[kind]
        classes = CLASSES[kind]
        built = sorted({classes[int(i)] for i in st.labels.unique()}, key=classes.index)
        for e in mine:
            if e.concept not in built:
                raise NoStatistics("EraseParams", [f"concepts: no statistics for concept '{e.concept}': this SAE was "
                                                   f"built on {kind}s {built}; rebuild with it included"])
        dicts = [dict(c=classes.index(e.concept), gamma=e.gamma, mode=selection, top_m=e.top_m,
                      percentile=e.percentile, t_start=e.t_start, t_end=e.t_end) for e in mine]
        mu = st.mu if units == "sae" else st.raw
        plan, info = build_plan(mu, st.labels, len(classes), st.timesteps, dicts)
        cap = Capture(at_step=capture_step) if capture_step is not None else None
        hook = SAeUronHook(plan, tracker, sae=b.saes[kind] if units == "sae" else None,
                           preserve_error=preserve_error, apply_uncond=apply_uncond, capture=cap)
        hooks.setdefault(hook_of(b.params, kind), []).append(hook)
        diag[kind] = (info, cap, plan)
    return hooks, diag


class EraseResult(BaseModel):
    prompt: str
    grid: str
    judge_plot: str
    hist_plot: str
    heatmap_plot: str | None
    judges: dict
    selected: list[list]
    n_features: dict
    seconds: float
    mean_abs_change: float


@torch_threads(1)
def erase(params: EraseParams | dict, ctx=None) -> EraseResult:
    from engines.common import zoo

    from . import plots

    p = validate(EraseParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    b = load_bundle(p.build, ctx=ctx)
    bp = b.params
    steps = p.steps or bp.steps
    prompt = prompt_of(p)
    prompts = [prompt] * p.n_images
    ctx.progress(0.1, "generating the original images")
    original = generate(b.pipe, prompts, p.seed, steps, p.guidance)
    ctx.check_cancelled()
    tracker = StepTracker()
    cap_step = int(round(p.heatmap_step * (steps - 1)))
    hooks, diag = make_hooks(b, p.concepts, tracker, selection=p.selection, units=p.units,
                             preserve_error=p.preserve_error, apply_uncond=p.apply_uncond, capture_step=cap_step)
    ctx.progress(0.5, "generating with the concepts erased")
    erased = generate(b.pipe, prompts, p.seed, steps, p.guidance, hooks, tracker)
    ctx.progress(0.85, "judging and plotting")
    js, jo = zoo.load("judge_style", shared=True), zoo.load("judge_object", shared=True)
    judges = {}
    for kind, j in (("style", js), ("object", jo)):
        pb, pa = j.probs(original), j.probs(erased)
        judges[kind] = {"classes": list(j.classes), "before": pb.mean(0).tolist(), "after": pa.mean(0).tolist(),
                        "pred_before": [j.classes[i] for i in pb.argmax(1)], "pred_after": [j.classes[i] for i in pa.argmax(1)]}
    selected, n_feat = [], {}
    for kind, (info, cap, plan) in diag.items():
        classes = CLASSES[kind]
        for c, d in info.items():
            sel = d["selected"]
            n_feat[classes[c]] = float(np.mean([len(s) for s in sel]))
            T = len(sel)
            for t in sorted({0, T // 2, T - 1}):
                selected.append([classes[c], t, int(plan.timesteps[t]), ", ".join(str(int(i)) for i in sel[t]) or "—"])
    grid = ctx.artifacts.save_image("original_vs_erased.png", plots.pair_grid(original, erased))
    judge_plot = ctx.artifacts.save_figure("judges.png", plots.judge_bars(judges, [e.concept for e in p.concepts]))
    hist_plot = ctx.artifacts.save_figure("scores.png", plots.score_histograms(diag, cap_step, steps))
    hm = plots.heatmaps(diag, original, CLASSES)  # where the features fire on the unedited images
    heat = ctx.artifacts.save_figure("heatmaps.png", hm) if hm is not None else None
    ctx.progress(1.0, "done")
    return EraseResult(prompt=prompt, grid=grid, judge_plot=judge_plot, hist_plot=hist_plot, heatmap_plot=heat,
                       judges=judges, selected=selected, n_features=n_feat, seconds=time.perf_counter() - t0,
                       mean_abs_change=float(np.abs(original.astype(float) - erased.astype(float)).mean() / 255))

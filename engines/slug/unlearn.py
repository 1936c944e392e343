"""SLUG on a CLIP model: the entry point ``unlearn`` (Alg. 1 of the paper) and the baselines.

1. one pass over D_f for ∇L_f and one over D_r for ∇L_r (no optimiser step);
2.–4. per-layer importance and alignment, the Pareto front of each tower;
5.–7. for each Pareto layer a step-size binary search; keep the layer that reaches the forget target with
the highest retain accuracy (or the deepest Pareto layer, the SD script's rule); apply that single-layer patch.
Baselines at matched forget accuracy: ``baselines.py``.
"""
from __future__ import annotations

import time

import torch
from pydantic import BaseModel

from engines.common.context import LocalContext, Subprogress
from engines.common.params import validate

from .baselines import nbytes, run_baselines, search_kw
from .concepts import build_concept
from .gradients import accumulate_gradients
from .layers import candidate_names, check_layer, deepest, score_layers
from .params import UnlearnParams
from .search import Evaluator, SearchFailed, apply_patch, binary_search, changed_parameters, revert_patch, snapshot


class UnlearnResult(BaseModel):
    model: str
    target_kind: str
    target: str
    task: str
    utility_task: str
    classes: list[str]
    n_forget: int
    n_retain: int
    layers: list[dict]  # name, tower, importance, alignment, depth, pareto, numel
    searched: list[dict]  # one search trace per searched layer
    chosen: str
    chosen_names: list[str]
    rel_step: float
    lam: float
    before: dict
    after: dict
    changed: list[str]
    revert_exact: bool
    patch_ref: str
    patch_bytes: int
    cost: dict
    baselines: list[dict]
    forget_target: float
    elapsed_s: float


def load_clip(ctx, a: float, b: float):
    from engines.common import zoo

    zc = zoo.load("clip", ctx=zoo.Progress(ctx, a, b))
    zc.model.eval()
    return zc


def _choose(traces, scores, selection: str):
    reached = [t for t in traces if t.reached]
    if not reached:
        return None
    if selection == "deepest":
        return reached[0]
    return max(reached, key=lambda t: (t.best_row["retain"], t.best_row["utility"], -t.best_row["rel"]))


def unlearn(params: UnlearnParams | dict, ctx=None, heldout_split: bool = False) -> UnlearnResult:
    """``heldout_split``: choose the layer and the step on a validation half of the held-out images and report
    forget / retain on the other half too (``before["test"]``, ``after["test"]``, each baseline's ``test``)."""
    p = validate(UnlearnParams, params)
    ctx = ctx or LocalContext()
    t_start = time.perf_counter()
    torch.manual_seed(p.seed)
    zc = load_clip(ctx, 0.0, 0.2)
    model = zc.model
    if p.layer is not None:
        check_layer(model, p.layer)
    ctx.progress(0.2, "building forget / retain sets")
    concept = build_concept(p.target_kind, p.target, p.n_forget, p.n_retain, p.n_eval, p.min_forget, p.seed,
                            heldout_split=heldout_split)
    ev = Evaluator(zc, concept)
    theta0 = snapshot(model)  # θ⁽⁰⁾: never written to; every probe is reverted against it
    before = ev([], per_class=True)  # nothing changed yet: the embeddings cached by the Evaluator
    ctx.check_cancelled()

    # Step 1: one pass each over D_f and D_r.
    cands = set(candidate_names(model, "both"))
    gf = accumulate_gradients(zc, concept.forget_images, concept.forget_captions, "forget", p.batch_size, cands,
                              Subprogress(ctx, 0.22, 0.3))
    gr = accumulate_gradients(zc, concept.retain_images, concept.retain_captions, "retain", p.batch_size, cands,
                              Subprogress(ctx, 0.3, 0.4))
    # Steps 2–4.
    t0 = time.perf_counter()
    scores = score_layers(model, gf.grads, gr.grads, p.tower)
    pareto_s = time.perf_counter() - t0
    if p.layer is not None:
        to_search = [p.layer]
    elif p.selection == "deepest":
        d = deepest(scores)
        to_search = [d.name if d else max((s for s in scores if s.pareto), key=lambda s: s.importance).name]
    else:
        to_search = [s.name for s in scores if s.pareto]
    ctx.progress(0.42, f"{len(to_search)} layer(s) to search: " + ", ".join(to_search[:4]))

    # Steps 5–7.
    traces, search_s = [], {}
    for i, name in enumerate(to_search):
        sub = Subprogress(ctx, 0.42 + 0.38 * i / len(to_search), 0.42 + 0.38 * (i + 1) / len(to_search))
        t0 = time.perf_counter()
        if p.rel_step is not None:
            tr = binary_search(model, gf.grads, [name], ev, p.forget_target, 1, p.rel_step, p.rel_step, progress=sub)
            tr.best = 0  # a manual step is applied whether or not it reaches the target
        else:
            tr = binary_search(model, gf.grads, [name], ev, progress=sub, **search_kw(p))
        search_s[name] = time.perf_counter() - t0
        traces.append(tr)
    chosen = _choose(traces, scores, p.selection)
    if chosen is None:
        best = min((r for t in traces for r in t.rows), key=lambda r: r["forget1"])
        raise SearchFailed(
            f"the step-size search did not reach forget accuracy ≤ {p.forget_target:.0%} on any of "
            f"{len(traces)} searched layer(s) within {p.max_evals} evaluations and relative step ≤ {p.max_rel_step:g} "
            f"(lowest forget accuracy {best['forget1']:.0%} at r = {best['rel']:.3g}); raise max_evals or max_rel_step, "
            "or relax forget_target")
    row = chosen.best_row

    # Apply the single-layer patch, check that exactly that layer changed, save it, check the revert.
    originals = apply_patch(model, gf.grads, chosen.names, row["lam"])
    after = ev(chosen.names, per_class=True)
    changed = changed_parameters(model, theta0)
    if changed != list(chosen.names):
        raise AssertionError(f"the patch changed {changed}, expected only {chosen.names}")
    patch_ref, patch_bytes = _save_patch(ctx, model, chosen.names, row)
    revert_patch(model, originals)
    revert_exact = not changed_parameters(model, theta0)
    ctx.progress(0.8, f"chose {chosen.layer}: forget {after['forget1']:.0%}, retain {after['retain']:.0%}")

    cost = dict(
        forget_batches=gf.batches, retain_batches=gr.batches, optimizer_steps=gf.optimizer_steps + gr.optimizer_steps,
        grad_examples=gf.examples + gr.examples, grad_s=gf.seconds + gr.seconds, pareto_s=pareto_s,
        search_evals=sum(len(t.rows) for t in traces), chosen_evals=len(chosen.rows),
        search_s=sum(search_s.values()), chosen_search_s=search_s[chosen.layer],
        train_s=gf.seconds + gr.seconds, total_s=gf.seconds + gr.seconds + pareto_s + sum(search_s.values()),
        state_bytes=nbytes(gf.grads.values()) + nbytes(gr.grads.values()) + nbytes(originals.values()),
        params_changed=int(sum(t.numel() for t in originals.values())),
        params_total=int(sum(t.numel() for t in theta0.values())),
    )
    baselines = []
    if p.baselines:
        baselines = run_baselines(zc, concept, ev, gf.grads, scores, chosen.layer, cost, p,
                                  Subprogress(ctx, 0.8, 0.99))
    ctx.progress(1.0, "done")
    return UnlearnResult(
        model=_model_id(), target_kind=p.target_kind, target=concept.name, task=concept.task.name,
        utility_task=concept.utility.name, classes=concept.task.classes, n_forget=len(concept.forget_images),
        n_retain=len(concept.retain_images), layers=[s.as_dict() for s in scores],
        searched=[t.as_dict() for t in traces], chosen=chosen.layer, chosen_names=list(chosen.names),
        rel_step=row["rel"], lam=row["lam"], before=before, after=after, changed=changed, revert_exact=revert_exact,
        patch_ref=patch_ref, patch_bytes=patch_bytes, cost=cost, baselines=baselines, forget_target=p.forget_target,
        elapsed_s=time.perf_counter() - t_start)


def _model_id() -> str:
    from engines.common.zoo.catalog import external_source

    return external_source("clip") or "zoo tiny CLIP"


def _save_patch(ctx, model, names, row) -> tuple[str, int]:
    """The patch: only the updated tensors, as safetensors."""
    from safetensors.torch import save

    params = dict(model.named_parameters())
    data = save({n: params[n].detach().cpu().contiguous() for n in names},
                metadata={"rel_step": f"{row['rel']:.6g}", "lam": f"{row['lam']:.6g}", "method": "SLUG"})
    return ctx.artifacts.save_bytes("slug_patch.safetensors", data), len(data)

"""SLUG's baselines at matched forget accuracy (spec §3; official ``src/clip/unlearn/{GA,FT,GAFT,SSD}.py`` and
``unlearn_compare.py``).

Iterative methods (AdamW at ``ga_lr``, one shared step budget ``ga_max_steps``; after every update cycle the
forget accuracy on the selection images is checked and training stops once it reaches the target):

- **GA**: ascent on L_f = 1 − cos(image, caption) over D_f (``GA.py``; every layer changes).
- **FT**: descent on CLIP's contrastive loss L_r over D_r (``FT.py``: forgetting only by drift).
- **GA+FT**: a D_f batch of ascent on L_f, then a D_r batch of descent on L_r (``GAFT.py`` runs a forget epoch,
  then a retain epoch; here the two alternate batch by batch so the stopping check sees both).
- **SalUn**: GA+FT with every gradient masked to the half of all weights with the largest |∇L_f|
  (``unlearn_compare.get_salun_mask``, threshold 0.5; the official CLIP comparison runs SalUn through ``GAFT``).

One-shot:

- **SSD** (selective synaptic dampening, ``SSD.py``): importances I = mean over batches of (∇L)² on D_f and on D_r
  (``calc_grad`` with ``norm='l2'``); the weights with I_f > α·I_r (α = 10) are multiplied by min(λ·I_r/I_f, 1);
  λ is swept over linspace(0.1, 5, 10) as in ``unlearn_compare`` (each λ applied to θ⁽⁰⁾; the official loop keeps
  dampening the same model) from the weakest dampening down, and the first λ that reaches the target is kept.

Layer-selection ablations (paper Table 4), each with SLUG's own gradients and binary search: the highest-importance
layer, the lowest-alignment layer, random layers, and all Pareto layers at once (one relative step r for each).

Every baseline row carries the same cost fields: ``grad_examples`` (forward+backward examples), ``train_s``
(update compute without evaluations), ``evals``, ``state_bytes`` (extra memory) and ``changed`` (what it edits).
"""
from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np
import torch

from engines.common.context import Subprogress

from .gradients import accumulate_gradients, forget_loss, retain_loss
from .search import Evaluator, binary_search, lam_from_rel

SSD_ALPHA = 10.0  # selection weighting (SSD.py)
SSD_LAMBDAS = tuple(float(x) for x in np.linspace(0.1, 5, 10))  # dampening constants (unlearn_compare.py)
SALUN_THRESHOLD = 0.5  # fraction of weights SalUn lets move (get_salun_mask)
ITERATIVE = {"ga": ("GA (all layers)", ("forget",)), "ft": ("FT (retain fine-tuning)", ("retain",)),
             "ga_ft": ("GA+FT", ("forget", "retain")), "salun": ("SalUn (saliency-masked GA+FT)", ("forget", "retain"))}


def nbytes(ts) -> int:
    """Bytes held by the tensors ``ts``."""
    return int(sum(t.numel() * t.element_size() for t in ts))


def search_kw(p) -> dict:
    return dict(forget_target=p.forget_target, max_evals=p.max_evals, init_rel=p.init_rel_step, max_rel=p.max_rel_step)


def _metrics(row: dict) -> dict:
    return dict(test=row.get("test"), **{k: row[k] for k in ("forget1", "forget5", "retain", "utility")})


class _Batches:
    """Endless shuffled batches of one pair set (a fresh permutation per epoch)."""

    def __init__(self, images, captions, batch_size: int, rng):
        self.images, self.captions, self.bs, self.rng = images, captions, batch_size, rng
        self.order, self.pos = rng.permutation(len(images)), 0

    def next(self):
        n = len(self.images)
        if self.pos + min(self.bs, n) > n:
            self.order, self.pos = self.rng.permutation(n), 0
        idx = self.order[self.pos:self.pos + self.bs]
        self.pos += len(idx)
        return self.images[idx], [self.captions[i] for i in idx]


def salun_mask(grads: dict[str, torch.Tensor], threshold: float = SALUN_THRESHOLD) -> dict[str, torch.Tensor]:
    """1 on the ``threshold`` fraction of all weights with the largest |∇L_f| (one ranking over the whole model)."""
    flat = torch.cat([g.abs().flatten() for g in grads.values()])
    k = int(len(flat) * threshold)
    keep = torch.zeros(len(flat), dtype=torch.bool)
    keep[torch.argsort(flat, descending=True, stable=True)[:k]] = True
    out, i = {}, 0
    for n, g in grads.items():
        out[n] = keep[i:i + g.numel()].reshape(g.shape).to(g.dtype)
        i += g.numel()
    return out


def iterative(zc, concept, p, kind: str, progress=None) -> dict:
    """GA, FT, GA+FT or SalUn on a copy of the model, stopped at the forget target (or the step budget)."""
    label, cycle = ITERATIVE[kind]
    model = copy.deepcopy(zc.model)
    zg = dataclasses.replace(zc, model=model)
    ev = Evaluator(zg, concept)
    params = {n: q for n, q in model.named_parameters() if q.requires_grad}
    mask, mask_examples, t_mask = None, 0, 0.0
    if kind == "salun":
        t0 = time.perf_counter()
        gf = accumulate_gradients(zg, concept.forget_images, concept.forget_captions, "forget", p.batch_size,
                                  set(params))
        mask, mask_examples, t_mask = salun_mask(gf.grads), gf.examples, time.perf_counter() - t0
    opt = torch.optim.AdamW(list(params.values()), lr=p.ga_lr, weight_decay=0.0)
    rng = np.random.default_rng(p.seed)
    data = {"forget": _Batches(concept.forget_images, concept.forget_captions, p.batch_size, rng),
            "retain": _Batches(concept.retain_images, concept.retain_captions, p.batch_size, rng)}
    sign = {"forget": -1.0, "retain": 1.0}  # ascent on L_f, descent on L_r
    loss_fn = {"forget": forget_loss, "retain": retain_loss}
    train_s, steps, examples = t_mask, 0, mask_examples
    while steps < p.ga_max_steps:
        t0 = time.perf_counter()
        model.train()
        for part in cycle:
            images, captions = data[part].next()
            opt.zero_grad(set_to_none=True)
            (sign[part] * loss_fn[part](zg, images, captions)).backward()
            if mask is not None:
                for n, q in params.items():
                    if q.grad is not None:
                        q.grad.mul_(mask[n])
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, float(np.log(100)))
            steps += 1
            examples += len(captions)
        model.eval()
        train_s += time.perf_counter() - t0
        fa = ev.forget_accuracy()
        if progress is not None:
            progress(min(1.0, steps / p.ga_max_steps), f"{label} step {steps}: forget {fa:.2f}")
        if fa <= p.forget_target:
            break
    row = ev(None)
    moments = 2 * nbytes(params.values())  # AdamW's two moments
    state = nbytes(list(model.parameters())) + nbytes(params.values()) + moments  # copy + grads + moments
    if mask is not None:
        state += nbytes(mask.values())
    changed = sum(1 for q, b in zip(model.parameters(), zc.model.parameters()) if not torch.equal(q, b))
    return dict(name=kind, label=label, reached=row["forget1"] <= p.forget_target, steps=steps,
                grad_examples=examples, train_s=train_s, evals=ev.evals, state_bytes=state,
                params_changed=int(sum(q.numel() for q in params.values())), tensors_changed=int(changed),
                changed=f"all ({changed} tensors)" + (", half the weights masked" if mask is not None else ""),
                **_metrics(row))


def ssd(zc, concept, p, progress=None) -> dict:
    """Selective synaptic dampening from θ⁽⁰⁾, the weakest λ of the official sweep that reaches the target."""
    model = copy.deepcopy(zc.model)
    zg = dataclasses.replace(zc, model=model)
    ev = Evaluator(zg, concept)
    names = {n for n, q in model.named_parameters() if q.requires_grad and q.numel() > 1}
    t0 = time.perf_counter()
    i_f = accumulate_gradients(zg, concept.forget_images, concept.forget_captions, "forget", p.batch_size, names,
                               square=True)
    i_r = accumulate_gradients(zg, concept.retain_images, concept.retain_captions, "retain", p.batch_size, names,
                               square=True)
    selected = {n: i_f.grads[n] > SSD_ALPHA * i_r.grads[n] for n in names}
    train_s = time.perf_counter() - t0
    params = dict(model.named_parameters())
    theta0 = {n: params[n].detach().clone() for n in names}
    rows = []
    for j, lam in enumerate(sorted(SSD_LAMBDAS, reverse=True)):  # large λ = mild dampening
        t0 = time.perf_counter()
        with torch.no_grad():
            for n in names:
                w = (lam * i_r.grads[n] / i_f.grads[n].clamp_min(1e-30)).clamp(max=1.0)
                params[n].copy_(torch.where(selected[n], theta0[n] * w, theta0[n]))
        train_s += time.perf_counter() - t0
        row = dict(lam=lam, **ev(None))
        rows.append(row)
        if progress is not None:
            progress((j + 1) / len(SSD_LAMBDAS), f"SSD λ = {lam:.2f}: forget {row['forget1']:.2f}")
        if row["forget1"] <= p.forget_target:
            break
    best = rows[-1] if rows[-1]["forget1"] <= p.forget_target else min(rows, key=lambda r: r["forget1"])
    n_sel = int(sum(int(s.sum()) for s in selected.values()))
    state = nbytes(i_f.grads.values()) + nbytes(i_r.grads.values()) + nbytes(theta0.values())
    return dict(name="ssd", label="SSD (Fisher dampening)", reached=best["forget1"] <= p.forget_target,
                lam=best["lam"], sweep=[{k: r[k] for k in ("lam", "forget1", "retain")} for r in rows],
                grad_examples=i_f.examples + i_r.examples, train_s=train_s, evals=len(rows), state_bytes=state,
                params_changed=n_sel, changed=f"{n_sel:,} weights dampened (α = {SSD_ALPHA:g})",
                **_metrics(best))


def layer_baseline(zc, concept, grads, names: list[str], p, label, name, ev=None) -> dict:
    """SLUG's update and binary search on ``names`` (one relative step r = λ·‖g_l‖/‖θ_l‖ for every layer)."""
    ev = ev or Evaluator(zc, concept)
    if len(names) > 1:  # ‖θ_l‖/‖g_l‖ · g_l, so that r is each layer's own relative change
        grads = {n: grads[n] * lam_from_rel(zc.model, grads, n, 1.0) for n in names}
    t0 = time.perf_counter()
    tr = binary_search(zc.model, grads, list(names), ev, **search_kw(p))
    dt = time.perf_counter() - t0
    row = tr.best_row or min(tr.rows, key=lambda r: r["forget1"])
    return dict(name=name, label=label, layer=names[0] if len(names) == 1 else f"{len(names)} layers",
                layers=list(names), reached=tr.reached, evals=len(tr.rows), search_s=dt, rel=row["rel"],
                trace=tr.as_dict(), changed=", ".join(names), **_metrics(row))


def run_baselines(zc, concept, ev, grads, scores, chosen: str, cost: dict, p, progress) -> list[dict]:
    """Every baseline in ``p.baselines``; the layer ones share SLUG's gradients and report SLUG's gradient cost."""
    out = []
    kinds = list(p.baselines)
    shared = dict(grad_examples=cost["grad_examples"], train_s=cost["grad_s"], state_bytes=cost["state_bytes"])
    for i, kind in enumerate(kinds):
        sub = Subprogress(progress.ctx, progress.start + (progress.stop - progress.start) * i / len(kinds),
                          progress.start + (progress.stop - progress.start) * (i + 1) / len(kinds))
        if kind in ITERATIVE:
            out.append(iterative(zc, concept, p, kind, sub))
        elif kind == "ssd":
            out.append(ssd(zc, concept, p, sub))
        elif kind == "importance_only":
            top = max(scores, key=lambda s: s.importance)
            out.append({**layer_baseline(zc, concept, grads, [top.name], p, "importance-only layer", kind, ev),
                        **shared})
        elif kind == "alignment_only":
            low = min(scores, key=lambda s: s.alignment)
            out.append({**layer_baseline(zc, concept, grads, [low.name], p, "alignment-only layer", kind, ev),
                        **shared})
        elif kind == "all_pareto":
            names = [s.name for s in scores if s.pareto]
            out.append({**layer_baseline(zc, concept, grads, names, p, "all Pareto layers", kind, ev), **shared})
        elif kind == "random_layer":
            out.append({**random_layers(zc, concept, ev, grads, scores, chosen, p, sub), **shared})
        sub(1.0, f"baseline {kind} done")
    return out


def random_layers(zc, concept, ev, grads, scores, chosen, p, sub) -> dict:
    rng = np.random.default_rng(p.seed + 1)
    pool = [s.name for s in scores if s.name != chosen]
    picks = rng.choice(len(pool), size=min(p.n_random, len(pool)), replace=False)
    rows = []
    for j, k in enumerate(picks):
        rows.append(layer_baseline(zc, concept, grads, [pool[k]], p, "random layer", "random_layer", ev))
        sub((j + 1) / len(picks), f"random layer {j + 1}/{len(picks)}: {pool[k]}")
    ok = [r for r in rows if r["reached"]]
    agg = dict(name="random_layer", label="random layer (mean)", reached=len(ok) == len(rows), n_reached=len(ok),
               n=len(rows), layers=[r["layer"] for r in rows], runs=rows, evals=sum(r["evals"] for r in rows),
               search_s=sum(r["search_s"] for r in rows), changed=f"one of {len(rows)} random layers")
    for key in ("forget1", "forget5", "retain", "utility"):
        agg[key] = float(np.mean([r[key] for r in rows]))
    agg["test"] = ({k: float(np.mean([r["test"][k] for r in rows])) for k in rows[0]["test"]}
                   if all(r.get("test") for r in rows) else None)
    return agg

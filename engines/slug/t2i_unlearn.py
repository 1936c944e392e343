"""SLUG on a text-to-image model: one layer of the CLIP text encoder inside Stable Diffusion (UnlearnCanvas setting).

Official ``eval_uncanvas.py``: gradients of the CLIP model whose text tower the pipeline uses; the Pareto front of
the text tower; the **deepest** Pareto layer inside ``text_model.encoder.layers``; the whole attention projection
set (q, k, v) or the whole MLP (fc1 + fc2) of that block is updated, each with its own gradient and one λ;
search from λ₀ = 0.4·‖θ‖/‖g‖ with upper bound 10·λ₀; stop once the judge no longer recognises the concept
(UA = 0) and unrelated concepts (IRA) drop by < 0.1. The updated text weights go into ``pipe.text_encoder``.
"""
from __future__ import annotations

import time

import numpy as np
import torch
from pydantic import BaseModel

from engines.common.context import LocalContext, Subprogress
from engines.common.params import validate

from .gradients import accumulate_gradients
from .layers import candidate_names, deepest, group_of, score_layers
from .params import TARGETS, T2IParams, target_index
from .search import changed_parameters, lam_from_rel, snapshot


class T2IResult(BaseModel):
    target_kind: str
    target: str
    others: list[str]
    layers: list[dict]
    chosen: str
    chosen_names: list[str]
    rel_step: float
    lam: float
    searched: list[dict]
    before: dict  # judge accuracy: target, others (mean), per concept; cross-domain (other judge)
    after: dict
    changed: list[str]
    gallery_before: str
    gallery_after: str
    cost: dict
    forget_target: float
    elapsed_s: float


def _prompts(kind: str, concept: int, n: int, seed: int) -> list[str]:
    """n captions naming ``concept`` (an object or a style) with random other attributes."""
    from engines.common import data

    rng = np.random.default_rng([seed, concept, 7])
    out = []
    for _ in range(n):
        o = concept if kind == "object" else int(rng.integers(len(data.OBJECTS)))
        s = concept if kind == "style" else int(rng.integers(len(data.STYLES)))
        c = int(rng.integers(len(data.COLOUR_NAMES)))
        out.append(data.caption(data.OBJECTS[o], data.STYLES[s], data.COLOUR_NAMES[c]))
    return out


class JudgeProbe:
    """Generate images for the target and a few unrelated concepts, and read them with the zoo's judges."""

    def __init__(self, pipe, judge, cross_judge, kind, target, others, p, cancelled=None):
        self.pipe, self.judge, self.cross, self.kind = pipe, judge, cross_judge, kind
        self.target, self.others, self.p, self.cancelled = target, others, p, cancelled
        self.evals, self.images_made = 0, 0

    @torch.no_grad()
    def __call__(self, n: int, keep_images: bool = False) -> dict:
        from engines.common import data
        from engines.common.zoo import t2i

        self.evals += 1
        concepts = [self.target] + list(self.others)
        prompts = [q for c in concepts for q in _prompts(self.kind, c, n, self.p.seed)]
        imgs = t2i.generate(self.pipe, prompts, seed=self.p.seed, steps=self.p.steps, guidance_scale=self.p.guidance_scale,
                            cancelled=self.cancelled)
        self.images_made += len(imgs)
        pred = self.judge.predict(imgs).reshape(len(concepts), n)
        acc = [float((pred[i] == c).mean()) for i, c in enumerate(concepts)]
        # Cross-domain retention: the other attribute of the target's prompts, read by the other judge.
        other_key = "style" if self.kind == "object" else "object"
        names = data.STYLES if other_key == "style" else data.OBJECTS
        truth = [names.index(q.split(" in ")[1].replace(" style", "")) if other_key == "style"
                 else names.index(q.split(" in ")[0].split(" ")[-1]) for q in prompts[:n]]
        cra = float((self.cross.predict(imgs[:n]) == np.array(truth)).mean())
        out = dict(target=acc[0], others=float(np.mean(acc[1:])), per_concept=acc, cross=cra)
        if keep_images:
            out["_images"] = imgs
        return out


def _encoder_param(pipe, name: str):
    """The pipeline text encoder's parameter for a CLIPModel name ``text_model.…`` (transformers 4 or 5 layout)."""
    params = dict(pipe.text_encoder.named_parameters())
    return params.get(name) if name in params else params[name[len("text_model."):]]


def unlearn_t2i(params: T2IParams | dict, ctx=None) -> T2IResult:
    from engines.common import zoo

    p = validate(T2IParams, params)
    ctx = ctx or LocalContext()
    t_start = time.perf_counter()
    torch.manual_seed(p.seed)
    t_cfg = zoo.resolve_config("t2i")
    pipe = zoo.load("t2i", ctx=zoo.Progress(ctx, 0.0, 0.15))
    zc = zoo.load("clip", config=getattr(t_cfg, "clip", None), ctx=zoo.Progress(ctx, 0.15, 0.2))
    zc.model.eval()
    judge = zoo.load(f"judge_{p.target_kind}", ctx=zoo.Progress(ctx, 0.2, 0.25)).eval()
    cross = zoo.load("judge_style" if p.target_kind == "object" else "judge_object", ctx=zoo.Progress(ctx, 0.25, 0.3)).eval()
    t = target_index(p.target_kind, p.target)
    names = TARGETS[p.target_kind]
    rng = np.random.default_rng(p.seed)
    others = [int(i) for i in rng.permutation([i for i in range(len(names)) if i != t])[: p.n_other]]
    probe = JudgeProbe(pipe, judge, cross, p.target_kind, t, others, p, ctx.cancelled)

    from .concepts import build_concept

    concept = build_concept(p.target_kind, names[t], p.n_forget, p.n_retain, 60, p.min_forget, p.seed)
    ctx.progress(0.3, "judging the original model's generations")
    before = probe(p.final_samples, keep_images=True)
    gal_before = ctx.artifacts.save_image("t2i_before.png", _grid(before.pop("_images"), p.final_samples))

    text = set(candidate_names(zc.model, "text"))
    gf = accumulate_gradients(zc, concept.forget_images, concept.forget_captions, "forget", 64, text,
                              Subprogress(ctx, 0.35, 0.42))
    gr = accumulate_gradients(zc, concept.retain_images, concept.retain_captions, "retain", 64, text,
                              Subprogress(ctx, 0.42, 0.5))
    scores = score_layers(zc.model, gf.grads, gr.grads, "text")
    top = deepest(scores)  # the SD script's fallback: the last block's attention output projection
    chosen = top.name if top else (
        f"text_model.encoder.layers.{zc.model.config.text_config.num_hidden_layers - 1}.self_attn.out_proj.weight")
    group = group_of(chosen, whole_block=True)
    # The encoder parameters the patch writes, and their originals (restored after every probe).
    enc = {n: _encoder_param(pipe, n) for n in group}
    originals = {n: q.detach().clone() for n, q in enc.items()}
    enc_before = snapshot(pipe.text_encoder)
    scale = lam_from_rel(zc.model, gf.grads, chosen, 1.0)

    def set_step(lam):
        with torch.no_grad():
            for n, q in enc.items():
                q.copy_(originals[n] + lam * gf.grads[n])

    rows, r, lo, hi = [], p.init_rel_step, 0.0, 10 * p.init_rel_step
    best = None
    for i in range(p.max_evals):
        set_step(r * scale)
        m = probe(p.probe_samples)
        ok_f = m["target"] <= p.forget_target
        ok_r = before["others"] - m["others"] < p.max_ira_drop
        rows.append(dict(iter=i + 1, rel=float(r), lam=float(r * scale), forget1=m["target"], retain=m["others"],
                         utility=m["cross"], reached=bool(ok_f and ok_r)))
        Subprogress(ctx, 0.5, 0.9)((i + 1) / p.max_evals, f"r = {r:.3g}: target {m['target']:.0%}, others {m['others']:.0%}")
        if ok_f and ok_r:
            best = len(rows) - 1
            break
        if ok_f:  # forgot, but unrelated concepts suffered: smaller step
            hi = r
        else:  # still recognised: larger step
            lo = r
        r = 0.5 * (lo + hi)
    if best is None:  # no probe met both: take the probe with the lowest target accuracy, then best retention
        best = min(range(len(rows)), key=lambda k: (rows[k]["forget1"], -rows[k]["retain"]))
    row = rows[best]
    set_step(row["lam"])
    changed = changed_parameters(pipe.text_encoder, enc_before)
    after = probe(p.final_samples, keep_images=True)
    gal_after = ctx.artifacts.save_image("t2i_after.png", _grid(after.pop("_images"), p.final_samples))
    set_step(0.0)  # leave the loaded pipeline as it came (the stored weights are never written)
    ctx.progress(1.0, "done")
    return T2IResult(
        target_kind=p.target_kind, target=names[t], others=[names[i] for i in others],
        layers=[s.as_dict() for s in scores], chosen=chosen, chosen_names=group, rel_step=row["rel"], lam=row["lam"],
        searched=[dict(layer=chosen, names=group, rows=rows, best=best)], before=before, after=after,
        changed=changed, gallery_before=gal_before, gallery_after=gal_after,
        cost=dict(grad_examples=gf.examples + gr.examples, grad_s=gf.seconds + gr.seconds, probes=probe.evals,
                  images_generated=probe.images_made, params_changed=int(sum(q.numel() for q in originals.values()))),
        forget_target=p.forget_target, elapsed_s=time.perf_counter() - t_start)


def _grid(images: np.ndarray, n: int, cols: int = 8) -> np.ndarray:
    """Rows: the target concept first, then the unrelated concepts; up to ``cols`` images each."""
    k = len(images) // n
    cols = min(cols, n)
    h, w = images.shape[1:3]
    out = np.full((k * (h + 2), cols * (w + 2), 3), 255, np.uint8)
    for i in range(k):
        for j in range(cols):
            out[i * (h + 2):i * (h + 2) + h, j * (w + 2):j * (w + 2) + w] = images[i * n + j]
    return out

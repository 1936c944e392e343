"""The benchmark (spec §4 and §8): clicked-class accuracy of mask-conditioned generation against the
whole-image and text-only baselines, learned text attention vs the mask, the additive-attention ablation,
segmentation IoU, the classifier ceiling, a Fréchet distance on classifier embeddings, and latency."""
from __future__ import annotations

import json
import time

import numpy as np

from engines.common.context import LocalContext
from engines.common.params import validate

from . import generate as G
from . import scenes as S
from . import segment as SG
from . import sounds
from . import train as T
from .params import BenchmarkParams

TEST_SEED = 10_000


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties)."""
    from scipy.stats import rankdata

    pos, neg = labels.sum(), (~labels).sum()
    if pos == 0 or neg == 0:
        return float("nan")
    r = rankdata(scores)
    return float((r[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def frechet(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import linalg

    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = linalg.sqrtm(s1 @ s2)
    if np.iscomplexobj(covmean):
        covmean = covmean.real
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean))


def random_click(mask: np.ndarray, rng) -> tuple[int, int, int]:
    ys, xs = np.nonzero(mask)
    k = int(rng.integers(len(xs)))
    return int(xs[k]), int(ys[k]), 1


def clicks_for(sc: S.SceneSet, seed: int):
    """One include click per sounding object of every scene: (scene, object, class index, click)."""
    rng = np.random.default_rng([seed, 3])
    out = []
    for i in range(len(sc)):
        for j in sc.sounding(i):
            if sc.masks[i][j].sum() >= 4:
                out.append((i, j, sounds.CLASSES.index(sc.kinds[i][j]), random_click(sc.masks[i][j], rng)))
    return out


def _generate_all(bundle, feats, items, p: BenchmarkParams, queries=None, weights=None, batch: int = 64):
    """Generate one clip per item (substituted ``weights`` or text ``queries``); → (predicted class, classifier embeddings, attention weights)."""
    import torch

    preds, embs, used = [], [], []
    for k in range(0, len(items), batch):
        sl = slice(k, k + batch)
        idx = [it[0] for it in items[sl]]
        f = feats[idx]
        w = None if weights is None else weights[sl]
        q = None if queries is None else queries[sl]
        mel, u = G.generate_mels(bundle, f, weights=w, queries=q, steps=p.steps, cfg=p.cfg, seed=p.seed + k)
        with torch.no_grad():
            preds.append(bundle.base.cls(mel).argmax(-1).numpy())
            embs.append(bundle.base.cls.embed(mel).numpy())
        used.append(u.numpy())
    return np.concatenate(preds), np.concatenate(embs), np.concatenate(used)


def classifier_ceiling(bundle, b: T.BaseConfig) -> dict:
    """Accuracy on held-out single-source clips, mAP on held-out mixtures, centroid cosines."""
    import torch
    from sklearn.metrics import average_precision_score

    mel, lab = T.single_source_set(max(10, b.n_single // 2), b.seed + 777)
    _, _, mmel, multi = T.scene_dataset(max(40, b.n_scenes // 10), b.seed + 777)
    with torch.no_grad():
        acc = float((bundle.base.cls(mel).argmax(-1).numpy() == lab).mean())
        scores = torch.sigmoid(bundle.base.cls(mmel)).numpy()
    keep = multi.sum(0) > 0
    m_ap = float(average_precision_score(multi[:, keep], scores[:, keep], average="macro"))
    cent = np.stack([mel[lab == c].mean(0).mean(-1).numpy() for c in range(len(sounds.CLASSES))])
    cent = cent - cent.mean(0)
    cn = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    cos = cn @ cn.T
    return dict(single_acc=acc, mixture_map=m_ap, max_centroid_cos=float(cos[~np.eye(len(cos), dtype=bool)].max()))


def segmentation_iou(n_scenes: int, sam_scenes: int, seed: int, ctx=None) -> dict:
    sc = S.make_scenes(max(n_scenes, sam_scenes), seed=TEST_SEED + 1, min_objects=2, max_objects=3, p_silent=0.3)
    rng = np.random.default_rng([seed, 9])
    flood, grab, sam, sam_t, sam_prop = [], [], [], [], []
    seg = None
    for i in range(len(sc)):
        for j in range(len(sc.kinds[i])):
            if sc.masks[i][j].sum() < 4:
                continue
            click = [random_click(sc.masks[i][j], rng)]
            if i < n_scenes:
                flood.append(SG.iou(SG.flood_fill(sc.images[i], click), sc.masks[i][j]))
                try:
                    grab.append(SG.iou(SG.grabcut(sc.images[i], click), sc.masks[i][j]))
                except SG.SegmentationError:
                    pass
            if i < sam_scenes:
                if seg is None:
                    seg = SG.sam_segmenter()
                t0 = time.perf_counter()
                m, _ = seg.segment(sc.images[i], click)
                sam_t.append(time.perf_counter() - t0)
                sam.append(SG.iou(m, sc.masks[i][j]))
                sam_prop.append(SG.iou(seg.segment(sc.images[i], click, box_mode="proposals")[0], sc.masks[i][j]))
        if ctx is not None and i % 5 == 0:
            ctx.check_cancelled()
    return dict(flood_iou=float(np.mean(flood)), flood_n=len(flood), grabcut_iou=float(np.mean(grab)) if grab else None,
                sam_iou=float(np.mean(sam)) if sam else None, sam_median_iou=float(np.median(sam)) if sam else None,
                sam_proposals_iou=float(np.mean(sam_prop)) if sam_prop else None,
                sam_n=len(sam), sam_click_s=float(np.median(sam_t)) if sam_t else None)


def benchmark(params: BenchmarkParams | dict, ctx=None) -> dict:
    """Run the whole evaluation; returns a JSON-able dict of every number."""
    import torch

    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    t_start = time.perf_counter()
    b, dc = T.default_configs("dot")
    bundle = T.ensure_trained(b, dc, ctx, (0.0, 0.35))
    add = None
    if p.additive:
        _, dca = T.default_configs("additive")
        add = T.ensure_trained(b, dca, ctx, (0.35, 0.6))
    ctx.progress(0.6, "synthesising test scenes")
    sc = S.make_scenes(p.n_scenes, seed=TEST_SEED + p.seed, min_objects=2, max_objects=3, p_silent=0.0)
    feats = T.patch_features(sc.images)
    items = clicks_for(sc, p.seed)
    truth = np.array([it[2] for it in items])
    grid, P = bundle.grid, bundle.meta["patches"]
    # the click path: flood fill from the click → mask → rescaled patch weights
    masks = [SG.flood_fill(sc.images[i], [c]) for i, _, _, c in items]
    w_mask = np.stack([G.mask_to_weights(m, grid, bundle.meta["attention_var"]) for m in masks])
    w_gt = np.stack([G.mask_to_weights(sc.masks[i][j], grid, bundle.meta["attention_var"]) for i, j, _, _ in items])
    w_whole = np.tile(G.uniform_weights(P), (len(items), 1))
    with torch.no_grad():
        q_cls = bundle.base.clap.encode_text([sounds.CLASSES[c] for c in truth])
        q_all = bundle.base.clap.encode_text([S.caption([sc.kinds[i][j] for j in sc.sounding(i)]) for i, _, _, _ in items])
    gt_patch = [G.pool_mask(sc.masks[i][j], grid) >= 0.5 for i, j, _, _ in items]
    out: dict = {"n_clicks": len(items), "n_scenes": p.n_scenes}
    w_interior = np.stack([G.mask_to_weights(m, grid, bundle.meta["attention_var"], "interior") for m in masks])
    runs = [("mask", dict(weights=w_mask)), ("mask_interior", dict(weights=w_interior)), ("whole", dict(weights=w_whole)), ("text_attention", dict(queries=q_cls)),
            ("text_only_all", dict(queries=q_all))]
    embs = {}
    for k, (name, kw) in enumerate(runs):
        ctx.progress(0.6 + 0.25 * k / len(runs), f"generating {len(items)} clips: {name}")
        pred, emb, used = _generate_all(bundle, feats, items, p, **kw)
        out[f"acc_{name}"] = float((pred == truth).mean())
        embs[name] = emb
        if name == "text_attention":
            aucs = [auroc(used[n], gt_patch[n]) for n in range(len(items))]
            out["attention_auroc"] = float(np.nanmean(aucs))
            out["attention_mask_corr"] = float(np.mean([np.corrcoef(used[n], w_gt[n])[0, 1] for n in range(len(items))]))
    if add is not None:
        ctx.progress(0.85, "additive-attention ablation")
        wa = np.stack([G.mask_to_weights(m, grid, add.meta["attention_var"]) for m in masks])
        pred, _, _ = _generate_all(add, feats, items, p, weights=wa)
        out["acc_additive_mask"] = float((pred == truth).mean())
        pred, _, used = _generate_all(add, feats, items, p, queries=q_cls)  # add.base is bundle.base
        out["acc_additive_text"] = float((pred == truth).mean())
        out["additive_attention_var"] = add.meta["attention_var"]
        out["additive_attention_auroc"] = float(np.nanmean([auroc(used[n], gt_patch[n]) for n in range(len(items))]))
    out["attention_var"] = bundle.meta["attention_var"]
    # FAD analogue: Fréchet distance of classifier embeddings, generated (mask mode) vs real clips of those classes
    ctx.progress(0.9, "classifier ceiling and Fréchet distance")
    rng = np.random.default_rng(p.seed)
    real = sounds.log_mel(np.stack([0.9 * sounds.class_clip(sounds.CLASSES[c], rng) for c in truth]))
    with torch.no_grad():
        real_emb = bundle.base.cls.embed(real).numpy()
    out["fd_mask"] = frechet(embs["mask"], real_emb)
    out["fd_whole"] = frechet(embs["whole"], real_emb)
    out.update(classifier_ceiling(bundle, b))
    ctx.progress(0.93, "segmentation IoU")
    out.update(segmentation_iou(min(100, max(10, p.n_scenes // 2)), p.sam_scenes, p.seed, ctx))
    out["latency_s"] = click_latency(bundle, sc.images[0], items[0][3])
    pre = json.loads((T.pretrain_dir(b, dc) / "meta.json").read_text())
    out["train_s"] = {"base": bundle.base.meta["train_s"], "pretrain": pre["train_s"], "dot": bundle.meta["train_s"],
                      "additive": add.meta["train_s"] if add is not None else None}
    out["loss_curve"] = bundle.meta["loss_curve"]
    out["pretrain_loss_curve"] = pre["loss_curve"]
    out["latent_channels"] = bundle.meta["latent_channels"]
    out["elapsed_s"] = time.perf_counter() - t_start
    ctx.progress(1.0, "benchmark done")
    return out


def click_latency(bundle, image: np.ndarray, click, steps: int = 50) -> float:
    """Seconds from a click to a waveform (flood fill, patch features, 50 DDIM steps with CFG, Griffin-Lim)."""
    t0 = time.perf_counter()
    m = SG.flood_fill(image, [click])
    w = G.mask_to_weights(m, bundle.grid, bundle.meta["attention_var"])[None]
    mel, _ = G.generate_mels(bundle, T.patch_features(image[None]), weights=w, steps=steps)
    sounds.griffin_lim(mel[0].numpy())
    return time.perf_counter() - t0

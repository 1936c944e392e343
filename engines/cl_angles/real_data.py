"""Entry points on real images: forgetting against the task angle, and replay-buffer selectors."""
from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate

from .images import DatasetMissing, Images, load
from .network import one_thread
from .params import SELECTOR_LABELS, AngleBinsParams, BufferSelectionParams, RealParams
from .real_tasks import RealConfig, features, pick_pairs, polarity_task, split_task, train_task1, train_task2
from .selection import prototype_cosines, select

DEFAULT_LR = {"digits": 0.3, "fashion": 0.05}


def _images(p: RealParams) -> tuple[Images, str]:
    """The requested data set, or digits with a note when Fashion-MNIST is missing."""
    try:
        return load(p.dataset, p.per_class if p.dataset == "fashion" else 0), ""
    except DatasetMissing as e:
        return load("digits"), f"{e} Used scikit-learn digits instead."


def _config(p: RealParams, im: Images) -> RealConfig:
    return RealConfig(m=p.m, lr=p.lr or DEFAULT_LR[im.name], epochs=p.epochs)


# ----------------------------------------------------------------------------- angle bins


class AngleBin(BaseModel):
    target: float
    angle: float  # measured angle between s_a·mean_a and s_b·mean_b
    task1: str  # e.g. "8 (+)"
    task2: str
    forgetting: list[float]  # task-1 test error after task 2, mean over seeds, per buffer size
    std: list[float]
    task2_error: list[float]
    mean_forgetting: float  # averaged over the buffer sizes
    task1_before: float


class AngleBinsResult(BaseModel):
    dataset: str
    note: str
    buffer_sizes: list[int]
    bins: list[AngleBin]
    increasing: bool  # mean forgetting strictly increases with the angle
    seeds: int
    elapsed_s: float


def angle_bins(params: AngleBinsParams | dict, ctx: JobContext | None = None) -> AngleBinsResult:
    p = validate(AngleBinsParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    im, note = _images(p)
    cfg = _config(p, im)
    pairs = pick_pairs(im, list(p.targets))
    seeds = [p.seed + i for i in range(p.seeds)]
    sign = lambda s: "+" if s > 0 else "−"  # noqa: E731
    bins = []
    with one_thread():
        for i, ((ang, a, sa, b, sb), target) in enumerate(zip(pairs, p.targets)):
            sub = Subprogress(ctx, i / len(pairs), (i + 1) / len(pairs))
            ctx.progress(i / len(pairs), f"θ ≈ {ang:.1f}°: {im.classes[a]} then {im.classes[b]}")
            t1, t2, bufs = [], [], []
            for sd in seeds:
                rng = np.random.default_rng([sd, a, b])
                t1.append(polarity_task(im, a, sa, rng, p.train_frac))
                t2.append(polarity_task(im, b, sb, rng, p.train_frac))
                order = rng.permutation(len(t1[-1].Xtr))
                bufs.append([order[: min(r, len(order))] for r in p.buffer_sizes])
            net, e1 = train_task1(t1, cfg, seeds, on_progress=lambda f: sub(0.3 * f))
            f1, f2 = train_task2(net, t1, t2, bufs, cfg, on_progress=lambda f: sub(0.3 + 0.7 * f))
            bins.append(AngleBin(target=target, angle=ang, task1=f"{im.classes[a]} ({sign(sa)})",
                                 task2=f"{im.classes[b]} ({sign(sb)})", forgetting=f1.mean(0).tolist(),
                                 std=f1.std(0).tolist(), task2_error=f2.mean(0).tolist(),
                                 mean_forgetting=float(f1.mean()), task1_before=float(e1.mean())))
    order = sorted(bins, key=lambda b: b.angle)
    inc = all(x.mean_forgetting < y.mean_forgetting for x, y in zip(order, order[1:]))
    ctx.progress(1.0, "done")
    return AngleBinsResult(dataset=im.name, note=note, buffer_sizes=list(p.buffer_sizes), bins=bins, increasing=inc,
                           seeds=len(seeds), elapsed_s=time.perf_counter() - t0)


# ----------------------------------------------------------------------------- buffer selection


class SelectorOutcome(BaseModel):
    selector: str
    label: str
    forgetting: float  # mean over seeds of the task-1 test error after task 2
    std: float
    per_seed: list[float]
    task2_error: float
    picked: list[int]  # seed 0: selected rows of the task-1 training set
    picked_cos: list[float]  # their cosines to the class prototype


class BufferSelectionResult(BaseModel):
    dataset: str
    note: str
    task1: list[str]
    task2: list[str]
    feature_space: str
    k_per_class: int
    n_task1: int
    no_replay: float  # forgetting with an empty buffer
    task1_before: float
    outcomes: list[SelectorOutcome]
    cosines: list[float]  # seed 0: every task-1 training sample's cosine to its class prototype
    labels: list[int]  # seed 0: its label (0/1)
    images: list[list[int]]  # seed 0: the task-1 training images, uint8, row-major
    image_shape: tuple[int, int]
    seeds: int
    elapsed_s: float


def buffer_selection(params: BufferSelectionParams | dict, ctx: JobContext | None = None) -> BufferSelectionResult:
    p = validate(BufferSelectionParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    im, note = _images(p)
    cfg = _config(p, im)
    seeds = [p.seed + i for i in range(p.seeds)]
    names = lambda cs: [im.classes[c] for c in cs]  # noqa: E731
    ctx.progress(0.0, f"task 1: {' vs '.join(names(p.task1))} ({len(seeds)} seeds)")
    with one_thread():
        t1 = [split_task(im, p.task1, np.random.default_rng([sd, 1]), p.train_frac) for sd in seeds]
        t2 = [split_task(im, p.task2, np.random.default_rng([sd, 2]), p.train_frac) for sd in seeds]
        net, e1 = train_task1(t1, cfg, seeds, on_progress=Subprogress(ctx, 0.0, 0.3))
        feats = features(net, t1) if p.feature_space == "network" else np.stack([t.Xtr for t in t1])
        n1 = len(t1[0].Xtr)
        k = max(1, int(round(p.buffer_frac * n1 / 2)))
        bufs = []
        for i, sd in enumerate(seeds):
            rng = np.random.default_rng([sd, 3])
            bufs.append([np.zeros(0, dtype=int)] + [select(feats[i], t1[i].ytr, k, s, rng) for s in p.selectors])
        ctx.progress(0.3, f"task 2: {' vs '.join(names(p.task2))} with {k} replayed samples per class")
        f1, f2 = train_task2(net, t1, t2, bufs, cfg, on_progress=Subprogress(ctx, 0.3, 0.98))
    cos = np.zeros(n1)
    for c in (0, 1):
        rows = np.flatnonzero(t1[0].ytr == c)
        cos[rows] = prototype_cosines(feats[0][rows])
    outcomes = [SelectorOutcome(selector=s, label=SELECTOR_LABELS[s], forgetting=float(f1[:, v + 1].mean()),
                                std=float(f1[:, v + 1].std()), per_seed=f1[:, v + 1].tolist(),
                                task2_error=float(f2[:, v + 1].mean()), picked=[int(i) for i in bufs[0][v + 1]],
                                picked_cos=[float(cos[i]) for i in bufs[0][v + 1]])
                for v, s in enumerate(p.selectors)]
    imgs = np.clip(np.abs(t1[0].Xtr) * 255, 0, 255).round().astype(np.uint8)
    ctx.progress(1.0, "done")
    return BufferSelectionResult(
        dataset=im.name, note=note, task1=names(p.task1), task2=names(p.task2), feature_space=p.feature_space,
        k_per_class=k, n_task1=n1, no_replay=float(f1[:, 0].mean()), task1_before=float(e1.mean()),
        outcomes=outcomes, cosines=cos.tolist(), labels=t1[0].ytr.tolist(), images=imgs.tolist(),
        image_shape=im.shape, seeds=len(seeds), elapsed_s=time.perf_counter() - t0)

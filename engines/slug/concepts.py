"""Forget set D_f, retain set D_r and the validation protocol for one concept.

The paper forgets an identity (LAION pairs naming "Elon Musk") while retaining a LAION shard and
measures zero-shot identity accuracy (forget / CelebA-100) and ImageNet zero-shot accuracy (utility).
Here a concept is a digit class, a Fashion-MNIST class, or a minicanvas object or style:

- D_f: training image–caption pairs of the concept (what the zoo CLIP was trained on);
- D_r: training pairs of the other concepts, mixed half-and-half with general minicanvas pairs;
- forget accuracy: zero-shot accuracy@1/@5 on held-out images of the concept among all classes of its task;
- retain accuracy: zero-shot accuracy on held-out images of the task's other classes (CelebA-100's analogue);
- utility accuracy: zero-shot accuracy on another task (ImageNet's analogue).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import TARGETS, target_index


PROMPTS_PER_CLASS = 8


class TooFewExamples(ValueError):
    """The forget set of a concept is smaller than the requested minimum."""


@dataclass
class Task:
    """Held-out images of one zero-shot classification task and its class prompts."""

    name: str
    images: np.ndarray
    labels: np.ndarray
    prompts: list  # one prompt or a list of prompts per class
    classes: list[str]


@dataclass
class Concept:
    kind: str
    index: int
    name: str
    forget_images: np.ndarray
    forget_captions: list[str]
    retain_images: np.ndarray
    retain_captions: list[str]
    task: Task  # forget / retain accuracy are read from this task (the validation half when test_task is set)
    utility: Task
    test_task: Task | None = None  # held-out half: never used to choose the layer or the step, only reported

    @property
    def forget_mask(self) -> np.ndarray:
        return self.task.labels == self.index


def _digits_task(n: int | None = None) -> Task:
    from engines.common import data

    d = data.digits("test")
    idx = np.arange(len(d)) if n is None else np.arange(min(n, len(d)))
    return Task("digits", d.images[idx], d.labels["label"][idx], [data.digit_caption(k) for k in range(10)],
                list(data.DIGIT_NAMES))


def _fashion_task(n: int) -> Task:
    from engines.common import data

    d = data.fashion_mnist("test", n=n)
    return Task("fashion", d.images, d.labels["label"], [data.fashion_caption(k) for k in range(10)],
                list(data.FASHION_NAMES))


def _minicanvas_task(key: str, n: int, seed: int) -> Task:
    from engines.common import data
    from engines.common.zoo.clip import minicanvas_prompts

    mc = data.minicanvas(n, seed=10_000 + seed)
    names = data.OBJECTS if key == "object" else data.STYLES
    # A fixed, evenly spaced sub-ensemble of the zoo's prompts (≤ 8 per class) keeps each search probe cheap.
    prompts = [group[:: max(1, len(group) // PROMPTS_PER_CLASS)][:PROMPTS_PER_CLASS] for group in minicanvas_prompts(key)]
    return Task(f"minicanvas {key}", mc.images, mc.labels[key], prompts, list(names))


def _train_set(kind: str, n_minicanvas: int):
    from engines.common import data

    if kind == "digit":
        return data.digits("train"), "label"
    if kind == "fashion":
        return data.fashion_mnist("train", n=10_000), "label"
    return data.minicanvas(n_minicanvas, seed=0), kind


def build_concept(kind: str, target: str, n_forget: int = 256, n_retain: int = 512, n_eval: int = 600,
                  min_forget: int = 8, seed: int = 0, heldout_split: bool = False) -> Concept:
    """D_f, D_r and the evaluation tasks for forgetting ``target`` (a class of ``kind``)."""
    from engines.common import data

    if kind == "fashion" and not data.fashion_available():
        raise data.DatasetMissing("Fashion-MNIST targets need the Debian package dataset-fashion-mnist "
                                  "(`sudo apt-get install dataset-fashion-mnist`).")
    t = target_index(kind, target)
    rng = np.random.default_rng(seed)
    train, key = _train_set(kind, 4000)
    y = train.labels[key]
    f_idx = np.flatnonzero(y == t)
    if len(f_idx) < min_forget:
        raise TooFewExamples(f"the forget set of {kind} {TARGETS[kind][t]!r} has {len(f_idx)} image–text pairs, "
                             f"fewer than the minimum of {min_forget}")
    f_idx = rng.permutation(f_idx)[:n_forget]
    if len(f_idx) < min_forget:
        raise TooFewExamples(f"n_forget = {n_forget} keeps {len(f_idx)} forget pairs, fewer than the minimum of {min_forget}")
    # Retain: the task's other classes, plus general minicanvas pairs (the LAION shard's analogue).
    others = rng.permutation(np.flatnonzero(y != t))[: n_retain // 2]
    r_img, r_cap = [train.images[others]], [train.captions[i] for i in others]
    n_gen = n_retain - len(others)
    if n_gen > 0:
        if kind in ("object", "style"):
            pool = np.setdiff1d(np.flatnonzero(y != t), others)
            gen = rng.permutation(pool)[:n_gen]
            r_img.append(train.images[gen])
            r_cap += [train.captions[i] for i in gen]
        else:
            mc = data.minicanvas(max(n_gen, 16), seed=1 + seed)
            r_img.append(mc.images[:n_gen])
            r_cap += mc.captions[:n_gen]
    retain_images = np.concatenate(r_img)
    n_util = max(60, n_eval // 2)
    if kind == "digit":
        task, utility = _digits_task(), _minicanvas_task("object", n_util, seed)
    elif kind == "fashion":
        task, utility = _fashion_task(max(n_eval, 500)), _minicanvas_task("object", n_util, seed)
    else:
        task, utility = _minicanvas_task(kind, n_eval, seed), _digits_task(n_util)
    if not np.any(task.labels == t):
        raise TooFewExamples(f"no held-out images of {kind} {TARGETS[kind][t]!r} to measure forgetting; raise n_eval")
    test_task = None
    if heldout_split:
        task, test_task = split_task(task, seed)
    return Concept(kind, t, TARGETS[kind][t], np.asarray(train.images[f_idx]), [train.captions[i] for i in f_idx],
                   retain_images, r_cap, task, utility, test_task)


def split_task(task: Task, seed: int = 0) -> tuple[Task, Task]:
    """Stratified halves of a task's held-out images: (validation, test). The layer and the step size are chosen
    on the validation half; forget / retain accuracy are reported on the test half (issue 17)."""
    rng = np.random.default_rng(10_007 + seed)
    val = []
    for c in np.unique(task.labels):
        idx = rng.permutation(np.flatnonzero(task.labels == c))
        val += idx[: (len(idx) + 1) // 2].tolist()
    v = np.zeros(len(task.labels), bool)
    v[val] = True

    def sub(m, tag):
        return Task(f"{task.name} ({tag})", task.images[m], task.labels[m], task.prompts, task.classes)
    return sub(v, "validation half"), sub(~v, "test half")

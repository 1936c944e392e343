"""The synthetic multimodal many-shot task of the spec's CPU plan (§4), and its digits variant.

An *episode* draws K = 10 class prototypes in ℝ⁶⁴ and a random permutation assigning the 10 label tokens to the
classes, so a label can only be learnt from the context. An "image" is its prototype plus Gaussian noise, cut into
4 patch tokens of 16 dimensions. A demonstration is ``[IMG × 4, QUERY, label, SEP]`` (7 tokens); a query is
``[IMG × 4, QUERY]`` and the model answers with a label token. The digits variant draws real 8 × 8 scikit-learn
digits (the held-out half of the images for test episodes) through a fixed random projection to 64 dimensions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PAD, QUERY, SEP, IMG = 0, 1, 2, 3
LABEL0 = 4
N_CLASSES = 10
VOCAB = LABEL0 + N_CLASSES  # 14 tokens
PATCHES, PATCH_DIM = 4, 16
DEMO_LEN = PATCHES + 3  # IMG×4, QUERY, label, SEP
QUERY_LEN = PATCHES + 1
ANSWER_OFFSET = PATCHES + 1  # index of the label token inside a demonstration
NOISE = 0.6  # std of the image noise per dimension (prototypes are N(0, 1) per dimension)
TASKS = ("prototype", "digits")
SPLIT_SEEDS = {"train": 11, "val": 22, "test": 33}


class TaskError(ValueError):
    """Bad episode request (zero shots, unknown task, ...): the message names the field."""


@dataclass
class Episode:
    """Demonstrations and queries of one episode; ``patches`` hold the 4 × 16 features of each image."""

    demo_patches: np.ndarray  # [n_shots, 4, 16] float32
    demo_labels: np.ndarray  # [n_shots] class index
    query_patches: np.ndarray  # [n_queries, 4, 16]
    query_labels: np.ndarray  # [n_queries]
    perm: np.ndarray  # class -> label token offset (label token = LABEL0 + perm[class])

    @property
    def n_shots(self) -> int:
        return len(self.demo_labels)

    def demo_tokens(self, i: int) -> np.ndarray:
        return np.array([IMG] * PATCHES + [QUERY, LABEL0 + self.perm[self.demo_labels[i]], SEP], np.int64)

    def label_token(self, cls: int) -> int:
        return int(LABEL0 + self.perm[cls])

    def context(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Token ids [T] and image patches [T, 16] (zeros where not an image) of demos start..stop."""
        stop = self.n_shots if stop is None else stop
        ids = np.concatenate([self.demo_tokens(i) for i in range(start, stop)]) if stop > start else np.zeros(0, np.int64)
        pat = np.zeros((len(ids), PATCH_DIM), np.float32)
        for k, i in enumerate(range(start, stop)):
            pat[k * DEMO_LEN:k * DEMO_LEN + PATCHES] = self.demo_patches[i]
        return ids, pat


_DIGITS: dict = {}


def _digits(split: str) -> tuple[np.ndarray, np.ndarray]:
    """sklearn digits through a fixed random projection to 64-d, standardised; train/val on even, test on odd."""
    if not _DIGITS:
        from sklearn.datasets import load_digits

        d = load_digits()
        proj = np.random.default_rng(1234).normal(0, 1 / 8, (64, 64))
        x = (d.data / 16.0 - 0.3) @ proj
        x = (x - x.mean(0)) / x.std(0)
        idx = np.arange(len(x))
        _DIGITS["fit"] = (x[idx % 2 == 0].astype(np.float32), d.target[idx % 2 == 0])
        _DIGITS["test"] = (x[idx % 2 == 1].astype(np.float32), d.target[idx % 2 == 1])
    return _DIGITS["test" if split == "test" else "fit"]


def episode(rng: np.random.Generator, n_shots: int, n_queries: int = 1, task: str = "prototype",
            split: str = "train", noise: float = NOISE, classes: int = N_CLASSES) -> Episode:
    """One episode; ``classes`` < 10 draws its images from a random subset of the classes (training only)."""
    if n_shots < 1:
        raise TaskError(f"shots: need at least 1 demonstration (got {n_shots})")
    if task not in TASKS:
        raise TaskError(f"task: unknown task {task!r} (choose from {', '.join(TASKS)})")
    perm = rng.permutation(N_CLASSES)
    present = rng.choice(N_CLASSES, classes, replace=False) if classes < N_CLASSES else np.arange(N_CLASSES)
    labels = rng.choice(present, n_shots + n_queries)
    if task == "prototype":
        protos = rng.normal(0, 1, (N_CLASSES, 64)).astype(np.float32)
        x = protos[labels] + noise * rng.normal(0, 1, (len(labels), 64)).astype(np.float32)
    else:
        xs, ys = _digits(split)
        pick = np.array([rng.choice(np.flatnonzero(ys == c)) for c in labels])
        x = xs[pick]
    x = x.reshape(len(labels), PATCHES, PATCH_DIM).astype(np.float32)
    return Episode(x[:n_shots], labels[:n_shots], x[n_shots:], labels[n_shots:], perm)


def episodes(n: int, n_shots: int, n_queries: int, split: str, task: str = "prototype", seed: int = 0) -> list[Episode]:
    """``n`` episodes of a split: the splits draw from disjoint seed streams (train / val / test)."""
    rng = np.random.default_rng([SPLIT_SEEDS[split], seed, n_shots])
    return [episode(rng, n_shots, n_queries, task, split) for _ in range(n)]

"""Replay-buffer selection by angle to the class prototype (the paper's mid-angle sampling).

For each class of the finished task: take the samples' features under the current network, the
class prototype (mean feature, L2-normalised), and each sample's cosine c_i to it. Then

* ``mid``   – the k samples whose c_i is closest to the median cosine (mid-angle sampling),
* ``small`` – the k largest c_i (most prototypical, smallest angle),
* ``big``   – the k smallest c_i (outliers, biggest angle),
* ``herding`` – iCaRL's herding: greedily pick the sample that keeps the running mean of the picks
  closest to the class mean,
* ``random`` – k uniformly at random.

The buffer is class-balanced (k per class) and filled once, at the end of the task, as in the
official ``fill_buffer(angle_mode=...)``. The median is the lower median (torch's ``median``).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

Mode = Literal["random", "mid", "small", "big", "herding"]
MODES: tuple[str, ...] = ("random", "mid", "small", "big", "herding")


def prototype_cosines(features: np.ndarray) -> np.ndarray:
    """cos(f_i, mean f) for the rows of one class's feature matrix (N, D)."""
    f = np.asarray(features, dtype=np.float64)
    proto = f.mean(0)
    pn = np.linalg.norm(proto)
    fn = np.linalg.norm(f, axis=1)
    denom = np.maximum(fn * pn, 1e-12)
    return (f @ proto) / denom


def lower_median(x: np.ndarray) -> float:
    s = np.sort(np.asarray(x))
    return float(s[(len(s) - 1) // 2])


def _herding(f: np.ndarray, k: int) -> np.ndarray:
    mean = f.mean(0)
    chosen: list[int] = []
    running = np.zeros_like(mean)
    avail = np.ones(len(f), bool)
    for i in range(min(k, len(f))):
        cost = np.linalg.norm(mean - (f + running) / (i + 1), axis=1)
        cost[~avail] = np.inf
        c = int(np.argmin(cost))
        chosen.append(c)
        avail[c] = False
        running += f[c]
    return np.array(chosen, dtype=int)


def select_class(features: np.ndarray, k: int, mode: Mode, rng: np.random.Generator | None = None) -> np.ndarray:
    """Indices (into the rows of ``features``) of k samples of one class, in selection order."""
    n = len(features)
    k = min(int(k), n)
    if k <= 0:
        return np.zeros(0, dtype=int)
    if mode == "random":
        rng = rng or np.random.default_rng(0)
        return rng.permutation(n)[:k]
    if mode == "herding":
        return _herding(np.asarray(features, dtype=np.float64), k)
    c = prototype_cosines(features)
    if mode == "small":
        return np.argsort(-c, kind="stable")[:k]
    if mode == "big":
        return np.argsort(c, kind="stable")[:k]
    if mode == "mid":
        return np.argsort(np.abs(c - lower_median(c)), kind="stable")[:k]
    raise ValueError(f"unknown selection mode {mode!r}; choose one of {', '.join(MODES)}")


def select(features: np.ndarray, labels: np.ndarray, k: int, mode: Mode,
           rng: np.random.Generator | None = None) -> np.ndarray:
    """Class-balanced buffer: k samples of every class in ``labels``; returns sorted global indices."""
    features = np.asarray(features)
    labels = np.asarray(labels)
    if features.ndim != 2 or len(features) != len(labels):
        raise ValueError(f"features must be (N, D) with one label per row; got {features.shape} and {labels.shape}")
    if mode not in MODES:
        raise ValueError(f"unknown selection mode {mode!r}; choose one of {', '.join(MODES)}")
    out = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        out.append(idx[select_class(features[idx], k, mode, rng)])
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=int)

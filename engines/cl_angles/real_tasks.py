"""Two-task continual learning on real images with the same q = 3 two-layer network.

Mirrors the official real-world scripts on the data we have offline:

* **polarity tasks** (``cl_mnist_angle.py``): the task of class c is "original vs sign-inverted
  image"; half of its images are inverted, and a per-class polarity s_c ∈ {±1} says which of the two
  is label +1. The task's signal is the class-conditional mean of label +1, s_c·mean(x | c), so the
  angle between two tasks is the angle between s_a·mean_a and s_b·mean_b (pixels in [0, 1], as the
  paper's 30.19°–153.90° MNIST angles are).
* **split tasks** (``sampling_mnist.py``): two classes per task on a shared binary head (first class
  → label 0, second → label 1).

The network is the MNIST script's: one patch (the whole image), no bias, output scale 1/m, trained
by full-batch gradient descent (the paper's algorithm; the scripts use mini-batch SGD). Phase 2 of
every (seed, buffer variant) pair is one group of a batched run; groups of different sizes are
padded and masked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .images import Images
from .network import Net, hidden, init_net
from .training import gradient_descent


@dataclass
class Task:
    Xtr: np.ndarray
    ytr: np.ndarray  # {0, 1}
    Xte: np.ndarray
    yte: np.ndarray
    src_tr: np.ndarray  # indices into the image set (for showing the images)


def polarity_task(im: Images, cls: int, polarity: int, rng: np.random.Generator, train_frac: float) -> Task:
    """Images of class ``cls``, half sign-inverted; label 1 = 'original' if polarity = +1 else 'inverted'."""
    idx = rng.permutation(np.flatnonzero(im.y == cls))
    n = int(round(train_frac * len(idx)))
    parts = []
    for part in (idx[:n], idx[n:]):
        flip = rng.random(len(part)) < 0.5
        X = im.X[part] * np.where(flip, -1.0, 1.0)[:, None].astype(np.float32)
        parts.append((X, ((~flip) == (polarity > 0)).astype(int)))
    return Task(parts[0][0], parts[0][1], parts[1][0], parts[1][1], idx[:n])


def split_task(im: Images, classes: tuple[int, int], rng: np.random.Generator, train_frac: float) -> Task:
    idx = rng.permutation(np.flatnonzero(np.isin(im.y, classes)))
    n = int(round(train_frac * len(idx)))
    lab = lambda i: (im.y[i] == classes[1]).astype(int)  # noqa: E731
    return Task(im.X[idx[:n]], lab(idx[:n]), im.X[idx[n:]], lab(idx[n:]), idx[:n])


def polarity_signal(im: Images, cls: int, polarity: int) -> np.ndarray:
    return polarity * im.X[im.y == cls].mean(0)


def polarity_angle(im: Images, a: int, sa: int, b: int, sb: int) -> float:
    u, v = polarity_signal(im, a, sa), polarity_signal(im, b, sb)
    c = float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))
    return float(np.degrees(np.arccos(np.clip(c, -1, 1))))


def pick_pairs(im: Images, targets: list[float]) -> list[tuple[float, int, int, int, int]]:
    """For each target angle the (angle, a, s_a, b, s_b) of the closest distinct class pair.

    Only the relative polarity matters (s_a = +1); distinct bins use distinct unordered pairs.
    """
    k = len(im.classes)
    cands = []
    for a in range(k):
        for b in range(k):
            if a != b:
                for sb in (1, -1):
                    cands.append((polarity_angle(im, a, 1, b, sb), a, 1, b, sb))
    used: set[frozenset] = set()
    out = []
    for t in targets:
        best = min((c for c in cands if frozenset((c[1], c[3])) not in used), key=lambda c: abs(c[0] - t))
        used.add(frozenset((best[1], best[3])))
        out.append(best)
    return out


@dataclass
class RealConfig:
    m: int = 32
    lr: float = 1.0
    epochs: int = 300
    q: float = 3.0


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)


def train_task1(tasks: list[Task], cfg: RealConfig, seeds: list[int],
                on_progress: Callable[[float], None] | None = None) -> tuple[Net, np.ndarray]:
    """Task 1 for every seed (one group each): the network and its task-1 test error per seed."""
    X = torch.stack([_t(t.Xtr) for t in tasks])[:, :, None]
    y = torch.stack([torch.as_tensor(t.ytr) for t in tasks])
    Xt = torch.stack([_t(t.Xte) for t in tasks])[:, :, None]
    yt = torch.stack([torch.as_tensor(t.yte) for t in tasks])
    D = X.shape[-1]
    nets = [init_net(1, 1, cfg.m, D, torch.Generator().manual_seed(int(s) + 1), bias=False, q=cfg.q,
                     scale=1.0 / cfg.m) for s in seeds]
    net = Net(torch.cat([n.W for n in nets]), None, cfg.q, 1.0 / cfg.m)
    h = gradient_descent(net, X, y, cfg.epochs, cfg.lr, evals={"t": (Xt, yt)}, on_progress=on_progress)
    return net, h.errors["t"][-1][:, 0].numpy()


def features(net: Net, tasks: list[Task]) -> np.ndarray:
    """Penultimate-layer features mean_p σ(⟨w, x⟩) of each seed's task-1 training set: (S, n, 2m)."""
    X = torch.stack([_t(t.Xtr) for t in tasks])[:, :, None]
    return hidden(net, X)[:, :, 0].numpy()


def train_task2(net1: Net, task1: list[Task], task2: list[Task], buffers: list[list[np.ndarray]],
                cfg: RealConfig, on_progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """From each seed's task-1 network, train on task 2 plus each replay buffer (indices into the
    task-1 training set), all variants of all seeds as one batch.

    ``buffers[s][v]``: buffer v of seed s. Returns task-1 and task-2 test errors, (S, V) each.
    """
    S, V = len(buffers), len(buffers[0])
    n_max = max(len(task2[s].Xtr) + len(b) for s in range(S) for b in buffers[s])
    D = task2[0].Xtr.shape[1]
    X = torch.zeros(S * V, n_max, 1, D)
    y = torch.zeros(S * V, n_max, dtype=torch.long)
    w = torch.zeros(S * V, n_max)
    for s in range(S):
        for v, b in enumerate(buffers[s]):
            Xs = np.concatenate([task2[s].Xtr, task1[s].Xtr[b]])
            ys = np.concatenate([task2[s].ytr, task1[s].ytr[b]])
            g = s * V + v
            X[g, : len(Xs), 0] = _t(Xs)
            y[g, : len(ys)] = torch.as_tensor(ys)
            w[g, : len(ys)] = 1.0
    net = net1.expand(V).regroup(S * V)
    ev = {}
    for name, tasks in (("task1", task1), ("task2", task2)):
        ev[name] = (torch.stack([_t(t.Xte) for t in tasks])[:, :, None],
                    torch.stack([torch.as_tensor(t.yte) for t in tasks]))
    h = gradient_descent(net, X, y, cfg.epochs, cfg.lr, evals=ev, on_progress=on_progress, w=w)
    return h.errors["task1"][-1].reshape(S, V).numpy(), h.errors["task2"][-1].reshape(S, V).numpy()

"""The three applications as (objective, partition) instances, plus what their views need.

* video: frames of a real clip, DPP log-det diversity over colour + HOG features, K temporal segments;
* design: Bayesian A-optimal design on the scikit-learn diabetes data, K random groups of rows;
* coverage: closed-neighbourhood coverage on a networkx graph, K communities (asynchronous fluid).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .objectives import AOptimalDesign, Coverage, LogDet, Objective, Partition
from .params import InstanceParams


@dataclass
class Instance:
    task: str
    objective: Objective
    partition: Partition
    title: str
    view: dict = field(default_factory=dict)  # task-specific data for the selection view


def rbf_kernel(F: np.ndarray) -> np.ndarray:
    """L_ij = exp(−‖x_i − x_j‖² / m) with m the median squared pairwise distance."""
    sq = (F * F).sum(1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * F @ F.T, 0.0)
    m = np.median(D2[np.triu_indices_from(D2, 1)]) if F.shape[0] > 1 else 1.0
    return np.exp(-D2 / max(m, 1e-12))


def video_instance(p: InstanceParams) -> Instance:
    from .video import load_clip

    name = f"upload:{p.upload_id}" if p.clip == "upload" else p.clip
    thumbs, times, feats = load_clip(name, p.frames)
    n = feats.shape[0]
    segs = np.array_split(np.arange(n), p.blocks)
    part = Partition(segs, [p.budget] * p.blocks,
                     [f"segment {k + 1} ({times[s[0]]:.1f}–{times[s[-1]]:.1f} s)" if s.size else f"segment {k + 1}"
                      for k, s in enumerate(segs)])
    title = f"{'uploaded video' if p.clip == 'upload' else p.clip}: {n} frames, {p.blocks} segments × {p.budget}"
    return Instance("video", LogDet(rbf_kernel(feats)), part, title, {"thumbs": thumbs, "times": times})


def design_instance(p: InstanceParams) -> Instance:
    from sklearn.datasets import load_diabetes

    X = load_diabetes().data
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(p.seed)
    rows = rng.choice(X.shape[0], size=p.design_points, replace=False)
    X = X[rows]
    groups = np.array_split(rng.permutation(p.design_points), p.blocks)
    part = Partition([np.sort(g) for g in groups], [p.budget] * p.blocks, [f"group {k + 1}" for k in range(p.blocks)])
    title = f"diabetes design: {p.design_points} candidate rows (d = 10), {p.blocks} groups × {p.budget}"
    return Instance("design", AOptimalDesign(X, p.prior_precision), part, title, {"X": X, "rows": rows})


def make_graph(p: InstanceParams):
    import networkx as nx

    if p.graph == "karate":
        G = nx.karate_club_graph()
    elif p.graph == "les_miserables":
        G = nx.les_miserables_graph()
    else:
        G = nx.barabasi_albert_graph(p.graph_nodes, 2, seed=p.seed)
    return nx.convert_node_labels_to_integers(G, label_attribute="name")


def coverage_instance(p: InstanceParams) -> Instance:
    import networkx as nx
    from networkx.algorithms.community import asyn_fluidc

    G = make_graph(p)
    n = G.number_of_nodes()
    if p.blocks > n:
        raise ValueError(f"the {p.graph} graph has {n} nodes, fewer than K = {p.blocks} blocks")
    comms = sorted((sorted(c) for c in asyn_fluidc(G, p.blocks, seed=p.seed)), key=lambda c: c[0])
    part = Partition([np.array(c) for c in comms], [p.budget] * p.blocks,
                     [f"community {k + 1}" for k in range(p.blocks)])
    A = np.eye(n, dtype=bool)
    for u, v in G.edges():
        A[u, v] = A[v, u] = True
    title = f"{p.graph} graph: {n} nodes, {p.blocks} communities × {p.budget}"
    return Instance("coverage", Coverage(A, np.ones(n)), part, title, {"graph": G})


def check_partition(p: InstanceParams) -> Partition:
    """The partition of an instance without its objective (cheap): raises PartitionError/VideoError early."""
    from .params import CLIP_FRAMES

    if p.task == "video":
        if p.clip == "upload":
            from .video import upload_frames

            n = min(p.frames, upload_frames(p.upload_id))
        else:
            n = min(p.frames, CLIP_FRAMES.get(p.clip, 1797))
        blocks = np.array_split(np.arange(n), p.blocks)
        names = [f"segment {k + 1}" for k in range(p.blocks)]
    elif p.task == "design":
        blocks = np.array_split(np.arange(p.design_points), p.blocks)
        names = [f"group {k + 1}" for k in range(p.blocks)]
    else:
        return coverage_instance(p).partition
    return Partition(blocks, [p.budget] * p.blocks, names)


def build(p: InstanceParams) -> Instance:
    return {"video": video_instance, "design": design_instance, "coverage": coverage_instance}[p.task](p)

"""Concept statistics, the importance score and feature selection (spec §1 steps 3-4).

``mu`` [P, T, n]: each latent's activation averaged over spatial positions, per validation prompt p
and timestep t. ``labels`` [P]: the concept index of each prompt (its style, or its object).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .hooks import EditPlan

DELTA = 1e-8


def concept_means(mu: Tensor, labels: Tensor, n_concepts: int) -> Tensor:
    """μ(i, t, c) [C, T, n]: the mean over the prompts of concept c."""
    out = torch.zeros((n_concepts,) + tuple(mu.shape[1:]), dtype=torch.float32)
    for c in range(n_concepts):
        sel = labels == c
        if sel.any():
            out[c] = mu[sel].float().mean(0)
    return out


def importance(mu: Tensor, labels: Tensor, c: int) -> Tensor:
    """score(i, t, c) = μ(i,t,D_c)/(Σ_j μ(j,t,D_c)+δ) − μ(i,t,D_¬c)/(Σ_j μ(j,t,D_¬c)+δ)  → [T, n]."""
    on = mu[labels == c].float().mean(0)
    off = mu[labels != c].float().mean(0)
    return on / (on.sum(-1, keepdim=True) + DELTA) - off / (off.sum(-1, keepdim=True) + DELTA)


def select_features(score: Tensor, mode: str = "top_m", top_m: int = 4, percentile: float = 99.5) -> list[Tensor]:
    """Per timestep: indices of the features with the highest scores (positive scores only).

    ``percentile``: features strictly above the τ-percentile of that timestep's scores (as upstream);
    ``top_m``: the m highest.
    """
    out = []
    for s in score:
        if mode == "percentile":
            thr = torch.quantile(s.double(), percentile / 100.0).to(s.dtype)
            idx = torch.nonzero((s > thr) & (s > 0)).flatten()
            idx = idx[s[idx].argsort(descending=True)]
        else:
            m = min(top_m, len(s))
            v, idx = s.topk(m) if m > 0 else (s[:0], torch.zeros(0, dtype=torch.long))
            idx = idx[v > 0]
        out.append(idx.long())
    return out


def heavy_tail_share(score: Tensor, top_fraction: float = 0.01) -> float:
    """Share of the positive score mass carried by the top ``top_fraction`` of features (averaged over t)."""
    shares = []
    for s in score:
        pos = s.clamp_min(0)
        tot = float(pos.sum())
        if tot <= 0:
            continue
        m = max(1, int(round(top_fraction * len(s))))
        shares.append(float(pos.topk(m).values.sum()) / tot)
    return sum(shares) / max(1, len(shares))


def build_plan(mu: Tensor, labels: Tensor, n_concepts: int, timesteps: Tensor, edits: list[dict]) -> tuple[EditPlan, dict]:
    """An ``EditPlan`` for several concepts of one SAE: concatenated feature sets per timestep.

    ``edits``: dicts with ``c`` (concept index), ``gamma``, ``mode``, ``top_m``, ``percentile``,
    ``t_start``, ``t_end``. Returns the plan and per-concept diagnostics (scores, selections).
    """
    M = concept_means(mu, labels, n_concepts)  # [C, T, n]
    present = torch.tensor([bool((labels == c).any()) for c in range(n_concepts)])
    all_mean = M[present].mean(0)  # mean over all concepts of μ(i, t, ·)
    T = mu.shape[1]
    feats = [[] for _ in range(T)]
    scale, thresh, start, end = ([[] for _ in range(T)] for _ in range(4))
    info = {}
    for e in edits:
        c = e["c"]
        sc = importance(mu, labels, c)
        sel = select_features(sc, e.get("mode", "top_m"), e.get("top_m", 4), e.get("percentile", 99.5))
        for t in range(T):
            f = sel[t]
            feats[t].append(f)
            scale[t].append(e["gamma"] * M[c, t, f])
            thresh[t].append(all_mean[t, f])
            start[t].append(torch.full((len(f),), float(e.get("t_start", 0.0))))
            end[t].append(torch.full((len(f),), float(e.get("t_end", 1.0))))
        info[c] = {"score": sc, "selected": sel}
    cat = lambda xs, dt=torch.float32: [torch.cat(x).to(dt) if x else torch.zeros(0, dtype=dt) for x in xs]  # noqa: E731
    plan = EditPlan(timesteps=timesteps.float(), feats=cat(feats, torch.long), scale=cat(scale), thresh=cat(thresh),
                    start=cat(start), end=cat(end))
    return plan, info


def empty_plan(timesteps: Tensor) -> EditPlan:
    T = len(timesteps)
    z = [torch.zeros(0) for _ in range(T)]
    return EditPlan(timesteps=timesteps.float(), feats=[torch.zeros(0, dtype=torch.long) for _ in range(T)],
                    scale=list(z), thresh=list(z), start=list(z), end=list(z))

"""How long to train a generator, chosen on held-out node pairs (issue 16's stopping rule).

The training objective never converges within affordable lengths and the vanilla generator's samples get worse
the longer it trains (docs/methods/fdgen.md, "How long the generators train"), so "train until the objective
converges" is not used. Instead, as in link-prediction validation of graph auto-encoders:

1. ``holdout_pairs``: a fraction (``HOLDOUT`` = 10 %) of the *training graph's* node pairs is held out, stratified
   (the same fraction of its edges and of its non-edges);
2. for every iteration count E of ``GRID`` (each a complete cosine schedule) a generator is fitted with those pairs
   erased (``FairGenerator.fit(..., holdout=...)``: no loss term, no trace in the noisy inputs, not in ρ) and scored
   by ``validation_loss``: edge BCE per expected edge on the held-out pairs, averaged over diffusion steps with fixed
   noise draws;
3. E* = the grid point with the lowest validation loss (ties: the shorter schedule). A minimum on the grid's last
   point is no minimum ("at least that long"), so the grid is then extended by doubling the last length while the
   longest fit is still the best, up to ``MAX_EPOCHS`` (a curve still falling there says so: ``at_edge``). The
   generators used for the claims are then refitted on all training pairs for E* iterations (select, then refit).

The rule reads only the training graph (the functions here take nothing else): no test node, no downstream GCN,
no fairness gap, no h_s or probe AUC. The same rule, grid, split and seed serve every variant and dataset.
"""
from __future__ import annotations

import time

import numpy as np

from .data import Graph

GRID: tuple[int, ...] = (75, 150, 300, 600, 1200)
MAX_EPOCHS = 4800  # the doubling extension's cap (4× the grid's last point; convergence.EPOCHS' longest run)
HOLDOUT = 0.1
SPLIT_SEED = 0
FIT_SEED = 0


def choose(epochs, losses) -> int:
    """The grid point with the lowest validation loss; ties go to the shorter schedule. NaN never wins."""
    ep, lo = list(epochs), np.asarray(losses, float)
    if len(ep) != len(lo) or not len(ep):
        raise ValueError("one validation loss per grid point is needed")
    if np.isnan(lo).all():
        raise ValueError("every validation loss is NaN")
    order = sorted(range(len(ep)), key=lambda i: (np.inf if np.isnan(lo[i]) else lo[i], ep[i]))
    return int(ep[order[0]])


def validation_curve(train_graph: Graph, lambda_f: float, lambda_s: float, *, grid: tuple[int, ...] = GRID,
                     max_epochs: int = MAX_EPOCHS, steps: int = 12, backbone: str = "diffusion", condition_on_s: bool = True,
                     feat_mode: str = "unconditional", holdout: float = HOLDOUT, split_seed: int = SPLIT_SEED,
                     seed: int = FIT_SEED, progress=None) -> dict:
    """Validation loss of one generator variant at every grid length, and the chosen E*.
    Takes the training graph only: the test nodes cannot reach this choice."""
    from .generators import FairGenerator, holdout_pairs, validation_loss

    hold = holdout_pairs(train_graph, holdout, split_seed)
    epochs, losses, fit_s = list(grid), [], []
    i = 0
    while i < len(epochs):
        E = epochs[i]
        t0 = time.perf_counter()
        gen = FairGenerator(backbone, steps=steps, condition_on_s=condition_on_s).fit(
            train_graph, lambda_f, lambda_s, E, seed, feat_mode, holdout=hold)
        fit_s.append(time.perf_counter() - t0)
        losses.append(validation_loss(gen, train_graph))
        if progress is not None:
            progress(f"E = {E}: validation loss {losses[-1]:.4f} ({fit_s[-1]:.1f} s)")
        i += 1
        if i == len(epochs) and choose(epochs, losses) == E and 2 * E <= max_epochs:
            epochs.append(2 * E)  # the minimum is on the edge: try twice as long
    held_edges = int(np.triu(hold & (train_graph.adjacency() > 0), 1).sum())
    chosen = choose(epochs, losses)
    return dict(epochs=epochs, val_loss=losses, chosen=chosen, at_edge=chosen == epochs[-1], fit_s=fit_s,
                held_pairs=int(np.triu(hold, 1).sum()), held_edges=held_edges, holdout=holdout,
                split_seed=split_seed, seed=seed)


__all__ = ["GRID", "HOLDOUT", "MAX_EPOCHS", "choose", "validation_curve"]

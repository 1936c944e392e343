"""Board-state-property (BSP) metrics of Karvonen et al.'s SAE board-game benchmark, as MoE-X uses them.

Each unit f with threshold t ∈ {0, 0.1, …, 0.9}·max(f) is a classifier 1[f(x) > t].

* Coverage = mean over BSPs of the best F1 any unit reaches at any threshold.
* Board reconstruction: on a labelling split, each (unit, t) is labelled with the BSPs it predicts with
  precision ≥ 0.95 over ≥ 10 activations; a board is predicted as the union of the active units' labels and
  scored by F1 against the true board. The threshold is chosen on a validation split and the F1 reported on
  a held-out test split (the benchmark picks the best t; we never pick it on the split we report).
"""
from __future__ import annotations

import numpy as np
import torch

THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(10))


def _tt(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float32)


def check_inputs(acts, bsp) -> None:
    if acts.ndim != 2 or bsp.ndim != 2 or acts.shape[0] != bsp.shape[0]:
        raise ValueError(f"activations (N, units) and BSPs (N, features) must share N: got {acts.shape} and {bsp.shape}")
    if acts.shape[0] == 0:
        raise ValueError("no positions to score")


def unit_max(acts) -> np.ndarray:
    m = np.asarray(acts).max(0)
    return np.where(m > 0, m, np.inf)  # a unit that never fires predicts nothing


def f1_table(acts, bsp, t: float, maxes=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(TP, active count, positives): TP is (units, features)."""
    A, Y = _tt(acts), _tt(bsp)
    mx = _tt(unit_max(acts) if maxes is None else maxes)
    P = (A > t * mx).float()
    return P.T @ Y, P.sum(0), Y.sum(0)


def coverage(acts, bsp, feature_mask=None, thresholds=THRESHOLDS) -> tuple[float, np.ndarray, np.ndarray]:
    """(coverage, best F1 per BSP, index of the best unit per BSP) over the BSPs in ``feature_mask``."""
    check_inputs(acts, bsp)
    best = torch.zeros(bsp.shape[1])
    arg = torch.zeros(bsp.shape[1], dtype=torch.long)
    for t in thresholds:
        tp, act, pos = f1_table(acts, bsp, t)
        f1 = 2 * tp / (act[:, None] + pos[None, :]).clamp_min(1e-9)
        v, i = f1.max(0)
        better = v > best
        best = torch.where(better, v, best)
        arg = torch.where(better, i, arg)
    keep = np.ones(bsp.shape[1], bool) if feature_mask is None else np.asarray(feature_mask)
    return float(best.numpy()[keep].mean()), best.numpy(), arg.numpy()


def label_units(acts, bsp, t: float, maxes, min_precision: float = 0.95, min_active: int = 10) -> torch.Tensor:
    """(units, features) bool: the BSPs each unit predicts at threshold t (precision ≥ 0.95, ≥ 10 activations)."""
    tp, act, _ = f1_table(acts, bsp, t, maxes)
    prec = tp / act[:, None].clamp_min(1)
    return (prec >= min_precision) & (act[:, None] >= min_active)


def predict_boards(acts, labels: torch.Tensor, t: float, maxes) -> torch.Tensor:
    P = (_tt(acts) > t * _tt(maxes)).float()
    return (P @ labels.float()) > 0


def board_f1(pred: torch.Tensor, bsp, feature_mask=None) -> float:
    Y = torch.as_tensor(np.asarray(bsp), dtype=torch.bool)
    if feature_mask is not None:
        m = torch.as_tensor(np.asarray(feature_mask))
        pred, Y = pred[:, m], Y[:, m]
    tp = (pred & Y).sum().item()
    denom = pred.sum().item() + Y.sum().item()
    return 2 * tp / denom if denom else 0.0


def reconstruction(train, val, test, feature_mask=None, thresholds=THRESHOLDS) -> dict:
    """Board reconstruction F1. ``train``/``val``/``test`` are (acts, bsp) pairs; unit maxima from ``train``."""
    for a, b in (train, val, test):
        check_inputs(a, b)
    maxes = unit_max(train[0])
    val_f1, test_f1, n_labelled = {}, {}, {}
    for t in thresholds:
        lab = label_units(train[0], train[1], t, maxes)
        n_labelled[t] = int(lab.any(1).sum())
        val_f1[t] = board_f1(predict_boards(val[0], lab, t, maxes), val[1], feature_mask)
        test_f1[t] = board_f1(predict_boards(test[0], lab, t, maxes), test[1], feature_mask)
    t_best = max(thresholds, key=lambda t: (val_f1[t], -t))
    return {"f1": test_f1[t_best], "threshold": t_best, "val_f1": val_f1[t_best], "labelled_units": n_labelled[t_best],
            "test_f1_by_threshold": test_f1, "val_f1_by_threshold": val_f1}


def unit_labels(acts, bsp, names: list[str], t: float = 0.0, top: int = 3, min_active: int = 10) -> list[list]:
    """For each unit, its best BSPs by F1 at threshold t: [(name, f1, precision)] (for the tab's unit labels)."""
    tp, act, pos = f1_table(acts, bsp, t)
    f1 = 2 * tp / (act[:, None] + pos[None, :]).clamp_min(1e-9)
    prec = tp / act[:, None].clamp_min(1)
    v, i = f1.topk(min(top, f1.shape[1]), dim=1)
    out = []
    for u in range(f1.shape[0]):
        if act[u] < min_active:
            out.append([])
            continue
        out.append([(names[int(j)], float(f), float(prec[u, j])) for f, j in zip(v[u], i[u]) if f > 0])
    return out


def best_pairs(acts, bsp, feature_mask=None, thresholds=THRESHOLDS, top_per_unit: int = 3) -> dict:
    """On one split: per BSP the best (unit, threshold, F1, precision); per unit its top BSPs by F1."""
    check_inputs(acts, bsp)
    maxes = unit_max(acts)
    B = bsp.shape[1]
    keep = torch.as_tensor(np.ones(B, bool) if feature_mask is None else np.asarray(feature_mask))
    best_f, best_u = torch.zeros(B), torch.zeros(B, dtype=torch.long)
    best_t, best_p = torch.zeros(B), torch.zeros(B)
    U = acts.shape[1]
    unit_f = torch.zeros(U, B)
    unit_t = torch.zeros(U, B)
    unit_p = torch.zeros(U, B)
    for t in thresholds:
        tp, act, pos = f1_table(acts, bsp, t, maxes)
        f1 = 2 * tp / (act[:, None] + pos[None, :]).clamp_min(1e-9)
        f1[:, ~keep] = 0
        prec = tp / act[:, None].clamp_min(1)
        v, i = f1.max(0)
        better = v > best_f
        best_f, best_u = torch.where(better, v, best_f), torch.where(better, i, best_u)
        best_t = torch.where(better, torch.full_like(best_t, t), best_t)
        best_p = torch.where(better, prec[i, torch.arange(B)], best_p)
        up = f1 > unit_f
        unit_f, unit_t, unit_p = torch.where(up, f1, unit_f), torch.where(up, t, unit_t), torch.where(up, prec, unit_p)
    v, i = unit_f.topk(min(top_per_unit, B), dim=1)
    per_unit = [[(int(j), float(f), float(unit_t[u, j]), float(unit_p[u, j])) for f, j in zip(v[u], i[u]) if f > 0]
                for u in range(U)]
    return {"bsp_unit": best_u.numpy(), "bsp_threshold": best_t.numpy(), "bsp_f1": best_f.numpy(),
            "bsp_precision": best_p.numpy(), "per_unit": per_unit, "maxes": maxes}


def coverage_heldout(label, test, feature_mask=None, thresholds=THRESHOLDS) -> dict:
    """Coverage with the (unit, threshold) per BSP chosen on the labelling split and its F1 measured on test."""
    bp = best_pairs(label[0], label[1], feature_mask, thresholds, top_per_unit=1)
    A, Y = np.asarray(test[0]), np.asarray(test[1]).astype(bool)
    keep = np.ones(Y.shape[1], bool) if feature_mask is None else np.asarray(feature_mask)
    f1s = np.zeros(Y.shape[1])
    for b in np.flatnonzero(keep):
        u, t = bp["bsp_unit"][b], bp["bsp_threshold"][b]
        pred = A[:, u] > t * bp["maxes"][u]
        tp = np.sum(pred & Y[:, b])
        d = pred.sum() + Y[:, b].sum()
        f1s[b] = 2 * tp / d if d else 0.0
    return {"coverage": float(f1s[keep].mean()), "coverage_label_split": float(bp["bsp_f1"][keep].mean()),
            "f1": f1s, "pairs": bp}

"""Targeted-control metrics, computed on the executed outcome (parameter state before → after).

For every free parameter that changed we read (direction, size of change). Against the gold edit set:
* exact match — the changed set equals the gold set, every direction is right and every size is right
  (a qualitative degree: within ±30 % of its calibrated step; a value: within 1 % of the range);
* over-specification (unintended edit) — some parameter outside the gold set changed;
* under-specification — some gold parameter did not change;
* targeting precision / recall over parameters, direction and magnitude accuracy over hit targets.
"""
from __future__ import annotations

from dataclasses import dataclass

from .domains import Domain

MAG_TOL = 0.30
VALUE_TOL = 0.01


@dataclass
class Score:
    exact: bool
    over: bool
    under: bool
    tp: int
    fp: int
    fn: int
    dir_ok: int
    mag_ok: int


def gold_delta(domain: Domain, e: dict) -> float | None:
    p = domain.by_id[e["target"]]
    if "value" in e:
        return None
    step = p.steps[("slight", "moderate", "large").index(e["mag"])]
    return step if e["dir"] == "+" else -step


def score(domain: Domain, gold: list[dict], before: dict[str, float], after: dict[str, float]) -> Score:
    changed = {k for k in before if abs(after[k] - before[k]) > 1e-9}
    g = {e["target"]: e for e in gold}
    tp = changed & set(g)
    dir_ok = mag_ok = 0
    for t in tp:
        e, p = g[t], domain.by_id[t]
        delta = after[t] - before[t]
        if (delta > 0) == (e["dir"] == "+"):
            dir_ok += 1
            if "value" in e:
                mag_ok += abs(after[t] - e["value"]) <= VALUE_TOL * (p.hi - p.lo) + 1e-9
            else:
                gd = gold_delta(domain, e)
                mag_ok += abs(delta - gd) <= MAG_TOL * abs(gd) + 1e-9
    over = bool(changed - set(g))
    under = bool(set(g) - changed)
    exact = not over and not under and dir_ok == len(g) and mag_ok == len(g)
    return Score(exact, over, under, len(tp), len(changed - set(g)), len(set(g) - changed), dir_ok, mag_ok)


def aggregate(scores: list[Score]) -> dict[str, float]:
    n = max(len(scores), 1)
    tp = sum(s.tp for s in scores)
    fp = sum(s.fp for s in scores)
    fn = sum(s.fn for s in scores)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"n": len(scores), "exact": sum(s.exact for s in scores) / n, "over": sum(s.over for s in scores) / n,
            "under": sum(s.under for s in scores) / n, "precision": prec, "recall": rec,
            "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "direction": sum(s.dir_ok for s in scores) / tp if tp else 0.0,
            "magnitude": sum(s.mag_ok for s in scores) / tp if tp else 0.0}

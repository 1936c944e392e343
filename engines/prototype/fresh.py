"""The fresh test set of issue 30 and its automatic judge (direction, locality, refusal).

``data/instructions_fresh.yaml`` holds instructions written for the issue — kept apart from the development
corpus and never used for tuning — across every product and every failure kind (quantities, impossible
values, overall dimensions, keep constraints, unsupported requests, multi-clause / multi-adjective
instructions). Each starts from the product's default model. The judge reads only the executed outcome
(parameter state before → after, refusal or not):

* an expected **refusal** is right when the model is unchanged and a refusal message was shown;
* otherwise no refusal may occur, every expected target (a parameter or an overall dimension) must move in
  the expected **direction** (or stay, for "="), by the stated amount where one is given (a value within 1 %
  of the range, a ratio within 3 %, a change within 5 %, a degree within ±30 % of its calibrated step), and
  **locality** must hold: no parameter changes except the expected ones, their constraint dependents (the
  other side of a declared relation, as in the spec's compiler-locality check) and those the stated
  distribution / solving rule may move (``allow``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from .domains import get_domain
from .overall import values

DATA = Path(__file__).resolve().parent / "data"
KINDS = ("quantity", "impossible", "overall", "keep", "unsupported", "multi")


SETS = {"fresh": "instructions_fresh.yaml", "heldout": "instructions_heldout.yaml",
        "heldout2": "instructions_heldout2.yaml", "heldout3": "instructions_heldout3.yaml",
        "heldout4": "instructions_heldout4.yaml", "heldout5": "instructions_heldout5.yaml",
        "heldout6": "instructions_heldout6.yaml", "heldout7": "instructions_heldout7.yaml",
        "heldout8": "instructions_heldout8.yaml", "heldout9": "instructions_heldout9.yaml",
        "heldout10": "instructions_heldout10.yaml", "heldout11": "instructions_heldout11.yaml",
        "heldout12": "instructions_heldout12.yaml", "heldout13": "instructions_heldout13.yaml",
        "heldout14": "instructions_heldout14.yaml"}


@lru_cache(maxsize=8)
def load(name: str = "fresh") -> tuple[dict, ...]:
    """``fresh``: the issue's first set (a development set since parser failures seen on it were fixed);
    ``heldout``: the set written afterwards and frozen before its first run (``instructions_heldout.yaml``; a
    development set too since the failures of its first run were fixed); ``heldout2``: the set written after
    that first run and frozen before those fixes (``instructions_heldout2.yaml``; a development set too since
    the failures of its own first run were fixed); ``heldout3``: the set written after set 2's first run and
    frozen before those fixes (``instructions_heldout3.yaml``; a development set too since the failures of its
    first run were fixed in the fourth round); ``heldout4``: the set written after set 3's first run and frozen
    before the fourth round (``instructions_heldout4.yaml``; a development set too since the failures of its first
    run were fixed in the fifth round); ``heldout5``: the set written after set 4's first run and frozen before
    the fifth round (``instructions_heldout5.yaml``); ``heldout6``: the set written after set 5's first run and
    frozen before the sixth round (``instructions_heldout6.yaml``; a development set too since the failures of its
    first run were fixed in the sixth round); ``heldout7``: the set written after the sixth round and frozen before
    any further parser change (``instructions_heldout7.yaml``; a development set too since the failures of its first
    run were fixed in the seventh round); ``heldout8``: the set written after set 7's first run and frozen before the
    seventh round, by an author who wrote no earlier set and no parser rule (``instructions_heldout8.yaml``; a
    development set too since the failures of its first run were fixed in the eighth round); ``heldout9``: the set
    written after set 8's first run and frozen before the eighth round, by an author who wrote no earlier set and no
    parser rule (``instructions_heldout9.yaml``; a development set too since the failures of its first run were fixed
    in the ninth round); ``heldout10``: the set written after set 9's first run and frozen before the ninth round, by
    an author who wrote no earlier set and no parser rule (``instructions_heldout10.yaml``; a development set too since
    the failures of its first run were fixed in the tenth round); ``heldout11``: the set written after set 10's first
    run and frozen before the tenth round, by an author who wrote no earlier set and no parser rule
    (``instructions_heldout11.yaml``; a development set too since the failures of its first run were fixed in the
    eleventh round); ``heldout12``: the set written after set 11's first run and frozen before the eleventh round,
    by an author who wrote no earlier set and no parser rule (``instructions_heldout12.yaml``; a development set too
    since the failures of its first run were fixed in the twelfth round); ``heldout13``: the set written after set
    12's first run and frozen before the twelfth round, by an author who wrote no earlier set and no parser rule
    (``instructions_heldout13.yaml``; a development set too since the failures of its first run were fixed in the
    thirteenth round); ``heldout14``: the set written after set 13's first run and frozen before the thirteenth
    round, by an author who wrote no earlier set and no parser rule (``instructions_heldout14.yaml``). The newest set
    whose
    first
    run is recorded
    carries the claim (``reproduce._claimed_set``)."""
    return tuple(yaml.safe_load((DATA / SETS[name]).read_text()))


def set_digest(name: str) -> str:
    """sha256 of a set's file: the held-out record names the exact file its first run judged."""
    import hashlib

    return hashlib.sha256((DATA / SETS[name]).read_bytes()).hexdigest()


@dataclass
class Verdict:
    ok: bool
    direction: bool  # every expected target moved as expected (False for a refusal item that was not refused)
    locality: bool  # nothing else changed
    refusal: bool  # refused exactly when a refusal was expected
    why: str


def _value(domain: str, state: dict[str, float], target: str) -> float:
    return values(domain, state)[target] if target.startswith("overall.") else state[target]


def judge(row: dict, before: dict[str, float], after: dict[str, float], refused: bool) -> Verdict:
    d = get_domain(row["domain"])
    changed = {k for k in before if abs(after[k] - before[k]) > 1e-9}
    if row.get("refuse"):
        ok = refused and not changed
        why = "" if ok else ("not refused" if not refused else "refused but the model changed") + \
            (f"; changed {sorted(changed)}" if changed else "")
        return Verdict(ok, ok, not changed, refused, why)
    if refused:
        return Verdict(False, False, not changed, False, "refused an instruction that the model can express")
    problems = []
    for tgt, exp in row["expect"].items():
        b, a = _value(d.name, before, tgt), _value(d.name, after, tgt)
        delta = a - b
        scale = max(abs(b), 1.0)
        if exp == "=":
            if abs(delta) > 1e-6 * scale:
                problems.append(f"{tgt} changed {b:.3g} → {a:.3g}")
            continue
        if isinstance(exp, str):
            exp = {"dir": exp}
        if "dir" in exp and not ((delta > 1e-9) if exp["dir"] == "+" else (delta < -1e-9)):
            problems.append(f"{tgt} should go {exp['dir']}: {b:.3g} → {a:.3g}")
            continue
        if "mag" in exp:
            step = d.by_id[tgt].steps[("slight", "moderate", "large").index(exp["mag"])]
            if abs(abs(delta) - step) > 0.30 * step + 1e-9:
                problems.append(f"{tgt}: change {delta:+.3g}, expected {exp['mag']} (±{step:g})")
        if "value" in exp:
            tol = 0.01 * ((d.by_id[tgt].hi - d.by_id[tgt].lo) if tgt in d.by_id else abs(exp["value"]))
            if abs(a - exp["value"]) > tol + 1e-9:
                problems.append(f"{tgt}: {a:.4g}, expected {exp['value']:g}")
        if "ratio" in exp and abs(a / b - exp["ratio"]) > 0.03 * exp["ratio"]:
            problems.append(f"{tgt}: ×{a / b:.3g}, expected ×{exp['ratio']:g}")
        if "delta" in exp and abs(delta - exp["delta"]) > 0.05 * abs(exp["delta"]) + 1e-6:
            problems.append(f"{tgt}: {delta:+.4g}, expected {exp['delta']:+g}")
    allowed = set(row["expect"]) | set(row.get("allow", []))
    for rel in d.relations:  # constraint dependents are part of a targeted edit (spec acceptance check 2)
        if rel.lhs in allowed or rel.rhs in allowed:
            allowed |= {rel.lhs, rel.rhs}
    extra = sorted(changed - allowed)
    direction = not problems
    if extra:
        problems.append("also changed " + ", ".join(extra))
    return Verdict(not problems, direction, not extra, True, "; ".join(problems))


def run(kind: str, spec_source: str = "induced", encoder=None, rows=None, on_progress=None, ctx=None) -> dict:
    """Judge one mapper on the fresh set (or ``rows``): per-kind and overall accuracy, refusal accuracy,
    failures, and each row's raw outcome (refused, message, changed parameters)."""
    import time

    from .benchmark import make_mapper
    from .interface import ProgramError, apply_patch, compile_program
    from .specs import get_spec

    rows = list(rows or load())
    mappers, outcomes = {}, []
    t0 = time.perf_counter()
    for i, r in enumerate(rows):
        if ctx is not None:
            ctx.check_cancelled()
        dom = get_domain(r["domain"])
        spec = get_spec(r["domain"], spec_source)
        if r["domain"] not in mappers:
            mappers[r["domain"]] = make_mapper(kind, r["domain"], spec, encoder)
        m = mappers[r["domain"]]
        before = dom.defaults()
        refused, message, error = False, "", ""
        try:
            if kind in ("flat", "llm_flat"):
                after = apply_patch(dom, before, m.map(r["text"], before).patch)
            else:
                mp = m.map(r["text"])
                try:
                    c = compile_program(spec, before, mp.ops)
                    refused, after = not c.ok, (c.state if c.ok else dict(before))
                    refused |= not c.changes and bool(mp.warnings)  # nothing executed, a message shown
                    message = "; ".join(c.refused or list(mp.warnings)) if refused else ""
                except ProgramError as e:
                    refused, after, message = True, dict(before), str(e)
        except Exception as e:  # a crashing mapper is that row's failure (not a refusal), never the run's end
            refused, after, error = False, dict(before), f"the mapper raised {type(e).__name__}: " + " ".join(str(e).split())[:200]
        # the raw outcome travels with the verdict, so a documented label fix can be re-judged without a re-run
        outcomes.append({"refused": bool(refused), "message": message, "error": error,
                         "changed": {k: after[k] for k in before if abs(after[k] - before[k]) > 1e-12}})
        if on_progress:
            on_progress((i + 1) / len(rows), f"{kind}: {i + 1}/{len(rows)}")
    return summarise(kind, spec_source, rows, outcomes, (time.perf_counter() - t0) / max(len(rows), 1))


def summarise(kind: str, spec_source: str, rows, outcomes, seconds_per_instruction: float) -> dict:
    """Judge stored outcomes (``run``'s, or a recorded first run's) against the rows' current labels."""
    per_kind, out_rows, false_refusals = defaultdict(list), [], 0
    for r, o in zip(rows, outcomes, strict=True):
        before = get_domain(r["domain"]).defaults()
        after = dict(before, **o["changed"])
        v = judge(r, before, after, o["refused"])
        if o.get("error"):
            v = Verdict(False, False, v.locality, bool(r.get("refuse")) == o["refused"], o["error"])
        per_kind[r["kind"]].append(v)
        false_refusals += o["refused"] and not r.get("refuse")
        out_rows.append({"domain": r["domain"], "kind": r["kind"], "text": r["text"], "ok": v.ok, "why": v.why,
                         "refused": o["refused"], "message": o["message"], "error": o.get("error", ""),
                         "changed": o["changed"]})
    allv = [v for vs in per_kind.values() for v in vs]
    exp_refuse = [(r, o) for r, o in zip(rows, out_rows) if r.get("refuse")]
    return {"mapper": kind, "spec_source": spec_source, "n": len(rows),
            "accuracy": sum(v.ok for v in allv) / max(len(allv), 1),
            "direction": sum(v.direction for v in allv) / max(len(allv), 1),
            "locality": sum(v.locality for v in allv) / max(len(allv), 1),
            "refusal_correct": sum(o["ok"] for _, o in exp_refuse) / max(len(exp_refuse), 1),
            "n_refuse": len(exp_refuse),
            "false_refusals": false_refusals,
            "by_kind": {k: sum(v.ok for v in per_kind[k]) / len(per_kind[k]) for k in KINDS if per_kind[k]},
            "n_by_kind": {k: len(per_kind[k]) for k in KINDS if per_kind[k]},
            "seconds_per_instruction": seconds_per_instruction,
            "rows": out_rows}

"""The domain-specific interface: its specification, its programs and its compiler.

Specification (per domain) = the model program's typed parameters (component → attribute, unit, range,
calibrated steps) + inter-part relations + a lexical layer (component synonyms, attribute operation words,
macro intents). A program is a list of typed operations over that vocabulary::

    [{"op": "adjust", "target": "backrest.height", "dir": "+", "mag": "slight"},
     {"op": "keep", "target": "seat"}]

The compiler resolves macros, turns qualitative degrees into calibrated steps, checks ranges, relations
and "keep" scopes, updates constraint dependents, and refuses the whole program (model unchanged) when
anything is out of range or contradictory. Only the named parameters and their dependents change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .domains import Domain
from .language import MAGNITUDES

Dir = Literal["+", "-"]
Mag = Literal["slight", "moderate", "large"]


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")
    said: str | None = Field(None, description="the designer's words this operation came from")


class Adjust(_Op):
    op: Literal["adjust"] = "adjust"
    target: str
    dir: Dir
    mag: Mag = "moderate"
    amount: float | None = Field(None, gt=0, description="explicit change, in `unit` (overrides mag)")
    unit: str | None = None


class SetOp(_Op):
    op: Literal["set"] = "set"
    target: str
    value: float
    unit: str | None = None


class AddOp(_Op):
    op: Literal["add"] = "add"
    target: str  # a component with a `present` attribute


class RemoveOp(_Op):
    op: Literal["remove"] = "remove"
    target: str


class KeepOp(_Op):
    op: Literal["keep"] = "keep"
    target: str  # a component, a parameter (component.attribute) or an overall dimension that must not change


class ScaleOp(_Op):
    op: Literal["scale"] = "scale"
    target: str  # a parameter or an overall dimension
    factor: float = Field(gt=0, le=100, description="new value / current value (twice: 2, a fifth less: 0.8)")


class MatchOp(_Op):
    """tenth round: a value read from another setting when the program runs ("as deep as the backrest is tall",
    "half the height of the stem"): target = factor × the source's current value."""
    op: Literal["match"] = "match"
    target: str  # a parameter or an overall dimension
    source: str  # the parameter or overall dimension whose current value is read
    factor: float = Field(1.0, gt=0, le=100)


class UnsupportedOp(_Op):
    op: Literal["unsupported"] = "unsupported"
    what: str = Field(min_length=1, max_length=120, description="the setting or part the model does not have")


class MacroOp(_Op):
    op: Literal["macro"] = "macro"
    name: str
    dir: Dir = "+"
    mag: Mag = "moderate"


Op = Annotated[Union[Adjust, SetOp, AddOp, RemoveOp, KeepOp, MacroOp, ScaleOp, MatchOp, UnsupportedOp],
              Field(discriminator="op")]
_PROGRAM = TypeAdapter(list[Op])


class ProgramError(ValueError):
    """A program that does not fit the interface (bad JSON, unknown target, wrong type)."""


def parse_program(data) -> list:
    """JSON text or a list of dicts → typed operations; ProgramError names the problem."""
    import json

    if isinstance(data, str):
        if not data.strip():
            return []
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise ProgramError(f"the program is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if isinstance(data, dict):
        data = [data]
    try:
        return _PROGRAM.validate_python(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ProgramError(f"program operation {loc}: {err['msg']}") from None


def dump_program(ops: list) -> list[dict]:
    return [o.model_dump(exclude_none=True) for o in ops]


# ----------------------------------------------------------------------------- specification


def build_spec(domain: Domain, lexicon: dict, source: str) -> dict:
    """Merge the model program's typed parameters with a lexical layer into an interface spec (JSON-able)."""
    comps = {}
    for c in domain.components:
        lx = lexicon.get("components", {}).get(c, {})
        comps[c] = {"synonyms": sorted(set([c.replace("_", " ")] + list(lx.get("synonyms", [])))),
                    "attributes": [p.id for p in domain.params if p.component == c]}
    attrs = {p.id: {"component": p.component, "attribute": p.attribute, "raw": p.raw, "unit": p.unit,
                    "range": [p.lo, p.hi], "default": p.default, "kind": p.kind,
                    "steps": dict(zip(MAGNITUDES, p.steps)), "description": p.description}
             for p in domain.params}
    names = {p.attribute for p in domain.params}
    ops = {a: {d: sorted(set(ws)) for d, ws in lexicon.get("operations", {}).get(a, {}).items()} for a in sorted(names)}
    macros = [m for m in lexicon.get("macros", []) if all(e["target"] in attrs for e in m["edits"])]
    rel = [{"lhs": r.lhs, "rhs": r.rhs, "factor": r.factor, "offset": r.offset, "reason": r.reason}
           for r in domain.relations]
    from .overall import derived_spec

    return {"domain": domain.name, "source": source, "components": comps, "attributes": attrs,
            "operations": ops, "macros": macros, "relations": rel, "derived": derived_spec(domain.name)}


def derived_attrs(spec: dict) -> dict:
    """The product's overall dimensions (``overall.height`` …) of a spec (added on load, see ``specs``)."""
    if "derived" in spec:
        return spec["derived"]
    from .overall import derived_spec

    return derived_spec(spec["domain"])


def settings_listing(spec: dict) -> str:
    """What the model *does* have, for refusals: 'seat (height, width, …); …; overall (height, width)'."""
    parts = [f"{c} (" + ", ".join(spec["attributes"][p]["attribute"].replace("_", " ") for p in e["attributes"]) + ")"
             for c, e in spec["components"].items()]
    der = derived_attrs(spec)
    if der:
        parts.append("overall (" + ", ".join(d["attribute"] for d in der.values()) + ")")
    return "; ".join(parts)


def unsupported_message(spec: dict, what: str) -> str:
    return f"the {spec['domain']} has no {what}; it has: {settings_listing(spec)}"


def check_program(spec: dict, ops: list) -> None:
    """Type-check a program against the spec (targets, kinds, units); ProgramError names the problem."""
    attrs, comps, der = spec["attributes"], spec["components"], derived_attrs(spec)
    macros = {m["name"] for m in spec["macros"]}
    for i, o in enumerate(ops):
        where = f"operation {i + 1} ({o.op})"
        if isinstance(o, MatchOp):
            for t in (o.target, o.source):
                if t not in attrs and t not in der:
                    raise ProgramError(f"{where}: unknown target {t!r}; the {spec['domain']} has "
                                       + ", ".join(list(attrs) + list(der)))
            ua, ub = (attrs.get(t) or der[t] for t in (o.target, o.source))
            if ua["unit"] != ub["unit"]:
                raise ProgramError(f"{where}: {o.target} ({ua['unit']}) cannot be read from {o.source} ({ub['unit']})")
        if isinstance(o, (Adjust, SetOp, ScaleOp, MatchOp)):
            if o.target not in attrs and o.target not in der:
                raise ProgramError(f"{where}: unknown target {o.target!r}; the {spec['domain']} has "
                                   + ", ".join(list(attrs) + list(der)))
            a = attrs.get(o.target) or der[o.target]
            if a.get("kind") == "bool" and not isinstance(o, SetOp):
                raise ProgramError(f"{where}: {o.target} is on/off; use add or remove")
            if getattr(o, "unit", None) and o.unit != a["unit"]:
                raise ProgramError(f"{where}: {o.target} is measured in {a['unit']}, not {o.unit}")
        elif isinstance(o, KeepOp):
            if o.target not in comps and o.target not in attrs and o.target not in der and o.target != "overall":
                raise ProgramError(f"{where}: unknown keep target {o.target!r}; components: " + ", ".join(comps)
                                   + "; or a parameter (component.attribute) or " + ", ".join(der))
        elif isinstance(o, (AddOp, RemoveOp)):
            if o.target not in comps:
                raise ProgramError(f"{where}: unknown component {o.target!r}; components: " + ", ".join(comps))
            if f"{o.target}.present" not in attrs:
                raise ProgramError(f"{where}: the {o.target} cannot be added or removed")
        elif isinstance(o, MacroOp) and o.name not in macros:
            raise ProgramError(f"{where}: unknown macro {o.name!r}; macros: " + (", ".join(sorted(macros)) or "none"))


# ----------------------------------------------------------------------------- compiler

OVERALL_STEPS = {"slight": 0.05, "moderate": 0.10, "large": 0.20}  # degrees of an overall dimension, relative


@dataclass
class Change:
    target: str
    before: float
    after: float
    why: str  # designer terms, e.g. "taller, 'a bit'" or "constraint: …"


@dataclass
class Compiled:
    state: dict[str, float]
    changes: list[Change] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    overall: dict[str, tuple[float, float]] = field(default_factory=dict)  # overall dimension → (before, after)

    @property
    def ok(self) -> bool:
        return not self.refused

    @property
    def changed_components(self) -> list[str]:
        return sorted({c.target.split(".")[0] for c in self.changes})


def fmt_value(x: float, unit: str) -> str:
    if unit == "bool":
        return "on" if x >= 0.5 else "off"
    if unit == "count":
        return str(int(round(x)))
    u = {"deg": "°", "ratio": "×"}.get(unit, f" {unit}")
    return f"{x:.2f}".rstrip("0").rstrip(".") + u


def expand_macros(spec: dict, ops: list, kept: set[str] = frozenset(), res: "Compiled | None" = None) -> list:
    """Macros → their attribute edits. An intent adapts to keep constraints: an edit of a kept parameter is
    left out (with a note) instead of contradicting the keep."""
    out = []
    table = {m["name"]: m for m in spec["macros"]}
    for o in ops:
        if isinstance(o, MacroOp):
            for e in table[o.name]["edits"]:
                if e["target"] in kept:
                    if res is not None:
                        res.notes.append(f"{o.name}: {e['target']} left as is (kept)")
                    continue
                d = e["dir"] if o.dir == "+" else ("-" if e["dir"] == "+" else "+")
                out.append(Adjust(target=e["target"], dir=d, mag=o.mag, said=f"{o.name} → {e['target']}"))
        else:
            out.append(o)
    return out


def _range_refusal(tgt: str, a: dict, val: float) -> str:
    lo, hi = a["range"]
    valid = f"valid range {fmt_value(lo, a['unit'])}–{fmt_value(hi, a['unit'])}"
    if val < 0 <= lo:
        return f"{tgt} cannot be {fmt_value(val, a['unit'])}: a negative {a['attribute'].replace('_', ' ')} is impossible ({valid})"
    return f"{tgt} would become {fmt_value(val, a['unit'])}, outside its range {fmt_value(lo, a['unit'])}–" \
           f"{fmt_value(hi, a['unit'])} ({valid})"


def compile_program(spec: dict, state: dict[str, float], ops: list, calibration: float = 1.0) -> Compiled:
    """Interface program → new parameter state, or refusals (state unchanged). Targeted: only named
    parameters change, plus dependents moved by relations, parts that carry an overall edit (by the
    dimension's stated rule) and parameters solved for to hold a kept overall dimension."""
    from . import overall as OV

    check_program(spec, ops)
    attrs, comps, der = spec["attributes"], spec["components"], derived_attrs(spec)
    fns = OV.derived_of(spec["domain"])
    keeps = [o.target for o in ops if isinstance(o, KeepOp)]
    kept_comps = {t for t in keeps if t in comps}
    kept_params = {t for t in keeps if t in attrs} | {p for p in attrs if attrs[p]["component"] in kept_comps}
    kept_overall = {t for t in keeps if t in der} | (set(der) if "overall" in keeps else set())
    res = Compiled(state=dict(state), kept=sorted(set(keeps)))
    for o in ops:
        if isinstance(o, UnsupportedOp):
            res.refused.append(unsupported_message(spec, o.what))
    new = dict(state)
    before_overall = OV.values(spec["domain"], state)
    touched: dict[str, str] = {}
    # parameters asked only for a direction ("a shorter, fatter body that keeps its volume"): when a kept dimension
    # can be held by no free parameter, such an edit may take the amount that holds it, if its direction stays
    qualitative: dict[str, str] = {}

    def breaks_kept(p: str, exclude: str) -> bool:
        for k in kept_overall - {exclude}:
            f = fns[k].fn
            bumped = dict(new, **{p: new[p] * 1.01 + 1e-3})
            if abs(f(bumped) - f(new)) > 1e-9:
                return True
        return False

    # An intent (macro) adapts to keeps: it leaves out kept parameters and those that would move a kept
    # overall dimension; an explicit edit of them is a contradiction instead.
    locked = kept_params | {p for p in attrs if attrs[p]["kind"] == "float" and breaks_kept(p, "")}
    ops = expand_macros(spec, ops, locked, res)
    for o in ops:
        if isinstance(o, (KeepOp, UnsupportedOp)):
            continue
        if isinstance(o, MatchOp):  # the source's value as the program has left it so far (tenth round)
            src = new[o.source] if o.source in attrs else fns[o.source].fn(new)
            o = SetOp(target=o.target, value=o.factor * src, said=o.said)
        tgt = o.target if isinstance(o, (Adjust, SetOp, ScaleOp)) else f"{o.target}.present"
        said = f", from “{o.said}”" if o.said else ""
        if tgt in der:
            _overall_edit(spec, fns[tgt], o, new, touched, kept_params, kept_overall, breaks_kept, res, calibration, said,
                          qualitative)
            continue
        a = attrs[tgt]
        if isinstance(o, Adjust):
            step = o.amount if o.amount is not None else a["steps"][o.mag] * calibration
            val = new[tgt] + (step if o.dir == "+" else -step)
            why = f"{'+' if o.dir == '+' else '−'}{fmt_value(step, a['unit'])}" + \
                  (f" ({o.mag})" if o.amount is None else "")
        elif isinstance(o, ScaleOp):
            val, why = new[tgt] * o.factor, f"×{o.factor:.3g}"
        elif isinstance(o, SetOp):
            val, why = o.value, f"set to {fmt_value(o.value, a['unit'])}"
        else:
            val, why = (1.0 if isinstance(o, AddOp) else 0.0), o.op
        if a["kind"] == "int":
            val = float(round(val))
        why += said
        key = "+" if val > new[tgt] else "-" if val < new[tgt] else "="
        if isinstance(o, Adjust) and o.amount is None and tgt not in touched:
            qualitative[tgt] = key
        else:
            qualitative.pop(tgt, None)
        if tgt in touched and key == "=" and isinstance(o, SetOp):
            continue  # "fewer legs — 3 of them": the value the earlier edit reached, said again
        if tgt in touched and touched[tgt] != key:
            res.refused.append(f"contradiction: {tgt} is asked to change in two opposite ways")
            continue
        touched[tgt] = key
        if tgt in kept_params:
            what = f"the {a['component']}" if a["component"] in kept_comps else tgt
            res.refused.append(f"contradiction: {what} is to be kept as is, but {tgt} would change")
            continue
        lo, hi = a["range"]
        if not (lo - 1e-9 <= val <= hi + 1e-9):
            res.refused.append(_range_refusal(tgt, a, val))
            continue
        new[tgt] = val
        res.changes.append(Change(tgt, state[tgt], val, why))
    _solve_relations(spec, new, touched, kept_params, res)
    if not res.refused:
        _hold_overall(spec, fns, kept_overall, before_overall, new, touched, kept_params, res, qualitative)
    if res.refused:
        res.changes = []
        return res
    res.state = new
    after_overall = OV.values(spec["domain"], new)
    res.overall = {k: (before_overall[k], after_overall[k]) for k in der
                   if abs(after_overall[k] - before_overall[k]) > 1e-9 or k in kept_overall}
    res.changes = [c for c in res.changes if abs(c.after - c.before) > 1e-12]
    return res


def _overall_edit(spec, d, o, new, touched, kept_params, kept_overall, breaks_kept, res, calibration, said,
                  qualitative=None) -> None:
    """Distribute an edit of an overall dimension over its parts: one common factor on the parts of its
    rule that are free (not kept, not edited by the instruction, not holding a kept dimension). When every
    unkept part holds a kept dimension, those parts carry the edit and the kept dimension is then solved for
    by its own rule (``_hold_overall``), or the program is refused with the reason."""
    from .overall import bisect

    attrs = spec["attributes"]
    cur = d.fn(new)
    u = d.unit
    if isinstance(o, Adjust):
        step = o.amount if o.amount is not None else cur * OVERALL_STEPS[o.mag] * calibration
        target = cur + (step if o.dir == "+" else -step)
    elif isinstance(o, ScaleOp):
        target = cur * o.factor
    elif isinstance(o, SetOp):
        target = o.value
    else:
        res.refused.append(f"{d.id} can only be adjusted, scaled or set")
        return
    if d.id in kept_overall:
        res.refused.append(f"contradiction: {d.id} is to be kept, but is asked to change")
        return
    if target <= 0:
        res.refused.append(f"{d.id} cannot be {fmt_value(target, u)}: it must be positive")
        return
    free = [p for p in d.scale if p not in touched and p not in kept_params and not breaks_kept(p, d.id)]
    if not free:  # every part moves a kept dimension ("a slimmer bottle that holds the same"): use them and let
        free = [p for p in d.scale if p not in touched and p not in kept_params]  # the keep be re-solved
    if not free:
        res.refused.append(f"cannot change {d.id}: its parts ({', '.join(d.scale)}) are kept, edited by the "
                           "instruction or hold a kept dimension")
        return
    lo = max(attrs[p]["range"][0] / new[p] for p in free)
    hi = min(attrs[p]["range"][1] / new[p] for p in free)

    def g(s):
        return d.fn(dict(new, **{p: new[p] * s for p in free}))

    s = bisect(g, target, lo, hi) if lo <= hi else None
    if s is None:
        res.refused.append(f"{d.id} cannot become {fmt_value(target, u)}: scaling {', '.join(free)} within their "
                           f"ranges reaches {fmt_value(g(lo), u)}–{fmt_value(g(hi), u)}")
        return
    rule = d.rule.format(parts=" and ".join(free))
    for p in free:
        val = new[p] * s
        res.changes.append(Change(p, res.state[p], val, f"{d.id} {fmt_value(cur, u)} → {fmt_value(target, u)}: "
                                                        f"{rule} (×{s:.3f}){said}"))
        touched[p] = "+" if s > 1 else "-"
        if isinstance(o, Adjust) and o.amount is None and qualitative is not None:
            qualitative[p] = touched[p]
        new[p] = val
    res.notes.append(f"{d.id}: {fmt_value(cur, u)} → {fmt_value(target, u)}; {rule} (×{s:.3f})")


def _hold_overall(spec, fns, kept_overall, before, new, touched, kept_params, res, qualitative=None) -> None:
    """Enforce kept overall dimensions by solving for the first free parameter of each one's solve list. When every
    parameter of the list is kept or edited, one the instruction edited only by a direction (no amount: "a shorter,
    fatter body that keeps its volume") takes the value that holds the dimension, if that value still
    moves it in the asked direction."""
    from .overall import bisect

    attrs = spec["attributes"]
    qualitative = dict(qualitative or {})
    for k in sorted(kept_overall):
        d = fns[k]
        target = before[k]
        if abs(d.fn(new) - target) <= 1e-6 * max(1.0, abs(target)):
            continue
        why_not = []
        for p in d.solve:
            if p in kept_params:
                why_not.append(f"{p} is kept")
                continue
            if p in touched:
                why_not.append(f"{p} is edited by the instruction")
                continue
            lo, hi = attrs[p]["range"]
            x = bisect(lambda v: d.fn(dict(new, **{p: v})), target, lo, hi)
            others = [j for j in kept_overall if j != k]
            if x is not None and all(abs(fns[j].fn(dict(new, **{p: x})) - before[j]) <= 1e-6 * max(1, before[j])
                                     for j in others):
                res.changes.append(Change(p, res.state[p], x, f"solved to keep {k} at {fmt_value(target, d.unit)}"))
                res.notes.append(f"{p} moved to {fmt_value(x, attrs[p]['unit'])} to keep {k} at "
                                 f"{fmt_value(target, d.unit)}")
                new[p] = x
                touched[p] = "dep"
                break
            why_not.append(f"{p} would leave its range {fmt_value(lo, attrs[p]['unit'])}–"
                           f"{fmt_value(hi, attrs[p]['unit'])}" if x is None else f"{p} would break another kept dimension")
        else:
            for p in [p for p in d.solve if p in qualitative and p not in kept_params]:
                lo, hi = attrs[p]["range"]
                x = bisect(lambda v: d.fn(dict(new, **{p: v})), target, lo, hi)
                moved = None if x is None else "+" if x > res.state[p] + 1e-9 else "-" if x < res.state[p] - 1e-9 else "="
                others = [j for j in kept_overall if j != k]
                if moved == qualitative[p] and all(abs(fns[j].fn(dict(new, **{p: x})) - before[j])
                                                   <= 1e-6 * max(1, before[j]) for j in others):
                    for c in res.changes:
                        if c.target == p:
                            c.after, c.why = x, f"{c.why}; amount solved to keep {k} at {fmt_value(target, d.unit)}"
                    res.notes.append(f"{p} moved to {fmt_value(x, attrs[p]['unit'])} (the asked direction) to keep {k} "
                                     f"at {fmt_value(target, d.unit)}")
                    new[p] = x
                    break
            else:
                res.refused.append(f"cannot keep {k} at {fmt_value(target, d.unit)}: " + "; ".join(why_not))
                return
    _solve_relations(spec, new, touched, kept_params, res)
    from .overall import values

    after = values(spec["domain"], new)
    for k in kept_overall:
        if abs(after[k] - before[k]) > 1e-6 * max(1.0, before[k]):
            res.refused.append(f"cannot keep {k}: a constraint moved it to {fmt_value(after[k], fns[k].unit)}")


def _solve_relations(spec: dict, new: dict, touched: dict, kept: set, res: Compiled) -> None:
    """Enforce lhs ≤ factor·rhs + offset by moving the side nobody asked for (a dependent)."""
    attrs = spec["attributes"]
    for r in spec["relations"]:
        lhs, rhs, f, off = r["lhs"], r["rhs"], r["factor"], r["offset"]
        if new[lhs] <= f * new[rhs] + off + 1e-9:
            continue
        for dep, val in ((lhs, f * new[rhs] + off), (rhs, (new[lhs] - off) / f)):
            a = attrs[dep]
            if dep in touched or dep in kept or not (a["range"][0] <= val <= a["range"][1]):
                continue
            res.notes.append(f"{dep} moved to {fmt_value(val, a['unit'])} because {r['reason']}")
            res.changes.append(Change(dep, res.state[dep], val, f"constraint: {r['reason']}"))
            new[dep] = val
            touched[dep] = "dep"
            break
        else:
            res.refused.append(f"violates a constraint: {r['reason']} ({lhs} ≤ {f:g}·{rhs}{off:+g})")



def apply_patch(domain: Domain, state: dict[str, float], patch: dict[str, float]) -> dict[str, float]:
    """The flat baseline's execution: raw-name → value, clipped to the range, no relations, no scopes."""
    new = dict(state)
    for raw, val in patch.items():
        p = domain.by_raw.get(raw)
        if p is None:
            continue
        v = min(p.hi, max(p.lo, float(val)))
        new[p.id] = float(round(v)) if p.kind != "float" else v
    return new


def describe(spec: dict, compiled: Compiled) -> list[str]:
    """The executed program in designer terms: 'backrest.height 40 cm → 43 cm (+3 cm (slight), from “…”)'."""
    attrs, der = spec["attributes"], derived_attrs(spec)
    out = [f"{c.target}: {fmt_value(c.before, attrs[c.target]['unit'])} → "
           f"{fmt_value(c.after, attrs[c.target]['unit'])} ({c.why})" for c in compiled.changes]
    for k, (b, a) in compiled.overall.items():
        out.append(f"{k}: {fmt_value(b, der[k]['unit'])} → {fmt_value(a, der[k]['unit'])}"
                   + (" (kept)" if abs(a - b) <= 1e-6 * max(1.0, b) else " (derived)"))
    return out

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
    target: str  # a component that must not change


class MacroOp(_Op):
    op: Literal["macro"] = "macro"
    name: str
    dir: Dir = "+"
    mag: Mag = "moderate"


Op = Annotated[Union[Adjust, SetOp, AddOp, RemoveOp, KeepOp, MacroOp], Field(discriminator="op")]
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
    return {"domain": domain.name, "source": source, "components": comps, "attributes": attrs,
            "operations": ops, "macros": macros, "relations": rel}


def check_program(spec: dict, ops: list) -> None:
    """Type-check a program against the spec (targets, kinds, units); ProgramError names the problem."""
    attrs, comps = spec["attributes"], spec["components"]
    macros = {m["name"] for m in spec["macros"]}
    for i, o in enumerate(ops):
        where = f"operation {i + 1} ({o.op})"
        if isinstance(o, (Adjust, SetOp)):
            if o.target not in attrs:
                raise ProgramError(f"{where}: unknown target {o.target!r}; the {spec['domain']} has "
                                   + ", ".join(attrs))
            a = attrs[o.target]
            if a["kind"] == "bool" and isinstance(o, Adjust):
                raise ProgramError(f"{where}: {o.target} is on/off; use add or remove")
            if o.unit and o.unit != a["unit"]:
                raise ProgramError(f"{where}: {o.target} is measured in {a['unit']}, not {o.unit}")
        elif isinstance(o, (AddOp, RemoveOp, KeepOp)):
            if o.target not in comps:
                raise ProgramError(f"{where}: unknown component {o.target!r}; components: " + ", ".join(comps))
            if not isinstance(o, KeepOp) and f"{o.target}.present" not in attrs:
                raise ProgramError(f"{where}: the {o.target} cannot be added or removed")
        elif isinstance(o, MacroOp) and o.name not in macros:
            raise ProgramError(f"{where}: unknown macro {o.name!r}; macros: " + (", ".join(sorted(macros)) or "none"))


# ----------------------------------------------------------------------------- compiler


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


def expand_macros(spec: dict, ops: list) -> list:
    out = []
    table = {m["name"]: m for m in spec["macros"]}
    for o in ops:
        if isinstance(o, MacroOp):
            for e in table[o.name]["edits"]:
                d = e["dir"] if o.dir == "+" else ("-" if e["dir"] == "+" else "+")
                out.append(Adjust(target=e["target"], dir=d, mag=o.mag, said=f"{o.name} → {e['target']}"))
        else:
            out.append(o)
    return out


def compile_program(spec: dict, state: dict[str, float], ops: list, calibration: float = 1.0) -> Compiled:
    """Interface program → new parameter state, or refusals (state unchanged). Targeted: only named
    parameters change, plus dependents moved by relations."""
    check_program(spec, ops)
    attrs = spec["attributes"]
    ops = expand_macros(spec, ops)
    kept = sorted({o.target for o in ops if isinstance(o, KeepOp)})
    new = dict(state)
    res = Compiled(state=dict(state), kept=kept)
    touched: dict[str, str] = {}
    for o in ops:
        if isinstance(o, KeepOp):
            continue
        tgt = o.target if isinstance(o, (Adjust, SetOp)) else f"{o.target}.present"
        a = attrs[tgt]
        lo, hi = a["range"]
        if isinstance(o, Adjust):
            step = o.amount if o.amount is not None else a["steps"][o.mag] * calibration
            val = new[tgt] + (step if o.dir == "+" else -step)
            why = f"{'+' if o.dir == '+' else '−'}{fmt_value(step, a['unit'])}" + \
                  (f" ({o.mag})" if o.amount is None else "")
        elif isinstance(o, SetOp):
            val, why = o.value, f"set to {fmt_value(o.value, a['unit'])}"
        else:
            val, why = (1.0 if isinstance(o, AddOp) else 0.0), o.op
        if a["kind"] == "int":
            val = float(round(val))
        if o.said:
            why += f", from “{o.said}”"
        key = "+" if val > new[tgt] else "-" if val < new[tgt] else "="
        if tgt in touched and touched[tgt] != key:
            res.refused.append(f"contradiction: {tgt} is asked to change in two opposite ways")
            continue
        touched[tgt] = key
        if a["component"] in kept:
            res.refused.append(f"contradiction: the {a['component']} is to be kept as is, but {tgt} would change")
            continue
        if not (lo - 1e-9 <= val <= hi + 1e-9):
            res.refused.append(f"{tgt} would become {fmt_value(val, a['unit'])}, outside its range "
                               f"{fmt_value(lo, a['unit'])}–{fmt_value(hi, a['unit'])}")
            continue
        new[tgt] = val
        res.changes.append(Change(tgt, state[tgt], val, why))
    _solve_relations(spec, new, touched, kept, res)
    if res.refused:
        res.changes, res.notes = [], res.notes
        return res
    res.state = new
    res.changes = [c for c in res.changes if abs(c.after - c.before) > 1e-12]
    return res


def _solve_relations(spec: dict, new: dict, touched: dict, kept: list, res: Compiled) -> None:
    """Enforce lhs ≤ factor·rhs + offset by moving the side nobody asked for (a dependent)."""
    attrs = spec["attributes"]
    for r in spec["relations"]:
        lhs, rhs, f, off = r["lhs"], r["rhs"], r["factor"], r["offset"]
        if new[lhs] <= f * new[rhs] + off + 1e-9:
            continue
        for dep, val in ((lhs, f * new[rhs] + off), (rhs, (new[lhs] - off) / f)):
            a = attrs[dep]
            if dep in touched or a["component"] in kept or not (a["range"][0] <= val <= a["range"][1]):
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
    attrs = spec["attributes"]
    return [f"{c.target}: {fmt_value(c.before, attrs[c.target]['unit'])} → "
            f"{fmt_value(c.after, attrs[c.target]['unit'])} ({c.why})" for c in compiled.changes]

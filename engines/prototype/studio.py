"""Interpret → compile → model → export: one instruction round trip (the tab's Apply).

``interpret`` is the entry point: the designer's words (or a hand-edited interface program) go through a
mapper, the interface compiler (or the flat patch for the baseline), the parametric model program and the
Boolean union; the result carries the program in designer terms, the modelling commands, validity checks
and GLB / STL references. On any refusal the model stays as it was.
"""
from __future__ import annotations

import time

from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from . import geometry as G
from .domains import Domain, get_domain
from .interface import ProgramError, apply_patch, compile_program, describe, dump_program, parse_program
from .language import not_english
from .overall import values as overall_values
from .params import InterpretParams

EMPTY_MESSAGE = ("nothing to do: the instruction is empty — describe a change, e.g. “make the seat a bit wider” "
                 "or “lower the whole lamp by a fifth”")


class Realised(BaseModel):
    watertight: bool
    in_range: bool
    relations_ok: bool
    volume_cm3: float
    bodies: int
    commands: list[str]

    @property
    def valid(self) -> bool:
        return self.watertight and self.in_range and self.relations_ok and self.bodies == 1


class InterpretResult(BaseModel):
    domain: str
    mapper: str
    instruction: str
    program: list[dict]  # the interface program (interface mappers) — empty for flat
    patch: dict[str, float]  # the raw patch (flat mappers)
    described: list[str]  # executed edits in designer terms
    state_before: dict[str, float]
    state_after: dict[str, float]
    changed: list[str]  # parameter ids that changed
    changed_components: list[str]
    refused: list[str]
    warnings: list[str]
    notes: list[str]
    overall_before: dict[str, float] = {}  # the product's overall dimensions (height, width, …, capacity)
    overall_after: dict[str, float] = {}
    realised: Realised
    glb: str | None
    stl: str | None
    timings_ms: dict[str, float]


def check_state(domain: Domain, state: dict[str, float] | None) -> dict[str, float]:
    if not state:
        return domain.defaults()
    unknown = sorted(set(state) - set(domain.by_id))
    missing = sorted(set(domain.by_id) - set(state))
    if unknown or missing:
        raise ValueError(f"state does not fit the {domain.name}: unknown {unknown}, missing {missing}")
    for pid, v in state.items():
        p = domain.by_id[pid]
        if not (p.lo - 1e-9 <= v <= p.hi + 1e-9):
            raise ValueError(f"state: {pid} = {v} is outside {p.lo}–{p.hi} {p.unit}")
    return dict(state)


def realise(domain: Domain, state: dict[str, float], highlight=(), ctx: JobContext | None = None,
            export: bool = False) -> tuple[Realised, str | None, str | None]:
    model = domain.build(state)
    solid = G.union([m for ms in model.parts.values() for m in ms])
    bodies = len(solid.split(only_watertight=False)) if len(solid.faces) else 0
    rel_ok = all(r.holds(state) for r in domain.relations)
    in_range = all(p.lo - 1e-9 <= state[p.id] <= p.hi + 1e-9 for p in domain.params)
    r = Realised(watertight=bool(solid.is_watertight), in_range=in_range, relations_ok=rel_ok,
                 volume_cm3=float(solid.volume), bodies=bodies,
                 commands=model.commands + [f"union({len(model.commands)} solids) → 1 body"])
    glb = stl = None
    if export and ctx is not None:
        glb = ctx.artifacts.save_bytes(f"{domain.name}.glb", G.to_glb(model.parts, set(highlight)))
        stl = ctx.artifacts.save_bytes(f"{domain.name}.stl", G.to_stl(solid))
    return r, glb, stl


def map_instruction(p: InterpretParams, domain: Domain, state: dict[str, float]):
    """→ (program ops | None, patch | None, warnings)."""
    from .specs import get_spec

    if p.mapper == "interface":
        from .encoder import get_encoder
        from .mappers import InterfaceMapper

        m = InterfaceMapper(get_spec(domain.name, p.spec_source), get_encoder()).map(p.instruction)
        return m.ops, None, m.warnings
    if p.mapper == "flat":
        from .encoder import get_encoder
        from .mappers import FlatMapper

        m = FlatMapper(domain.name, get_encoder()).map(p.instruction, state)
        return None, m.patch, m.warnings
    from .llm import LLMMapper

    m = LLMMapper(domain.name, get_spec(domain.name, p.spec_source), flat=p.mapper == "llm_flat").map(
        p.instruction, state)
    return (None, m.patch, m.warnings) if p.mapper == "llm_flat" else (m.ops, None, m.warnings)


def interpret(params: InterpretParams | dict, ctx: JobContext | None = None) -> InterpretResult:
    p = validate(InterpretParams, params)
    ctx = ctx or LocalContext()
    from .specs import get_spec

    t0 = time.perf_counter()
    domain = get_domain(p.domain)
    before = check_state(domain, p.state)
    spec = get_spec(domain.name, p.spec_source)
    foreign = not_english(p.instruction) if p.instruction.strip() and not p.program.strip() else None
    if p.program.strip():
        ops, patch, warnings = parse_program(p.program), None, []
    elif foreign:
        ops, patch, warnings = [], None, []
    elif p.instruction.strip():
        ctx.progress(0.1, f"mapping with {p.mapper}")
        ops, patch, warnings = map_instruction(p, domain, before)
    else:
        ops, patch, warnings = [], None, [EMPTY_MESSAGE]
    t1 = time.perf_counter()
    refused, notes, described = [], [], []
    if patch is not None:
        after = apply_patch(domain, before, patch)
        described = [f"{domain.by_raw[k].raw} = {v:.3g}" for k, v in patch.items() if k in domain.by_raw]
    else:
        try:
            comp = compile_program(spec, before, ops, p.calibration)
        except ProgramError as e:
            comp = None
            refused = [str(e)]
        if comp is not None:
            refused, notes, described = comp.refused, comp.notes, describe(spec, comp)
        after = comp.state if comp is not None and comp.ok else dict(before)
    if foreign:
        refused = [foreign]
    if not ops and patch is None and p.instruction.strip() and not warnings and not foreign:
        warnings.append("found nothing to change in this instruction")
    changed = [k for k in before if abs(after[k] - before[k]) > 1e-12]
    comps = sorted({domain.by_id[k].component for k in changed})
    t2 = time.perf_counter()
    ctx.progress(0.6, "building the model")
    real, glb, stl = realise(domain, after, comps, ctx, export=p.export)
    t3 = time.perf_counter()
    ctx.progress(1.0, "done")
    return InterpretResult(
        domain=domain.name, mapper=p.mapper, instruction=p.instruction,
        program=dump_program(ops) if ops else [], patch=patch or {}, described=described,
        state_before=before, state_after=after, changed=changed, changed_components=comps,
        refused=refused, warnings=warnings, notes=notes, realised=real, glb=glb, stl=stl,
        overall_before=overall_values(domain.name, before), overall_after=overall_values(domain.name, after),
        timings_ms={"interpret": 1000 * (t1 - t0), "compile": 1000 * (t2 - t1), "model+export": 1000 * (t3 - t2)})

"""Model programs, the interface compiler and the metrics: no encoder needed (fast)."""
from __future__ import annotations

import numpy as np
import pytest

from engines.prototype.domains import DOMAINS, get_domain
from engines.prototype.interface import (AddOp, Adjust, KeepOp, MacroOp, ProgramError, SetOp, apply_patch,
                                         compile_program, parse_program)
from engines.prototype.metrics import score
from engines.prototype.specs import hand_spec, induced_spec
from engines.prototype.studio import realise


@pytest.mark.parametrize("name", list(DOMAINS))
def test_random_in_range_models_are_single_watertight_solids(name):
    d = DOMAINS[name]
    rng = np.random.default_rng(1)
    n = 0
    while n < 6:
        st = {p.id: float(rng.uniform(p.lo, p.hi)) if p.kind == "float" else float(rng.integers(p.lo, p.hi + 1))
              for p in d.params}
        if not all(r.holds(st) for r in d.relations):
            continue
        r, _, _ = realise(d, st)
        assert r.watertight and r.bodies == 1 and r.volume_cm3 > 0, (name, st)
        n += 1


def test_default_models_issue_modelling_commands():
    cmds = get_domain("chair").build(get_domain("chair").defaults()).commands
    assert any(c.startswith("backrest: loft") for c in cmds) and sum(c.startswith("legs: cylinder") for c in cmds) == 4
    assert any("sweep" in c for c in get_domain("mug").build(get_domain("mug").defaults()).commands)


def test_compiler_is_targeted_and_calibrated():
    s, d = hand_spec("chair"), get_domain("chair")
    c = compile_program(s, d.defaults(), [Adjust(target="backrest.height", dir="+", mag="slight"),
                                          Adjust(target="backrest.tilt", dir="+", mag="large")])
    assert c.ok and {ch.target for ch in c.changes} == {"backrest.height", "backrest.tilt"}
    assert c.state["backrest.height"] == 40 + 3 and c.state["backrest.tilt"] == 8 + 12
    assert all(c.state[k] == v for k, v in d.defaults().items() if not k.startswith("backrest"))
    half = compile_program(s, d.defaults(), [Adjust(target="seat.height", dir="-", mag="moderate")], calibration=0.5)
    assert half.state["seat.height"] == pytest.approx(45 - 2.5)


def test_untouched_components_keep_identical_geometry():
    d = get_domain("chair")
    c = compile_program(hand_spec("chair"), d.defaults(), [Adjust(target="backrest.tilt", dir="+")])
    a, b = d.build(d.defaults()), d.build(c.state)
    for comp in ("seat", "legs"):
        assert all(np.array_equal(x.vertices, y.vertices) for x, y in zip(a.parts[comp], b.parts[comp]))
    assert not np.array_equal(a.parts["backrest"][0].vertices, b.parts["backrest"][0].vertices)


@pytest.mark.parametrize("name", list(DOMAINS))
def test_every_single_edit_is_local(name):
    d, s = DOMAINS[name], hand_spec(name)
    base = d.build(d.defaults())
    for p in d.params:
        if p.kind != "float":
            continue
        c = compile_program(s, d.defaults(), [Adjust(target=p.id, dir="+", mag="slight")])
        if not c.ok:
            continue
        reach = set().union(*(d.reached_by(ch.target) for ch in c.changes))
        other = d.build(c.state)
        for comp, meshes in base.parts.items():
            if comp not in reach:
                assert all(np.array_equal(a.vertices, b.vertices) for a, b in zip(meshes, other.parts[comp])), (p.id, comp)


def test_out_of_range_and_contradictions_are_refused_and_leave_the_model_unchanged():
    s, d = hand_spec("chair"), get_domain("chair")
    c = compile_program(s, d.defaults(), [SetOp(target="seat.height", value=90)])
    assert not c.ok and "outside its range 35 cm–60 cm" in c.refused[0] and c.state == d.defaults()
    c = compile_program(s, d.defaults(), [Adjust(target="seat.height", dir="+"), KeepOp(target="seat")])
    assert not c.ok and "kept as is" in c.refused[0] and c.state == d.defaults()
    c = compile_program(s, d.defaults(), [Adjust(target="seat.width", dir="+"), Adjust(target="seat.width", dir="-")])
    assert not c.ok and "contradiction" in c.refused[0]


def test_relations_move_dependents_not_named_parameters():
    s, d = hand_spec("mug"), get_domain("mug")
    c = compile_program(s, d.defaults(), [Adjust(target="handle.size", dir="+", mag="large")])
    assert c.ok and c.state["handle.size"] == 9 and c.state["body.height"] == pytest.approx(10.5)
    assert any("handle must fit" in n for n in c.notes)
    c = compile_program(s, d.defaults(), [Adjust(target="handle.size", dir="+", mag="large"), KeepOp(target="body")])
    assert not c.ok and "violates a constraint" in c.refused[0]


def test_macros_and_structure_ops():
    s, d = hand_spec("chair"), get_domain("chair")
    c = compile_program(s, d.defaults(), [MacroOp(name="sturdier", mag="slight"), AddOp(target="armrests")])
    assert c.state["legs.thickness"] == 4.0 and c.state["seat.thickness"] == 4.5 and c.state["armrests.present"] == 1


def test_program_errors_name_the_problem():
    with pytest.raises(ProgramError, match="not valid JSON"):
        parse_program("[{'op': 'adjust'")
    with pytest.raises(ProgramError, match="op"):
        parse_program([{"op": "explode", "target": "seat"}])
    s, d = hand_spec("mug"), get_domain("mug")
    with pytest.raises(ProgramError, match="unknown target 'handle.sise'"):
        compile_program(s, d.defaults(), parse_program('[{"op":"adjust","target":"handle.sise","dir":"+"}]'))
    with pytest.raises(ProgramError, match="cannot be added or removed"):
        compile_program(s, d.defaults(), [AddOp(target="body")])


def test_flat_patch_is_clipped_and_unconstrained():
    d = get_domain("chair")
    st = apply_patch(d, d.defaults(), {"seat_h": 99.0, "nonsense": 1.0})
    assert st["seat.height"] == 60 and sum(st[k] != v for k, v in d.defaults().items()) == 1


def test_metrics_exact_over_under():
    d = get_domain("chair")
    b = d.defaults()
    gold = [{"target": "backrest.height", "dir": "+", "mag": "moderate"}]
    assert score(d, gold, b, dict(b, **{"backrest.height": 48.0})).exact
    assert not score(d, gold, b, dict(b, **{"backrest.height": 43.0})).exact  # wrong degree
    s = score(d, gold, b, dict(b, **{"backrest.height": 48.0, "seat.height": 46.0}))
    assert s.over and not s.under and not s.exact
    s = score(d, gold, b, b)
    assert s.under and not s.over
    assert score(d, [{"target": "seat.height", "dir": "+", "value": 50}], b, dict(b, **{"seat.height": 50.1})).exact


def test_bundled_induced_specs_cover_the_model_programs():
    for name, d in DOMAINS.items():
        s = induced_spec(name)
        assert set(s["attributes"]) == {p.id for p in d.params}
        assert s["source"] == "induced" and s["induction"]["quality"]["coverage"] >= 0.8
        assert all(len(e["synonyms"]) >= 1 for e in s["components"].values())

"""Issue 30, third round: each case is a failure of the second held-out set's first run (a development set since
these fixes). Amounts taken off and signed notes (precision), comparatives and particles naming a dimension
(dimensions), keep forms (scope), parts asked for without an add verb (coverage), intensity words (intensity) and
adjective lists whose noun comes at the end (the mapper's look-ahead)."""
from __future__ import annotations

import pytest

from engines.prototype import fresh
from engines.prototype import language as L
from engines.prototype import overall as O
from engines.prototype.coverage import added_part, bare_part
from engines.prototype.domains import get_domain
from engines.prototype.intensity import magnitude
from engines.prototype.precision import quantity
from engines.prototype.scope import is_keep, keeps_the_rest

from .helpers import changed
from .helpers import run as _run

SOURCES = ["induced", "hand"]


def _changed(domain, c):
    return set(changed(domain, c))


# ----------------------------------------------------------------------------- precision: change vs target


@pytest.mark.parametrize("text,value,relative,sign,direction", [
    ("can we take 5 mm off the seat thickness?", 0.5, True, None, "-"),  # an amount taken off: a decrease
    ("trim 3 cm off the chair's total depth", 3.0, True, None, "-"),
    ("put the seat 20 cm off the ground", 20.0, False, None, None),  # where it sits: a target
    ("seat depth: +2 cm", 2.0, True, "+", None),  # a signed note after a colon is a change
    ("shade height: 24 cm", 24.0, False, None, None),  # an unsigned one is a target
    ("take the cap height down to zero", 0.0, False, None, None),  # "zero" is a number, without a unit
])
def test_amounts_taken_off_signed_notes_and_zero(text, value, relative, sign, direction):
    q = quantity(text)
    assert (q.value, q.relative, q.sign, q.dir) == (pytest.approx(value), relative, sign, direction), q


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,target,after", [
    ("chair", "can we take 5 mm off the seat thickness?", "seat.thickness", 3.5),
    ("chair", "seat depth: +2 cm", "seat.depth", 44.0),
    ("chair", "legs: 10% slimmer", "legs.thickness", 3.15),  # the comparative names the dimension
    ("stool", "make the seat 38 cm across", "seat.radius", 19.0),  # across a round part: its diameter
    ("stool", "bring the seat down two inches", "seat.height", 65 - 5.08),  # down: the seat's height
])
def test_changes_and_targets_reach_the_right_value_and_nothing_else(encoder, source, domain, text, target, after):
    m, c = _run(domain, text, encoder, source)
    assert c.ok, (c.refused, m.warnings)
    assert c.state[target] == pytest.approx(after) and _changed(domain, c) == {target}


@pytest.mark.parametrize("source", SOURCES)
def test_a_target_of_zero_is_refused_with_the_valid_range(encoder, source):
    _, c = _run("bottle", "take the cap height down to zero", encoder, source)
    assert not c.ok and "cap.height" in c.refused[0] and "0.8 cm–4 cm" in c.refused[0]
    assert c.state == get_domain("bottle").defaults()


@pytest.mark.parametrize("source", SOURCES)
def test_overall_changes_taken_off_or_widened(encoder, source):
    d = get_domain("chair").defaults()
    _, c = _run("chair", "trim 3 cm off the chair's total depth", encoder, source)
    assert c.ok and O.values("chair", c.state)["overall.depth"] == pytest.approx(O.values("chair", d)["overall.depth"] - 3)
    _, c = _run("chair", "widen the whole chair by 5%", encoder, source)
    assert c.ok and O.values("chair", c.state)["overall.width"] == pytest.approx(
        1.05 * O.values("chair", d)["overall.width"], rel=1e-3)


# ----------------------------------------------------------------------------- intensity and multi-clause


def test_intensity_words():
    assert magnitude("a good deal wider") == ("large", "a good deal")
    assert magnitude("a tiny bit shorter") == ("slight", "a tiny bit")
    assert magnitude("wider")[0] == "moderate"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,after", [
    ("chair", "seat a touch lower and a good deal wider", {"seat.height": 43.0, "seat.width": 55.0}),
    ("chair", "lower, wider, slightly deeper seat", {"seat.height": 40.0, "seat.width": 50.0, "seat.depth": 44.0}),
    ("chair", "seat to 48 cm and the backrest 5 cm taller", {"seat.height": 48.0, "backrest.height": 45.0}),
    ("chair", "a thinner, more upright backrest", {"backrest.thickness": 2.0, "backrest.tilt": 2.0}),
    ("stool", "seat up a little, legs a lot thicker", {"seat.height": 68.0, "legs.thickness": 4.5}),
    ("mug", "slightly thicker walls and a slimmer handle", {"body.wall": 0.45, "handle.thickness": 0.6}),
    ("bottle", "a fatter body, a tiny bit shorter", {"body.radius": 4.6, "body.height": 17.0}),
])
def test_every_clause_keeps_its_part_attribute_and_intensity(encoder, source, domain, text, after):
    m, c = _run(domain, text, encoder, source)
    assert c.ok, (c.refused, m.warnings)
    assert {k: pytest.approx(v) for k, v in after.items()} == {k: c.state[k] for k in after}
    assert _changed(domain, c) == set(after)


# ----------------------------------------------------------------------------- scope: keep forms


def test_keep_forms_split_and_recognised():
    assert L.clauses("a wider bottle with the same capacity and the same height") == \
        ["a wider bottle", "with the same capacity", "the same height"]
    assert L.clauses("a roomier seat without the stool taking up more floor space") == \
        ["a roomier seat", "without the stool taking up more floor space"]
    assert is_keep("don't make the chair any deeper") and not is_keep("make the chair deeper")
    assert keeps_the_rest("leave everything else as it is") and not keeps_the_rest("leave the stem alone")


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,edited,kept", [
    ("chair", "recline the backrest more but don't make the chair any deeper", ("backrest.tilt", "+"), "overall.depth"),
    ("stool", "a roomier seat without the stool taking up more floor space", ("seat.radius", "+"), "overall.width"),
    ("mug", "make the handle stick out further but keep the overall width", ("handle.reach", "+"), "overall.width"),
])
def test_keep_forms_are_solved(encoder, source, domain, text, edited, kept):
    d = get_domain(domain).defaults()
    m, c = _run(domain, text, encoder, source)
    assert c.ok, (c.refused, m.warnings)
    p, sign = edited
    assert (c.state[p] > d[p]) if sign == "+" else (c.state[p] < d[p])
    assert O.values(domain, c.state)[kept] == pytest.approx(O.values(domain, d)[kept])


@pytest.mark.parametrize("source", SOURCES)
def test_everything_else_keeps_only_what_is_not_edited(encoder, source):
    _, c = _run("bottle", "make the neck narrower, leave everything else as it is", encoder, source)
    assert c.ok and _changed("bottle", c) == {"neck.radius"} and c.state["neck.radius"] < 1.3


@pytest.mark.parametrize("source", SOURCES)
def test_keeps_that_cannot_hold_together_are_refused_with_the_reason(encoder, source):
    m, c = _run("bottle", "a wider bottle with the same capacity and the same height", encoder, source)
    assert {o.target for o in m.ops if o.op == "keep"} == {"overall.capacity", "overall.height"}
    assert not c.ok and "cannot keep overall.capacity" in c.refused[0] and c.state == get_domain("bottle").defaults()


# ----------------------------------------------------------------------------- coverage: parts asked for


def test_parts_asked_for_without_an_add_verb():
    assert bare_part("a usb port in the base") == "usb port"
    assert bare_part("and a cup holder") == "cup holder"
    assert bare_part("a little wider") is None and bare_part("make the base wider") is None
    assert added_part("could the stool get a back to lean on") == "back"
    assert added_part("get a bit taller") is None


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,said", [
    ("lamp", "taller stem, wider shade and a USB port in the base", "the lamp has no usb port; it has: base (radius, height)"),
    ("mug", "a slightly bigger handle and a non-slip rubber foot", "the mug has no material setting; it has: body (height"),
    ("stool", "could the stool get a back to lean on?", "the stool has no back; it has: seat (height, radius, thickness)"),
])
def test_a_part_the_product_lacks_refuses_the_whole_instruction_by_name(encoder, source, domain, text, said):
    _, c = _run(domain, text, encoder, source)
    assert not c.ok and c.refused[0].startswith(said) and c.state == get_domain(domain).defaults()


@pytest.mark.parametrize("source", SOURCES)
def test_look_alikes_are_not_refused(encoder, source):
    _, c = _run("chair", "thicker seat cushion, same seat height", encoder, source)  # the cushion is the seat here
    assert c.ok and _changed("chair", c) == {"seat.thickness"} and c.state["seat.thickness"] > 4
    _, c = _run("stool", "take the footrest off", encoder, source)  # the separated particle: a removal
    assert c.ok and _changed("stool", c) == {"footrest.present"} and c.state["footrest.present"] == 0.0
    _, c = _run("chair", "give the seat a cushion", encoder, source)  # but asked for as a part, it is refused
    assert not c.ok and "cushion" in c.refused[0]


# ----------------------------------------------------------------------------- no regressions


@pytest.mark.parametrize("name", ["heldout", "heldout2", "fresh"])
def test_the_former_held_out_sets_and_the_development_set_stay_solved(encoder, name):
    """The first and second held-out sets are development sets since their first runs' failures were fixed (their
    first-run figures stay 65.5% and 77.5%); this guards the fixes. The claim is judged on the newest recorded set."""
    r = fresh.run("interface", "induced", encoder, rows=fresh.load(name))
    assert r["accuracy"] >= 0.95 and r["refusal_correct"] == 1.0 and r["false_refusals"] == 0, \
        [(o["text"], o["why"]) for o in r["rows"] if not o["ok"]]

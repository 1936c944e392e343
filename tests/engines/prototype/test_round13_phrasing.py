"""Issue 30, thirteenth round: each rule fixes a failure kind of held-out set 13's first run (a development set since
these fixes) — informal shorthand and dictation. The cases are fresh wording that expresses the rule — no sentence of
a held-out set — and assert the parsed text, the edit (what changed, to which value) or the refusal, with the derived
and the hand-written spec."""
from __future__ import annotations

import pytest

from engines.prototype import language as L
from engines.prototype import shorthand as S

from .helpers import edit as _edit
from .helpers import run as _run

SOURCES = ["induced", "hand"]


# ----------------------------------------------------------------------------- lists in shorthand


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    # " / ", "•", " & ", " + " before a word, " n ": separate edits
    ("chair", "seat ht 44 / backrest ht 50", {"seat.height": 44.0, "backrest.height": 50.0}),
    ("mug", "handle bigger & body wider", {"handle.size": 7.5, "body.radius": 4.7}),
    ("stool", "seat 2cm higher + legs 3mm thicker", {"seat.height": 67.0, "legs.thickness": 3.3}),
    ("chair", "seat wider n legs thicker", {"seat.width": 50.0, "legs.thickness": 4.5}),
    # a unit said once for the whole list
    ("chair", "all in cm: seat height 47 / seat depth 44", {"seat.height": 47.0, "seat.depth": 44.0}),
    ("lamp", "base radius 11 / stem height 40 — all cm", {"base.radius": 11.0, "stem.height": 40.0}),
    # a part named once before a colon goes with each item that starts with its amount
    ("chair", "seat: 47 cm high, 50 cm wide", {"seat.height": 47.0, "seat.width": 50.0}),
    ("mug", "body: • 11 cm tall • 4 cm radius", {"body.height": 11.0, "body.radius": 4.0}),
])
def test_a_shorthand_list_is_several_edits(domain, text, changed, source, encoder):
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


@pytest.mark.parametrize("text,out", [
    # a separator before no edit (no amount, comparative, keep or verb of change) is no list
    ("seat depth x0.8 / the tall testers hit the rail", "/ the tall testers"),
    # a role before a colon is left to language.ROLE, not spread over the list
    ("feedback: 47 cm seat height, 40 cm deep", "feedback: 47 cm"),
])
def test_what_is_no_list_stays(text, out):
    assert out in S.lists(text)


# ----------------------------------------------------------------------------- abbreviations


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    ("bottle", "neck dia 3cm", {"neck.radius": 1.5}),
    ("lamp", "base diam. 22 cm", {"base.radius": 11.0}),
    ("lamp", "shade btm radius 17 cm", {"shade.bottom_radius": 17.0}),
    ("stool", "legs ~3mm thicker", {"legs.thickness": 3.3}),
    ("chair", "seat ht 47 w/o any other change", {"seat.height": 47.0}),
    ("chair", "seat depth 44 pls", {"seat.depth": 44.0}),
    # a dimension's letter after its part before no number
    ("chair", "overall width 50 cm, but seat w and backrest tilt unchanged", None),
])
def test_an_abbreviation_is_its_word(domain, text, changed, source, encoder):
    if changed is None:  # the width comes from the seat, which is kept: a contradiction, refused
        m, c = _run(domain, text, encoder, source)
        assert not c.ok, m.trace
        return
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


@pytest.mark.parametrize("text,out", [
    ("armrest ht 20 w/o any other change", "armrest height 20 without any other change"),
    ("the lid doesnt fit rn", "the lid doesnt fit right now"),
    ("if u can, approx 5 cm", "if you can, about 5 cm"),
    # a u-profile grip keeps its letter
    ("a u-profile grip", "a u-profile grip"),
])
def test_abbreviations_in_words(text, out):
    assert S.shorthand(text) == out


# ----------------------------------------------------------------------------- typos of dimension words


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    ("chair", "seat heigth 47 cm", {"seat.height": 47.0}),
    ("mug", "handle thicknes 1 cm", {"handle.thickness": 1.0}),
    ("bottle", "body diamter 9 cm", {"body.radius": 4.5}),
    ("bottle", "neck hieght 6 cm", {"neck.height": 6.0}),
])
def test_a_typo_of_a_dimension_word_is_that_word(domain, text, changed, source, encoder):
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


@pytest.mark.parametrize("word", ["radios", "lengths", "heights", "widths", "weight", "wider", "handles", "bottoms",
                                  "shoulders", "depths", "thickest", "bitten", "either", "breadth"])
def test_a_real_word_is_no_typo(word):
    assert S.typos(word) == word


@pytest.mark.parametrize("typo,word", [("heigth", "height"), ("hieght", "height"), ("widht", "width"),
                                       ("thicknes", "thickness"), ("diamter", "diameter"), ("raduis", "radius"),
                                       ("capacty", "capacity")])
def test_one_edit_from_a_dimension_word(typo, word):
    assert S.typos(typo) == word


# ----------------------------------------------------------------------------- dictated numbers


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    ("chair", "make the seat width fifty point five centimetres", {"seat.width": 50.5}),
    ("lamp", "stem twenty two point five centimetres tall", {"stem.height": 22.5}),
    ("chair", "legs forty two mil thick", {"legs.thickness": 4.2}),
    ("mug", "wall six mil thick", {"body.wall": 0.6}),
    ("stool", "ring, like, three centimetres lower", {"footrest.height": 22.0}),
])
def test_a_dictated_number(domain, text, changed, source, encoder):
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


@pytest.mark.parametrize("text,out", [
    ("two point five litres", "2.5 litres"),
    ("one point two five", "1.25"),
    ("seven point zero five", "7.05"),
    ("thirty mil", "thirty mm"),
    ("at this point five legs", "at this point five legs"),
])
def test_dictated_decimals(text, out):
    assert S.shorthand(text) == out


# ----------------------------------------------------------------------------- colloquial degrees and phrasing


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    ("lamp", "shade a lil shorter", {"shade.height": 16.5}),
    ("bottle", "cap tiny bit taller", {"cap.height": 1.8}),
    # a non-native comparative: "more wide of 2 cm"
    ("lamp", "the base more wide of 2 cm", {"base.radius": 11.0}),
])
def test_a_colloquial_degree(domain, text, changed, source, encoder):
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


def test_a_heading_naming_the_whole_product_is_overall():
    assert L.normalise("the whole lamp, height x1.2") == "overall height 1.2x"


# ----------------------------------------------------------------------------- a statement after an edit


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("domain,text,changed", [
    ("chair", "seat 48 cm high, the kids cant reach the table right now", {"seat.height": 48.0}),
    ("mug", "body radius 5 cm, 4.5 feels cramped", {"body.radius": 5.0}),
    ("bottle", "neck radius 1.2 cm, was 1", {"neck.radius": 1.2}),
    ("lamp", "stem 5 cm taller, taller people keep bumping the shade", {"stem.height": 35.0}),
    # what the thing does now ("it sags", "they wobble"), after an edit said by a degree too
    ("stool", "seat thickness up a tad, it sags in the middle", {"seat.thickness": 3.5}),
    ("chair", "legs 5mm thicker, they wobble on gravel", {"legs.thickness": 4.0}),
])
def test_a_statement_after_an_edit_is_its_reason(domain, text, changed, source, encoder):
    assert _edit(domain, text, encoder, source)[0] == pytest.approx(changed, abs=1e-3)


def test_a_keep_after_an_edit_is_no_statement():
    t = S.informal_reasons("seat 48 cm high, keep the backrest as is")
    assert "keep the backrest" in t


@pytest.mark.parametrize("source", SOURCES)
def test_paper_is_a_material(source, encoder):
    from .helpers import assert_refused_by_name

    assert_refused_by_name("lamp", "make the shade out of paper", encoder, source, "material")

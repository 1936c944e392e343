"""Goals that imply a number (tenth round): a place the product must fit, with its own size, is a reference
measure, not a part to add.

* "beneath a 45 cm cabinet with 3 cm to spare": the whole is the reference less the clearance (42 cm);
* "the seat 28 cm below the 75 cm worktop": the reference less the amount (at 47 cm);
* "1 cm narrower across than the 10 cm slot": the reference less (or, for a larger comparative, plus) the amount
  (9 cm across);
* "to sit inside a 28 cm drawer, make it 26 cm overall": where the instruction says its own amount besides, the
  reference only explains it and is dropped.

``language.normalise`` rewrites these before the instruction is split into clauses; a place named without a size
("a shelf for spices") is left to the refusal check. Nothing here knows a product.
"""
from __future__ import annotations

import re

from .precision import NUMBER, UNITS, spell_out

_NUM = r"(\d+(?:\.\d+)?) ?(mm|cm|m|in|inch(?:es)?|centimet(?:re|er)s?|millimet(?:re|er)s?)"
_PLACE = (r"(?:[a-z]+[ -]){0,2}(?:ledge|shelf|shelves|counter|countertop|worktop|desk|table|bar|holder|niche|opening|"
          r"gap|cupboard|cabinet|slot|alcove|drawer|box|windowsill|sill|recess|nook|compartment|rack)")
_REF = r"(?:an?|the|that|this|my|our|your|their) " + _NUM + r"[ -](?:tall |high |wide |deep )?" + _PLACE + r"\b"
_INTO = r"(?:under|underneath|beneath|below|in|into|inside|through)"
# "beneath a 45 cm cabinet with 3 cm to spare"
CLEARANCE = re.compile(_INTO + r" " + _REF + r",? (?:with|leaving|allowing) (?:an? )?" + _NUM +
                       r" (?:of )?(?:clearance|room|space|gap|margin|to spare|play)")
# "28 cm below the 75 cm worktop"
BELOW_REF = re.compile(_NUM + r" (under|underneath|beneath|below|above|over) " + _REF)
# "1 cm narrower across than the 10 cm slot (it drops into)"
THAN_REF = re.compile(_NUM + r" (narrower|smaller|less|shorter|lower|wider|bigger|larger|more|taller|higher)"
                      r"(?P<dim> across| wide| tall| high| deep| in diameter)? than " + _REF +
                      r"(?: (?:that |which )?(?:it|they) (?:slips?|fits?|goes?|sits?|stands?|slides?) "
                      r"(?:into|inside|in|under|through)\b)?")
# "inside a 28 cm drawer" beside an amount of its own
AT_REF = re.compile(r"\s*" + _INTO + r" " + _REF)
SMALLER = ("narrower", "smaller", "less", "shorter", "lower", "under", "underneath", "beneath", "below")


def _cm(n: str, unit: str) -> float:
    return float(n) * UNITS.get(unit, ("cm", 1.0))[1]


def resolve(text: str) -> str:
    """The instruction with each sized place it must fit read as the amount it implies (see the module)."""
    if not re.search(_PLACE, text):
        return text
    t = spell_out(text)
    if not re.search(_REF, t):
        return text

    def clearance(m):
        return f"{_cm(m.group(1), m.group(2)) - _cm(m.group(3), m.group(4)):g} cm in total"

    def below(m):
        n, ref = _cm(m.group(1), m.group(2)), _cm(m.group(4), m.group(5))
        return f"at {ref - n if m.group(3) in SMALLER else ref + n:g} cm"

    def than(m):
        n, ref = _cm(m.group(1), m.group(2)), _cm(m.group(5), m.group(6))
        return f"{ref - n if m.group(3) in SMALLER else ref + n:g} cm{m.group('dim') or ''}"

    t = CLEARANCE.sub(clearance, t)
    t = BELOW_REF.sub(below, t)
    t = THAN_REF.sub(than, t)
    if (m := AT_REF.search(t)) and NUMBER.search(t[:m.start()] + t[m.end():]) and \
            any(x.group(3) for x in NUMBER.finditer(t[:m.start()] + t[m.end():])):
        t = AT_REF.sub("", t)  # "inside a 28 cm drawer, … 26 cm overall": the amount said is the goal
    return re.sub(r"\s+", " ", t).strip()

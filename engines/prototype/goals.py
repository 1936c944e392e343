"""Goals that imply a number (tenth round): a place the product must fit, with its own size, is a reference
measure, not a part to add.

* "beneath a 45 cm cabinet with 3 cm to spare": the whole is the reference less the clearance (42 cm);
* "the seat 28 cm below the 75 cm worktop": the reference less the amount (at 47 cm);
* "1 cm narrower across than the 10 cm slot": the reference less (or, for a larger comparative, plus) the amount
  (9 cm across);
* "to sit inside a 28 cm drawer, make it 26 cm overall": where the instruction says its own amount besides, the
  reference only explains it and is dropped.

Twelfth round: a statement about a place or a container — its size or not — before a request with its own amount is
that request's reason, dropped with its connective: "the crate is 50 cm wide inside, which means the seat width must
shrink to 46 cm" (46, not 50), "the van's shelf is 70 cm high: seat height to 64 cm", "the cupboards are low; make it
9 cm tall"; so is a heading that names the place to fit ("to fit the crate: …") or the occasion of the version ("for
the export model: …", "for the half-litre version: …").

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
# twelfth round: where a product is packed, shipped, stocked or sold
_CONTAINER = (r"(?:carton|crate|case|cage|van|truck|lorry|container|tube|packaging|package|parcel|machine|pallet|"
              r"trolley|cart|boot|trunk|lift|elevator|doorway|door|tray|mailer|envelope|bag|hold|cupboards?|cabinets?|"
              r"shelves|racks|drawers|boxes|crates|cartons|niches|slots|counters|desks|tables)")
_STATE_VERB = (r"(?:is|are|was|were|takes|take|leaves|leave|gives|give|holds|hold|measures|measure|has|have|fits|fit|"
               r"allows|allow|accepts|accept|only|sits|sit|stands|stand|offers|offer|tops out|maxes out)")
# "the crate is 50 cm wide inside, which means …", "the van's shelf is 70 cm high: …", "the cupboards are low; …"
PLACE_REASON = re.compile(r"(?:^|(?<=[.;!?] ))(?:the|our|their|a|an|this|that|my|your|its|most|standard|typical|"
                          r"some|many|all)\s+(?:[\w'-]+\s+){0,3}?(?:" + _PLACE + "|" + _CONTAINER + r")(?:'s)?\b"
                          r"(?:\s+[\w'-]+){0,5}?\s+" + _STATE_VERB + r"\b(?:[^.;:!?]|\.(?=\d))*?"
                          r"(?:\s*(?:[;:!?]|\.(?!\d))|,\s*(?:so(?: that)?|which means|meaning|therefore|hence|and so|thus)\b)\s*")
# "to fit the flat-pack crate: …", "for the export model: …", "for the half-litre version, …"
HEAD_REASON = re.compile(r"^(?:(?:in order )?to (?:fit|go|slide|slip|sit)(?: (?:in|into|inside|under|through|on))? "
                         r"(?:the|a|an|our|their|that|this)\s+(?:[\w'-]+\s+){0,3}?(?:" + _PLACE + "|" + _CONTAINER +
                         r")\b|for (?:the|our|a|an|this) (?:[\w'-]+\s+){0,3}?(?:export|version|market|edition|launch|"
                         r"range|variant|release|model|order|client|customer|retailer|catalogue|brand|run|batch)s?\b)"
                         r"\s*(?::|,|—|-{1,2}(?= ))\s*")
SMALLER = ("narrower", "smaller", "less", "shorter", "lower", "under", "underneath", "beneath", "below")


def _cm(n: str, unit: str) -> float:
    return float(n) * UNITS.get(unit, ("cm", 1.0))[1]


def place_reasons(text: str) -> str:
    """A statement or heading about a place, a container or the version's occasion before a request with its own
    amount is dropped (see the module)."""
    def drop(m):
        rest = text[m.end():]
        return "" if re.search(r"\d", spell_out(rest)) and not re.search(r"\b(?:it|them|that|those)\b\s*[.?!]?$", rest) \
            else m.group(0)
    return PLACE_REASON.sub(drop, HEAD_REASON.sub(drop, text))


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

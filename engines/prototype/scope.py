"""Targeted control's scope: the "keep" clauses that say what must not change.

A keep clause names a component, a parameter or an overall dimension that the compiler must hold (by solving
for other parameters, or by refusing with the reason). Designers say it in many ways: "keep the seat",
"leave the base and the stem alone", "same overall depth", "hold the capacity constant", "while the overall
height stays put", "… that still holds the same amount", and as a negated change: "don't let the chair get
any taller overall", "no wider than now".
"""
from __future__ import annotations

import re

COMPARATIVES = (r"(?:taller|higher|shorter|lower|wider|broader|narrower|deeper|shallower|thicker|thinner|bigger|"
                r"larger|smaller|longer)")
# "don't let the chair get any taller", "not any wider", "no deeper than now"
NEGATED_CHANGE = (r"don'?t let|do not let|never let|without letting|not (?:get |become |be )?any " + COMPARATIVES
                  + r"|no " + COMPARATIVES + r" than")
KEEP = re.compile(r"\b(keep|keeping|leave|leaving|don'?t (?:touch|change|alter|modify)|do not (?:touch|change|alter|modify)|"
                  r"without (?:touching|changing|altering)|preserve|preserving|maintain|maintaining|hold on to|"
                  r"as (?:it )?is|unchanged|untouched|constant|fixed|alone|same as before|the same|same|"
                  r"where (?:it|they) (?:is|are)|stays?|stay put|" + NEGATED_CHANGE + r")\b")
# Where a keep scope starts inside a clause: the clause is split there ("a slimmer bottle that still holds the
# same amount" → "a slimmer bottle" + "that still holds the same amount").
KEEP_LEAD = re.compile(r"\b(without (?:touching|changing)|keep|keeping|leave|don'?t (?:touch|change|let)|"
                       r"do not (?:touch|change|let)|(?:that|which|yet) still)\b")


def is_keep(clause: str) -> bool:
    return bool(KEEP.search(clause))

"""Targeted control's scope: the "keep" clauses that say what must not change.

A keep clause names a component, a parameter or an overall dimension that the compiler must hold (by solving
for other parameters, or by refusing with the reason). Designers say it in many ways: "keep the seat",
"leave the base and the stem alone", "same overall depth", "hold the capacity constant", "while the overall
height stays put", "… that still holds the same amount", "a wider bottle with the same capacity", as a
negated change: "don't let the chair get any taller overall", "don't make the chair any deeper", "no wider
than now", and as a gerund after "without": "without the stool taking up more floor space".

"Leave everything else as it is" keeps *the rest* — what the instruction does not edit. The compiler changes
only the named parameters and their constraint dependents anyway, so such a clause adds no constraint (it
must not keep the part the same instruction edits).
"""
from __future__ import annotations

import re

COMPARATIVES = (r"(?:taller|higher|shorter|lower|wider|broader|narrower|deeper|shallower|thicker|thinner|bigger|"
                r"larger|smaller|longer)")
# "don't let the chair get any taller", "don't make it any deeper", "not any wider", "no deeper than now":
# "any" before a comparative only occurs under a negation (or a question), so it marks the negated change.
NEGATED_CHANGE = (r"don'?t let|do not let|never let|without letting|any " + COMPARATIVES
                  + r"|no " + COMPARATIVES + r" than"
                  # seventh round: "the chair no wider overall" ("no longer" is "not any more", no comparison)
                  + r"|no (?!longer\b)" + COMPARATIVES + r"\b")
# A modal or auxiliary denying a change: "the footprint shouldn't change", "the bottle's height can't change",
# "the stool mustn't move", "the capacity must not go down".
DENIED_CHANGE = (r"(?:shouldn'?t|should not|mustn'?t|must not|can'?t|cannot|can not|won'?t|will not|doesn'?t|"
                 r"does not|needn'?t|need not|may not) (?:be )?(?:change|changed|move|moved|vary|differ|grow|shrink|"
                 r"go (?:up|down))")
# "neither the seat nor the legs may change": both named things are kept (seventh round)
NEITHER_NOR = (r"neither\b[\w' ]*?\bnor\b[\w' ]*?\b(?:(?:may|can|should|must|will|is to|are to|could)(?: not)? (?:be )?)?"
               r"(?:change|changes|changed|move|moves|moved|vary|varies|differ|differs|grow|grows|shrink|shrinks|"
               r"go (?:up|down)|get (?:any )?" + COMPARATIVES + r")")
# "holding no more and no less than today": exactly what it is (seventh round)
NO_MORE_NO_LESS = r"no more,? (?:and |or |but )?no less|no less,? (?:and |or |but )?no more"
# A measure locked in place: "the tilt locked", "with the capacity frozen" (seventh round)
LOCKED = r"locked|locked in|frozen|pinned(?: down)?|set in stone"
# An equal amount: "it should still hold just as much", "just as tall as now".
AS_MUCH = (r"(?:just|exactly|every bit) as (?:much|tall|high|wide|deep|big|long|thick)|"
           # eighth round: "it holds as much as before"
           r"as much as (?:now|before|today|at present|currently|it does(?: now)?|they do(?: now)?)")
# eighth round: "the bench mustn't take up more room": a footprint that may not grow
NO_MORE_ROOM = (r"(?:mustn'?t|must not|shouldn'?t|should not|can'?t|cannot|won'?t|will not|doesn'?t|does not|not|never) "
                r"take up (?:any )?more (?:floor|space|room)")
# "without" + a gerund: "without touching the seat", "without the stool taking up more floor space"
WITHOUT_GERUND = r"without (?:[\w']+ ){0,3}?[a-z]+ing\b"
# "hold the overall depth", "with its capacity held where it is": holding a measure is keeping it (but "hold more",
# "holds 350 ml" say how much a vessel takes: no article after the verb).
HOLD = (r"hold(?:s|ing)? (?:the|its|their)\b(?!(?: [a-z]+)? (?:more|less)\b)|held\b|"
        r"what (?:it|they) (?:is|are|holds?|has|have) (?:now|today|at the moment)")
KEEP = re.compile(r"\b(keep|keeps|kept|keeping|leave|leaving|" + HOLD + r"|don'?t (?:touch|change|alter|modify)|do not (?:touch|change|alter|modify)|"
                  r"" + WITHOUT_GERUND + r"|preserve|preserving|maintain|maintaining|hold on to|"
                  r"as (?:it )?is|unchanged|untouched|constant|fixed(?! (?:to|on|onto|in|at)\b)|alone|same as before|"
                  r"the same|same|"
                  r"where (?:it|they) (?:is|are)|stays?|staying|stay put|" + NEGATED_CHANGE + "|" + DENIED_CHANGE + "|" + AS_MUCH + "|"
                  + NEITHER_NOR + "|" + NO_MORE_NO_LESS + "|" + LOCKED + "|" + NO_MORE_ROOM + r")\b")
# Where a keep scope starts inside a clause: the clause is split there ("a slimmer bottle that still holds the
# same amount" → "a slimmer bottle" + "that still holds the same amount"; "a wider bottle with the same
# capacity" → "a wider bottle" + "with the same capacity").
KEEP_LEAD = re.compile(r"\b(" + WITHOUT_GERUND + r"|keep|keeping|leave|don'?t (?:touch|change|let|make)|"
                       r"do not (?:touch|change|let|make)|(?:that|which|yet|so (?:that )?(?:it|they)) still|"
                       r"(?:that|which) (?:holds?|keeps?) exactly|(?:that|which) (?:still )?holds? the same\b|"
                       r"with (?:the |its |their )?same)\b")
# The rest of the product: "leave everything else as it is", "keep all else the same".
REST = re.compile(r"\b(?:everything|anything|all) else\b|\bthe rest\b(?! of)")


# A multiple compared with the present size is no keep: "twice as long as it is now", "half as tall as it is".
FACTOR_COMPARED = re.compile(r"\b(?:twice|double|half|thrice|(?:\d+(?:\.\d+)?|two|three|four) ?(?:x|times)) as [a-z]+ as "
                             r"(?:it|they|that|this)(?: is| are|'s)?(?: now| currently| at the moment| today)?\b|"
                             # tenth round: "to a third of what it is now": a share of the present size
                             r"\b(?:half|(?:a|one|two|three|four|five|six|seven|eight|nine) (?:half|thirds?|quarters?|"
                             r"fifths?|tenths?)|\d+(?:\.\d+)? ?(?:%|percent|per cent)) of what (?:it|they) (?:is|are|has|have)"
                             r"(?: now| currently| at the moment| today)?\b")


def is_keep(clause: str) -> bool:
    return bool(KEEP.search(FACTOR_COMPARED.sub(" ", clause)))


def keeps_the_rest(clause: str) -> bool:
    """Does this keep clause keep only what the instruction does not edit ("leave everything else as it is")?"""
    return is_keep(clause) and bool(REST.search(clause))

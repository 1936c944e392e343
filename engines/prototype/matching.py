"""A value read from another setting (tenth round): "as deep as the backrest is tall", "as thick as the legs",
"half the height of the stem", "twice the neck's height", "till it matches the top radius".

``read`` splits such a clause into what is edited (``target``: the words before the comparison, with the dimension
word that names its attribute, if any), the factor and what is read (``source``, with its dimension word). The
mapper resolves both against the interface and emits a ``match`` operation, which the compiler evaluates on the
state it edits. Nothing here knows a product.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

FACTORS = {"twice": 2.0, "double": 2.0, "half": 0.5, "three times": 3.0, "four times": 4.0, "thrice": 3.0,
           "a third of": 1 / 3, "a quarter of": 0.25, "two thirds of": 2 / 3, "three quarters of": 0.75}
_F = r"(?P<f>" + "|".join(sorted(map(re.escape, FACTORS), key=len, reverse=True)) + r"|\d+(?:\.\d+)? times)"
_ADJ = r"(?:tall|high|wide|deep|thick|long|broad)"
_NOUN = r"(?:height|width|depth|thickness|radius|diameter|size|length|span)"
_PART = r"(?P<s>(?:the |its |their )?(?!it\b|they\b|them\b|now\b|before\b|today\b)[a-z]+(?: [a-z]+)?)"

# "the seat as deep as the backrest is tall", "the seat as thick as the legs"
AS_AS = re.compile(r"^(?P<t>.*?)\s*\b(?:exactly |just |precisely )?(?:" + _F + r" )?as (?P<adj>" + _ADJ + r") as "
                   + _PART + r"(?: is (?P<adj2>" + _ADJ + r"))?$")
# "the shade at half the height of the stem"
NOUN_OF = re.compile(r"^(?P<t>.*?)\s*\b" + _F + r" (?:the |its )?(?P<noun>" + _NOUN + r") of " + _PART + r"$")
# "the shoulder twice the neck's height"
POSSESSIVE = re.compile(r"^(?P<t>.*?)\s*\b" + _F + r" (?:the |its )?(?P<s>[a-z]+)'s (?P<noun>" + _NOUN + r")$")
# "the bottom radius should shrink till it matches the top radius", "… to match the foot"
MATCHES = re.compile(r"^(?P<t>.*?)\s*\b(?:until|till|so that|so) (?:it|they) match(?:es)? " + r"(?P<s>.+)$|"
                     r"^(?P<t2>.*?)\s*\bto match (?P<s2>(?:the |its )?[a-z]+(?: [a-z]+)?)$")


@dataclass(frozen=True)
class Reading:
    target: str  # the words of what is edited ("make the seat")
    target_dim: str | None  # the dimension word of the target, if said ("deep")
    source: str  # the words of what is read ("the backrest", "the top radius")
    source_dim: str | None  # the dimension word of the source ("tall"), if said
    factor: float


def _factor(f: str | None) -> float:
    if not f:
        return 1.0
    m = re.fullmatch(r"(\d+(?:\.\d+)?) times", f)
    return float(m.group(1)) if m else FACTORS[f]


def _one(source: str, target: str) -> str:
    """"the shade's top opening as wide as its bottom one": "one" stands for the target's noun (eleventh round)."""
    qualified = re.findall(r"\b(?:top|bottom|upper|lower|front|rear|back|inner|outer|left|right)\s+([a-z]+)", target)
    head = qualified or re.findall(r"[a-z]+", target)
    return re.sub(r"\bones?$", head[-1], source) if head and re.search(r"\b[a-z]+ ones?$", source) else source


def read(clause: str) -> Reading | None:
    """The clause read as a value taken from another setting, or None."""
    cl = clause.strip()
    if m := AS_AS.match(cl):
        return Reading(m.group("t"), m.group("adj"), _one(m.group("s"), m.group("t")), m.group("adj2") or m.group("adj"),
                       _factor(m.group("f")))
    if m := NOUN_OF.match(cl) or POSSESSIVE.match(cl):
        return Reading(m.group("t"), m.group("noun"), m.group("s"), m.group("noun"), _factor(m.group("f")))
    if m := MATCHES.match(cl):
        t, s = (m.group("t"), m.group("s")) if m.group("t") is not None else (m.group("t2"), m.group("s2"))
        return Reading(t, None, s, None, 1.0)
    return None

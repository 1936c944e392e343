"""Numbers written as words (tenth round): "fifty-two", "seventeen", "seven hundred and fifty", "nine and a half",
"an inch and a half", "seven tenths".

``precision.spell_out`` turns a numeral into digits where it measures something (before a unit, a percent sign or
"per cent"); a count without a unit ("three legs") and a bare fraction ("a fifth taller") stay its callers' to read.
Nothing here knows a product.
"""
from __future__ import annotations

import re

ONES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
         "seventeen": 17, "eighteen": 18, "nineteen": 19}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}

_ONES = "|".join(k for k in ONES if k != "zero")
_TEENS = "|".join(TEENS)
_TENS = "|".join(TENS)
# below a hundred: "fifty-two", "fifty two", "seventeen", "seven"
_SMALL = rf"(?:(?:{_TENS})(?:[ -](?:{_ONES}))?|{_TEENS}|{_ONES})"
# a numeral: "seven hundred (and) fifty", "a hundred", "fifty-two", "zero"; with an optional "and a half"
NUMERAL = rf"(?:(?:(?:{_ONES}|a) hundred(?: (?:and )?{_SMALL})?)|{_SMALL}|zero)(?:[ -]and[ -]a[ -]half)?"
NUMERAL_RE = re.compile(rf"\b{NUMERAL}\b")


def value(words: str) -> float:
    """The value of a numeral matched by ``NUMERAL`` ("seven hundred and fifty" → 750, "nine and a half" → 9.5)."""
    w = words.replace("-", " ")
    half = 0.5 if re.search(r"\band a half$", w) else 0.0
    w = re.sub(r"\s*and a half$", "", w)
    cur = 0
    for t in w.split():
        if t == "and":
            continue
        if t == "hundred":
            cur = (cur or 1) * 100
        elif t == "a":
            cur = 1
        else:
            cur += ONES.get(t, 0) + TEENS.get(t, 0) + TENS.get(t, 0)
    return float(cur) + half


def digits(x: float) -> str:
    return f"{x:g}"


def numerals_before(text: str, follow: str) -> str:
    """Each numeral directly before ``follow`` (a regex: a unit, "per cent", "more <unit>") → digits; a hyphen
    between the numeral and what follows ("a seventeen-inch shade") becomes a space."""
    return re.sub(rf"\b({NUMERAL})[ -](?={follow})", lambda m: digits(value(m.group(1))) + " ", text)


def unit_and_a_half(text: str, unit: str) -> str:
    """"an inch and a half" → "1.5 inch", "a millimetre and a half" → "1.5 millimetre"."""
    return re.sub(rf"\ban? ({unit}) and a half\b", r"1.5 \1", text)


# "seven tenths of", "three eighths": a fraction with any numerator in words
FRACTION_NUMERATOR = {**ONES, **TEENS, "a": 1}

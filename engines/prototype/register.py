"""The engineering register and an iteration history's way of talking (eleventh round).

``language.normalise`` rewrites these before an instruction is split into clauses; nothing here knows a product.

The engineering register:

* "± 0", "+/- 0", "+0" with nothing else is a keep ("total height ± 0": unchanged); a tolerance after an amount
  ("45 cm ± 5 mm") is no second amount;
* a dimension abbreviated to its letter before its number ("H 70, R 20", "T -5 mm") is that dimension; the
  diameter sign is the word diameter wherever it stands ("widen the base Ø by 2 cm", "-3 mm in Ø");
* a unit (and a dimension) glossed once in brackets for unit-less numbers ("w 50, d 40 (all cm)", "base 3 → 4 (heights,
  cm)") goes with each of them;
* an arrow is "to" ("neck → 5"), or "from … to" after a number ("35 mm → 40 mm"); "x1.25" is 1.25 times; "incl." is
  "including".

An iteration history:

* a correction inside one sentence — "38 cm, no wait, 41 cm", "33 cm, correction: 35", "2 cm higher, no, 3 cm", "10°,
  hmm, actually 12°" — keeps the last value (with the first one's unit and comparative where the correction omits
  them);
* a comparison with the current build only says what the amount is relative to: "1 cm up from the current value",
  "vs. the current sample: double it"; "shoulder 3 cm today; set 4" is a change from the present value to the new
  one.
"""
from __future__ import annotations

import re

from .precision import _UNIT_ALT

_N = r"[-+]?\d+(?:\.\d+)?"
_U = r"(?:" + _UNIT_ALT + r")"

# "+/- 0", "± 0 cm", "+0": no change at all ("held at ± 0": unchanged)
PLUS_MINUS_ZERO = re.compile(r"(?:\s*(?:\bat\b|\bby\b|\bis\b|=|:))?\s*(?:±|\+/-|\+-|\+ ?/ ?-|\+)\s*0(?:\.0+)?(?:\s*" + _U
                             + r"(?![\w]))?(?![\d.])")
# "45 cm ± 5 mm", "+/- 2 mm": a tolerance after an amount
TOLERANCE = re.compile(r"(?<=[\d\w°\"])\s*(?:±|\+/-|\+-)\s*\d+(?:\.\d+)?\s*(?:" + _UNIT_ALT + r"|%)?(?![\w])")
# "W 50", "T -5 mm", "R 20", "D: 40": a dimension's letter before its number
LETTERS = {"w": "width", "h": "height", "d": "depth", "r": "radius", "t": "thickness"}
LETTER = re.compile(r"(?<![\w.'/-])([whdrt])(?:\s*[:=]\s*|\s+)(?=[-+]?\s?\d)")
DIAMETER_SIGN = re.compile(r"\s*(?<![a-z])[ø⌀](?![a-z])\s*")
# "neck → 5", "35 mm → 40 mm"
ARROW = r"(?:→|⟶|⇒|->|=>)"
FROM_ARROW = re.compile(r"(?<![\w.])(" + _N + r"\s*" + _U + r"?)\s*" + ARROW + r"\s*")
ARROW_RE = re.compile(r"\s*" + ARROW + r"\s*")
TIMES = re.compile(r"(?<![\w.])[x×](\d+(?:\.\d+)?)(?![\w.])")  # "x1.25": 1.25 times
INCL = re.compile(r"\bincl\b\.?")
# "(all cm)", "(cm, heights)", "(in mm)": a unit, and a dimension, for every unit-less number
GLOSS = re.compile(r"\s*\((?P<g>(?:(?:all|each|both|in|every one|values?|numbers?)\s+)*(?:[a-z°]+)(?:\s*[,;/]\s*"
                   r"(?:all\s+)?[a-z°]+)?)\)")
DIMS = {"height": "height", "heights": "height", "width": "width", "widths": "width", "depth": "depth",
        "depths": "depth", "radius": "radius", "radii": "radius", "diameter": "diameter", "diameters": "diameter",
        "thickness": "thickness", "thicknesses": "thickness"}
_DIM_WORD = re.compile(r"\b(?:height|width|depth|radius|diameter|thickness|tall|high|wide|deep|thick|across|long)\b")
BARE_NUMBER = re.compile(r"(?<![\w.])(" + _N + r")(?!\s*(?:" + _UNIT_ALT + r"|%|x\b|×|times\b|per\b|\.\d))(?![\w.])")


def _gloss(text: str) -> str:
    m = None
    for g in GLOSS.finditer(text):
        words = [w for w in re.split(r"[\s,;/]+", g.group("g")) if w]
        units = [w for w in words if re.fullmatch(_U, w)]
        dims = [DIMS[w] for w in words if w in DIMS]
        if units and all(w in DIMS or re.fullmatch(_U, w) or w in ("all", "each", "both", "in", "every", "one",
                                                                     "value", "values", "number", "numbers")
                         for w in words):
            m = (g, units[0], dims[0] if dims else None)
            break
    if m is None:
        return text
    g, unit, dim = m
    text = text[:g.start()] + text[g.end():]
    parts = re.split(r"([,;])", text)
    for i, p in enumerate(parts):
        if not BARE_NUMBER.search(p):
            continue
        p = BARE_NUMBER.sub(lambda x: f"{x.group(1)} {unit}", p)
        if dim and not _DIM_WORD.search(p):
            p = re.sub(r"^(\s*(?:the |its )?[a-z]+)(?=\s+(?:to|at|from)\b|\s*[:=]|\s+[-+]?\d)", r"\1 " + dim, p, count=1)
        parts[i] = p
    return "".join(parts)


def engineering(text: str) -> str:
    """The instruction with the engineering register's signs and abbreviations said in words (see the module)."""
    t = FROM_ARROW.sub(r"from \1 to ", text)
    t = ARROW_RE.sub(" to ", t)
    t = _gloss(t)
    t = PLUS_MINUS_ZERO.sub(" unchanged", t)
    t = TOLERANCE.sub("", t)
    t = DIAMETER_SIGN.sub(" diameter ", t)
    t = LETTER.sub(lambda m: LETTERS[m.group(1)] + " ", t)
    t = TIMES.sub(r"\1x", t)
    t = INCL.sub("including", t)
    return re.sub(r"\s+", " ", t).strip()


# ----------------------------------------------------------------------------- an iteration history

_CMP = (r"(?:lower|higher|taller|shorter|wider|narrower|deeper|shallower|thicker|thinner|longer|bigger|smaller|"
        r"slimmer|more|less|up|down|in|out)")
_CORRECTION = (r"(?:no,?\s*wait|no,?\s*sorry|no(?=\s*[,:;])|wait|sorry(?:,?\s*i\s+mean[t]?)?|i\s+mean[t]?|correction|"
               r"(?:hmm+,?\s*)?actually|or\s+rather|make\s+(?:that|it)|scratch\s+that|i\s+should\s+say)")
# "38 cm, no wait, 41 cm", "2 cm higher, no, 3 cm", "33 cm, correction: 35"
CORRECTION = re.compile(r"(?<![\w.])(?P<n1>" + _N + r")\s*(?P<u1>" + _U + r"(?![\w]))?(?P<c1>\s+" + _CMP +
                        r"\b)?\s*[,;:—-]?\s*" + _CORRECTION + r"(?:\s*[,;:—-]?\s*" + _CORRECTION + r")*\s*[,;:—-]?\s*"
                        r"(?P<n2>" + _N + r")\s*(?P<u2>" + _U + r"(?![\w]))?(?P<c2>\s+" + _CMP + r"\b)?")
_NOW = r"(?:today|now|currently|at present|at the moment|as built|on the current build|in the current build)"
# "shoulder 3 cm today; set 4": from the present value to the new one
NOW_THEN = re.compile(r"(?<![\w.])(?P<n1>" + _N + r"\s*" + _U + r"?)\s+" + _NOW + r"\s*[,;:—-]\s*(?:but\s+|so\s+)?"
                      r"(?:(?:please\s+)?(?:set(?: it)?|make(?: it)?|change(?: it)?|go|take(?: it)?|bring(?: it)?|"
                      r"move(?: it)?|we want|i want|want)\s+)?(?:to\s+|at\s+)?(?=[-+]?\d)")
# "1 cm up from the current value", "vs. the current sample: double it": relative to the present state
CURRENT = re.compile(r"\s*,?\s*\b(?:from|relative to|compared (?:to|with)|vs\.?|versus|over|against|on)\s+"
                     r"(?:(?:the|its|this|our|what)\s+)?(?:current|present|existing|today's|actual)"
                     r"(?:\s+(?:figure|value|number|one|build|version|iteration|design|model|sample|size|setting|state|"
                     r"measurement|dimension|height|width|depth|radius|thickness|angle|splay|tilt|prototype|mock-?up|"
                     r"spec|ratio))?\b(?!\s*[-+]?\d)|\s*,?\s*\b(?:relative to|compared (?:to|with)|vs\.?|versus) (?:now|today)\b")


def history(text: str) -> str:
    """The instruction with its corrections resolved and its comparisons with the current build dropped."""
    def corrected(m):
        unit = m.group("u2") or m.group("u1") or ""
        cmp = m.group("c2") or m.group("c1") or ""
        return " ".join(x for x in (m.group("n2"), unit, cmp.strip()) if x)
    t = text
    for _ in range(3):  # "28, no, 30, no wait, 32": each correction in turn
        t2 = CORRECTION.sub(corrected, t)
        if t2 == t:
            break
        t = t2
    t = NOW_THEN.sub(lambda m: f"from {m.group('n1').strip()} to ", t)
    t = CURRENT.sub("", t)
    return re.sub(r"\s+", " ", t).strip()

"""Semantic precision: the quantities in a designer's words (the paper's second gap, "slightly" vs exact values).

A clause's quantity is one of

* a **ratio** — a factor (new = old × f: "twice as tall", "halve", "to 80%") or a relative change whose
  direction the clause gives ("by 20%", "a fifth taller");
* a **number with a unit** — signed, in cm / mm / in / m, degrees, ml / cl / l; written in digits or words
  ("minus one centimetre", "a quarter of an inch", "a half-litre bottle");
* and, for a number, whether it is a **target** ("to 50 cm", "50 cm tall", "a thickness of 4 cm", "down to
  zero") or a **change** ("by 5 cm", "5 cm taller", "an extra 1.5 cm", "+1 cm", "seat depth: +2 cm", "add 2 cm
  to", "raise it 6 cm", "down 3 mm", "take 5 mm off" — a decrease).

Nothing here knows a product; the interface decides which attribute the quantity applies to.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .numerals import FRACTION_NUMERATOR, ONES, TEENS, TENS, numerals_before, unit_and_a_half

UNITS = {"mm": ("cm", 0.1), "millimetre": ("cm", 0.1), "millimetres": ("cm", 0.1), "millimeter": ("cm", 0.1),
         "millimeters": ("cm", 0.1), "cm": ("cm", 1.0), "centimetre": ("cm", 1.0), "centimetres": ("cm", 1.0),
         "centimeter": ("cm", 1.0), "centimeters": ("cm", 1.0), "m": ("cm", 100.0), "metre": ("cm", 100.0),
         "metres": ("cm", 100.0), "meter": ("cm", 100.0), "meters": ("cm", 100.0), "in": ("cm", 2.54),
         "inch": ("cm", 2.54), "inches": ("cm", 2.54), '"': ("cm", 2.54), "°": ("deg", 1.0), "deg": ("deg", 1.0),
         "degree": ("deg", 1.0), "degrees": ("deg", 1.0), "ml": ("ml", 1.0), "millilitre": ("ml", 1.0),
         "millilitres": ("ml", 1.0), "milliliter": ("ml", 1.0), "milliliters": ("ml", 1.0), "cl": ("ml", 10.0),
         "l": ("ml", 1000.0), "litre": ("ml", 1000.0), "litres": ("ml", 1000.0), "liter": ("ml", 1000.0),
         "liters": ("ml", 1000.0),
         # twelfth round: US fluid ounces ("12 fl oz", "sixteen fluid ounces"), one token (``us_units``)
         "floz": ("ml", 29.5735)}
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
NUMBER = re.compile(r"(?<![\w.])([-−+]?)\s?(\d+(?:\.\d+)?)\s*(" + _UNIT_ALT + r")?(?![\w])")
# Spelled-out units a number word may precede ("one centimetre", "an inch"); symbols need digits.
UNIT_WORDS = [u for u in UNITS if len(u) > 2]
# eleventh round: one table of number words, numerals.py's (its ones, teens and tens, and "hundred"; it was a subset)
WORD_NUMBERS = {**ONES, **TEENS, **TENS, "hundred": 100}
SIGN_WORDS = {"minus": "-", "negative": "-", "plus": "+"}

FRACTION_DEN = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "tenth": 10, "tenths": 10,
                "eighth": 8, "eighths": 8}
FRACTION_NUM = FRACTION_NUMERATOR  # tenth round: any numerator in words ("seven tenths", "three eighths")
COMPARATIVE = (r"(?:more|less|taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|longer|"
               r"bigger|smaller|larger|further|farther|closer|nearer|slimmer|broader|squatter|up|down|"
               # seventh round: the other comparatives of size ("a centimetre chunkier")
               r"chunkier|fatter|skinnier|beefier|bulkier|stubbier|stumpier|roomier|curvier|flatter|plumper|steeper)")
FACTOR_WORDS = [(r"\bone and a half times\b|\bhalf again\b|"
                 # tenth round: "taking half as much again", "half as tall again"
                 r"\bhalf as (?:much|many|big|large|tall|high|wide|long|deep|thick) again\b", 1.5), (r"\b(?:twice|double|doubled|two times)\b", 2.0),
                (r"\b(?:triple|tripled|thrice|three times)\b", 3.0),
                (r"\b(?:four times|quadruple|quadrupled|fourfold|four-fold)\b", 4.0),
                (r"\b(?:halve|halved|in half|half as|half the|half its|half of)\b", 0.5)]
PERCENT = re.compile(r"(?<![\w.])([-−+]?)(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)")
FRACTION = re.compile(r"\b(?:(a|one|two|three|four|five|six|seven|eight|nine)[ -])?"
                      r"(half|halves|thirds?|quarters?|fourths?|fifths?|sixths?|eighths?|tenths?)\b")
MULTIPLE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:x|×|times)(?![\w])")

# What makes a number a target or a change. A target: "to / at / of / as / be / is / :" right before it, or a
# dimension adjective right after it ("50 cm tall"). A change: "by", an added amount ("an extra", "another"),
# a comparative or "more" after it, an explicit sign, or a verb of change in front ("raise the seat 6 cm",
# "add 2 cm to the height", "the stem diameter down 3 mm").
HEDGE = r"(?:about|around|roughly|approximately|nearly|almost|exactly|just|only|some|maybe)"
TARGET_BEFORE = re.compile(r"(?:\b(?:to|at|of|as|be|is|are|measures?|measuring)|[:=])\s*(?:an?\s+)?(?:" + HEDGE + r"\s*)?$")
TARGET_AFTER = re.compile(r"\s*(?:tall|high|long|wide|thick|deep|across|in (?:diameter|radius|height|width|depth)|"
                          r"in total|overall)\b")
CHANGE_BEFORE = re.compile(r"\b(?:by|an? extra|another|an additional|additional|(?:an?\s+)?further)\s*(?:" + HEDGE
                           + r"\s*)?$")
CHANGE_AFTER = re.compile(r"\s*(?:\w+\s+)?(?:" + COMPARATIVE + r"|extra)\b")
# "take 5 mm off the seat", "trim 3 cm off the depth": an amount taken off is a decrease — but "20 cm off the
# ground / floor" is where something sits (a target).
# "take 5 mm out of the cap height": an amount taken out of a measure is a decrease too.
OFF = re.compile(r"\s*(?:off\b(?!\s+(?:of\s+)?(?:the\s+)?(?:ground|floor|table|desk|deck)\b)|out of\b)")
# "the backrest should gain 5 cm", "lose 2 cm": an amount lost or gained is a change in that direction
LOSE_GAIN = re.compile(r"\b(lose|loses|losing|lost|shed|sheds|gain|gains|gaining|gained)\s+(?:an?\s+)?(?:" + HEDGE
                       + r"\s*)?$")
# "cut 100 ml from the capacity", "knock 2 cm off": an amount a verb of removal takes from a measure is a decrease
# (seventh round; "take … off / out of" was already one through ``OFF``).
REMOVE_VERB = re.compile(r"\b(?:cut|cuts|cutting|take|takes|taking|remove|removing|subtract|subtracting|trim|trimming|"
                         r"shave|shaving|knock|knocking|chop|chopping|lop|lopping|deduct|deducting|shed|skim|"
                         r"pare)\s+(?:(?:an?|another|some)\s+)?(?:" + HEDGE + r"\s*)?$")
# ninth round: "shave off 5 mm", "trim away 2 cm": the particle before the amount
OFF_BEFORE = re.compile(r"\b(?:cut|take|trim|shave|knock|chop|lop|pare|sand|plane|file|grind)\s+(?:off|away|down)\s+"
                        r"(?:(?:an?|another|some)\s+)?(?:" + HEDGE + r"\s*)?$")
# ninth round: "bring it in 4 mm", "push the handle out 5 mm": a part moved in or out by the amount
MOVED_BEFORE = re.compile(r"\b(?:bring|pull|push|move|draw|tuck|nudge|shift|set|pull|step)\b(?: [\w']+){0,3}? "
                          r"(?:in|out|inwards?|outwards?|back|forwards?)\s+(?:" + HEDGE + r"\s*)?$")
# ninth round: "add" with a part as its object ("add armrests 22 cm up"): the amount that follows is the new part's
ADD_PART = re.compile(r"\b(?:add|adding)\s+(?:an?\s+|the\s+|some\s+|a pair of\s+|two\s+)?"
                      r"(?!(?:more|extra|another|about|around|roughly|some|an?|the)\b)[a-z]{3,}s?\s*$")
FROM = re.compile(r"\s*(?:from|off|out of)\b")
# "stem height from 30 to 36 cm": the first number is the present value, the second the target.
FROM_TO = re.compile(r"\bfrom\s+(?:about\s+|around\s+)?[-−+]?\d+(?:\.\d+)?\s*(?:" + _UNIT_ALT + r")?\s+(?:(?:up|down) )?"
                     r"to\s+(?=(?:about\s+|"
                     r"around\s+)?[-−+]?\d)")
# "multiply the base radius by 1.5", "divide the height by 2": a factor said with the arithmetic verb.
# (eleventh round: "scale the cup height by 1.2", "scaled by a factor of 1.2"; an amount with a unit is no factor)
MULTIPLY = re.compile(r"\b(multipl(?:y|ied|ying)|divid(?:e|ed|ing)|scal(?:e|ed|ing))\b[^,;]*?\bby\s+(?:a factor of\s+)?"
                      r"(\d+(?:\.\d+)?)(?![\w.%])(?!\s*(?:percent|per cent))(?!\s*(?:" + _UNIT_ALT + r")(?![\w]))")
# "seat width: -5 cm": after an attribute's own noun and a colon, a minus sign is the value's sign (a form
# field listing a value); a plus sign is only ever written on a change ("seat depth: +2 cm"), and a part's name
# before the colon ("seat: -5 cm in width") lists a change.
FIELD_NOUN = re.compile(r"\b(?:height|width|depth|thickness|radius|diameter|tilt|angle|recline|splay|reach|size|length|"
                        r"curvature|capacity|volume)\s*[:=]\s*$")
CHANGE_VERB = re.compile(r"\b(?:add|adding|raise|raising|lower|lowering|lift|drop|move|stretch|extend|lengthen|"
                         r"shorten|increase|decrease|reduce|grow|shrink|deepen|widen|narrow|thicken|bump|"
                         r"up|down)\b")

# "2 cm in height", "3 mm in radius": the measure an amount is taken in
IN_DIMENSION = re.compile(r"\s*in (?:height|width|depth|radius|diameter|thickness|length)\b")


@dataclass(frozen=True)
class Quantity:
    value: float  # canonical: a target (absolute) or the size of a change (relative); the factor for ratios
    unit: str | None  # canonical unit ("cm", "deg", "ml") or None when the text gave none
    raw_value: float  # the number as written (signed)
    relative: bool  # "3 cm taller" (a change) rather than "45 cm tall" (a target)
    factor: float | None = None  # multiplicative target: new = old × factor ("twice as tall", "halve", "to 80%")
    change: float | None = None  # multiplicative change whose direction the clause gives ("by 20%", "a fifth taller")
    sign: str | None = None  # an explicit sign written before a relative number ("by -5 cm", "+1 cm", "minus 1 cm")
    dir: str | None = None  # a direction the quantity's own words give ("5 mm off" → "-")

    @property
    def ratio(self) -> bool:
        return self.factor is not None or self.change is not None


# twelfth round: "12 fl oz", "16.9 fl. oz.", "twelve fluid ounces", "a 20 oz bottle": US fluid ounces, one unit token
FLUID_OUNCES = re.compile(r"(?<=[\w.])\s*-?\s*(?:fl\.?\s?oz\b\.?|fluid[ -]ounces?\b|(?<=\d)\s?oz\b\.?|(?<=\d )ounces?\b)")


def us_units(text: str) -> str:
    """US customary amounts in the unit table's words: fluid ounces as one token ("floz")."""
    return FLUID_OUNCES.sub(" floz", text)


def _num(x: float) -> str:
    return f"{x:g}"


def spell_out(clause: str) -> str:
    """Numbers written in words → digits, where they measure something: "minus one centimetre" → "-1 centimetre",
    "a quarter of an inch" → "0.25 inch", "a half-litre bottle" → "0.5 litre bottle", "two inches" → "2 inches".
    A bare fraction ("a fifth taller") and a count without a unit ("three legs") are left to the callers."""
    unit = r"(?:" + "|".join(sorted(map(re.escape, UNIT_WORDS), key=len, reverse=True)) + r")(?![\w])"
    t = clause
    # tenth round: a numeral of any size before a unit ("fifty-two centimetres", "a seventeen-inch shade", "seven
    # hundred and fifty millilitres", "nine and a half cm") and a unit and a half ("an inch and a half")
    t = unit_and_a_half(t, unit)
    t = numerals_before(t, r"(?:(?:more|extra) )?(?:" + unit + r"|(?:mm|cm|ml)\b)")

    def frac(m):
        num = FRACTION_NUM.get(m.group(1) or "a", 1)
        return _num(num / FRACTION_DEN[m.group(2)]) + " "

    t = re.sub(r"\b(?:(a|one|two|three|four|five|six|seven|eight|nine)[ -])?(half|thirds?|quarters?|fifths?|eighths?|tenths?)(?:[ -]of)?[ -](?:an?[ -])?(?=" + unit + ")",
               frac, t)
    t = re.sub(r"\b(" + "|".join(WORD_NUMBERS) + r")(?:[ -](?:and[ -])?a[ -]half)?[ -](?=" + unit + ")",
               lambda m: _num(WORD_NUMBERS[m.group(1)] + (0.5 if "half" in m.group(0) else 0)) + " ", t)
    t = re.sub(r"\ban? (?:full |whole |good |single )?(?=" + unit + ")", "1 ", t)  # "a full inch": 1 inch
    t = re.sub(r"\b(minus|negative|plus)\s+(?=\d)", lambda m: SIGN_WORDS[m.group(1)], t)
    # eighth round: a unit hyphenated to its number or to a dimension word ("a 20-inch-wide seat", "a 1.5-litre jug",
    # "a 12-inch-tall shade") is the same amount
    t = re.sub(r"(?<=\d)-(?=(?:" + _UNIT_ALT + r")(?![\w]))", " ", t)
    t = re.sub(r"(?<=\d )(" + _UNIT_ALT + r")-(?=(?:wide|tall|high|deep|long|thick|across)\b)", r"\1 ", t)
    # ninth round: "a foot across", "2 feet tall": feet as a length where a measure word follows (never the part)
    t = re.sub(r"\b(?:an?|one) foot(?= (?:across|wide|tall|high|long|deep|in (?:diameter|height|width|depth|length))\b)",
               "12 inches", t)
    t = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?) ?(?:feet|foot|ft)(?= (?:across|wide|tall|high|long|deep)\b)",
               lambda m: _num(float(m.group(1)) * 12) + " inches", t)
    # ninth round: "a couple of degrees", "a couple cm": two of the unit
    t = re.sub(r"\ba couple(?: of)? (?=(?:more |extra |fewer )?" + unit + ")", "2 ", t)
    t = re.sub(r"\ba couple(?: of)? (?=(?:more |extra |less |fewer )?(?:mm|cm|in)\b)", "2 ", t)
    # ninth round: "four more inches", "two extra centimetres": a number word before "more / extra" and a unit
    t = re.sub(r"\b(" + "|".join(WORD_NUMBERS) + r")\s+(?=(?:more|extra)\s+" + unit + ")",
               lambda m: _num(WORD_NUMBERS[m.group(1)]) + " ", t)
    # "5 more degrees of recline", "2 extra cm": the amount's word between the number and its unit goes after both
    t = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)\s+(more|extra|less|fewer)\s+(" + _UNIT_ALT + r")(?![\w])", r"\1 \3 \2", t)
    return t


def _ratio(clause: str) -> Quantity | None:
    """Percentages, fractions and multiples: a factor (new = old × f) or a change whose direction the clause
    gives ("lower the stem by 20%", "about a fifth taller", "twice as tall", "to 80%", "cut it in half")."""
    m = MULTIPLY.search(clause)
    if m:  # "multiply … by 1.2" (×1.2), "divide … by 2" (×0.5)
        f = float(m.group(2))
        f = (1 / f if f else 0.0) if m.group(1).startswith("divid") else f
        return Quantity(f, None, f, False, factor=f)
    # eighth round: a percentage in words ("twenty percent shorter") is the same percentage
    clause = numerals_before(clause, r"percent\b|per cent\b|%")  # (tenth round: "thirty-five per cent")
    clause = re.sub(r"\b(minus|negative|plus)\s+(?=\d[\d.]*\s*(?:%|percent\b|per cent\b))",
                    lambda m: SIGN_WORDS[m.group(1)], clause)  # eleventh round: "cup height, minus 15 percent"
    m = PERCENT.search(clause)
    if m:
        p = float(m.group(2)) / 100
        before, after = clause[:m.start()], clause[m.end():]
        if re.search(r"\bto\s*(?:about\s*|around\s*)?$", before) or re.match(r"\s*(?:of|as)\b", after):
            return Quantity(p, None, p, False, factor=p)
        sign = "-" if m.group(1) in ("-", "−") else "+" if m.group(1) == "+" else None
        if sign is None and (OFF.match(after) or (REMOVE_VERB.search(before) and FROM.match(after))):
            sign = "-"  # "take 10% off the neck": a share taken off is a decrease
        return Quantity(p, None, p, True, change=p, sign=sign)
    m = MULTIPLE.search(clause)
    if m:
        f = float(m.group(1))
        return Quantity(f, None, f, False, factor=f)
    for pat, f in FACTOR_WORDS:
        if re.search(pat, clause):
            if f == 0.5 and re.search(r"\bby half\b", clause):
                return Quantity(0.5, None, 0.5, True, change=0.5)
            return Quantity(f, None, f, False, factor=f)
    if re.search(r"\bby half\b", clause):
        return Quantity(0.5, None, 0.5, True, change=0.5)
    for m in FRACTION.finditer(clause):
        num = FRACTION_NUM.get(m.group(1) or "a", 1)
        f = num / FRACTION_DEN[m.group(2)]
        before, after = clause[:m.start()], clause[m.end():]
        if re.search(r"\bto\s*(?:about\s*|around\s*)?$", before) or re.match(r"\s*(?:as|of)\b", after):
            return Quantity(f, None, f, False, factor=f)
        if re.search(r"\bby\s*(?:about\s*|around\s*|roughly\s*|nearly\s*|almost\s*)?$", before) or \
                re.match(r"\s*(?:\w+\s+)?" + COMPARATIVE + r"\b", after):
            return Quantity(f, None, f, True, change=f)
        if OFF.match(after) or (REMOVE_VERB.search(before) and FROM.match(after)):
            return Quantity(f, None, f, True, change=f, sign="-")  # "lop a fifth off the stem": a share taken off
    return None


def is_change(before: str, after: str, signed: bool | str) -> bool:
    """Is the number between ``before`` and ``after`` a change (True) or a target (False)? ``signed``: the sign
    written before the number ("-", "+", or "" / False for none)."""
    if ADD_PART.search(before) and not CHANGE_VERB.search(ADD_PART.sub(" ", before)):
        return bool(signed)  # "add armrests 22 cm up": the added part's value, nothing to change (ninth round)
    if CHANGE_BEFORE.search(before) or CHANGE_AFTER.match(after) or OFF.match(after) or LOSE_GAIN.search(before) \
            or (REMOVE_VERB.search(before) and FROM.match(after)):
        return True
    if OFF_BEFORE.search(before) or MOVED_BEFORE.search(before):
        return True  # "shave off 5 mm", "bring it in 4 mm": how much is taken off or moved (ninth round)
    if CHANGE_VERB.search(before) and not TARGET_BEFORE.search(before) and IN_DIMENSION.match(after):
        return True  # "raise the seat 2 cm in height": a verb of change says by how much (eighth round)
    if signed and IN_DIMENSION.match(after):
        return True  # "legs -3 mm in diameter": a signed amount in a measure is a change (eleventh round)
    if signed in ("-", "−") and FIELD_NOUN.search(before):  # "height: -10 cm": the value, with its sign
        return False
    if signed and re.search(r"[:=]\s*$", before):  # a note "seat depth: +2 cm" lists a signed change
        return True
    if TARGET_BEFORE.search(before) or TARGET_AFTER.match(after):
        return False
    return signed or bool(CHANGE_VERB.search(before))


def quantity(clause: str) -> Quantity | None:
    """The clause's quantity: a ratio (see ``_ratio``), a number with an optional unit (signed; a change or a
    target, see ``is_change``) or a count word ("three legs")."""
    t = FROM_TO.sub("to ", spell_out(clause))  # "from 2.6 to 3.2 cm": the target is the second number
    m = NUMBER.search(t)
    if m is None or not m.group(3):  # a unit-less digit may still sit beside a ratio ("by 20%", "2x")
        r = _ratio(clause)
        if r is not None:
            return r
    if not m:
        if re.search(r"\bzero\b", clause):  # "take the cap height down to zero": a target of 0, no unit said
            return Quantity(0.0, None, 0.0, False)
        for w, n in WORD_NUMBERS.items():
            if n >= 2 and re.search(rf"\b{w}\b", clause):
                return Quantity(float(n), None, float(n), False)
        return None
    neg = m.group(1) in ("-", "−")
    x = float(m.group(2)) * (-1 if neg else 1)
    unit, scale = UNITS.get(m.group(3) or "", (None, 1.0))
    if is_change(t[:m.start()], t[m.end():], m.group(1)):
        lg = LOSE_GAIN.search(t[:m.start()])
        removed = OFF.match(t[m.end():]) or (REMOVE_VERB.search(t[:m.start()]) and FROM.match(t[m.end():])) \
            or OFF_BEFORE.search(t[:m.start()])
        own = "-" if removed else (("+" if lg.group(1).startswith("gain") else "-") if lg else None)
        return Quantity(abs(x) * scale, unit, x, True, sign="-" if neg else ("+" if m.group(1) == "+" else None),
                        dir=own)
    return Quantity(x * scale, unit, x, False)

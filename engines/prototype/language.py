"""Domain-independent language machinery shared by every mapper: clauses, hedges, polarity, numbers, keep.

Nothing here knows a product domain; the interface (components, attribute words, macros) lives in the
spec. The flat baseline uses exactly this machinery over raw parameter names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAGNITUDES = ("slight", "moderate", "large")

# Qualitative degree words ("semantic precision" gap). Longest phrases first when matching.
HEDGES: dict[str, tuple[str, ...]] = {
    "slight": ("just a bit", "a little bit", "a little", "a bit", "a touch", "a tad", "slightly", "a hair",
               "marginally", "somewhat", "a smidge", "barely", "a little more", "subtly", "mildly"),
    "large": ("a lot", "a great deal", "much", "way", "far", "significantly", "considerably", "dramatically",
              "substantially", "drastically", "massively", "hugely", "really", "very", "lots"),
    "moderate": ("noticeably", "moderately", "quite", "fairly", "reasonably", "clearly"),
}

POSITIVE = ("more", "increase", "increased", "raise", "raised", "bigger", "larger", "taller", "higher", "longer",
            "wider", "thicker", "deeper", "grow", "extend", "enlarge", "boost", "lift", "up", "add", "heavier",
            "broader", "greater", "expand", "stretch", "lengthen", "widen", "thicken", "heighten", "bulkier",
            "fatter", "chunkier", "beefier", "stronger", "sturdier", "bolder")
NEGATIVE = ("less", "decrease", "decreased", "reduce", "reduced", "lower", "lowered", "smaller", "shorter",
            "narrower", "thinner", "shallower", "shrink", "cut", "trim", "down", "slimmer", "remove", "lighter",
            "tighter", "skinnier", "shorten", "narrow", "thin", "slim", "lessen", "minimise", "minimize",
            "compact", "tone down", "fewer", "drop", "delete", "without")

KEEP = re.compile(r"\b(keep|keeping|leave|leaving|don'?t (?:touch|change|alter|modify)|do not (?:touch|change|alter|modify)|"
                  r"without (?:touching|changing|altering)|preserve|preserving|maintain|maintaining|hold on to|"
                  r"as (?:it )?is|unchanged|same as before|the same|same|where (?:it|they) (?:is|are)|stays?)\b")
ADD = re.compile(r"\b(add|attach|give|put|include|fit|want|like|need|have|with|bring back)\b")
REMOVE = re.compile(r"\b(remove|take off|take away|get rid of|drop|delete|lose|ditch|without|no)\b")

UNITS = {"mm": ("cm", 0.1), "millimetres": ("cm", 0.1), "millimeters": ("cm", 0.1), "cm": ("cm", 1.0),
         "centimetres": ("cm", 1.0), "centimeters": ("cm", 1.0), "m": ("cm", 100.0), "metres": ("cm", 100.0),
         "meters": ("cm", 100.0), "in": ("cm", 2.54), "inch": ("cm", 2.54), "inches": ("cm", 2.54), '"': ("cm", 2.54),
         "°": ("deg", 1.0), "deg": ("deg", 1.0), "degree": ("deg", 1.0), "degrees": ("deg", 1.0),
         "ml": ("ml", 1.0), "millilitres": ("ml", 1.0), "milliliters": ("ml", 1.0), "cl": ("ml", 10.0),
         "l": ("ml", 1000.0), "litre": ("ml", 1000.0), "litres": ("ml", 1000.0), "liter": ("ml", 1000.0),
         "liters": ("ml", 1000.0)}
NUMBER = re.compile(r"(?<![\w.])([-−+]?)\s?(\d+(?:\.\d+)?)\s*(millimetres|millimeters|millilitres|milliliters|"
                    r"centimetres|centimeters|metres|meters|litres|liters|litre|liter|inches|inch|degrees|degree|deg|"
                    r"mm|cm|ml|cl|in|m|l|°|\")?(?![\w])")
WORD_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
SPLIT = re.compile(r"\s*(?:[,;!?]|:(?!\s*[-−+]?\d)|\.(?!\d)|\bbut\b|\band then\b|\band\b(?! a half)|\bwhile\b|\bplus\b|\balso\b|\bthen\b)\s*")

STOPWORDS = set("""a an the it its it's this that these those of to for on in at with by from please make
    let can could would you i we me my our be is are was were been get got give them they their there
    so just some bit little touch tad way much very really lot more less too also then same as""".split())


def normalise(text: str) -> str:
    t = text.lower().replace("’", "'").replace("–", "-")
    return re.sub(r"\s+", " ", t).strip()


KEEP_LEAD = re.compile(r"\b(without (?:touching|changing)|keep|keeping|leave|don'?t (?:touch|change)|do not (?:touch|change))\b")


def clauses(text: str) -> list[str]:
    """Split an instruction into edit clauses ("taller and more reclined, keep the seat"); a trailing
    "without touching X" / "keep X" becomes a clause of its own."""
    out = []
    for p in SPLIT.split(normalise(text)):
        p = p.strip()
        m = KEEP_LEAD.search(p)
        if m and m.start() > 0:
            out += [p[:m.start()].strip(), p[m.start():].strip()]
        else:
            out.append(p)
    return [p for p in out if p and re.search(r"[a-z0-9]", p)]


def find_phrase(text: str, phrases) -> tuple[str, int] | None:
    """Longest phrase of ``phrases`` occurring in ``text`` on word boundaries: (phrase, position)."""
    best = None
    for ph in phrases:
        m = re.search(r"(?<![\w])" + re.escape(ph) + r"(?![\w])", text)
        if m and (best is None or len(ph) > len(best[0])):
            best = (ph, m.start())
    return best


def magnitude(clause: str) -> tuple[str, str | None]:
    """The qualitative degree of a clause and the hedge that said it (default: moderate, no hedge)."""
    best = None
    for mag, words in HEDGES.items():
        hit = find_phrase(clause, words)
        if hit and (best is None or len(hit[0]) > len(best[1])):
            best = (mag, hit[0])
    return best if best else ("moderate", None)


def polarity(clause: str) -> str | None:
    """'+' or '-' from generic comparatives (whichever occurs first), None when there is none."""
    pos = find_phrase(clause, POSITIVE)
    neg = find_phrase(clause, NEGATIVE)
    if pos and neg:
        return "+" if pos[1] < neg[1] else "-"
    return "+" if pos else "-" if neg else None


@dataclass(frozen=True)
class Quantity:
    value: float  # canonical: a target (absolute) or the size of a change (relative); the factor for ratios
    unit: str | None  # canonical unit ("cm", "deg", "ml") or None when the text gave none
    raw_value: float  # the number as written (signed)
    relative: bool  # "3 cm taller" (a change) rather than "45 cm tall" (a target)
    factor: float | None = None  # multiplicative target: new = old × factor ("twice as tall", "halve", "to 80%")
    change: float | None = None  # multiplicative change whose direction the clause gives ("by 20%", "a fifth taller")
    sign: str | None = None  # an explicit sign written before a relative number ("by -5 cm")

    @property
    def ratio(self) -> bool:
        return self.factor is not None or self.change is not None


FRACTION_DEN = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "tenth": 10, "tenths": 10}
FRACTION_NUM = {"a": 1, "one": 1, "two": 2, "three": 3}
COMPARATIVE = (r"(?:more|less|taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|longer|"
               r"bigger|smaller|larger|further|slimmer|broader|up|down|bigger)")
FACTOR_WORDS = [(r"\bone and a half times\b|\bhalf again\b", 1.5), (r"\b(?:twice|double|doubled|two times)\b", 2.0),
                (r"\b(?:triple|tripled|thrice|three times)\b", 3.0), (r"\bfour times\b", 4.0),
                (r"\b(?:halve|halved|in half|half as|half the|half its|half of)\b", 0.5)]
PERCENT = re.compile(r"(?<![\w.])([-−+]?)(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)")
FRACTION = re.compile(r"\b(?:(a|one|two|three)[ -])?(half|halves|thirds?|quarters?|fourths?|fifths?|sixths?|tenths?)\b")
MULTIPLE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:x|×|times)(?![\w])")


def _ratio(clause: str) -> Quantity | None:
    """Percentages, fractions and multiples: a factor (new = old × f) or a change whose direction the clause
    gives ("lower the stem by 20%", "about a fifth taller", "twice as tall", "to 80%", "cut it in half")."""
    m = PERCENT.search(clause)
    if m:
        p = float(m.group(2)) / 100
        before, after = clause[:m.start()], clause[m.end():]
        if re.search(r"\bto\s*(?:about\s*|around\s*)?$", before) or re.match(r"\s*(?:of|as)\b", after):
            return Quantity(p, None, p, False, factor=p)
        sign = "-" if m.group(1) in ("-", "−") else "+" if m.group(1) == "+" else None
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
    return None


def quantity(clause: str) -> Quantity | None:
    """The clause's quantity: a ratio (see ``_ratio``), a number with an optional unit (signed; "by 5 cm" and
    "5 cm taller" are changes, "to 50 cm" and "50 cm tall" targets) or a number word ("three legs")."""
    r = _ratio(clause)
    if r is not None:
        return r
    m = NUMBER.search(clause)
    if not m:
        for w, n in WORD_NUMBERS.items():
            if re.search(rf"\b{w}\b", clause):
                return Quantity(float(n), None, float(n), False)
        return None
    neg = m.group(1) in ("-", "−")
    x = float(m.group(2)) * (-1 if neg else 1)
    unit, scale = UNITS.get(m.group(3) or "", (None, 1.0))
    tail = clause[m.end():]
    relative = bool(re.search(r"\b(by)\s*(?:about\s*|around\s*|roughly\s*|another\s*|an extra\s*)?$", clause[:m.start()]) or
                    re.match(r"\s*(\w+\s+)?" + COMPARATIVE + r"\b", tail))
    if relative:
        return Quantity(abs(x) * scale, unit, x, True, sign="-" if neg else ("+" if m.group(1) == "+" else None))
    return Quantity(x * scale, unit, x, False)


def is_keep(clause: str) -> bool:
    return bool(KEEP.search(clause))


def content_runs(clause: str, extra_stop: set[str] = frozenset(), keep: set[str] = frozenset()) -> list[str]:
    """Maximal runs of content words (split at stopwords, hedges, numbers): candidate mentions."""
    words = re.findall(r"[a-z][a-z'-]*|\d+(?:\.\d+)?", clause)
    hedge_words = {w for ws in HEDGES.values() for h in ws for w in h.split()}
    stop = (STOPWORDS | hedge_words | extra_stop | set(UNITS)) - set(keep)
    runs, cur = [], []
    for w in words:
        if w in stop or w[0].isdigit():
            if cur:
                runs.append(" ".join(cur))
            cur = []
        else:
            cur.append(w)
    if cur:
        runs.append(" ".join(cur))
    return runs


# ----------------------------------------------------------------------------- what the models cannot express

# Common design vocabulary for settings and parts a parametric model may lack (domain-independent; a word
# counts only when the product's own interface does not list it). Feature name → words.
UNSUPPORTED: dict[str, tuple[str, ...]] = {
    "colour setting": ("colour", "color", "colours", "colors", "paint", "painted", "red", "blue", "green", "yellow",
                       "black", "white", "pink", "purple", "grey", "gray", "brown", "beige", "orange", "golden"),
    "material setting": ("material", "materials", "wood", "wooden", "oak", "walnut", "metal", "metallic", "steel",
                         "aluminium", "aluminum", "brass", "chrome", "glass", "plastic", "ceramic", "porcelain",
                         "leather", "fabric", "velvet", "marble", "concrete", "bamboo", "rattan", "cork", "stone"),
    "texture or pattern setting": ("texture", "textured", "ribbed", "ribs", "ridges", "ridged", "grooved", "grooves",
                                   "pattern", "patterned", "striped", "stripes", "knurled", "engraved", "engraving",
                                   "logo", "embossed", "matte", "glossy", "shiny", "finish"),
    "corner-rounding setting": ("corner", "corners", "rounded", "round off", "rounder", "fillet",
                                "filleted", "chamfer", "chamfered", "bevel", "bevelled", "beveled", "boxy", "boxier",
                                "sharp edges", "softer edges", "edges", "edge"),
    "wall-thickness setting": ("wall", "walls", "walled"),
    "weight setting": ("weight", "weigh", "weighs", "weighted"),
    "moving parts (swivel, folding, adjustable)": ("swivel", "swivelling", "swiveling", "rotate", "rotating", "spin",
                                                   "spinning", "folding", "foldable", "fold", "adjustable", "rocking",
                                                   "rocker", "dimmable", "dimmer", "stackable"),
    "wings": ("wing", "wings"), "wheels": ("wheel", "wheels", "castor", "castors", "caster", "casters"),
    "lid": ("lid", "lids"), "cushion": ("cushion", "cushions", "upholstery", "padding", "padded", "upholstered"),
    "headrest": ("headrest", "head rest"), "spout": ("spout",), "saucer": ("saucer",), "straw": ("straw",),
    "switch": ("switch",), "cord": ("cord", "cable", "plug"), "bulb": ("bulb", "light bulb"),
    "drawer": ("drawer", "drawers"), "handle": ("handle", "handles"), "armrests": ("armrest", "armrests"),
    "backrest": ("backrest", "back rest"), "label": ("label", "sticker"), "feet pads": ("pads", "glides"),
}
COUNT_WORDS = r"(?:second|another|extra|additional|2nd|a pair of|two|three|four|five|six|\d+)"

# Non-English input: scripts other than Latin, accented Latin letters, and function words of the languages a
# designer most often mixes in (a clear refusal beats a silent mis-reading).
FOREIGN_WORDS = {"el", "los", "las", "más", "menos", "muy", "und", "der", "die", "das", "mit", "ein", "eine", "nicht",
                 "sehr", "höher", "les", "des", "très", "avec", "pour", "sur", "une", "del", "più", "molto", "della",
                 "het", "een", "niet", "hacer", "haz", "hazlo", "machen", "mach", "rends", "fais", "rendre", "plus",
                 "alto", "alta", "bajo", "ancho", "grande", "haut", "hoch", "breiter", "asiento", "respaldo",
                 "sedia", "stuhl", "chaise", "lampe", "tasse", "taza", "botella", "flasche", "bouteille", "por",
                 "favor", "bitte", "poco", "peu", "etwas", "la", "le", "il", "lo", "du", "au", "aux", "et", "y"}
NON_LATIN = re.compile(r"[^\x00-\x7f\u00b0\u00b2\u00b3\u00bc-\u00be\u00d7\u2018-\u201f\u2013\u2014\u2026\u2032\u2033"
                       r"\u00c0-\u024f]")
ACCENTED = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]")


def not_english(text: str) -> str | None:
    """Why an instruction is not (only) English, or None. Checked before mapping; the model stays as it was."""
    t = normalise(text)
    odd = sorted(set(NON_LATIN.findall(t)))
    words = re.findall(r"[^\W\d_]+", t)
    foreign = [w for w in words if w in FOREIGN_WORDS or ACCENTED.search(w)]
    if odd:
        return "only English instructions are understood; this one has characters of another script (" + \
               "".join(odd[:8]) + ")"
    if foreign and (len(foreign) >= 2 or any(ACCENTED.search(w) for w in foreign)):
        kind = "mixed-language" if len(foreign) < len(words) else "non-English"
        return f"only English instructions are understood; this {kind} one has: " + \
               ", ".join(f"“{w}”" for w in dict.fromkeys(foreign))
    return None

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

KEEP = re.compile(r"\b(keep|leave|don'?t (?:touch|change|alter|modify)|do not (?:touch|change|alter|modify)|"
                  r"without (?:touching|changing)|preserve|as (?:it )?is|unchanged|same as before)\b")
ADD = re.compile(r"\b(add|attach|give|put|include|fit|want|like|need|have|with|bring back)\b")
REMOVE = re.compile(r"\b(remove|take off|take away|get rid of|drop|delete|lose|ditch|without|no)\b")

UNITS = {"mm": ("cm", 0.1), "millimetres": ("cm", 0.1), "millimeters": ("cm", 0.1), "cm": ("cm", 1.0),
         "centimetres": ("cm", 1.0), "centimeters": ("cm", 1.0), "m": ("cm", 100.0), "metres": ("cm", 100.0),
         "meters": ("cm", 100.0), "in": ("cm", 2.54), "inch": ("cm", 2.54), "inches": ("cm", 2.54),
         "°": ("deg", 1.0), "deg": ("deg", 1.0), "degree": ("deg", 1.0), "degrees": ("deg", 1.0)}
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(millimetres|millimeters|centimetres|centimeters|metres|meters|"
                    r"inches|inch|degrees|degree|deg|mm|cm|in|m|°)?(?![\w])")
WORD_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
SPLIT = re.compile(r"\s*(?:[,;:!?]|\.(?!\d)|\bbut\b|\band then\b|\band\b|\bwhile\b|\bplus\b|\balso\b|\bthen\b)\s*")

STOPWORDS = set("""a an the it its it's this that these those of to for on in at with by from please make
    let can could would you i we me my our be is are was were been get got give them they their there
    so just some bit little touch tad way much very really lot more less too also then same as""".split())


def normalise(text: str) -> str:
    t = text.lower().replace("’", "'").replace("–", "-")
    return re.sub(r"\s+", " ", t).strip()


KEEP_LEAD = re.compile(r"\b(without (?:touching|changing)|keep|leave|don'?t (?:touch|change)|do not (?:touch|change))\b")


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
    value: float
    unit: str | None  # canonical unit ("cm", "deg") or None when the text gave none
    raw_value: float  # the number as written
    relative: bool  # "3 cm taller" (a change) rather than "45 cm tall" (a target)


def quantity(clause: str) -> Quantity | None:
    m = NUMBER.search(clause)
    if not m:
        for w, n in WORD_NUMBERS.items():
            if re.search(rf"\b{w}\b", clause):
                return Quantity(float(n), None, float(n), False)
        return None
    x = float(m.group(1))
    unit, scale = UNITS.get(m.group(2) or "", (None, 1.0))
    tail = clause[m.end():]
    relative = bool(re.search(r"\b(by)\s*$", clause[:m.start()]) or
                    re.match(r"\s*(\w+\s+)?(more|less|taller|shorter|higher|lower|wider|narrower|thicker|thinner|"
                             r"deeper|longer|bigger|smaller|further|up|down)\b", tail))
    return Quantity(x * scale, unit, x, relative)


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

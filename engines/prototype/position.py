"""Where on the product: positions along a part, the top of a part, and moves of a part outward or inward.

Designers point at places instead of naming parameters: "keep the top of the backrest where it is" (the chair's
overall height: its description is "floor to the top of the backrest"), "open out more near the lower rim" (the
bottom radius), "pull the handle out by 5 mm" / "push the handle in a little" (how far it sticks out). These
rules read such places against the interface's own attribute names and descriptions; nothing here knows a
product.
"""
from __future__ import annotations

import re

# Position words and the attribute qualifier they name ("lower edge" → bottom_radius, "upper opening" → top_radius).
QUALIFIER = {"lower": "bottom", "upper": "top", "bottom": "bottom", "top": "top", "base": "bottom", "foot": "bottom",
             "rim": "top", "mouth": "top"}

# "the top of the backrest", "the top of its cap": a place that an overall dimension's description names.
TOP_OF = re.compile(r"\b(?:the )?(top|rim|tip) of (?:the |its |their )?([a-z]+)\b")

# A part moved outward or inward by a verb of placing: "pull the handle out by 5 mm", "push the handle in a little",
# "push the handle further out", "move it outwards". For a part that has a reach, that is its reach.
MOVE_OUT = re.compile(r"\b(?:bring|pull|push|move|set|draw|take|shift)\b(?:[^,;]*?)\b(out(?:wards?)?|in(?:wards?)?)\b"
                      r"(?!\s+(?:of|to|on)\b)")


PLACE_NOUNS = {"rim", "edge", "edges", "opening", "lip", "end", "part", "half", "section"}


# Toward what the product stands on, or away from it: "widen the shade toward the table" is at the bottom (seventh round).
TOWARD = {"table": "bottom", "floor": "bottom", "ground": "bottom", "desk": "bottom", "ceiling": "top", "sky": "top"}


def qualifiers(words: list[str]) -> set[str]:
    """The attribute qualifiers ("top", "bottom") that a clause's position words name ("the lower rim" is the bottom
    only: "lower" / "upper" qualify the place noun after them; "toward the table" is the bottom)."""
    out, skip = set(), False
    for i, w in enumerate(words):
        if skip:
            skip = False
            continue
        if w in ("toward", "towards"):
            nxt = [x for x in words[i + 1:i + 3] if x not in ("the", "its", "their")]
            if nxt and nxt[0] in TOWARD:
                out.add(TOWARD[nxt[0]])
            continue
        if w in ("lower", "upper") and i + 1 < len(words) and words[i + 1] in PLACE_NOUNS:
            out.add(QUALIFIER[w])
            skip = True
        elif w in QUALIFIER:
            out.add(QUALIFIER[w])
    return out


def top_of(clause: str, descriptions: dict[str, str], synonyms: dict[str, str], products=frozenset()) -> str | None:
    """The overall dimension whose description ends at the place the clause names ("the top of the backrest" →
    overall.height, described "floor to the top of the backrest"), or None. ``descriptions``: dimension id →
    description; ``synonyms``: a word naming a component → that component."""
    m = TOP_OF.search(clause)
    if m is None:
        return None
    word = m.group(2)
    if word in products and "overall.height" in descriptions:
        return "overall.height"  # "the top of the chair": the product's top ends its overall height (eighth round)
    comp = synonyms.get(word) or synonyms.get(word.rstrip("s"))
    for dim, desc in descriptions.items():
        if re.search(rf"\btop of the {re.escape(comp or word)}\b|\b{re.escape(comp or word)} top\b", desc):
            return dim
    return None


# eleventh round: "4 mm further out", "closer in to the cup": a part said to sit further out or closer in
MOVE_CLOSER = re.compile(r"\b(?:closer|nearer|further|farther)\s+(out(?:wards?)?|in(?:wards?)?)\b(?!\s+(?:of|on)\b)")


def move_out(clause: str) -> str | None:
    """'+' for a part moved outward, '-' inward, None when the clause moves nothing out or in."""
    m = MOVE_OUT.search(clause) or MOVE_CLOSER.search(clause)
    if m is None:
        return None
    return "+" if m.group(1).startswith("out") else "-"


# "seat top unchanged": the top of a part, said of a part whose own parameter is described by that place ("height
# of the seat top above the floor") — that parameter (seventh round; the top of a part no parameter describes is the
# overall dimension that ends there: ``top_of``).
def part_top(clause: str, parts: list[tuple[str, str]], params: dict[str, tuple[str, str]]) -> str | None:
    """The parameter whose description names the top of a part the clause names as "<part> top" / "the top of the
    <part>", or None. ``parts``: (the word said, component) in the clause; ``params``: id → (component, description)."""
    for said, comp in parts:
        if not said or not re.search(rf"\b{re.escape(said)}(?:'s)? top\b|\btop of (?:the |its )?{re.escape(said)}\b", clause):
            continue
        hits = [pid for pid, (c, desc) in params.items()
                if c == comp and re.search(rf"\b{re.escape(comp)} top\b|\btop of the {re.escape(comp)}\b", desc)]
        if len(hits) == 1:
            return hits[0]
    return None


# "a cup that widens toward its foot", "let it flare toward the rim": widening or narrowing toward one position of a
# part (seventh round).
TOWARD_PLACE = re.compile(r"\b(widen|widens|widening|wider|flare|flares|flaring|open|opens|opening out|narrow|narrows|"
                          r"narrowing|narrower|taper|tapers|tapering)\b(?: \w+)?(?: out| in)? (?:toward|towards|at|near) "
                          r"(?:the |its |their )?([a-z]+)\b")

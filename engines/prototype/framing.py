"""How a designer frames an edit (tenth round): a viewpoint ("viewed from the front", "in elevation", "when seen
from above"), a comparison with another part that only sets the scene ("compared with that wide body the cap looks
puny": the cap, not the body) and the markers of a numbered or ordinal list ("a) … b) …", "firstly the seat, 50 cm;
secondly the ring, 28 cm") are no part of the edit.

``language.normalise`` drops them before an instruction is split into clauses. Nothing here knows a product.
"""
from __future__ import annotations

import re

_START = r"(?:^|(?<=[,;:.]))\s*"
_DET = r"(?:that|those|the|this|these|its|their|a|an|such|all those|all that)"

# "viewed from the front,", "in elevation", "when seen from above,", "side-on"
VIEWPOINT = re.compile(_START + r"(?:(?:when |as )?(?:seen|viewed|looked at|looking(?: at it)?(?: down| up)?|"
                       r"standing|sitting)\s+)?(?:(?:from|in) (?:the )?(?:side|front|back|rear|top|above|below|"
                       r"underneath|behind|profile|elevation|plan)(?: view| on)?|head-on|side-on|face-on)\b(?! to\b),?\s*")
# "compared with that wide body the cap looks puny", "beside the big shade, the stem …": the other part is the scene of
# a complaint about the part that follows
BESIDE = re.compile(_START + r"(?:next to|beside|alongside|compared (?:to|with)|by comparison with) " + _DET +
                    r" (?:[a-z'-]+ ){0,3}?[a-z'-]+(?:\s*,\s*|\s+(?=(?:the|its|their|it|they) [a-z]))")
# "a) stem 32 cm, b) base 3 cm high", "(3) legs …", "2. the cap …"
NUMBERED = re.compile(_START + r"(?:\(\d{1,2}\)|\d{1,2}\)|\d{1,2}\.(?=\s)|[a-e]\))\s*")
# "firstly the seat, 50 cm; secondly the ring, 28 cm": the ordinal heads a part and the amount after a comma
ORDINAL_HEAD = re.compile(_START + r"(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|next|then|finally|"
                          r"lastly),?\s+((?:the |its )?[a-z]+(?: [a-z]+)?)\s*,\s*(?=[-+]?\d)")


# "(1) stem to 34 cm (2) shade to 20 cm" (a lamp): a bracketed number inside the text starts the next item
NUMBERED_INSIDE = re.compile(r"(?<=[a-z0-9°%\"])\s+\(\d{1,2}\)\s+")


def unframe(text: str) -> str:
    """The instruction without its viewpoints, scene-setting comparisons and list markers."""
    t = NUMBERED.sub(" ", NUMBERED_INSIDE.sub(", ", text))
    t = ORDINAL_HEAD.sub(lambda m: " " + m.group(1) + " ", t)
    t = VIEWPOINT.sub(" ", t)
    t = BESIDE.sub(" ", t)
    return re.sub(r"\s+", " ", re.sub(r"^\s*[,;:]\s*", "", t)).strip()

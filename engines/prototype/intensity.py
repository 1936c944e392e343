"""Semantic precision, qualitative half: the intensity words that say how much ("a touch", "a good deal").

A clause's degree is *slight*, *moderate* (the default, no hedge) or *large*; the compiler turns it into the
attribute's calibrated step. The longest hedge in the clause wins ("a tiny bit" is slight although "bit" alone
says nothing; "a great deal" is large). Nothing here knows a product.
"""
from __future__ import annotations

import re

MAGNITUDES = ("slight", "moderate", "large")

# Qualitative degree words ("semantic precision" gap). Longest phrases first when matching.
HEDGES: dict[str, tuple[str, ...]] = {
    "slight": ("just a bit", "a little bit", "a little", "a bit", "a touch", "a tad", "slightly", "a hair",
               "marginally", "somewhat", "a smidge", "barely", "a little more", "subtly", "mildly",
               "a tiny bit", "a teeny bit", "a wee bit", "ever so slightly",
               # ninth round
               "a fraction", "a notch", "fractionally", "a whisker"),
    "large": ("a lot", "a great deal", "much", "way", "far", "significantly", "considerably", "dramatically",
              "substantially", "drastically", "massively", "hugely", "really", "very", "lots",
              "a good deal", "loads"),
    "moderate": ("noticeably", "moderately", "quite", "fairly", "reasonably", "clearly"),
}


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

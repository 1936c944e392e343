"""References inside an instruction to something it said elsewhere: "footrest up by the same amount" (the
previous clause's amount), "the bottle, cap included, 24 cm high" / "including the cap" (the measure is the
product's overall one, not the named part's).

Nothing here knows a product; ``language.clauses`` applies both while splitting an instruction.
"""
from __future__ import annotations

import re

from .precision import NUMBER, quantity, spell_out

# An amount restated by reference ("seat 6 cm higher, footrest up by the same amount"): the previous clause's.
# ("just as much" alone is a keep: "it should still hold just as much").
SAME_AMOUNT = re.compile(r"\b(?:by )?the same (?:amount|distance|margin)\b|\bby (?:just )?as much\b|"
                         r"\bby the same\s*$|"
                         # eighth round: "drop the seat by 4 cm; the footrest comes down with it": moved along, as far
                         r"(?:(?<=\bup)|(?<=\bdown)|(?<=\bout)|(?<=\bin)) with (?:it|them)\s*$")  # "… and the seat down by the same"
# A part said to be included in a measure ("the bottle, cap included, 24 cm high", "including the cap") makes
# the measure the product's overall one.
INCLUDED = re.compile(r",?\s*\b(?:(?:the |its )?[a-z]+(?: [a-z]+)? included\b(?=\s*(?:,|$|-?\d))|"
                      r"including (?:the |its )?[a-z]+\b|"
                      r"(?:the |its )?[a-z]+ and all\b(?=\s*(?:,|$|-?\d)))\s*,?")  # "the bottle, cap and all, 28 cm high"


def same_amount(parts: list[str]) -> list[str]:
    """Replace "by the same amount" with the amount the previous clause stated ("by 6 cm")."""
    out = []
    for p in parts:
        m = SAME_AMOUNT.search(p)
        if m and re.search(r"\b(?:hold|holds|holding|held|contain|contains|take|takes|carry|carries)\s+$", p[:m.start()]):
            m = None  # "let it hold the same amount": its capacity is kept, no amount restated
        if m and not quantity(p):
            prev = next((NUMBER.search(spell_out(q)) for q in reversed(out) if NUMBER.search(spell_out(q))
                         and NUMBER.search(spell_out(q)).group(3)), None)
            if prev is not None:
                p = p[:m.start()] + f" by {prev.group(2)} {prev.group(3)}" + p[m.end():]
        out.append(" ".join(p.split()))
    return out

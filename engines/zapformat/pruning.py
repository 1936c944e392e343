"""Measurements of dynamic pruning on nested JSON: live Earley items per byte, with and without."""
from __future__ import annotations

from .earley import Recognizer
from .grammar import compile_grammar
from .json_schema import JSON_GRAMMAR


def byte_trace(text: str, compaction: bool, grammar: str = JSON_GRAMMAR) -> list[tuple[int, int, tuple]]:
    """(retained sets, live items, state key) before the first byte and after every byte."""
    r = Recognizer(compile_grammar(grammar), compaction=compaction)
    out = [(len(r.cols), r.n_items(), r.state_key())]
    for b in text.encode():
        if not r.accept_bytes(bytes([b])):
            raise ValueError(f"text rejected at byte {len(out) - 1}")
        out.append((len(r.cols), r.n_items(), r.state_key()))
    return out


def nesting_depth(text: str) -> list[int]:
    """Open-bracket depth after every byte position (strings skipped), aligned with byte_trace."""
    depth, out, instr, esc = 0, [0], False, False
    for c in text:
        n = len(c.encode())
        if instr:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                instr = False
        elif c == '"':
            instr = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        out.extend([depth] * n)
    return out


def closing_checks(text: str, trace) -> list[dict]:
    """For every closing bracket: the state after it vs the state after the last scalar member closed at
    the same depth (a string value followed by ',' or '}'). Pruning makes them identical."""
    depth, instr, esc = 0, False, False
    after_scalar: dict[int, int] = {}
    checks = []
    pos = 0  # byte offset
    chars = list(text)
    for i, c in enumerate(chars):
        pos += len(c.encode())
        if instr:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                instr = False
                if i + 1 < len(chars) and chars[i + 1] in ",}]":
                    after_scalar[depth] = pos
            continue
        if c == '"':
            instr = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth in after_scalar:
                a, b = trace[after_scalar[depth]], trace[pos]
                checks.append({"bracket": c, "depth": depth, "items_scalar": a[1], "items_closed": b[1],
                               "sets_scalar": a[0], "sets_closed": b[0], "same_state": a[2] == b[2]})
    return checks

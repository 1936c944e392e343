"""Regular-expression terminals compiled to byte-level DFAs.

KBNF embeds regexes (``#"..."``) in the grammar; the official engine compiles them with Rust's
``regex-automata`` into dense byte DFAs, anchored at the start and matched as a whole. This module
does the same for a Rust-syntax subset: literals and escapes, ``.``, classes ``[...]`` (ranges,
negation, ``\\d \\w \\s`` and their negations), groups ``(...)``/``(?:...)``, ``|``, and the quantifiers
``* + ? {n} {n,} {n,m}`` (lazy forms accepted, same language). Characters are Unicode scalar values;
every class is compiled to the UTF-8 byte sequences that encode it, so tokens that end in the middle
of a multi-byte character are handled exactly like the byte-level Rust DFA handles them.

Pipeline: parse -> Thompson NFA over byte ranges (UTF-8 compiled) -> subset construction ->
trim states that cannot reach a match (they become the dead state ``-1``) -> minimisation.

The parser and the NFA are Python; subset construction, trimming, minimisation and the product automata of
``&``/``!`` run in the compiled core (``_zfcore.determinize`` / ``trim_minimize`` / ``product``) when it is
built, with the same output array for array (the Python functions below are the reference, used when the
extension is missing or ``ZAPFORMAT_CORE=python``; tests/engines/zapformat/test_compiled.py compares them).
"""
from __future__ import annotations

import os
import unicodedata
from array import array
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

try:  # the compiled core (setup.py); optional
    from . import _zfcore as _zf  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the build
    _zf = None

MAX_CHAR = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
MAX_DFA_STATES = 20_000  # bound on a single regex (settings-independent safety net)
MAX_REPEAT = 1000


class RegexError(ValueError):
    """A regex that cannot be parsed or compiled; ``pos`` is the offending character offset."""

    def __init__(self, message: str, pattern: str = "", pos: int | None = None):
        self.pos = pos
        self.reason = message  # what went wrong, without the pattern (which may itself contain ": ")
        self.detail = message + (f" at offset {pos}" if pos is not None else "")
        super().__init__(f"regex {pattern!r}: {self.detail}")


# ----------------------------------------------------------------------------- character sets
# A character set is a sorted tuple of disjoint inclusive (lo, hi) code point ranges.


def normalize(ranges) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def negate(ranges) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for lo, hi in normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CHAR:
        out.append((nxt, MAX_CHAR))
    return tuple(out)


def _ranges_where(pred) -> tuple[tuple[int, int], ...]:
    out, start = [], None
    for cp in range(MAX_CHAR + 1):
        if pred(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, MAX_CHAR))
    return tuple(out)


@lru_cache(maxsize=None)
def perl_class(name: str) -> tuple[tuple[int, int], ...]:
    """Unicode-aware ``\\d``, ``\\s``, ``\\w`` as in Rust's regex (tables from Python's unicodedata)."""
    if name == "d":
        return _ranges_where(lambda c: unicodedata.category(chr(c)) == "Nd")
    if name == "s":
        return normalize([(9, 13), (32, 32), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                          (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)])
    if name == "w":
        word = ("L", "M")
        return _ranges_where(lambda c: unicodedata.category(chr(c))[0] in word
                             or unicodedata.category(chr(c)) in ("Nd", "Nl", "Pc") or c in (0x200C, 0x200D))
    raise KeyError(name)


def load_unicode_tables() -> None:
    """Build the Unicode tables of ``\\d \\s \\w`` now (about 0.5 s, once per process; Rust's regex ships them
    compiled in) and hand them to the compiled core."""
    for c in "dsw":
        perl_class(c)
        zf = _native()
        if zf is not None and c not in _PERL_SENT:
            zf.set_perl_class("dsw".index(c), array("i", [x for r in perl_class(c) for x in r]))
            _PERL_SENT.add(c)


DOT = negate([(10, 10)])  # Rust's '.' matches any scalar value except '\n'


# ----------------------------------------------------------------------------- UTF-8 ranges


def _utf8(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split the code point range [lo, hi] into sequences of byte ranges (the utf8-ranges algorithm)."""
    if lo > hi:
        return []
    s0, s1 = SURROGATES
    if lo <= s1 and hi >= s0:  # scalar values only
        return utf8_sequences(lo, s0 - 1) + utf8_sequences(s1 + 1, hi)
    for m in (0x7F, 0x7FF, 0xFFFF):
        if lo <= m < hi:
            return utf8_sequences(lo, m) + utf8_sequences(m + 1, hi)
    if hi <= 0x7F:
        return [[(lo, hi)]]
    n = len(_utf8(lo))
    for i in range(1, n):
        mask = (1 << (6 * i)) - 1
        if lo & ~mask != hi & ~mask:
            if lo & mask:
                return utf8_sequences(lo, lo | mask) + utf8_sequences((lo | mask) + 1, hi)
            if hi & mask != mask:
                return utf8_sequences(lo, (hi & ~mask) - 1) + utf8_sequences(hi & ~mask, hi)
    a, b = _utf8(lo), _utf8(hi)
    return [list(zip(a, b))]


# ----------------------------------------------------------------------------- parser -> AST
# AST nodes: ("set", ranges) | ("cat", [nodes]) | ("alt", [nodes]) | ("rep", node, min, max|None)


class _Parser:
    def __init__(self, pattern: str):
        self.p, self.i = pattern, 0

    def error(self, msg: str, pos: int | None = None):
        raise RegexError(msg, self.p, self.i if pos is None else pos)

    def peek(self) -> str | None:
        return self.p[self.i] if self.i < len(self.p) else None

    def parse(self):
        node = self.alt()
        if self.i != len(self.p):
            self.error("unbalanced ')'")
        return node

    def alt(self):
        branches = [self.cat()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.cat())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def cat(self):
        items = []
        while self.peek() is not None and self.peek() not in "|)":
            items.append(self.quantified())
        return ("cat", items)

    def quantified(self):
        start = self.i
        node = self.atom()
        while self.peek() is not None and self.peek() in "*+?{":
            c = self.peek()
            if c == "{":
                q = self.counted()
                if q is None:
                    break
                lo, hi = q
            else:
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            if self.peek() == "?":  # lazy: same language
                self.i += 1
            if node[0] == "cat" and not node[1] and start == self.i:
                self.error("nothing to repeat")
            node = ("rep", node, lo, hi)
        return node

    def counted(self):
        j = self.p.find("}", self.i)
        if j < 0:
            self.error("unclosed counted repetition '{'")
        body = self.p[self.i + 1 : j]
        parts = body.split(",")
        try:
            if len(parts) == 1:
                lo = hi = int(parts[0])
            elif len(parts) == 2:
                lo = int(parts[0])
                hi = int(parts[1]) if parts[1].strip() else None
            else:
                raise ValueError
        except ValueError:
            self.error(f"invalid counted repetition {{{body}}}")
        if hi is not None and hi < lo:
            self.error(f"invalid repetition range {{{body}}}")
        if max(lo, hi or 0) > MAX_REPEAT:
            self.error(f"repetition count above {MAX_REPEAT}")
        self.i = j + 1
        return lo, hi

    def atom(self):
        c = self.peek()
        if c is None:
            self.error("unexpected end")
        if c == "(":
            self.i += 1
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                self.error("flags and look-around groups are not supported")
            node = self.alt()
            if self.peek() != ")":
                self.error("missing ')'")
            self.i += 1
            return node
        if c == "[":
            return ("set", self.klass())
        if c == ".":
            self.i += 1
            return ("set", DOT)
        if c in "^$":
            self.error(f"anchor '{c}' is not supported: terminals are matched as a whole")
        if c in "*+?":
            self.error("nothing to repeat")
        if c == "\\":
            return ("set", self.escape(in_class=False))
        self.i += 1
        return ("set", ((ord(c), ord(c)),))

    def escape(self, in_class: bool):
        start = self.i
        self.i += 1
        c = self.peek()
        if c is None:
            self.error("trailing backslash", start)
        self.i += 1
        simple = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7, "0": 0}
        if c in simple:
            v = simple[c]
            return ((v, v),)
        if c in "dswDSW":
            r = perl_class(c.lower())
            return negate(r) if c.isupper() else r
        if c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            if self.peek() == "{":
                j = self.p.find("}", self.i)
                digits = self.p[self.i + 1 : j] if j > 0 else ""
                self.i = j + 1 if j > 0 else len(self.p)
            else:
                digits = self.p[self.i : self.i + width]
                self.i += width
            try:
                v = int(digits, 16)
            except ValueError:
                self.error(f"invalid hex escape \\{c}{digits}", start)
            if v > MAX_CHAR or SURROGATES[0] <= v <= SURROGATES[1]:
                self.error(f"escape \\{c}{digits} is not a Unicode scalar value", start)
            return ((v, v),)
        if c in "pPbBAzk" or c.isdigit():
            self.error(f"escape \\{c} is not supported", start)
        if c.isalnum():
            self.error(f"unknown escape \\{c}", start)
        return ((ord(c), ord(c)),)

    def klass(self):
        start = self.i
        self.i += 1
        neg = self.peek() == "^"
        if neg:
            self.i += 1
        ranges = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                self.error("unclosed character class '['", start)
            if c == "]" and not first:
                self.i += 1
                break
            if c == "[":
                self.error("nested classes and set operations are not supported")
            if c == "\\":
                item = self.escape(in_class=True)
            else:
                self.i += 1
                item = ((ord(c), ord(c)),)
            first = False
            if len(item) == 1 and item[0][0] == item[0][1] and self.peek() == "-" and self.i + 1 < len(self.p) \
                    and self.p[self.i + 1] != "]":
                self.i += 1
                hi_item = self.escape(in_class=True) if self.peek() == "\\" else None
                if hi_item is None:
                    hi_item = ((ord(self.p[self.i]), ord(self.p[self.i])),)
                    self.i += 1
                if len(hi_item) != 1 or hi_item[0][0] != hi_item[0][1]:
                    self.error("invalid class range")
                lo, hi = item[0][0], hi_item[0][0]
                if hi < lo:
                    self.error(f"class range {chr(lo)}-{chr(hi)} is reversed")
                ranges.append((lo, hi))
            else:
                ranges.extend(item)
        r = normalize(ranges)
        return negate(r) if neg else r


def parse(pattern: str):
    return _Parser(pattern).parse()


# ----------------------------------------------------------------------------- NFA


class _NFA:
    """Thompson NFA as flat edge lists (what ``_zfcore.determinize`` takes); ``eps``/``edges`` give the
    per-state lists the Python reference walks."""

    def __init__(self):
        self.n = 0
        self.eps_src, self.eps_tgt = array("i"), array("i")
        self.e_src, self.e_lo, self.e_hi, self.e_tgt = array("i"), array("i"), array("i"), array("i")

    def state(self) -> int:
        self.n += 1
        return self.n - 1

    def _eps(self, a: int, b: int) -> None:
        self.eps_src.append(a)
        self.eps_tgt.append(b)

    @cached_property
    def eps(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n)]
        for a, b in zip(self.eps_src, self.eps_tgt):
            out[a].append(b)
        return out

    @cached_property
    def edges(self) -> list[list[tuple[int, int, int]]]:  # (byte lo, byte hi, target)
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(self.n)]
        for a, lo, hi, t in zip(self.e_src, self.e_lo, self.e_hi, self.e_tgt):
            out[a].append((lo, hi, t))
        return out

    def build(self, node, start: int, end: int) -> None:
        kind = node[0]
        if kind == "set":
            e_src, e_lo, e_hi, e_tgt = self.e_src, self.e_lo, self.e_hi, self.e_tgt
            for seq in (s for lo, hi in node[1] for s in utf8_sequences(lo, hi)):
                cur = start
                for k, (blo, bhi) in enumerate(seq):
                    nxt = end if k == len(seq) - 1 else self.state()
                    e_src.append(cur)
                    e_lo.append(blo)
                    e_hi.append(bhi)
                    e_tgt.append(nxt)
                    cur = nxt
        elif kind == "cat":
            cur = start
            for k, sub in enumerate(node[1]):
                nxt = end if k == len(node[1]) - 1 else self.state()
                self.build(sub, cur, nxt)
                cur = nxt
            if not node[1]:
                self._eps(start, end)
        elif kind == "alt":
            for sub in node[1]:
                self.build(sub, start, end)
        else:  # rep
            _, sub, lo, hi = node
            cur = start
            for _ in range(lo):
                nxt = self.state()
                self.build(sub, cur, nxt)
                cur = nxt
            if hi is None:
                loop = self.state()
                self._eps(cur, loop)
                inner = self.state()
                self.build(sub, loop, inner)
                self._eps(inner, loop)
                self._eps(loop, end)
            else:
                for _ in range(hi - lo):
                    nxt = self.state()
                    self._eps(cur, end)
                    self.build(sub, cur, nxt)
                    cur = nxt
                self._eps(cur, end)

    def closure(self, states) -> frozenset[int]:
        seen, stack, eps = set(states), list(states), self.eps
        while stack:
            for t in eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)


# ----------------------------------------------------------------------------- DFA


@dataclass
class DFA:
    """A trimmed byte DFA: ``trans[s, b]`` is the next state or -1 (dead); state 0 is the start."""

    pattern: str
    trans: np.ndarray  # (n_states, 256) int32
    accept: np.ndarray  # (n_states,) bool

    # Python views for the reference recogniser, built on first use (the compiled core reads trans/accept).
    @cached_property
    def table(self) -> list[list[int]]:  # Python lists: fast scalar stepping
        return self.trans.tolist()

    @cached_property
    def accepting(self) -> list[bool]:
        return self.accept.tolist()

    @cached_property
    def first_bytes(self) -> list[frozenset[int]]:
        return [frozenset(np.flatnonzero(row >= 0).tolist()) for row in self.trans]

    @cached_property
    def live_out(self) -> list[bool]:  # a state with no live transition can only stop here (a dead end once matched)
        return [bool(fb) for fb in self.first_bytes]

    @property
    def n_states(self) -> int:
        return len(self.accept)

    @property
    def nullable(self) -> bool:
        return bool(self.accept[0])

    def matches(self, data: bytes) -> bool:
        s = 0
        for b in data:
            s = self.table[s][b]
            if s < 0:
                return False
        return self.accepting[s]


def _subset_construction(nfa: _NFA, start: int, final: int, pattern: str):
    # Byte classes: bytes that no NFA edge distinguishes behave identically.
    cuts = {0, 256}
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            cuts.add(lo)
            cuts.add(hi + 1)
    cuts = sorted(cuts)
    reps = cuts[:-1]
    s0 = nfa.closure([start])
    index = {s0: 0}
    order = [s0]
    rows: list[list[int]] = []
    while len(rows) < len(order):
        cur = order[len(rows)]
        row = [-1] * 256
        for k, rep in enumerate(reps):
            targets = [t for s in cur for lo, hi, t in nfa.edges[s] if lo <= rep <= hi]
            if not targets:
                continue
            nxt = nfa.closure(targets)
            if nxt not in index:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
                index[nxt] = len(order)
                order.append(nxt)
            row[rep : cuts[k + 1]] = [index[nxt]] * (cuts[k + 1] - rep)
        rows.append(row)
    accept = [final in s for s in order]
    return np.array(rows, dtype=np.int32).reshape(-1, 256), np.array(accept, dtype=bool)


def _minimize(trans: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moore partition refinement; the dead state -1 is its own class."""
    n = len(accept)
    cls = accept.astype(np.int64)
    # Bytes with identical columns behave alike: refine over one representative column per byte class.
    _, col_idx = np.unique(trans, axis=1, return_index=True)
    small = trans[:, np.sort(col_idx)]
    n_cls = len(np.unique(cls))
    while True:
        ext = np.concatenate([cls, [-1]])  # index -1 -> dead
        sig = np.concatenate([cls[:, None], ext[small]], axis=1)
        index: dict = {}
        new = np.fromiter((index.setdefault(row, len(index)) for row in map(bytes, sig)), dtype=np.int64,
                          count=n)
        if len(index) == n_cls:
            break
        cls, n_cls = new, len(index)
    # Renumber so that the start state's class is 0 and classes appear in BFS order.
    order, seen = [], {}
    queue = [int(cls[0])]
    rep = {}
    for s in range(n):
        rep.setdefault(int(cls[s]), s)
    while queue:
        c = queue.pop(0)
        if c in seen:
            continue
        seen[c] = len(order)
        order.append(c)
        for t in np.unique(trans[rep[c]]):
            if t >= 0 and int(cls[t]) not in seen:
                queue.append(int(cls[t]))
    m = len(order)
    new_trans = np.full((m, 256), -1, dtype=np.int32)
    new_accept = np.zeros(m, dtype=bool)
    for c, k in seen.items():
        row = trans[rep[c]]
        new_trans[k] = np.where(row >= 0, [seen.get(int(cls[t]), -1) if t >= 0 else -1 for t in row], -1)
        new_accept[k] = accept[rep[c]]
    return new_trans, new_accept


def _trim(trans: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Send states that cannot reach a match to the dead state -1."""
    n = len(accept)
    alive = accept.copy()
    while True:
        ext = np.concatenate([alive, [False]])
        grown = alive | ext[trans].any(axis=1)
        if (grown == alive).all():
            break
        alive = grown
    if not alive[0]:
        raise RegexError("matches nothing", "")
    keep = np.flatnonzero(alive)
    remap = np.full(n + 1, -1, dtype=np.int32)
    remap[keep] = np.arange(len(keep), dtype=np.int32)
    t = trans[keep]
    t = np.where(t >= 0, remap[t], -1).astype(np.int32)
    return t, accept[keep]


INTERSECT = "\x00&\x00"  # ZapFormat extension (not KBNF): A<NUL>&<NUL>B matches what both A and B match


def _product(a: DFA, b: DFA, pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """Byte-level product automaton of two trimmed DFAs (reachable pairs only)."""
    index = {(0, 0): 0}
    order = [(0, 0)]
    rows: list[list[int]] = []
    ta, tb = a.table, b.table
    while len(rows) < len(order):
        x, y = order[len(rows)]
        ra, rb = ta[x], tb[y]
        row = [-1] * 256
        for c in range(256):
            u, v = ra[c], rb[c]
            if u >= 0 and v >= 0:
                k = index.get((u, v))
                if k is None:
                    if len(order) >= MAX_DFA_STATES:
                        raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
                    k = index[(u, v)] = len(order)
                    order.append((u, v))
                row[c] = k
        rows.append(row)
    accept = [a.accepting[x] and b.accepting[y] for x, y in order]
    return np.array(rows, dtype=np.int32).reshape(-1, 256), np.array(accept, dtype=bool)


MINUS = "\x00!\x00"  # ZapFormat extension (not KBNF): A<NUL>!<NUL>B matches what A matches and B does not


def _difference(a: DFA, b: DFA, pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """Product of a with the complement of b (b's dead state becomes an accepting sink, -2)."""
    index = {(0, 0): 0}
    order = [(0, 0)]
    rows: list[list[int]] = []
    ta, tb = a.table, b.table
    while len(rows) < len(order):
        x, y = order[len(rows)]
        ra = ta[x]
        rb = tb[y] if y >= 0 else None
        row = [-1] * 256
        for c in range(256):
            u = ra[c]
            if u < 0:
                continue
            v = rb[c] if rb is not None else -2
            if v == -1:
                v = -2
            k = index.get((u, v))
            if k is None:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
                k = index[(u, v)] = len(order)
                order.append((u, v))
            row[c] = k
        rows.append(row)
    accept = [a.accepting[x] and (y < 0 or not b.accepting[y]) for x, y in order]
    return np.array(rows, dtype=np.int32).reshape(-1, 256), np.array(accept, dtype=bool)


# ----------------------------------------------------------------------------- compiled or reference


def _native():
    """The compiled core's module, unless it is missing or ZAPFORMAT_CORE=python asks for the reference."""
    if _zf is None or os.environ.get("ZAPFORMAT_CORE", "").strip().lower() == "python":
        return None
    return _zf


def _arrays(res) -> tuple[np.ndarray, np.ndarray]:
    trans, accept = res
    return np.frombuffer(trans, dtype=np.int32).reshape(-1, 256), np.frombuffer(accept, dtype=np.uint8).astype(bool)


_PERL_SENT: set[str] = set()


def _compile_native(zf, pattern: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The whole pipeline in C++ (parser and NFA included); None where the Python parser must decide (errors)."""
    if "\\" in pattern:
        for k, c in enumerate("dsw"):
            if c not in _PERL_SENT and ("\\" + c in pattern or "\\" + c.upper() in pattern):
                zf.set_perl_class(k, array("i", [x for r in perl_class(c) for x in r]))
                _PERL_SENT.add(c)
    res = zf.compile_pattern(pattern, MAX_REPEAT, MAX_DFA_STATES)
    if res == 1:
        return None
    if res == 2:
        raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
    if res == 3:
        raise RegexError("matches nothing", pattern)
    return _arrays(res)


def _determinize(nfa: _NFA, start: int, final: int, pattern: str) -> tuple[np.ndarray, np.ndarray]:
    zf = _native()
    if zf is None:
        return _subset_construction(nfa, start, final, pattern)
    res = zf.determinize(nfa.n, nfa.eps_src, nfa.eps_tgt, nfa.e_src, nfa.e_lo, nfa.e_hi, nfa.e_tgt, start, final,
                         MAX_DFA_STATES)
    if res is None:
        raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
    return _arrays(res)


def _finish(trans: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_trim (RegexError "matches nothing" when the start state is dead) then _minimize."""
    zf = _native()
    if zf is None:
        return _minimize(*_trim(trans, accept))
    res = zf.trim_minimize(np.ascontiguousarray(trans, dtype=np.int32), np.ascontiguousarray(accept, dtype=np.uint8))
    if res is None:
        raise RegexError("matches nothing", "")
    return _arrays(res)


def _op(a: DFA, b: DFA, pattern: str, difference: bool) -> tuple[np.ndarray, np.ndarray]:
    zf = _native()
    if zf is None:
        return (_difference if difference else _product)(a, b, pattern)
    res = zf.product(np.ascontiguousarray(a.trans, dtype=np.int32), np.ascontiguousarray(a.accept, dtype=np.uint8),
                     np.ascontiguousarray(b.trans, dtype=np.int32), np.ascontiguousarray(b.accept, dtype=np.uint8),
                     difference, MAX_DFA_STATES)
    if res is None:
        raise RegexError(f"DFA larger than {MAX_DFA_STATES} states", pattern)
    return _arrays(res)


def _combine(pattern: str, parts: list[str], difference: bool) -> DFA:
    dfa = compile_regex(parts[0])
    for part in parts[1:]:
        trans, accept = _op(dfa, compile_regex(part), pattern, difference)
        try:
            trans, accept = _finish(trans, accept)
        except RegexError:
            raise RegexError("matches nothing (the combined regexes have no common match)", pattern) from None
        dfa = DFA(pattern, trans, accept)
    return dfa


DIVISIBLE = "\x00%"  # ZapFormat extension (not KBNF): <NUL>%m = whitespace, then an integer divisible by m


def _divisible(m: int, pattern: str) -> DFA:
    """[ \t\n\r]* -?(0|[1-9][0-9]*)(\.0+)? whose value is a multiple of m (remainder states)."""
    if m < 1 or m > MAX_DFA_STATES - 8:
        raise RegexError(f"multipleOf {m} is out of range", pattern)
    ws, neg, zero, dot, zeros = 0, 1, 2, 3, 4  # remainder r lives in state 5 + r
    n = 5 + m
    trans = np.full((n, 256), -1, dtype=np.int32)
    for b in b" \t\n\r":
        trans[ws, b] = ws
    trans[ws, ord("-")] = neg
    for src in (ws, neg):
        trans[src, ord("0")] = zero
        for d in range(1, 10):
            trans[src, ord("0") + d] = 5 + d % m
    for r in range(m):
        for d in range(10):
            trans[5 + r, ord("0") + d] = 5 + (10 * r + d) % m
    trans[zero, ord(".")] = dot
    trans[5, ord(".")] = dot
    trans[dot, ord("0")] = zeros
    trans[zeros, ord("0")] = zeros
    accept = np.zeros(n, dtype=bool)
    accept[[zero, zeros, 5]] = True
    trans, accept = _finish(trans, accept)
    return DFA(pattern, trans, accept)


# Compiled regexes, kept across grammars of one process (insertion order = age). Entries pinned by
# ``pin_regex_cache`` (the schema-independent pieces, e.g. after a warm-up compile) survive
# ``forget_regexes``, which the benchmark calls between schemas so that TTFM counts each schema's own regexes.
REGEX_CACHE_MAX = 512
_CACHE: dict[str, "DFA"] = {}
_PINNED: set[str] = set()


def compile_regex(pattern: str) -> DFA:
    d = _CACHE.get(pattern)
    if d is None:
        d = _compile_regex(pattern)
        if len(_CACHE) >= REGEX_CACHE_MAX:
            old = next((k for k in _CACHE if k not in _PINNED), None)
            if old is not None:
                del _CACHE[old]
        _CACHE[pattern] = d
    return d


def _cache_clear() -> None:
    _CACHE.clear()
    _PINNED.clear()


compile_regex.cache_clear = _cache_clear  # type: ignore[attr-defined]  # (functools.lru_cache's name)


def pin_regex_cache() -> int:
    """Keep every regex compiled so far across ``forget_regexes``; returns how many are pinned."""
    _PINNED.update(_CACHE)
    return len(_PINNED)


def forget_regexes() -> None:
    """Drop the cached regexes that are not pinned."""
    for k in [k for k in _CACHE if k not in _PINNED]:
        del _CACHE[k]


def _compile_regex(pattern: str) -> DFA:
    if pattern.startswith(DIVISIBLE) and pattern[2:].isdigit():
        return _divisible(int(pattern[2:]), pattern)
    if INTERSECT in pattern:
        return _combine(pattern, pattern.split(INTERSECT), False)
    if MINUS in pattern:
        return _combine(pattern, pattern.split(MINUS), True)
    zf = _native()
    if zf is not None:
        arrays = _compile_native(zf, pattern)
        if arrays is not None:
            return DFA(pattern, *arrays)
    ast = parse(pattern)
    nfa = _NFA()
    start, final = nfa.state(), nfa.state()
    nfa.build(ast, start, final)
    trans, accept = _determinize(nfa, start, final, pattern)
    try:
        trans, accept = _finish(trans, accept)
    except RegexError:
        raise RegexError("matches nothing", pattern) from None
    return DFA(pattern, trans, accept)

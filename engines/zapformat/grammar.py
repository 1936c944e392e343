"""KBNF grammars: parse the text format, check it, and compile it into the tables the recognizer uses.

KBNF (Koishi's BNF, the grammar language of the official ``kbnf`` engine) is EBNF with embedded
regular expressions. Supported here::

    start ::= object;                      (* rules end with ';' ; comments like this *)
    object ::= "{" ws members? ws "}";     (* "..." or '...' literals, with \\n \\t \\" \\xHH \\u{..} escapes *)
    members ::= pair ("," pair)*;          (* ( ) groups, | alternation, ? * + repetition *)
    ws ::= #"[ \\t\\n\\r]*";                 (* #"..." regex terminal, Rust syntax (see regex.py) *)
    opt ::= [ "x" ] { "y" };               (* [ ] optional, { } zero or more *)

Repetitions become left-recursive helper nonterminals (constant Earley items per byte); the nullable
symbols are found by a fixed point and skipped when items are created (Aycock-Horspool), so empty
productions never appear as Earley items. Unproductive productions are removed so that every live
Earley item can still reach an accepting state (a mask then contains exactly the viable tokens).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .regex import DFA, RegexError, compile_regex

NT, LIT, RE = 0, 1, 2
MAX_GRAMMAR_CHARS = 1_000_000  # the JSON Schema compiler has its own, named limits (json_schema.Limits)
MAX_RULES = 20_000


class GrammarError(ValueError):
    """A grammar problem, pointing at ``line:col`` of the grammar text when there is one."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        self.line, self.col = line, col
        where = f"line {line}, column {col}: " if line is not None else ""
        super().__init__(f"grammar error: {where}{message}")


# ----------------------------------------------------------------------------- lexer

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>\(\*.*?\*\))|(?P<def>::=)|(?P<regex>\#"(?:[^"\\]|\\.)*"|\#'(?:[^'\\]|\\.)*')|(?P<bad_regex>\#\w+["'])|"""
    r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[|;()\[\]{}?*+])""",
    re.S,
)


def _pos(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _lex(text: str):
    i, out = 0, []
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m:
            snippet = text[i : i + 12].split("\n")[0]
            raise GrammarError(f"unexpected text {snippet!r}", *_pos(text, i))
        kind = m.lastgroup
        if kind == "bad_regex":
            raise GrammarError(f"unsupported terminal kind {m.group()[:-1]!r} (only #\"regex\")", *_pos(text, i))
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(), i))
        i = m.end()
    out.append(("eof", "", len(text)))
    return out


_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "f": "\f", "v": "\v"}


def unescape(body: str, text: str, offset: int, keep_unknown: bool = False) -> str:
    """KBNF string escapes. In regexes (``keep_unknown``) other escapes such as ``\\d`` pass through."""
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in _ESC:
            out.append(_ESC[n])
            i += 2
        elif n in "xu":
            if body[i + 2 : i + 3] == "{":
                j = body.find("}", i)
                digits, i = body[i + 3 : j], j + 1
            else:
                w = 2 if n == "x" else 4
                digits, i = body[i + 2 : i + 2 + w], i + 2 + w
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise GrammarError(f"invalid escape \\{n}{digits}", *_pos(text, offset)) from None
        elif keep_unknown:
            out.append(c + n)
            i += 2
        else:
            raise GrammarError(f"unknown escape \\{n}", *_pos(text, offset))
    return "".join(out)


# ----------------------------------------------------------------------------- parser -> productions
# A symbol is ("N", name) | ("L", bytes) | ("R", pattern); a rule body is a list of alternatives.


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _lex(text)
        self.k = 0
        self.rules: dict[str, list[list[tuple]]] = {}
        self.where: dict[str, int] = {}
        self.refs: list[tuple[str, int]] = []
        self.helpers = 0

    def error(self, msg: str, offset: int | None = None):
        raise GrammarError(msg, *_pos(self.text, self.toks[self.k][2] if offset is None else offset))

    def peek(self):
        return self.toks[self.k]

    def take(self, kind: str, value: str | None = None):
        t = self.toks[self.k]
        if t[0] != kind or (value is not None and t[1] != value):
            want = value or kind
            got = t[1] or "end of grammar"
            self.error(f"expected {want!r}, found {got!r}")
        self.k += 1
        return t

    def parse(self):
        while self.peek()[0] != "eof":
            name_tok = self.take("name")
            self.take("def")
            alts = self.alternatives()
            self.take("op", ";")
            name = name_tok[1]
            if name in self.rules and not name.startswith("__"):
                self.rules[name].extend(alts)  # kbnf allows a rule to be given in several parts
            else:
                self.rules[name] = alts
                self.where[name] = name_tok[2]
            if len(self.rules) > MAX_RULES:
                self.error(f"more than {MAX_RULES} rules")
        if not self.rules:
            raise GrammarError("the grammar is empty")
        for name, off in self.refs:
            if name not in self.rules:
                raise GrammarError(f"nonterminal {name!r} is used but never defined", *_pos(self.text, off))
        return self.rules

    def helper(self, alts) -> tuple:
        self.helpers += 1
        name = f"__h{self.helpers}"
        self.rules[name] = alts
        return ("N", name)

    def alternatives(self):
        alts = [self.sequence()]
        while self.peek()[:2] == ("op", "|"):
            self.k += 1
            alts.append(self.sequence())
        return alts

    def sequence(self):
        seq = []
        while True:
            t = self.peek()
            if t[0] == "eof" or (t[0] == "op" and t[1] in "|;)]}"):
                break
            if t[0] == "name" and self.toks[self.k + 1][0] == "def":
                self.error(f"missing ';' before the rule {t[1]!r}")
            seq.extend(self.postfix())
        return seq

    def postfix(self):
        sym = self.primary()
        while self.peek()[0] == "op" and self.peek()[1] in "?*+":
            op = self.take("op")[1]
            body = list(sym)
            if op == "?":
                sym = [self.helper([body, []])]
            else:  # left recursion: H ::= H body | body (+) or | ε (*)
                self.helpers += 1
                name = f"__h{self.helpers}"
                self.rules[name] = [[("N", name)] + body, body if op == "+" else []]
                sym = [("N", name)]
        return sym

    def primary(self) -> list[tuple]:
        kind, value, off = self.peek()
        if kind == "name":
            self.k += 1
            self.refs.append((value, off))
            return [("N", value)]
        if kind == "str":
            self.k += 1
            s = unescape(value[1:-1], self.text, off)
            return [("L", s.encode("utf-8"))] if s else []
        if kind == "regex":
            self.k += 1
            pattern = unescape(value[2:-1], self.text, off, keep_unknown=True)
            try:
                compile_regex(pattern)
            except RegexError as e:
                raise GrammarError(str(e), *_pos(self.text, off)) from None
            return [("R", pattern)]
        if (kind, value) == ("op", "("):
            self.k += 1
            alts = self.alternatives()
            self.take("op", ")")
            if len(alts) == 1:
                return alts[0]
            return [self.helper(alts)]
        if (kind, value) == ("op", "["):
            self.k += 1
            alts = self.alternatives()
            self.take("op", "]")
            return [self.helper(alts + [[]])]
        if (kind, value) == ("op", "{"):
            self.k += 1
            alts = self.alternatives()
            self.take("op", "}")
            body = [self.helper(alts)] if len(alts) > 1 else alts[0]
            self.helpers += 1
            name = f"__h{self.helpers}"
            self.rules[name] = [[("N", name)] + body, []]
            return [("N", name)]
        self.error(f"unexpected {value or 'end of grammar'!r}")


# ----------------------------------------------------------------------------- compiled grammar


@dataclass
class Grammar:
    """Flat tables over *dotted positions* (a production and the index of its post-dot symbol)."""

    source: str
    start: int
    names: list[str]
    productions: list[tuple[int, tuple]]  # (lhs, symbols) with symbols (kind, value)
    regexes: list[DFA]
    nullable: list[bool]
    # Per dotted position dp:
    kind: list[int] = field(default_factory=list)
    value: list = field(default_factory=list)  # nt id | literal bytes | regex id
    lhs: list[int] = field(default_factory=list)
    is_last: list[bool] = field(default_factory=list)
    advance: list[tuple[int, ...]] = field(default_factory=list)  # dps after moving past dp's symbol
    advance_completes: list[bool] = field(default_factory=list)
    predict: list[tuple[tuple[int, int], ...]] = field(default_factory=list)  # per nt: (dp, init state)
    _dfa_tables: list | None = field(default=None, repr=False)

    @property
    def dfa_tables(self) -> list:
        """Per dp: the regex's Python table rows (or None); built on first use (only the Python recogniser reads
        them: the compiled core takes the DFAs' arrays)."""
        if self._dfa_tables is None:
            self._dfa_tables = [self.regexes[v].table if k == RE else None for k, v in zip(self.kind, self.value)]
        return self._dfa_tables

    @property
    def n_positions(self) -> int:
        return len(self.kind)

    def describe(self) -> str:
        return f"{len(self.names)} nonterminals, {len(self.productions)} productions, {len(self.regexes)} regexes"


def _fixpoints(rules: dict[str, list[list[tuple]]]):
    def sym_nullable(s, nullable):
        return (s[0] == "N" and nullable.get(s[1], False)) or (s[0] == "R" and compile_regex(s[1]).nullable)

    nullable: dict[str, bool] = {}
    changed = True
    while changed:
        changed = False
        for name, alts in rules.items():
            if not nullable.get(name) and any(all(sym_nullable(s, nullable) for s in alt) for alt in alts):
                nullable[name] = changed = True
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alts in rules.items():
            if name not in productive and any(all(s[0] != "N" or s[1] in productive for s in alt) for alt in alts):
                productive.add(name)
                changed = True
    return nullable, productive


_RECENT: dict[tuple[str, str], Grammar] = {}  # the last few grammars: frontend.to_kbnf validates the text that
_RECENT_MAX = 4  # masks.compile_program compiles next, so that text is parsed once


def compile_grammar(text: str, start: str = "start") -> Grammar:
    g = _RECENT.get((text, start))
    if g is None:
        g = _compile_grammar(text, start)
        while len(_RECENT) >= _RECENT_MAX:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[(text, start)] = g
    return g


def forget_grammars() -> None:
    _RECENT.clear()


def _compile_grammar(text: str, start: str = "start") -> Grammar:
    if len(text) > MAX_GRAMMAR_CHARS:
        raise GrammarError(f"the grammar has {len(text)} characters; the limit is {MAX_GRAMMAR_CHARS}")
    p = _Parser(text)
    rules = p.parse()
    if start not in rules:
        raise GrammarError(f"no rule for the start symbol {start!r}")
    nullable, productive = _fixpoints(rules)
    if start not in productive:
        line, col = _pos(text, p.where[start])
        raise GrammarError(f"the grammar accepts nothing: {start!r} derives no finite string", line, col)
    # Keep productions whose symbols are all productive, reachable from the start symbol.
    names, index, order = [], {}, [start]
    while order:
        n = order.pop()
        if n in index:
            continue
        index[n] = len(names)
        names.append(n)
        for alt in rules[n]:
            if all(s[0] != "N" or s[1] in productive for s in alt):
                order.extend(s[1] for s in alt if s[0] == "N")
    regex_ids: dict[str, int] = {}
    regexes: list[DFA] = []
    productions = []
    for n in names:
        for alt in rules[n]:
            if not alt or any(s[0] == "N" and s[1] not in productive for s in alt):
                continue
            syms = []
            for s in alt:
                if s[0] == "N":
                    syms.append((NT, index[s[1]]))
                elif s[0] == "L":
                    syms.append((LIT, s[1]))
                else:
                    if s[1] not in regex_ids:
                        regex_ids[s[1]] = len(regexes)
                        regexes.append(compile_regex(s[1]))
                    syms.append((RE, regex_ids[s[1]]))
            productions.append((index[n], tuple(syms)))
    g = Grammar(text, 0, names, productions, regexes, [bool(nullable.get(n)) for n in names])
    _build_tables(g)
    return g


def _sym_nullable(g: Grammar, sym) -> bool:
    kind, v = sym
    return (kind == NT and g.nullable[v]) or (kind == RE and g.regexes[v].nullable)


def _build_tables(g: Grammar) -> None:
    base = []
    for lhs, syms in g.productions:
        base.append(len(g.kind))
        for i, (kind, v) in enumerate(syms):
            g.kind.append(kind)
            g.value.append(v)
            g.lhs.append(lhs)
            g.is_last.append(i == len(syms) - 1)

    def skip_from(p: int, i: int) -> tuple[tuple[int, ...], bool]:
        """Dotted positions reachable at index i of production p by skipping nullable symbols."""
        syms = g.productions[p][1]
        out = []
        while i < len(syms):
            out.append(base[p] + i)
            if not _sym_nullable(g, syms[i]):
                return tuple(out), False
            i += 1
        return tuple(out), True

    for p, (_, syms) in enumerate(g.productions):
        for i in range(len(syms)):
            dps, completes = skip_from(p, i + 1)
            g.advance.append(dps)
            g.advance_completes.append(completes)
    # Static prediction closure of each nonterminal: all items predicted (transitively) at a column.
    entry = {}
    by_lhs: dict[int, list[int]] = {}
    for p, (lhs, _) in enumerate(g.productions):
        by_lhs.setdefault(lhs, []).append(p)
        entry[p] = skip_from(p, 0)[0]
    for nt in range(len(g.names)):
        seen_nt, items, stack = {nt}, [], [nt]
        while stack:
            n = stack.pop()
            for p in by_lhs.get(n, ()):
                for dp in entry[p]:
                    items.append(dp)
                    if g.kind[dp] == NT and g.value[dp] not in seen_nt:
                        seen_nt.add(g.value[dp])
                        stack.append(g.value[dp])
        g.predict.append(tuple((dp, 0) for dp in dict.fromkeys(items)))

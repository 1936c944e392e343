"""JSON Schema (draft 2020-12) -> KBNF, in the style of formatron's ``formats/json.py``.

Every JSON token is a regex terminal with a whitespace prefix, one nonterminal per schema node. The prefix
is a setting (``whitespace_regex``): ``bounded`` (the default: at most one newline, then at most ``max_indent``
spaces/tabs), ``compact`` (none) or ``flexible`` (formatron's unbounded ``[ \\t\\n\\r]*``, used wherever masks
are compared with kbnf or with the MaskBench peers). Object members are written in schema order (declared
properties in their given order, then any additional members). Every keyword that constrains an instance is either compiled
exactly or refused by name with the JSON pointer of the keyword in the user's schema; keywords the
specification does not define (``x-...``, ``readonly``, ``_comment``...) and annotations are ignored,
as a validator ignores them. See docs/methods/zapformat.md ("JSON Schema coverage") for the table.

Compiled: ``type``; ``const``/``enum`` (values filtered by the rest of the schema); ``anyOf``; ``oneOf`` (each
branch excludes the branches it may overlap); ``allOf`` (merged); ``not`` of types, of values, of ``required``,
``anyOf``, ``pattern``, ``items``, integer ``multipleOf``, bounds and ``properties`` (``_Converter.negate``);
``$ref`` to ``#``, ``#/$defs/...``, ``#/definitions/...`` and any local JSON pointer (recursion allowed, siblings
merged as ``allOf``); numbers: ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (also the
draft-4 boolean forms) as digit-level regexes, ``multipleOf`` for integers (a remainder automaton) and
``multipleOf`` = 10^-k for numbers; strings: ``minLength``/``maxLength``, ``pattern`` (searched, as the
specification says; ECMA-262 classes), ``format`` date, time, date-time, email, uuid, uri, uri-reference,
hostname, ipv4, ipv6; arrays: ``items``, ``prefixItems`` (and draft-7 ``items`` arrays +
``additionalItems``), ``minItems``/``maxItems`` of any size up to ``Limits.max_count``, ``contains``,
``uniqueItems`` over at most ``UNIQUE_MAX`` item values; objects:
``properties``, ``required``, ``additionalProperties`` (false, true or a schema), ``patternProperties``,
``minProperties``/``maxProperties``, ``dependentRequired``, ``dependentSchemas`` (and draft-7 ``dependencies``),
``propertyNames`` (a string schema that becomes one key regex).

Stated narrowings (never a wrong accept): a number under bounds or ``multipleOf``, and a number that must not be an
integer, is written without an exponent; integers are written without a fraction (``1.0`` is refused for
``integer``); a member key given with a ``\\u`` escape is not recognised as the declared name.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from urllib.parse import unquote

FLEXIBLE_WS = r"[ \t\n\r]*"  # formatron's prefix: any run of JSON whitespace (kbnf / MaskBench comparisons)
WHITESPACE_MODES = ("bounded", "compact", "flexible")
DEFAULT_WHITESPACE = "bounded"
DEFAULT_MAX_INDENT = 16
MAX_INDENT_LIMIT = 64


def whitespace_regex(mode: str = DEFAULT_WHITESPACE, max_indent: int = DEFAULT_MAX_INDENT) -> str:
    """The regex every JSON token of a compiled schema starts with (``Decoding controls`` in the docs).

    ``flexible``: ``[ \\t\\n\\r]*`` (unbounded; formatron, XGrammar ``any_whitespace=True``, LLGuidance
    ``whitespace_flexible``). ``bounded`` (default): ``(?:\\r?\\n)?[ \\t]{0,N}``, at most one newline
    (``\\n`` or ``\\r\\n``) then at most ``N = max_indent`` spaces/tabs, like XGrammar's ``max_whitespace_cnt``.
    ``compact``: nothing (``{"a":1}``; LLGuidance's non-flexible mode with ``,``/``:`` separators)."""
    if mode not in WHITESPACE_MODES:
        raise ValueError(f"whitespace must be one of {', '.join(WHITESPACE_MODES)} (got {mode!r})")
    if isinstance(max_indent, bool) or not isinstance(max_indent, int) or not 0 <= max_indent <= MAX_INDENT_LIMIT:
        raise ValueError(f"max_indent must be a whole number from 0 to {MAX_INDENT_LIMIT} (got {max_indent!r})")
    if mode == "flexible":
        return FLEXIBLE_WS
    if mode == "compact":
        return ""
    return r"(?:\r?\n)?" + (rf"[ \t]{{0,{max_indent}}}" if max_indent else "")


_WS: ContextVar[str] = ContextVar("zapformat_json_whitespace", default=FLEXIBLE_WS)


def _ws() -> str:
    """The whitespace prefix of the schema being compiled (set by ``schema_to_kbnf``)."""
    return _WS.get()


def json_header(ws: str = FLEXIBLE_WS) -> str:
    """The shared JSON token terminals and generic value rules, each terminal prefixed by ``ws``."""
    WS = ws
    return rf'''integer ::= #"{WS}-?(0|[1-9][0-9]*)";
number ::= #"{WS}-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
string ::= #'{WS}"([^\\\\"\u0000-\u001f]|\\\\["\\\\bfnrt/]|\\\\u[0-9A-Fa-f]{{4}})*"';
boolean ::= #"{WS}(true|false)";
null ::= #"{WS}null";
array ::= array_begin (json_value (comma json_value)*)? array_end;
object ::= object_begin (string colon json_value (comma string colon json_value)*)? object_end;
json_value ::= number|string|boolean|null|array|object;
comma ::= #"{WS},";
colon ::= #"{WS}:";
object_begin ::= #"{WS}\\{{";
object_end ::= #"{WS}\\}}";
array_begin ::= #"{WS}\\[";
array_end ::= #"{WS}\\]";
'''


WS = FLEXIBLE_WS  # kept for importers; the compiler itself reads ``_ws()``
HEADER = json_header(FLEXIBLE_WS)
JSON_GRAMMAR = "start ::= object;\n" + HEADER  # generic JSON objects (the spec's "generic JSON CFG")
STRING_CHAR = r'([^\\\\"\u0000-\u001f]|\\\\["\\\\bfnrt/]|\\\\u[0-9A-Fa-f]{4})'  # KBNF-escaped form
MAX_PATTERNS = 5  # patternProperties with different schemas: one kind of member per set of patterns (2^n - 1)
UNIQUE_MAX = 8  # uniqueItems is compiled over at most this many distinct item values (2^k rules)
LONG_STRING = 256  # a length bound above this many characters is compiled in blocks (_Converter.long_string)
BLOCK = 64
SCHAR = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9A-Fa-f]{4})'  # plain regex form
TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
ANNOTATIONS = {"title", "description", "$schema", "$id", "id", "examples", "default", "$comment", "deprecated",
               "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "$anchor",
               "$dynamicAnchor", "$vocabulary", "$defs", "definitions"}
REFUSED = {"uniqueItems", "minContains", "maxContains", "$dynamicRef", "$recursiveRef", "if"}
ASSERTIONS = {"type", "const", "enum", "anyOf", "oneOf", "allOf", "not", "$ref", "minimum", "maximum",
              "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format",
              "items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "properties",
              "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties",
              "dependentRequired", "dependencies", "dependentSchemas", "propertyNames", "then", "else",
              "unevaluatedProperties", "unevaluatedItems"} | REFUSED
UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")
SPEC_FORMATS_REFUSED = {"idn-email", "idn-hostname", "iri", "iri-reference", "uri-template", "json-pointer",
                        "relative-json-pointer", "regex", "duration"}


@dataclass(frozen=True)
class Limits:
    """Bounds on what one schema may compile to; the error names the setting that was exceeded."""

    max_rules: int = int(os.environ.get("ZAPFORMAT_MAX_RULES", "4000"))
    max_grammar_chars: int = int(os.environ.get("ZAPFORMAT_MAX_GRAMMAR_CHARS", "1000000"))
    # counted items/properties, and a string length bound next to a pattern or format (one automaton)
    max_count: int = int(os.environ.get("ZAPFORMAT_MAX_COUNT", "1000"))
    max_compile_s: float = float(os.environ.get("ZAPFORMAT_MAX_COMPILE_S", "10"))
    max_multiple_of: int = 1000
    # Undeclared members next to declared ones need a key regex that excludes every declared name; above this
    # many characters of names, or when that regex's automaton exceeds the DFA limit (and additionalProperties is
    # not given explicitly), they are not generated.
    max_excluded_name_chars: int = int(os.environ.get("ZAPFORMAT_MAX_EXCLUDED_NAME_CHARS", "20000"))


LIMITS = Limits()


class SchemaError(ValueError):
    def __init__(self, pointer: str, message: str):
        self.pointer = pointer.lstrip("#") or "/"
        self.reason = message
        super().__init__(f"JSON Schema error at {self.pointer}: {message}")


class Unsatisfiable(SchemaError):
    """No JSON value is valid at this pointer (an anyOf drops such a branch; at the root it is an error)."""

    def __init__(self, pointer: str, message: str):
        super().__init__(pointer, f"unsatisfiable: {message}")


def _kbnf_regex_literal(value) -> str:
    """A whitespace-prefixed regex terminal matching exactly the JSON text of a scalar ``value``."""
    text = json.dumps(value, ensure_ascii=False)
    return _terminal(re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text))


def _combined_terminal(plain: str) -> str:
    """A KBNF regex terminal for a plain regex that combines automata (regex.INTERSECT, MINUS, DIVISIBLE)."""
    from .regex import DIVISIBLE, INTERSECT, MINUS

    text = "#'" + plain.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return text.replace(INTERSECT, "\\x00&\\x00").replace(MINUS, "\\x00!\\x00").replace(DIVISIBLE, "\\x00%")


def _terminal(regex: str) -> str:
    """A KBNF regex terminal (whitespace-prefixed) for a plain regex."""
    return "#'" + _ws() + regex.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ----------------------------------------------------------------------------- numbers as digit regexes


def _nat_range(lo: int, hi: int | None) -> str:
    """Regex for the decimal naturals in [lo, hi] (hi None = unbounded), no leading zeros."""
    if hi is not None and hi < lo:
        return ""
    if hi is None:
        n = len(str(lo))
        head = _nat_range(lo, 10 ** n - 1)
        return f"(?:{head}|[1-9][0-9]{{{n},}})" if head else f"[1-9][0-9]{{{n},}}"
    parts = []
    a = lo
    while a <= hi:
        n = len(str(a))
        b = min(hi, 10 ** n - 1)
        parts.append(_same_len(str(a), str(b)))
        a = b + 1
    return "(?:" + "|".join(parts) + ")" if len(parts) > 1 else parts[0]


def _same_len(a: str, b: str) -> str:
    """Regex for digit strings s with len(s) == len(a) == len(b) and a <= s <= b."""
    if not a:
        return ""
    if a == b:
        return a
    if a[0] == b[0]:
        return a[0] + _same_len(a[1:], b[1:])
    n = len(a) - 1
    tail = "[0-9]" * 0 + (f"[0-9]{{{n}}}" if n else "")
    parts = []
    lo_all = set(a[1:]) <= {"0"}
    hi_all = set(b[1:]) <= {"9"}
    first_lo = int(a[0]) if lo_all else int(a[0]) + 1
    first_hi = int(b[0]) if hi_all else int(b[0]) - 1
    if not lo_all:
        parts.append(a[0] + _same_len(a[1:], "9" * n))
    if first_lo <= first_hi:
        parts.append((f"[{first_lo}-{first_hi}]" if first_lo != first_hi else str(first_lo)) + tail)
    if not hi_all:
        parts.append(b[0] + _same_len("0" * n, b[1:]))
    return "(?:" + "|".join(parts) + ")" if len(parts) > 1 else parts[0]


def _digits(lo, lop, hi, hop):
    """Digit strings G (possibly empty) with 0.lo lop 0.G hop 0.hi; lo/hi None = no bound.

    Returns (regex for the non-empty ones or None, whether the empty string qualifies)."""
    if lo == "" and lop == ">=":
        lo = None
    empty_ok = lo is None and (hi is None or hop == "<=" or hi != "")
    if lo is None and hi is None:
        return "[0-9]+", True
    if hi == "":
        if hop == "<" or lo is not None:
            return None, False
        return "0+", True
    if lo == "" and hi is None:  # 0.G > 0
        return "[0-9]*[1-9][0-9]*", False
    groups: dict = {}
    for e in range(10):
        if lo is None:
            lower = None
        else:
            lf = int(lo[0]) if lo else 0
            if e < lf:
                continue
            lower = None if e > lf else (lo[1:], lop)
        if hi is None:
            upper = None
        else:
            hf = int(hi[0])
            if e > hf:
                continue
            upper = None if e < hf else (hi[1:], hop)
        groups.setdefault((lower, upper), []).append(e)
    alts = []
    for (lower, upper), ds in groups.items():
        sub, sub_empty = _digits(*(lower or (None, None)), *(upper or (None, None)))
        if sub is None and not sub_empty:
            continue
        cls = str(ds[0]) if len(ds) == 1 else f"[{ds[0]}-{ds[-1]}]" if ds == list(range(ds[0], ds[-1] + 1)) \
            else "[" + "".join(map(str, ds)) + "]"
        tail = "" if sub is None else (f"(?:{sub})?" if sub_empty else f"(?:{sub})")
        alts.append(cls + tail)
    if not alts:
        return None, empty_ok
    return ("(?:" + "|".join(alts) + ")" if len(alts) > 1 else alts[0]), empty_ok


def _suffix(lower, upper, frac: bool) -> str | None:
    """The optional fraction after an integer part: '' or '\\.digits' with its value within the bounds."""
    sub, empty_ok = _digits(*(lower or (None, None)), *(upper or (None, None)))
    if not frac:
        return "" if empty_ok else None
    if sub is None:
        return "" if empty_ok else None
    return rf"(?:\.{sub})?" if empty_ok else rf"\.{sub}"


def _split(x: Fraction) -> tuple[int, str]:
    """Non-negative x -> (integer part, fraction digits without trailing zeros); x must be a finite decimal."""
    i = math.floor(x)
    f = x - i
    digits = ""
    for _ in range(40):
        if f == 0:
            break
        f *= 10
        digits += str(math.floor(f))
        f -= math.floor(f)
    if f != 0:
        raise ValueError("not a finite decimal")
    return i, digits


def _nonneg_decimal(lo: Fraction, lo_strict: bool, hi: Fraction | None, hi_strict: bool, frac: bool) -> str:
    """Regex for non-negative decimals x (no sign, no exponent) with lo (<|<=) x (<|<=) hi."""
    li, lf = _split(lo)
    lower = (lf, ">" if lo_strict else ">=")
    if hi is not None:
        hi_i, hf = _split(hi)
        upper = (hf, "<" if hi_strict else "<=")
        if hi_i == li:
            sfx = _suffix(lower, upper, frac)
            return "" if sfx is None else f"{li}{sfx}"
    alts = []
    sfx = _suffix(lower, None, frac)
    if sfx is not None:
        alts.append(f"{li}{sfx}")
    mid_hi = None if hi is None else hi_i - 1
    if mid_hi is None or mid_hi >= li + 1:
        alts.append(_nat_range(li + 1, mid_hi) + (r"(?:\.[0-9]+)?" if frac else ""))
    if hi is not None:
        sfx = _suffix(None, upper, frac)
        if sfx is not None:
            alts.append(f"{hi_i}{sfx}")
    return "(?:" + "|".join(alts) + ")" if alts else ""


def number_regex(lo, lo_strict: bool, hi, hi_strict: bool, integer: bool, ptr: str) -> str:
    """Exact regex for JSON numbers (no exponent) in the interval; integers when ``integer``."""
    lo = None if lo is None else Fraction(str(lo))
    hi = None if hi is None else Fraction(str(hi))
    if integer:  # integer bounds: tighten to whole numbers
        if lo is not None:
            lo, lo_strict = Fraction(math.floor(lo) + 1 if lo_strict else math.ceil(lo)), False
        if hi is not None:
            hi, hi_strict = Fraction(math.ceil(hi) - 1 if hi_strict else math.floor(hi)), False
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_strict or hi_strict))):
        raise Unsatisfiable(ptr, f"no {'integer' if integer else 'number'} lies between the lower bound "
                                 f"{float(lo):g} and the upper bound {float(hi):g}")
    try:
        alts = []
        if hi is None or hi > 0 or (hi == 0 and not hi_strict):  # the non-negative part
            plo, pstrict = (Fraction(0), False) if lo is None or lo < 0 else (lo, lo_strict)
            r = _nonneg_decimal(plo, pstrict, hi, hi_strict, not integer)
            if r:
                alts.append(r)
        if lo is None or lo < 0:  # the negative part: -y with y > 0
            nlo, nstrict = (Fraction(0), True) if hi is None or hi >= 0 else (-hi, hi_strict)
            nhi, nhstrict = (None, False) if lo is None else (-lo, lo_strict)
            r = _nonneg_decimal(nlo, nstrict, nhi, nhstrict, not integer)
            if r:
                alts.append(f"-{r}")
    except ValueError:
        raise SchemaError(ptr, "numeric bounds with more than 40 decimal places are not supported") from None
    zero_in = (lo is None or lo < 0 or (lo == 0 and not lo_strict)) and \
        (hi is None or hi > 0 or (hi == 0 and not hi_strict))
    if zero_in:
        alts.append("-0" + ("" if integer else r"(?:\.0+)?"))  # -0 equals 0
    if not alts:
        raise Unsatisfiable(ptr, "no number satisfies the bounds")
    return "(?:" + "|".join(alts) + ")" + (r"(?:\.0+)?" if integer else "")  # 1.0 is an integer


# ----------------------------------------------------------------------------- strings


def _class(ranges) -> str:
    return "[" + "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges) + "]"


_SHORT = {0x22: r'\\"', 0x5C: r"\\\\", 0x08: r"\\b", 0x0C: r"\\f", 0x0A: r"\\n", 0x0D: r"\\r", 0x09: r"\\t"}


def _json_set(ranges) -> str:
    """A character class as it appears inside a JSON string's text: raw characters, or the escapes JSON
    requires (and allows) for quote, backslash and control characters."""
    from .regex import normalize

    raw, esc = [], []
    for lo, hi in ranges:
        cur = lo
        for cut_lo, cut_hi in ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)):
            if hi < cut_lo or cur > cut_hi:
                continue
            if cur < cut_lo:
                raw.append((cur, cut_lo - 1))
            esc.extend(range(max(cur, cut_lo), min(hi, cut_hi) + 1))
            cur = min(hi, cut_hi) + 1
        if cur <= hi:
            raw.append((cur, hi))
    raw = list(normalize(raw))
    alts = [_class(raw)] if raw else []
    if any(lo <= 0x2F <= hi for lo, hi in raw):
        alts.append(r"\\/")
    for c in esc:
        if c in _SHORT:
            alts.append(_SHORT[c])
        lo_nib = f"{c & 15:x}"
        alts.append(rf"\\u00{c >> 4:x}" + (f"[{lo_nib}{lo_nib.upper()}]" if lo_nib.isalpha() else lo_nib))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")" if alts else ""


def _print(node) -> str:
    kind = node[0]
    if kind == "set":
        out = _json_set(node[1])
        if not out:
            raise ValueError("empty")
        return out
    if kind == "cat":
        return "".join(_print(n) for n in node[1])
    if kind == "alt":
        alts = []
        for n in node[1]:
            try:
                alts.append(_print(n))
            except ValueError:
                continue
        if not alts:
            raise ValueError("empty")
        return "(?:" + "|".join(alts) + ")"
    _, sub, lo, hi = node
    return f"(?:{_print(sub)}){{{lo},{'' if hi is None else hi}}}"


def _ecma_to_rust(pat: str, ptr: str) -> str:
    """ECMA-262 classes to the regex module's syntax: ASCII \\d and \\w, no look-around, no backreferences."""
    out, i, in_class = [], 0, False
    while i < len(pat):
        c = pat[i]
        if c == "\\" and i + 1 < len(pat):
            n = pat[i + 1]
            if n in "dwDW":
                body = {"d": "0-9", "w": "A-Za-z0-9_"}[n.lower()]
                if in_class and n.isupper():
                    raise SchemaError(ptr, f"pattern: \\{n} inside a character class is not supported")
                out.append(body if in_class else (f"[^{body}]" if n.isupper() else f"[{body}]"))
            elif n in "pPkb" or n.isdigit() and n != "0":
                raise SchemaError(ptr, f"pattern: \\{n} (Unicode property, backreference or word boundary) is "
                                       "not supported")
            elif n == "c":
                raise SchemaError(ptr, "pattern: \\c control escapes are not supported")
            else:
                out.append(c + n)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            if pat[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pat[i + 1 : i + 2] == "]":  # ECMA: [] is empty, []] not a literal ]
                raise SchemaError(ptr, "pattern: empty character class [] is not supported")
            i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        elif c == "[" and in_class:
            out.append("\\[")
            i += 1
            continue
        elif c == "(" and not in_class and pat[i + 1 : i + 2] == "?" and pat[i + 2 : i + 3] != ":":
            raise SchemaError(ptr, "pattern: look-around and named groups are not supported")
        out.append(c)
        i += 1
    return "".join(out)


def _top_level_branches(pat: str) -> list[str]:
    out, depth, i, in_class, start = [], 0, 0, False, 0
    while i < len(pat):
        c = pat[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pat[start:i])
            start = i + 1
        i += 1
    return out + [pat[start:]]


def _balanced(pat: str) -> bool:
    depth, i = 0, 0
    while i < len(pat):
        c = pat[i]
        if c == "\\":
            i += 2
            continue
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
        i += 1
    return depth == 0


def _unwrap(pat: str) -> str:
    """(^...$) or (?:^...$) -> ^...$ when the group spans the whole pattern and holds the anchors."""
    for opener in ("(?:", "("):
        if pat.startswith(opener) and pat.endswith(")") and not pat.endswith("\\)"):
            inner = pat[len(opener):-1]
            if _balanced(inner) and (inner.startswith("^") or inner.endswith("$")):
                return inner
    return pat


def pattern_regex(pattern: str, ptr: str) -> str:
    """Regex (plain syntax) over the *JSON text* of a string's contents for a JSON Schema ``pattern``."""
    from .regex import RegexError, parse

    if not isinstance(pattern, str):
        raise SchemaError(ptr, "pattern must be a string")
    branches = _top_level_branches(pattern)
    if len(branches) > 1 and re.search(r"(?<!\\)[\^$]", pattern):  # ^a|b$: each branch has its own anchors
        return "(?:" + "|".join(pattern_regex(_unwrap(b), ptr) for b in branches) + ")"
    m = re.fullmatch(r"\^\((?:\?:)?(.*)\)(\$?)", pattern, re.S)
    if m and _balanced(m.group(1)) and len(_top_level_branches(m.group(1))) > 1:
        # ^(a$|b) = ^a$|^b: distribute the outer anchors over the group's branches
        inner = _top_level_branches(m.group(1))
        return "(?:" + "|".join(pattern_regex("^" + b + m.group(2), ptr) for b in inner) + ")"
    pat = _ecma_to_rust(_unwrap(pattern), ptr)
    start = pat.startswith("^")
    end = pat.endswith("$") and not pat.endswith("\\$")
    core = pat[1 if start else 0 : len(pat) - 1 if end else len(pat)]
    if (start or end) and len(_top_level_branches(core)) > 1:
        core = f"(?:{core})"
    if re.search(r"(?<!\\)[\^$]", re.sub(r"\[[^\]]*\]", "", core.replace("\\\\", ""))):
        raise SchemaError(ptr, f"pattern {pattern!r}: anchors ^ and $ inside the pattern are not supported")
    try:
        body = _print(parse(core))
    except RegexError as e:
        raise SchemaError(ptr, f"pattern {pattern!r}: {e.detail}") from None
    except ValueError:
        raise Unsatisfiable(ptr, f"pattern {pattern!r} matches no JSON string") from None
    return ("" if start else SCHAR + "*") + body + ("" if end else SCHAR + "*")


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_OCTET}(?:\.{_OCTET}){{3}})"
_IPV6 = "(?:" + "|".join([
    rf"(?:{_H16}:){{6}}{_LS32}", rf"::(?:{_H16}:){{5}}{_LS32}", rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}", rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}", rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}", rf"(?:(?:{_H16}:){{0,6}}{_H16})?::"]) + ")"
_LEAP = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
         rf"02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP}-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_URI_CHAR = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
FORMATS = {
    "date": _DATE, "time": _TIME, "date-time": rf"{_DATE}[Tt]{_TIME}",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + rf"{_LABEL}(?:\.{_LABEL})*",
    "uuid": r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}",
    "uri": rf"[A-Za-z][A-Za-z0-9+.\-]*:{_URI_CHAR}*", "uri-reference": rf"{_URI_CHAR}*",
    "hostname": rf"{_LABEL}(?:\.{_LABEL})*", "ipv4": rf"{_OCTET}(?:\.{_OCTET}){{3}}", "ipv6": _IPV6,
}
FORMATS["email"] = FORMATS["email"].replace("/", r"\/")  # '/' may be written \/ in JSON too: keep it raw only


def _not_names_regex(names: list[str]) -> str:
    """Regex over JSON string contents matching every string except the given names (as written raw)."""
    from .regex import negate, normalize

    trie: dict = {}
    for n in names:
        node = trie
        for ch in n:
            node = node.setdefault(ch, {})
        node[None] = True

    def rec(node) -> str:
        kids = sorted(k for k in node if k is not None)
        alts = [] if None in node else [""]
        other = negate(normalize([(ord(k), ord(k)) for k in kids] + [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]))
        special = {ord(k) for k in kids if ord(k) < 0x20 or k in '"\\/'}
        shorts = "".join(c for c, code in (('"', 0x22), ("\\\\", 0x5C), ("/", 0x2F), ("b", 8), ("f", 12), ("n", 10),
                                           ("r", 13), ("t", 9)) if code not in special)
        first = ([_class(other)] if other else []) + ([rf"\\[{shorts}]"] if shorts else []) + \
            [r"\\u" + _hex4_except(special)]
        alts.append("(?:" + "|".join(first) + ")" + SCHAR + "*")
        alts.extend(_lit(k) + rec(node[k]) for k in kids)
        return "(?:" + "|".join(alts) + ")"

    return rec(trie)


def _hex4_except(codes: set[int]) -> str:
    """Four hex digits (either case) spelling any code point except the given ones."""
    if not codes:
        return "[0-9A-Fa-f]{4}"
    words = {f"{c:04x}" for c in codes}

    def rec(prefix: str) -> str:
        n = 4 - len(prefix)
        live = sorted({w[len(prefix)] for w in words if w.startswith(prefix)})
        if not live:
            return f"[0-9A-Fa-f]{{{n}}}"
        if n == 1:
            rest = [d for d in "0123456789abcdef" if d not in live]
            return "[" + "".join(d + d.upper() if d.isalpha() else d for d in rest) + "]" if rest else ""
        alts = []
        rest = [d for d in "0123456789abcdef" if d not in live]
        if rest:
            alts.append("[" + "".join(d + d.upper() if d.isalpha() else d for d in rest) + "]" + f"[0-9A-Fa-f]{{{n - 1}}}")
        for d in live:
            sub = rec(prefix + d)
            if sub:
                alts.append(("[" + d + d.upper() + "]" if d.isalpha() else d) + sub)
        return "(?:" + "|".join(alts) + ")"

    return rec("")


def _lit(ch: str) -> str:
    return _class([(ord(ch), ord(ch))]) if ch not in '"\\' and ord(ch) >= 0x20 else _json_set([(ord(ch), ord(ch))])


def _string_literal(s: str) -> str:
    """Regex for the contents (JSON text) of the string s as json.dumps(ensure_ascii=False) writes it."""
    return re.escape(json.dumps(s, ensure_ascii=False)[1:-1])


# ----------------------------------------------------------------------------- the converter


def _canon(x) -> str:
    return json.dumps(x, sort_keys=True, ensure_ascii=False, default=str)


def _strip_annotations(x):
    """A schema without its annotations, at every depth (two branches that differ only in descriptions are
    the same schema)."""
    if isinstance(x, dict):
        return {k: _strip_annotations(v) for k, v in x.items() if k not in ANNOTATIONS}
    if isinstance(x, list):
        return [_strip_annotations(v) for v in x]
    return x


def _types_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Converter:
    def __init__(self, root: dict, limits: Limits):
        self.root = root
        self.limits = limits
        self.rules: list[str] = []
        self.names: dict[str, str] = {}
        self.count = 0
        self.t0 = time.perf_counter()
        self.chars = 0
        self.unsat: dict[str, Unsatisfiable] = {}

    # -------------------------------------------------------------- plumbing
    def new_rule(self, body: str, name: str | None = None) -> str:
        self.count += 1
        if self.count > self.limits.max_rules:
            raise SchemaError("", f"the grammar exceeds max_rules={self.limits.max_rules} rules "
                                  "(setting ZAPFORMAT_MAX_RULES)")
        if time.perf_counter() - self.t0 > self.limits.max_compile_s:
            raise SchemaError("", f"compiling took longer than max_compile_s={self.limits.max_compile_s:g} s "
                                  "(setting ZAPFORMAT_MAX_COMPILE_S)")
        name = name or f"n{self.count}"
        self.rules.append(f"{name} ::= {body};")
        self.chars += len(body)
        if self.chars > self.limits.max_grammar_chars:
            raise SchemaError("", f"the grammar exceeds max_grammar_chars={self.limits.max_grammar_chars} "
                                  "(setting ZAPFORMAT_MAX_GRAMMAR_CHARS)")
        return name

    def resolve(self, ref, pointer: str) -> tuple[object, str]:
        if not isinstance(ref, str):
            raise SchemaError(pointer, "$ref must be a string")
        if not ref.startswith("#"):
            raise SchemaError(pointer, f"only local $ref like '#/$defs/name' are supported, got {ref!r}")
        frag = unquote(ref[1:])
        if frag and not frag.startswith("/"):
            if frag not in self.anchors():
                raise SchemaError(pointer, f"$ref {ref!r}: no $anchor {frag!r} in the schema")
            return self.anchors()[frag]
        node = self.root
        for part in frag.split("/")[1:] if frag else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise SchemaError(pointer, f"$ref {ref!r} does not resolve")
        return node, "#" + frag

    def anchors(self) -> dict:
        """$anchor name (and draft-4/7 '$id': '#name') -> (schema, pointer), found once by walking the schema."""
        if not hasattr(self, "_anchors"):
            found: dict = {}

            def walk(node, ptr):
                if isinstance(node, dict):
                    for key in ("$anchor", "$id", "id"):
                        v = node.get(key)
                        if isinstance(v, str):
                            name = v if key == "$anchor" else v[1:] if v.startswith("#") and "/" not in v else None
                            if name:
                                found.setdefault(name, (node, "#" + ptr))
                    for k, v in node.items():
                        if k not in ("enum", "const", "examples", "default"):
                            walk(v, f"{ptr}/{_esc(k)}")
                elif isinstance(node, list):
                    for i, v in enumerate(node):
                        walk(v, f"{ptr}/{i}")

            walk(self.root, "")
            self._anchors = found
        return self._anchors

    def nonterminal(self, schema, pointer: str) -> str:
        """Nonterminal for a schema; a ``$ref``-only schema shares the target's nonterminal (recursion)."""
        depth = 0
        while isinstance(schema, dict) and "$ref" in schema and not (set(schema) - {"$ref"} - ANNOTATIONS - _unknown(schema)):
            schema, pointer = self.resolve(schema["$ref"], pointer)
            depth += 1
            if depth > 50:
                raise SchemaError(pointer, "$ref chain does not end")
        key = pointer if pointer.startswith("#") else None
        if key is None:
            key = "c:" + _canon(schema)
        if key in self.names:
            if self.names[key] in self.unsat:
                raise self.unsat[self.names[key]]
            return self.names[key]
        self.count += 1
        name = f"n{self.count}"
        self.names[key] = name
        idx = len(self.rules)
        self.rules.append("")  # placeholder keeps the rule order stable
        try:
            body = self.body(schema, pointer.lstrip("#"))
        except Unsatisfiable as e:
            self.unsat[name] = e
            self.rules[idx] = f"{name} ::= {name};"  # derives nothing: pruned by the grammar compiler
            raise
        self.rules[idx] = f"{name} ::= {body};"
        self.chars += len(body)
        if self.chars > self.limits.max_grammar_chars:
            raise SchemaError("", f"the grammar exceeds max_grammar_chars={self.limits.max_grammar_chars} "
                                  "(setting ZAPFORMAT_MAX_GRAMMAR_CHARS)")
        return name

    # -------------------------------------------------------------- normalisation
    def normalise(self, s: dict, ptr: str, depth: int = 0) -> dict:
        """Fold $ref siblings and allOf into one schema; draft-4/7 spellings into 2020-12 ones."""
        if depth > 30:
            raise SchemaError(ptr, "allOf/$ref nesting deeper than 30 (a cycle through allOf?)")
        s = dict(s)
        # unevaluated*: they see what every merged part evaluates, so they are put back after merging
        uev = {k: s.pop(k) for k in UNEVALUATED if k in s}
        if "$ref" in s:
            target, tptr = self.resolve(s.pop("$ref"), ptr + "/$ref")
            s = self.merge([self.as_dict(target, tptr), s], ptr, depth)
        if isinstance(s.get("exclusiveMinimum"), bool):
            if s.pop("exclusiveMinimum") and "minimum" in s:
                s["exclusiveMinimum"] = s.pop("minimum")
        if isinstance(s.get("exclusiveMaximum"), bool):
            if s.pop("exclusiveMaximum") and "maximum" in s:
                s["exclusiveMaximum"] = s.pop("maximum")
        if isinstance(s.get("items"), list):
            s["prefixItems"] = s.pop("items")
            if "additionalItems" in s:
                s["items"] = s.pop("additionalItems")
        else:
            s.pop("additionalItems", None)  # without an items array it has no effect
        if "dependencies" in s:
            deps = s.pop("dependencies")
            if not isinstance(deps, dict):
                raise SchemaError(ptr + "/dependencies", "dependencies must be an object")
            dr = dict(s.get("dependentRequired") or {})
            ds = dict(s.get("dependentSchemas") or {})
            for k, v in deps.items():
                if isinstance(v, list):
                    dr[k] = v
                else:
                    ds[k] = v
            if dr:
                s["dependentRequired"] = dr
            if ds:
                s["dependentSchemas"] = ds
        if "dependentSchemas" in s:  # an object that has name k also matches schema k; other values are untouched
            ds = s.pop("dependentSchemas")
            if not isinstance(ds, dict):
                raise SchemaError(ptr + "/dependentSchemas", "dependentSchemas must be an object")
            for k, sub in ds.items():
                has = {"type": "object", "required": [k]}
                s["allOf"] = list(s.get("allOf", [])) + [{"anyOf": [{"allOf": [has, sub]}, self.negate(has, ptr)]}]
        if s.get("uniqueItems") is False:
            s.pop("uniqueItems")
        if "if" in s:
            if "then" not in s and "else" not in s:
                s.pop("if")
            else:  # (if and then) or (not if and else): the branches are disjoint by construction
                cond, then, other = s.pop("if"), s.pop("then", True), s.pop("else", True)
                if cond is True or cond == {}:
                    branch = then
                elif cond is False:
                    branch = other
                else:
                    neg = self.negated(cond, ptr + "/if", "if/then/else (its condition is negated for else)")
                    branch = {"anyOf": [{"allOf": [cond, then]}, {"allOf": [neg, other]}]}
                s["allOf"] = list(s.get("allOf", [])) + [branch]
        else:
            s.pop("then", None)
            s.pop("else", None)
        if "allOf" in s:
            subs = s.pop("allOf")
            if not isinstance(subs, list) or not subs:
                raise SchemaError(ptr + "/allOf", "allOf must be a non-empty list")
            parts = [self.as_dict(sub, f"{ptr}/allOf/{i}") for i, sub in enumerate(subs)]
            s = self.merge([s] + parts, ptr, depth)
        for k, v in uev.items():
            if k in s and _canon(s[k]) != _canon(v):
                raise SchemaError(f"{ptr}/{k}", f"two different {k} keywords are not supported")
            s[k] = v
        return s

    def as_dict(self, sub, ptr: str) -> dict:
        if sub is True:
            return {}
        if sub is False:
            return {"not": {}}
        if not isinstance(sub, dict):
            raise SchemaError(ptr, f"expected a schema object, got {type(sub).__name__}")
        return sub

    def merge(self, parts: list[dict], ptr: str, depth: int) -> dict:
        """The conjunction of schemas as one schema (exact for the keywords merged; others refused)."""
        parts = [self.normalise(p, ptr, depth + 1) for p in parts]
        for i, p in enumerate(parts):  # a part's unevaluated* sees only that part: as additionalProperties/items
            if any(k in p for k in UNEVALUATED):
                p = dict(p)
                up, ui = p.pop("unevaluatedProperties", None), p.pop("unevaluatedItems", None)
                if up is not None and "additionalProperties" not in p:
                    p["additionalProperties"] = up
                if ui is not None and "items" not in p:
                    p["items"] = ui
                parts[i] = p
        out: dict = {}
        arr = [p for p in parts if "prefixItems" in p or "items" in p]
        if len(arr) > 1:  # items of one part constrains every position not covered by that part's prefixItems
            n = max(len(p.get("prefixItems", [])) for p in arr)

            def at(p, i):
                pre = p.get("prefixItems", [])
                return pre[i] if i < len(pre) else p.get("items", True)

            if n:
                out["prefixItems"] = [{"allOf": [at(p, i) for p in arr]} for i in range(n)]
            if any("items" in p for p in arr):  # absent: positions past every prefix stay unevaluated
                out["items"] = {"allOf": [p.get("items", True) for p in arr]}
            parts = [{k: v for k, v in p.items() if k not in ("prefixItems", "items")} for p in parts]
        for p in parts:
            for k, v in p.items():
                if k.startswith("_not_") or k == "_forbidden":  # internal negations: both apply
                    out[k] = list(out.get(k, [])) + list(v)
                    continue
                if k in ANNOTATIONS or k not in ASSERTIONS:
                    out.setdefault(k, v)
                    continue
                if k not in out:
                    out[k] = v
                    continue
                cur = out[k]
                if _canon(cur) == _canon(v):
                    continue
                if k == "type":
                    a = {cur} if isinstance(cur, str) else set(cur)
                    b = {v} if isinstance(v, str) else set(v)
                    both = (a & b) | ({"integer"} if ("number" in a and "integer" in b) or
                                      ("integer" in a and "number" in b) else set())
                    out[k] = sorted(both)
                    if not both:
                        raise Unsatisfiable(ptr + "/allOf", f"the types {sorted(a)} and {sorted(b)} do not overlap")
                elif k in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"):
                    out[k] = max(cur, v)
                elif k in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"):
                    out[k] = min(cur, v)
                elif k == "required":
                    out[k] = list(dict.fromkeys(list(cur) + list(v)))
                elif k == "enum":
                    vs = {_canon(x) for x in v}
                    out[k] = [x for x in cur if _canon(x) in vs]
                    if not out[k]:
                        raise Unsatisfiable(ptr + "/allOf", "the enums have no value in common")
                elif k == "const":
                    raise Unsatisfiable(ptr + "/allOf", "two different const values")
                elif k in ("properties", "patternProperties", "dependentRequired"):
                    m = dict(cur)
                    for name, sub in v.items():
                        if k == "dependentRequired":
                            m[name] = list(dict.fromkeys(list(m.get(name, [])) + list(sub)))
                        else:
                            m[name] = {"allOf": [m[name], sub]} if name in m else sub
                    out[k] = m
                elif k == "anyOf":
                    out[k] = [{"allOf": [a, {"anyOf": v}]} for a in cur]
                elif k == "oneOf":
                    raise SchemaError(ptr + "/allOf", "two different oneOf keywords in one allOf are not supported")
                elif k in ("items", "additionalProperties", "not"):
                    if k == "not":
                        out[k] = {"anyOf": [cur, v]}
                    elif k == "additionalProperties" and (cur is False or v is False):
                        out[k] = False
                    else:
                        out[k] = {"allOf": [cur, v]}
                elif k == "prefixItems":
                    n = max(len(cur), len(v))
                    out[k] = [{"allOf": [cur[i] if i < len(cur) else True, v[i] if i < len(v) else True]}
                              for i in range(n)]
                elif k == "multipleOf":
                    a, b = Fraction(str(cur)), Fraction(str(v))
                    if a.denominator != 1 or b.denominator != 1:
                        raise SchemaError(ptr + "/allOf", "two different non-integer multipleOf are not supported")
                    out[k] = math.lcm(int(a), int(b))
                else:
                    raise SchemaError(ptr + "/allOf", f"cannot merge two different {k!r} keywords")
        # additionalProperties of one part only applies to that part's own properties: make that explicit
        aps = [(p.get("properties", {}), p.get("patternProperties", {}), p["additionalProperties"])
               for p in parts if "additionalProperties" in p and p["additionalProperties"] is not True]
        if aps and len(parts) > 1:
            if any(pp for _, pp, _ in aps):
                if len(aps) > 1 or any(p.get("properties") for p in parts if "additionalProperties" not in p):
                    raise SchemaError(ptr + "/allOf", "additionalProperties with patternProperties across allOf "
                                                      "parts is not supported")
            allowed = None
            merged_props = dict(out.get("properties", {}))
            for props, _pp, ap in aps:
                if ap is False:
                    allowed = set(props) if allowed is None else allowed & set(props)
                else:  # names declared by other parts only are "additional" for this part: their values obey ap too
                    for k in merged_props:
                        if k not in props:
                            merged_props[k] = {"allOf": [merged_props[k], ap]}
            if allowed is not None:
                for k in [k for k in merged_props if k not in allowed]:
                    merged_props.pop(k)
                req = [r for r in out.get("required", []) if r not in allowed]
                if req:
                    raise Unsatisfiable(ptr + "/allOf", f"required {req} excluded by additionalProperties: false")
            if "properties" in out or merged_props:
                out["properties"] = merged_props
        return out

    # -------------------------------------------------------------- oneOf: branches that exclude each other
    def _assertions(self, sub, ptr: str = "") -> dict | None:
        """A branch normalised, with its annotations and unknown keywords dropped; None where it cannot be
        normalised (then nothing is proved about it)."""
        try:
            s = self.normalise(self.as_dict(sub, ptr), ptr)
        except SchemaError:
            return None
        return {k: v for k, v in s.items() if k in ASSERTIONS or k.startswith("_")}

    def _value_types(self, s: dict, depth: int) -> set:
        """The JSON types a normalised schema can match, integers counted as numbers."""
        ts = {"null", "boolean", "object", "array", "string", "number"}
        if "const" in s:
            ts = {_types_of(s["const"])}
        elif isinstance(s.get("enum"), list):
            ts = {_types_of(v) for v in s["enum"]}
        elif "type" in s:
            ts = {s["type"]} if isinstance(s["type"], str) else set(s["type"])
        ts = {"number" if t == "integer" else t for t in ts}
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list) and depth < 6:
                union = set()
                for sub in s[key]:
                    b = self._assertions(sub)
                    union |= ts if b is None else self._value_types(b, depth + 1)
                ts &= union
        return ts - {t for t in s.get("_not_types", ()) if t != "integer"}

    @staticmethod
    def _values(s: dict) -> set | None:
        vals = [s["const"]] if "const" in s else s.get("enum") if isinstance(s.get("enum"), list) else None
        if vals is None:
            return None
        return {_canon(int(v) if isinstance(v, float) and v.is_integer() else v) for v in vals}

    def _ranges_apart(self, a: dict, b: dict, t: str) -> bool:
        """The two schemas' bounds for type t leave no value in common (lengths, counts or numeric bounds)."""
        if t in ("string", "array", "object"):
            lo, hi = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
                      "object": ("minProperties", "maxProperties")}[t]
            return any(isinstance(x.get(lo), int) and isinstance(y.get(hi), int) and x[lo] > y[hi]
                       for x, y in ((a, b), (b, a)))
        if t == "number":
            try:
                (alo, alo_s, ahi, ahi_s), (blo, blo_s, bhi, bhi_s) = self.bounds(a, ""), self.bounds(b, "")
            except SchemaError:
                return False
            for lo, lo_s, hi, hi_s in ((alo, alo_s, bhi, bhi_s), (blo, blo_s, ahi, ahi_s)):  # one above the other
                if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_s or hi_s))):
                    return True
        return False

    def _disjoint(self, a: dict | None, b: dict | None, depth: int = 0) -> bool:
        """Proof that no instance matches both branches (normalised by ``_assertions``): no type in common, no
        const/enum value in common, bounds apart, or, where both can only be objects, a property both require
        whose schemas are disjoint, or a name one requires that the other forbids."""
        if a is None or b is None or depth > 6:
            return False
        shared = self._value_types(a, 0) & self._value_types(b, 0)
        if not shared:
            return True
        va, vb = self._values(a), self._values(b)
        if va is not None and vb is not None and not (va & vb):
            return True
        if len(shared) != 1:
            return False
        t = next(iter(shared))
        if self._ranges_apart(a, b, t):
            return True
        if t != "object":
            return False
        ra, rb = set(a.get("required") or ()), set(b.get("required") or ())
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        for n in ra & rb:
            if n in pa and n in pb and self._disjoint(self._assertions(pa[n]), self._assertions(pb[n]), depth + 1):
                return True
        for x, y, rx in ((a, b, ra), (b, a, rb)):
            closed = y.get("additionalProperties") is False and not y.get("patternProperties")
            if (closed and rx - set(y.get("properties") or {})) or rx & set(y.get("_forbidden") or ()):
                return True
        return False

    def negate_within(self, b, a, ptr: str, depth: int = 0):
        """A schema for "not b" that is exact for the instances of a (what a oneOf branch a needs of each branch b
        it may overlap). Of b's keywords, those a has with the same value are left out (an instance of a cannot
        violate them), and so are names a requires (for required) or cannot have (for properties, where a
        forbids other names); properties are negated name by name, each within a's schema for that name; b's
        additionalProperties false, where a is closed too, is violated by one of a's names that b does not
        declare. The rest goes to ``negate``; what it cannot negate is refused by name."""
        bs, as_ = self._assertions(b, ptr), self._assertions(a, ptr) or {}
        if bs is None:
            self.normalise(self.as_dict(b, ptr), ptr)  # raises the branch's own error
        if depth > 8:
            raise SchemaError(ptr, "oneOf branches nest too deeply to negate")
        same = lambda x, y: _canon(_strip_annotations(x)) == _canon(_strip_annotations(y))  # noqa: E731
        # what a keyword means here depends on its neighbours for these: equal only if those are equal too
        context = {"additionalProperties": ("properties", "patternProperties"), "items": ("prefixItems",),
                   "unevaluatedProperties": tuple(bs) + tuple(as_), "unevaluatedItems": tuple(bs) + tuple(as_)}
        rest = {k: v for k, v in bs.items()
                if not (k in as_ and same(as_[k], v)
                        and all(same(as_.get(c), bs.get(c)) for c in context.get(k, ()) if c != k))}
        alts = []
        if isinstance(rest.get("required"), list):
            rest["required"] = [n for n in rest["required"] if n not in (as_.get("required") or ())]
            if not rest["required"]:
                rest.pop("required")
        a_closed = as_.get("additionalProperties") is False and not as_.get("patternProperties")
        pa = as_.get("properties") or {}
        if isinstance(rest.get("properties"), dict):
            for n, sub in rest.pop("properties").items():
                if (n in pa and same(pa[n], sub)) or (a_closed and n not in pa):
                    continue
                inner = self.negate_within(sub, pa.get(n, True), f"{ptr}/properties/{_esc(n)}", depth + 1)
                alts.append({"type": "object", "required": [n], "_not_evaluated": [n], "properties": {n: inner}})
        if "items" in rest and "prefixItems" not in bs and "prefixItems" not in as_:  # an item that violates it
            alts.append({"type": "array", "contains": self.negate_within(rest.pop("items"), as_.get("items", True),
                                                                         f"{ptr}/items", depth + 1)})
        if rest.get("additionalProperties") is False and not bs.get("patternProperties") and a_closed:
            rest.pop("additionalProperties")
            alts += [{"type": "object", "required": [n]} for n in sorted(set(pa) - set(bs.get("properties") or {}))]
        if rest:
            alts.append(self.negated(rest, ptr, "oneOf whose branches may overlap (each branch that may overlap "
                                                "another is negated in it)"))
        return {"anyOf": alts} if alts else False

    def exclusive_branches(self, subs: list, ptr: str) -> list:
        """oneOf as an anyOf whose branches exclude each other: branch i becomes ``allOf [B_i, not B_j, ...]`` for
        every j that ``_disjoint`` cannot prove apart from i (the definition of "exactly one"), each ``not B_j``
        from ``negate_within``. Branches proved pairwise disjoint stay as they are."""
        norm = [self._assertions(b, f"{ptr}/oneOf/{i}") for i, b in enumerate(subs)]
        out = []
        for i, sub in enumerate(subs):
            nots = [self.negate_within(subs[j], sub, f"{ptr}/oneOf/{j}") for j in range(len(subs))
                    if j != i and not self._disjoint(norm[i], norm[j])]
            out.append({"allOf": [sub] + nots} if nots else sub)
        return out

    # -------------------------------------------------------------- bodies
    def body(self, s, ptr: str) -> str:
        if s is True:
            return "json_value"
        if s is False:
            raise Unsatisfiable(ptr, "the schema is false")
        if not isinstance(s, dict):
            raise SchemaError(ptr, f"expected a schema object, got {type(s).__name__}")
        s = self.normalise(s, ptr)
        for k in sorted(set(s) & REFUSED):
            if k == "uniqueItems" and (s.get("maxItems", 2) <= 1 or self.finite_items(s, ptr) is not None):
                continue
            raise SchemaError(f"{ptr}/{k}", f"keyword '{k}' is not supported")
        for key in ("anyOf", "oneOf"):
            if key in s:
                subs = s[key]
                if not isinstance(subs, list) or not subs:
                    raise SchemaError(f"{ptr}/{key}", f"{key} must be a non-empty list")
                if key == "oneOf" and len(subs) > 1:
                    subs = self.exclusive_branches(subs, ptr)
                rest = {k: v for k, v in s.items() if k != key}
                uev = {k: rest.pop(k) for k in UNEVALUATED if k in rest}
                alts, errs = [], []
                for i, sub in enumerate(subs):
                    sp = f"{ptr}/{key}/{i}"
                    try:
                        if _has_assertions(rest) or uev:
                            alts.append(self.nonterminal({"allOf": [rest, self.as_dict(sub, sp)], **uev}, sp))
                        else:
                            alts.append(self.nonterminal(sub, sp))
                    except Unsatisfiable as e:
                        errs.append(e)
                if not alts:
                    raise Unsatisfiable(f"{ptr}/{key}", "no branch can be satisfied")
                return " | ".join(dict.fromkeys(alts))
        if "not" in s:
            s = self.apply_not(s, ptr)
            if "anyOf" in s or "oneOf" in s or "not" in s:
                return self.body(s, ptr)
        if "_not_values" in s and "const" not in s and "enum" not in s:
            raise SchemaError(ptr + "/not", "not {enum/const} is supported only next to an enum or const")
        types = self.types(s, ptr)
        if "const" in s or "enum" in s:
            return self.values(s, ptr, types)
        alts = []
        for t in types:
            try:
                alts.append(getattr(self, "t_" + t)(s, ptr))
            except Unsatisfiable:
                if len(types) == 1:
                    raise
        if not alts:
            raise Unsatisfiable(ptr, "no type can be satisfied")
        return " | ".join(alts)

    def types(self, s: dict, ptr: str) -> list[str]:
        t = s.get("type")
        if t is None:
            ts = ["null", "boolean", "object", "array", "string", "number"]
        else:
            ts = [t] if isinstance(t, str) else list(t)
            if not ts:
                raise Unsatisfiable(ptr + "/type", "type is an empty list")
            for x in ts:
                if x not in TYPES:
                    raise SchemaError(ptr + "/type", f"unknown type {x!r}")
            if "number" in ts and "integer" in ts:
                ts.remove("integer")
        ts = [x for x in TYPES if x in ts]
        for x in s.get("_not_types", ()):
            if x in ts:
                ts.remove(x)
            if x == "number" and "integer" in ts:
                ts.remove("integer")
        if not ts:
            raise Unsatisfiable(ptr, "no type is left")
        return ts

    def negate(self, n: dict, ptr: str, depth: int = 0):
        """A schema for 'not n' for the keywords an if-condition usually has; others are refused by name."""
        if depth > 8:
            raise SchemaError(ptr, "if condition nests too deeply to negate")
        n = self.normalise(n, ptr)
        keys = [k for k in n if k not in ANNOTATIONS and (k in ASSERTIONS or k.startswith("_"))]
        if not keys:
            return False
        if len(keys) > 1:  # not (A and B) = not A or not B
            return {"anyOf": [self.negate({k: n[k]}, ptr, depth + 1) for k in keys]}
        k = keys[0]
        v = n[k]
        all_types = ["null", "boolean", "object", "array", "string", "number"]

        def others(*ts):
            rest = [t for t in all_types if t not in ts]
            return {"type": rest} if rest else False

        if k == "type":
            ts = [v] if isinstance(v, str) else list(v)
            if "integer" in ts and "number" not in ts:
                return {"anyOf": [others("number"), {"type": "number", "_not_types": ["integer"]}]}
            return others(*ts)
        if k in ("const", "enum"):
            vals = [v] if k == "const" else list(v)
            if not vals:
                return True
            if all(isinstance(x, str) for x in vals):
                return {"anyOf": [others("string"), {"type": "string", "_not_strings": vals}]}
            if len(vals) == 1 and isinstance(vals[0], bool):
                return {"anyOf": [others("boolean"), {"const": not vals[0]}]}
            if len(vals) == 1 and vals[0] is None:
                return others("null")
            if len(vals) == 1 and isinstance(vals[0], (int, float)):
                return {"anyOf": [others("number"), {"type": "number", "exclusiveMinimum": vals[0]},
                                  {"type": "number", "exclusiveMaximum": vals[0]}]}
            raise SchemaError(f"{ptr}/{k}", f"{{{k}: ...}} with these values cannot be negated")
        if k == "properties":
            return {"anyOf": [{"type": "object", "required": [name], "_not_evaluated": [name],
                               "properties": {name: self.negate(self.as_dict(sub, ptr), ptr, depth + 1)}}
                              for name, sub in v.items()]} if v else False
        if k == "required":
            return {"anyOf": [{"type": "object", "not": {"required": [name]}} for name in v]} if v else False
        flips = {"minimum": ("number", "exclusiveMaximum"), "exclusiveMinimum": ("number", "maximum"),
                 "maximum": ("number", "exclusiveMinimum"), "exclusiveMaximum": ("number", "minimum")}
        # a keyword of one type holds for every value of the others: only that type can violate it
        if k in flips:
            t, opp = flips[k]
            return {"type": t, opp: v}
        if k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            t = {"L": "string", "I": "array", "P": "object"}[k[3]]
            if k.startswith("min"):
                return False if v <= 0 else {"type": t, "max" + k[3:]: v - 1}
            return {"type": t, "min" + k[3:]: v + 1}
        if k == "items" and "prefixItems" not in n:  # an array with an element that violates items
            return {"type": "array", "contains": self.negate(self.as_dict(v, ptr + "/items"), ptr + "/items",
                                                              depth + 1)}
        m = Fraction(str(v)) if k == "multipleOf" and isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if m is not None and m > 0 and m.denominator == 1:  # a non-integral number, or an integer off the multiples
            return {"anyOf": [{"type": "number", "_not_types": ["integer"]},
                              {"type": "integer", "_not_multiple_of": [int(m)]}]}
        if k == "pattern" and isinstance(v, str):  # a string the pattern does not find
            return {"type": "string", "_not_patterns": [v]}
        if k == "not":
            return v
        if k == "anyOf" and isinstance(v, list) and v:  # not (A or B) = not A and not B
            return {"allOf": [self.negate(self.as_dict(sub, f"{ptr}/anyOf/{i}"), f"{ptr}/anyOf/{i}", depth + 1)
                              for i, sub in enumerate(v)]}
        raise SchemaError(f"{ptr}/{k}", f"{k!r} cannot be negated")

    def negated(self, sub, ptr: str, context: str):
        """``negate(sub)``; a refusal says what needed the negation (``context``) and why it cannot be had."""
        try:
            return self.negate(self.as_dict(sub, ptr), ptr)
        except Unsatisfiable:
            raise
        except SchemaError as e:
            raise SchemaError(e.pointer, f"{context} is not supported here: {e.reason}") from None

    def apply_not(self, s: dict, ptr: str) -> dict:
        n = s["not"]
        s = {k: v for k, v in s.items() if k != "not"}
        if n is True or n == {}:
            raise Unsatisfiable(ptr + "/not", "not {} rejects everything")
        if n is False:
            return s
        if not isinstance(n, dict):
            raise SchemaError(ptr + "/not", "not must be a schema")
        n = self.normalise(n, ptr + "/not")
        keys = set(n) - ANNOTATIONS - _unknown(n)
        if keys == {"anyOf"} and isinstance(n["anyOf"], list):  # not (A or B) = not A and not B, one at a time
            for i, sub in enumerate(n["anyOf"]):  # (two merged nots arrive as one not of an anyOf)
                s = self.apply_not({**s, "not": sub}, f"{ptr}/not/anyOf/{i}")
                for _ in range(16):
                    if "not" not in s:
                        break
                    s = self.apply_not(s, f"{ptr}/not/anyOf/{i}")
                else:
                    raise SchemaError(ptr + "/not", "not nests too deeply")
            return s
        if keys == {"type"}:
            t = n["type"]
            s["_not_types"] = list(s.get("_not_types", [])) + ([t] if isinstance(t, str) else list(t))
            return s
        if keys and keys <= {"enum", "const"} and ("enum" in s or "const" in s):
            bad = [n["const"]] if "const" in n else list(n.get("enum", []))
            s["_not_values"] = list(s.get("_not_values", [])) + bad
            return s
        if keys == {"required"} and isinstance(n["required"], list) and len(n["required"]) == 1:
            s["_forbidden"] = list(s.get("_forbidden", [])) + n["required"]
            return s
        if "not" in n and set(n) - ANNOTATIONS == {"not"}:
            return self.normalise({"allOf": [s, n["not"]]}, ptr)
        return self.normalise({"allOf": [s, self.negated(n, ptr + "/not", "not")]}, ptr)

    def values(self, s: dict, ptr: str, types: list[str]) -> str:
        if "const" in s:
            vals = [s["const"]]
        else:
            vals = s["enum"]
            if not isinstance(vals, list) or not vals:
                raise SchemaError(ptr + "/enum", "enum must be a non-empty list")
        rest = {k: v for k, v in s.items() if k not in ("enum", "const") and not k.startswith("_")}
        # values excluded by a negation: not {enum/const}, and the strings of a negated if-condition's const/enum
        bad = {_canon(v) for v in list(s.get("_not_values", [])) + list(s.get("_not_strings", []))}
        keep, cache = [], {}
        for v in vals:
            t = _types_of(v)
            if t not in types and not (t == "integer" and "number" in types):
                continue
            if t == "integer" and ("integer" in s.get("_not_types", ())
                                   or any(int(v) % m == 0 for m in s.get("_not_multiple_of", ()))):
                continue
            if _canon(v) in bad or (isinstance(v, str) and any(_search(p, v, ptr) for p in s.get("_not_patterns", ()))):
                continue
            if "enum" in s and "const" in s and _canon(s["const"]) not in {_canon(x) for x in s["enum"]}:
                continue
            if _has_assertions(rest) and not self.valid(v, rest, cache):
                continue
            keep.append(v)
        if not keep:
            raise Unsatisfiable(ptr + ("/const" if "const" in s else "/enum"), "no listed value satisfies the schema")
        return " | ".join(dict.fromkeys(self.literal(v) for v in keep))

    def valid(self, value, schema: dict, cache: dict) -> bool:
        try:
            if "v" not in cache:
                import jsonschema

                full = {**{k: v for k, v in self.root.items() if k in ("$defs", "definitions")}, **schema}
                cache["v"] = jsonschema.Draft202012Validator(full)
            return cache["v"].is_valid(value)
        except Exception:  # noqa: BLE001 - cannot decide: keep the value (never drop a valid one)
            return True

    def literal(self, v) -> str:
        if isinstance(v, dict):
            if not v:
                return "object_begin object_end"
            members = [f"{_kbnf_regex_literal(k)} colon {self.literal(x)}" for k, x in v.items()]
            return "(object_begin " + " comma ".join(members) + " object_end)"
        if isinstance(v, list):
            if not v:
                return "array_begin array_end"
            return "(array_begin " + " comma ".join(self.literal(x) for x in v) + " array_end)"
        if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer() and abs(v) < 2 ** 63:
            return _terminal(re.escape(str(int(v))) + r"(?:\.0+)?")  # 1 and 1.0 are the same number
        return _kbnf_regex_literal(v)

    # -------------------------------------------------------------- scalar types
    def t_null(self, s, ptr):
        return "null"

    def t_boolean(self, s, ptr):
        return "boolean"

    def t_integer(self, s, ptr):
        if s.get("_not_multiple_of"):  # an integer that is a multiple of none of these (narrowing: no ".0" form)
            bounds = [k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf") if k in s]
            if bounds:
                raise SchemaError(f"{ptr}/{bounds[0]}", "not {multipleOf} next to numeric bounds is not supported")
            from .regex import DIVISIBLE, MINUS

            return _combined_terminal(_ws() + "-?(0|[1-9][0-9]*)" + "".join(MINUS + DIVISIBLE + str(m)
                                                                            for m in s["_not_multiple_of"]))
        r = self.numeric(s, ptr, True)
        return _terminal(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?") if r == "integer" else r

    def t_number(self, s, ptr):
        if "integer" in s.get("_not_types", ()):  # a number that is not an integer: a nonzero fraction digit
            frac = r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*"  # narrowing, stated: no exponent
            if "multipleOf" in s:
                raise SchemaError(ptr + "/multipleOf", "not {type: integer} next to multipleOf is not supported")
            lo, lo_s, hi, hi_s = self.bounds(s, ptr)
            if lo is None and hi is None:
                return _terminal(frac)
            from .regex import INTERSECT, RegexError, compile_regex

            plain = _ws() + number_regex(lo, lo_s, hi, hi_s, False, ptr) + INTERSECT + _ws() + frac
            try:
                compile_regex(plain)
            except RegexError as e:
                if e.reason.startswith("matches nothing"):
                    raise Unsatisfiable(ptr, "no non-integral number within the bounds") from None
                raise SchemaError(ptr, f"not {{type: integer}} with bounds: {e.detail}") from None
            return _combined_terminal(plain)
        return self.numeric(s, ptr, False)

    def bounds(self, s: dict, ptr: str) -> tuple:
        """(lower, lower is strict, upper, upper is strict) from minimum/maximum and their exclusive forms."""
        lo, lo_s, hi, hi_s = s.get("minimum"), False, s.get("maximum"), False
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if k in s and (isinstance(s[k], bool) or not isinstance(s[k], (int, float))):
                raise SchemaError(f"{ptr}/{k}", f"{k} must be a number")
        if "exclusiveMinimum" in s and (lo is None or s["exclusiveMinimum"] >= lo):
            lo, lo_s = s["exclusiveMinimum"], True
        if "exclusiveMaximum" in s and (hi is None or s["exclusiveMaximum"] <= hi):
            hi, hi_s = s["exclusiveMaximum"], True
        return lo, lo_s, hi, hi_s

    def numeric(self, s: dict, ptr: str, integer: bool) -> str:
        lo, lo_s, hi, hi_s = self.bounds(s, ptr)
        mult = s.get("multipleOf")
        if mult is not None and mult <= 0:
            raise SchemaError(ptr + "/multipleOf", "multipleOf must be positive")
        if mult is not None:
            m = Fraction(str(mult))
            if integer or (m.denominator == 1):
                if m.denominator != 1:
                    if (1 / m).denominator == 1:  # every integer is a multiple of 1/k
                        mult = None
                    else:
                        raise SchemaError(ptr + "/multipleOf", f"multipleOf {mult} on integers is not supported")
                else:
                    return self.multiple_of(int(m), lo, lo_s, hi, hi_s, ptr)
            else:
                k = 0
                while m.denominator != 1 and k < 20 and m != Fraction(1, 10 ** k):
                    k += 1
                if m != Fraction(1, 10 ** k):
                    raise SchemaError(ptr + "/multipleOf", f"multipleOf {mult} on numbers is supported only "
                                                           "for powers of ten (0.1, 0.01, ...)")
                if lo is not None or hi is not None:
                    raise SchemaError(ptr + "/multipleOf", "multipleOf on numbers together with minimum/maximum "
                                                           "is not supported")
                return _terminal(rf"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{k}}}0*)?") if k else "integer"
        if lo is None and hi is None:
            return "integer" if integer else "number"
        return self.rule_terminal(number_regex(lo, lo_s, hi, hi_s, integer, ptr))

    def intersection(self, parts: list[str], ptr: str) -> str:
        """A terminal for a JSON string whose contents match every regex in parts (regex.INTERSECT)."""
        from .regex import INTERSECT, RegexError, compile_regex

        plain = INTERSECT.join(_ws() + f'"{p}"' for p in parts)
        try:
            compile_regex(plain)
        except RegexError as e:
            raise SchemaError(ptr, f"pattern/format/length together: {e.detail}") from None
        return _combined_terminal(plain)

    def key_terminal(self, both: list[str], minus: str | None, ptr: str) -> str:
        """Terminal for a member key whose contents match every regex in ``both`` and not ``minus``."""
        from .regex import INTERSECT, MINUS, RegexError, compile_regex

        plain = INTERSECT.join(_ws() + f'"{p}"' for p in both)
        if minus is not None:
            plain += MINUS + _ws() + f'"{minus}"'
        try:
            compile_regex(plain)
        except RegexError as e:
            if e.reason.startswith("matches nothing"):  # no such key (e.g. a pattern ".*" leaves no additional key)
                raise Unsatisfiable(ptr, f"member keys: {e.detail}") from None
            raise SchemaError(ptr, f"member keys: {e.detail}") from None
        return _combined_terminal(plain)

    def rule_terminal(self, regex: str) -> str:
        return _terminal(regex)

    def multiple_of(self, m: int, lo, lo_s, hi, hi_s, ptr: str) -> str:
        if m == 1:
            if lo is None and hi is None:
                return "integer"
            return _terminal(number_regex(lo, lo_s, hi, hi_s, True, ptr))
        if lo is not None or hi is not None:  # the bounds' regex intersected with the remainder automaton
            from .regex import DIVISIBLE, INTERSECT, RegexError, compile_regex

            plain = _ws() + number_regex(lo, lo_s, hi, hi_s, True, ptr) + INTERSECT + DIVISIBLE + str(m)
            try:
                compile_regex(plain)
            except RegexError as e:
                raise SchemaError(ptr + "/multipleOf", e.detail) from None
            return _combined_terminal(plain)
        if m > self.limits.max_multiple_of:
            raise SchemaError(ptr + "/multipleOf", f"multipleOf {m} exceeds max_multiple_of="
                                                   f"{self.limits.max_multiple_of}")
        # remainder automaton over decimal digits: R_r ::= digit R_{(10r+d) mod m} | (end if r == 0)
        base = self.count
        names = [f"r{base}_{r}" for r in range(m)]
        self.count += m
        if self.count > self.limits.max_rules:
            raise SchemaError(ptr + "/multipleOf", f"the grammar exceeds max_rules={self.limits.max_rules}")
        for r in range(m):
            alts = " | ".join(f'"{d}" {names[(10 * r + d) % m]}' for d in range(10))
            self.rules.append(f"{names[r]} ::= {'(' + alts + ')?' if r == 0 else alts};")
        first = [f'"{d}" {names[d % m]}' for d in range(1, 10)]
        head = self.new_rule(" | ".join(first))
        return f'#"{_ws()}-?0" | #"{_ws()}-?" {head}'

    def t_string(self, s: dict, ptr: str) -> str:
        lo, hi = s.get("minLength"), s.get("maxLength")
        for k, v in (("minLength", lo), ("maxLength", hi)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
                raise SchemaError(f"{ptr}/{k}", f"{k} must be a non-negative integer")
        if lo is not None and hi is not None and lo > hi:
            raise Unsatisfiable(ptr, f"minLength {lo} is above maxLength {hi}")
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt in SPEC_FORMATS_REFUSED:
            raise SchemaError(ptr + "/format", f"format {fmt!r} is not supported")
        fmt_re = FORMATS.get(fmt) if isinstance(fmt, str) else None
        pat = s.get("pattern")
        constraints = [x for x in (fmt_re is not None, pat is not None, lo not in (None, 0) or hi is not None) if x]
        if len(constraints) == 2 and (lo not in (None, 0) or hi is not None):
            # a length bound that the pattern or format already implies is dropped; otherwise refused
            bounds = _length_bounds(FORMATS[fmt] if fmt_re is not None else pat, fmt_re is None)
            if bounds is not None and bounds[0] >= (lo or 0) and (hi is None or (bounds[1] is not None
                                                                                  and bounds[1] <= hi)):
                lo, hi = None, None
                constraints = constraints[:1]
        # values and patterns a negation excludes
        excluded = [_string_literal(x) for x in s.get("_not_strings", [])] + \
            [pattern_regex(p, ptr + "/not/pattern") for p in s.get("_not_patterns", [])]
        if excluded or len(constraints) > 1:  # one automaton: the constraints intersected, minus the exclusions
            parts = [fmt_re] if fmt_re is not None else []
            if pat is not None:
                parts.append(pattern_regex(pat, ptr + "/pattern"))
            if lo not in (None, 0) or hi is not None:
                parts.append(self.length_regex(lo, hi, ptr))
            if excluded:
                return self.key_terminal(parts or [SCHAR + "*"], "(?:" + "|".join(excluded) + ")", ptr)
            return self.intersection(parts, ptr)
        if fmt_re is not None and len(constraints) == 1:
            return _terminal(f'"{fmt_re}"')
        if pat is not None:
            from .regex import RegexError, compile_regex

            body = f'"{pattern_regex(pat, ptr + "/pattern")}"'
            try:
                compile_regex(body)
            except RegexError as e:
                raise SchemaError(ptr + "/pattern", f"pattern {pat!r}: {e.detail}") from None
            return _terminal(body)
        if lo in (None, 0) and hi is None:
            return "string"
        lo, hi = int(lo or 0), None if hi is None else int(hi)
        if max(lo, hi or 0) > LONG_STRING:
            return self.long_string(lo, hi)
        rep = f"{{{lo},{'' if hi is None else hi}}}"
        return f"#'{_ws()}\"{STRING_CHAR}{rep}\"'"

    def length_regex(self, lo, hi, ptr: str) -> str:
        """The contents of a string of lo to hi characters, for one automaton (so at most ``max_count``)."""
        lo, hi = int(lo or 0), None if hi is None else int(hi)
        if max(lo, hi or 0) > self.limits.max_count:
            raise SchemaError(ptr + ("/maxLength" if (hi or 0) > self.limits.max_count else "/minLength"),
                              f"string length bound above max_count={self.limits.max_count} "
                              "(setting ZAPFORMAT_MAX_COUNT)")
        return SCHAR + f"{{{lo},{'' if hi is None else hi}}}"

    def long_string(self, lo: int, hi: int | None) -> str:
        """A string whose length bound is too large for one automaton (its DFA grows with the bound): the
        content as blocks of exactly BLOCK characters, each its own terminal, then a last shorter block with the
        closing quote. S(k) follows k full blocks: it ends with a short block of the length still owed (and
        allowed), or takes one more full block; past minLength without maxLength it is one loop. Exact,
        unambiguous, about hi / BLOCK rules (``max_rules`` bounds them)."""
        full = f"#'{STRING_CHAR}{{{BLOCK}}}'"
        loop_at = None if hi is not None else -(-lo // BLOCK)  # from here on every S(k) is the same
        names: dict[int, str] = {}
        last = loop_at if hi is None else hi // BLOCK
        for k in range(last, -1, -1):
            need, cap = max(0, lo - k * BLOCK), None if hi is None else hi - k * BLOCK
            top = BLOCK - 1 if cap is None else min(BLOCK - 1, cap)
            alts = [f"#'{STRING_CHAR}{{{need},{top}}}\"'"] if need <= top else []
            if k == loop_at:
                self.count += 1
                names[k] = f"n{self.count}"
                alts.append(f"{full} {names[k]}")
                self.new_rule(" | ".join(alts), names[k])
                continue
            if (cap is None or cap >= BLOCK) and k + 1 in names:
                alts.append(f"{full} {names[k + 1]}")
            names[k] = self.new_rule(" | ".join(alts))
        return f"#'{_ws()}\"' {names[0]}"

    # -------------------------------------------------------------- arrays
    def t_array(self, s: dict, ptr: str) -> str:
        prefix = s.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise SchemaError(ptr + "/prefixItems", "prefixItems must be a list")
        items = s.get("items", s.get("unevaluatedItems", True))
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        for k, v in (("minItems", lo), ("maxItems", hi)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
                raise SchemaError(f"{ptr}/{k}", f"{k} must be a non-negative integer")
        lo, hi = int(lo), None if hi is None else int(hi)
        if hi is not None and hi < lo:
            raise Unsatisfiable(ptr, f"minItems {lo} is above maxItems {hi}")
        if s.get("uniqueItems") is True and (hi is None or hi > 1):  # body() let it through: finite_items has values
            if "contains" in s:
                raise SchemaError(ptr + "/uniqueItems", "uniqueItems together with contains is not supported")
            return self.unique_array(self.finite_items(s, ptr), lo, hi, ptr)
        elems = []
        for i, sub in enumerate(prefix):
            try:
                elems.append(self.nonterminal(sub, f"{ptr}/prefixItems/{i}"))
            except Unsatisfiable:
                elems.append(None)  # this position (and any after it) cannot be filled
                break
        try:
            item = None if items is False else self.nonterminal(items, ptr + "/items")
        except Unsatisfiable:
            item = None
        # positions that can be filled: the prefix up to an impossible one, then items
        if None in elems:
            cut = elems.index(None)
            elems, item = elems[:cut], None
        cap = len(elems) if item is None else None
        if cap is not None:
            hi = cap if hi is None else min(hi, cap)
        if hi is not None and hi < lo:
            raise Unsatisfiable(ptr, f"at most {hi} items can be valid but minItems is {lo}")
        top = max(len(elems), lo)
        if hi is not None:
            top = hi
        if top - len(elems) > self.limits.max_count and (hi is not None or lo > self.limits.max_count):
            raise SchemaError(ptr + ("/maxItems" if hi is not None else "/minItems"),
                              f"item count bound above max_count={self.limits.max_count} (setting ZAPFORMAT_MAX_COUNT)")

        def elem(k: int) -> str:
            return elems[k] if k < len(elems) else item

        # E(k): what may follow after k items (k >= 1); the unbounded tail is a loop once k >= max(prefix, lo)
        loop_from = None if hi is not None else max(len(elems), lo, 1)
        cont: dict[int, str] = {}

        def E(k: int) -> str:
            if loop_from is not None and k >= loop_from:
                key = -1
                if key not in cont:
                    cont[key] = self.new_rule(f"(comma {item})*")
                return cont[key]
            if k in cont:
                return cont[k]
            if hi is not None and k >= hi:
                cont[k] = ""
                return ""
            more = f"comma {elem(k)} {E(k + 1)}".strip()
            cont[k] = self.new_rule(f"({more})?" if k >= lo else more)
            return cont[k]

        # Build from the far end so recursion depth stays small.
        if hi is not None:
            for k in range(hi, 0, -1):
                E(k)
        else:
            for k in range(loop_from, 0, -1):
                E(k)
        if "contains" in s:
            return self.array_with_contains(s, ptr, elems, item, elem, E, hi, loop_from)
        inner = f"{elem(0)} {E(1)}" if (hi is None or hi >= 1) else None
        if inner is None:
            return "array_begin array_end"
        return f"array_begin ({inner}){'?' if lo == 0 else ''} array_end"

    def finite_items(self, s: dict, ptr: str) -> list | None:
        """The values an item can take when they are few (enum/const, boolean, null; at most UNIQUE_MAX), else
        None: what ``uniqueItems`` needs to be compiled (arrays of distinct values from a small set)."""
        if s.get("prefixItems"):
            return None
        try:
            it = self.normalise(self.as_dict(s.get("items", True), ptr + "/items"), ptr + "/items")
        except SchemaError:
            return None
        keys = {k for k in it if k in ASSERTIONS or k.startswith("_")}
        t = it.get("type")
        types = set() if t is None else {t} if isinstance(t, str) else set(t)
        if "const" in it or "enum" in it:
            if keys - {"type", "const", "enum"}:
                return None
            vals = [it["const"]] if "const" in it else list(it["enum"]) if isinstance(it["enum"], list) else []
            if types:
                vals = [v for v in vals if _types_of(v) in types or (_types_of(v) == "integer" and "number" in types)]
        elif keys == {"type"} and types and types <= {"boolean", "null"}:
            vals = ([True, False] if "boolean" in types else []) + ([None] if "null" in types else [])
        else:
            return None
        seen = {}
        for v in vals:
            seen.setdefault(_canon(int(v) if isinstance(v, float) and v.is_integer() else v), v)
        return list(seen.values()) if 0 < len(seen) <= UNIQUE_MAX else None

    def unique_array(self, vals: list, lo: int, hi: int | None, ptr: str) -> str:
        """``uniqueItems`` over a small set of values: U(S), the rest of an array whose items so far are the set S,
        may close (when |S| reaches minItems) or add a value not in S (below maxItems): 2^k rules for k values."""
        k = len(vals)
        hi = k if hi is None else min(hi, k)
        if lo > hi:
            raise Unsatisfiable(ptr, f"minItems {lo} is above the {hi} distinct values the items can take")
        lits = [self.literal(v) for v in vals]
        rule: dict[int, str | None] = {}
        for mask in sorted(range(1 << k), key=lambda m: -bin(m).count("1")):
            size = bin(mask).count("1")
            alts = [f"comma {lits[i]} {rule[mask | 1 << i]}" for i in range(k)
                    if size < hi and not mask >> i & 1 and rule.get(mask | 1 << i) is not None]
            if not alts and size < lo:
                rule[mask] = None
                continue
            rule[mask] = self.new_rule(("(" + " | ".join(alts) + ")" + ("?" if size >= lo else "")) if alts else "")
        first = [f"{lits[i]} {rule[1 << i]}" for i in range(k) if rule.get(1 << i) is not None]
        if not first:
            raise Unsatisfiable(ptr, "no array of distinct items satisfies the bounds")
        return "array_begin (" + " | ".join(first) + (")?" if lo == 0 else ")") + " array_end"

    def array_with_contains(self, s: dict, ptr: str, elems: list, item, elem, E, hi, loop_from) -> str:
        """``contains`` (at least one item matches it): F(k), what may follow k items none of which matched,
        either goes on with a plain item or takes one that matches items and contains both, after which the
        array continues as without contains (``E``). The array cannot end before such an item."""
        cont = self.as_dict(s["contains"], ptr + "/contains")
        prefix = s.get("prefixItems", [])
        both: dict = {}

        def elem_c(k: int):  # the item at position k that also matches contains (None: no such item)
            key = k if k < len(elems) else -1
            if key not in both:
                base = prefix[k] if k < len(elems) else s.get("items", s.get("unevaluatedItems", True))
                try:
                    both[key] = self.nonterminal({"allOf": [self.as_dict(base, ptr), cont]}, f"{ptr}/contains")
                except Unsatisfiable:
                    both[key] = None
            return both[key]

        def alts(k: int, rest) -> list[str]:  # position k as a plain item then rest, or a contains item then E
            out = []
            if rest is not None and elem(k) is not None:
                out.append(f"{elem(k)} {rest}".strip())
            if elem_c(k) is not None:
                out.append(f"{elem_c(k)} {E(k + 1)}".strip())
            return out

        exists = lambda k: (hi is None or k < hi) and (k < len(elems) or item is not None)  # noqa: E731
        F: dict[int, str | None] = {}
        if loop_from is not None and exists(loop_from):  # unbounded tail: one recursive rule
            self.count += 1
            name = f"n{self.count}"
            body = [f"comma {a}" for a in alts(loop_from, name)]
            F[loop_from] = self.new_rule(" | ".join(body), name) if body else None
        last = loop_from if loop_from is not None else (hi if hi is not None else len(elems))
        for k in range(last - 1, 0, -1):
            body = [f"comma {a}" for a in alts(k, F.get(k + 1))] if exists(k) else []
            F[k] = self.new_rule(" | ".join(f"({b})" for b in body)) if body else None
        first = alts(0, F.get(1)) if exists(0) else []
        if not first:
            raise Unsatisfiable(ptr + "/contains", "no item can match contains")
        return "array_begin (" + " | ".join(f"({b})" for b in first) + ") array_end"

    # -------------------------------------------------------------- objects
    def t_object(self, s: dict, ptr: str) -> str:
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError(ptr + "/properties", "properties must be an object")
        required = s.get("required", [])
        if not isinstance(required, list):
            raise SchemaError(ptr + "/required", "required must be a list")
        pattern_props = s.get("patternProperties", {}) or {}
        ap = s.get("additionalProperties", s.get("unevaluatedProperties", True))
        if "additionalProperties" not in s and "unevaluatedProperties" in s and s.get("_not_evaluated"):
            raise SchemaError(ptr + "/unevaluatedProperties", "unevaluatedProperties next to a failed if-condition's "
                                                              "properties is not supported")
        deps = s.get("dependentRequired", {}) or {}
        forbidden = set(s.get("_forbidden", []))
        lo, hi = int(s.get("minProperties", 0)), s.get("maxProperties")
        hi = None if hi is None else int(hi)
        if hi is not None and hi < lo:
            raise Unsatisfiable(ptr, f"minProperties {lo} is above maxProperties {hi}")
        if max(lo, hi or 0) > self.limits.max_count:
            raise SchemaError(ptr + "/maxProperties", f"property count above max_count={self.limits.max_count}")
        # Key patterns: which regex a key must match and the schema for its value.
        pats = [(p, sub) for p, sub in pattern_props.items()]
        if pats and all(sub in (True, {}) for _, sub in pats) and ap in (True, {}):
            pats = []  # patterns that constrain nothing next to unconstrained additional members
        distinct = len({_canon(sub) for _, sub in pats}) > 1  # patterns whose schemas differ
        if distinct and len(pats) > MAX_PATTERNS:
            raise SchemaError(ptr + "/patternProperties", f"more than {MAX_PATTERNS} patternProperties with "
                                                          "different schemas are not supported")
        # Declared names that match patterns must satisfy their schemas too.
        if pats:
            props = dict(props)
            for name in list(props):
                matching = [sub for p, sub in pats if _search(p, name, ptr)]
                if matching:
                    props[name] = {"allOf": [props[name]] + matching}
        # Names that must or may appear but are not declared become declared (with the extras' schema).
        for name in list(required) + [k for k in deps] + [x for v in deps.values() for x in v]:
            if name not in props:
                matching = [sub for p, sub in pats if _search(p, name, ptr)]
                if matching:
                    props = {**props, name: {"allOf": matching} if len(matching) > 1 else matching[0]}
                elif ap is not False:
                    props = {**props, name: ap}
        # propertyNames: a regex every key matches (None: no constraint); declared names outside it cannot appear
        names_re = self.property_names(s, ptr)
        if names_re == "":  # no key at all: the object is empty
            forbidden |= set(props)
            ap, pats = False, []
            names_re = None
        elif names_re is not None:
            from .regex import compile_regex

            names_dfa = compile_regex(names_re)
            forbidden |= {n for n in props if not names_dfa.matches(json.dumps(n, ensure_ascii=False)[1:-1].encode())}
        key_parts = [names_re] if names_re is not None else []
        # Declared members: (name, nonterminal or None when the value can never be valid)
        members = []
        for name, sub in props.items():
            if name in forbidden:
                members.append((name, None))
                continue
            try:
                members.append((name, self.nonterminal(sub, f"{ptr}/properties/{_esc(name)}")))
            except Unsatisfiable:
                members.append((name, None))
        present = {n for n, nt in members if nt is not None}
        for r in required:
            if r not in present:
                raise Unsatisfiable(ptr + "/required", f"required property {r!r} can have no valid value")
        # Extras
        extras = []  # (key regex over JSON string contents, value nonterminal)
        names = list(props) + sorted(forbidden)
        not_names = _not_names_regex(names) if names else None
        name_chars = sum(len(n) + 1 for n in names)
        too_many = name_chars > self.limits.max_excluded_name_chars
        if not too_many and not_names and "additionalProperties" not in s and name_chars > 160:
            from .regex import RegexError, compile_regex

            try:  # (160 characters of names are far below the limit) an exclusion automaton over the DFA limit:
                # the stated narrowing instead
                compile_regex(_ws() + f'"{not_names}"')
            except RegexError:
                too_many = True
        if pats:  # keys matching a pattern (and no declared name), then keys matching none (additionalProperties)
            pp = f"{ptr}/patternProperties"
            regs = [pattern_regex(p, f"{pp}/{_esc(p)}") for p, _ in pats]
            union = "(?:" + "|".join(regs) + ")"
            # one schema: one kind of member, keys in any pattern. Different schemas: a key matches some set of the
            # patterns and must satisfy each of their schemas, so one kind of member per set (keys in every pattern
            # of the set and in none of the others; sets no key can match drop out)
            kinds = [([union], [], [0])] if not distinct else \
                [([regs[i] for i in g], [regs[j] for j in range(len(pats)) if j not in g], g)
                 for g in ([i for i in range(len(pats)) if m >> i & 1] for m in range(1, 1 << len(pats)))]
            for inside, others, g in kinds:
                try:
                    key = self.key_terminal(inside + ([not_names] if not_names else []) + key_parts,
                                            "(?:" + "|".join(others) + ")" if others else None, pp)
                    subs = [pats[i][1] for i in g]
                    extras.append((key, self.nonterminal(subs[0] if len({_canon(x) for x in subs}) == 1
                                                         else {"allOf": subs}, f"{pp}/{_esc(pats[g[0]][0])}")))
                except Unsatisfiable:
                    pass
            if ap is not False and not (too_many and "additionalProperties" not in s):
                try:
                    val = self.nonterminal(ap, ptr + "/additionalProperties")
                    extras.append((self.key_terminal([not_names or SCHAR + "*"] + key_parts, union, pp), val))
                except Unsatisfiable:
                    pass
        elif ap is not False:
            if too_many and "additionalProperties" not in s:
                pass  # narrowing, stated: too many declared names to exclude; undeclared members are not generated
            else:
                try:
                    val = self.nonterminal(ap, ptr + "/additionalProperties")
                    key = not_names or SCHAR + "*"
                    extras.append((self.key_terminal([key] + key_parts, None, ptr + "/propertyNames") if key_parts
                                   else _terminal(f'"{key}"'), val))
                except Unsatisfiable:
                    pass
        if not present and not extras:
            if lo > 0:
                raise Unsatisfiable(ptr, "no property can be present but minProperties > 0")
            return "object_begin object_end"
        if not present and not deps and lo == 0 and hi is None and \
                extras == [(_terminal(f'"{SCHAR}*"'), "json_value")]:
            return "object"
        extra_nt = None
        if extras:
            alts = [f"{k} colon {v}" for k, v in extras]
            extra_nt = self.new_rule(" | ".join(alts))
        return self.object_states(members, required, deps, extra_nt, lo, hi, ptr)

    def property_names(self, s: dict, ptr: str) -> str | None:
        """``propertyNames`` as one regex over a key's JSON string contents (None when absent): a string schema of
        ``pattern``, ``minLength``/``maxLength``, ``format``, ``enum``/``const``; "" when no key can match."""
        if "propertyNames" not in s or s["propertyNames"] in (True, {}):
            return None
        pp = ptr + "/propertyNames"
        if s["propertyNames"] is False:
            return ""  # matches no key
        n = {k: v for k, v in self.normalise(self.as_dict(s["propertyNames"], pp), pp).items()
             if k in ASSERTIONS or k.startswith("_")}
        t = n.pop("type", "string")
        if "string" not in ([t] if isinstance(t, str) else t):
            return ""  # keys are strings: a schema for other types matches none
        unknown = sorted(set(n) - {"pattern", "minLength", "maxLength", "format", "enum", "const"})
        if unknown:
            raise SchemaError(f"{pp}/{unknown[0]}", f"propertyNames with {unknown[0]!r} is not supported")
        parts = []
        if "pattern" in n:
            parts.append(pattern_regex(n["pattern"], pp + "/pattern"))
        if "minLength" in n or "maxLength" in n:
            parts.append(self.length_regex(n.get("minLength"), n.get("maxLength"), pp))
        if "format" in n and isinstance(n["format"], str):
            if n["format"] in SPEC_FORMATS_REFUSED:
                raise SchemaError(pp + "/format", f"format {n['format']!r} is not supported")
            if n["format"] in FORMATS:
                parts.append(FORMATS[n["format"]])
        if "const" in n or "enum" in n:
            vals = [n["const"]] if "const" in n else list(n["enum"])
            names = [v for v in vals if isinstance(v, str)]
            if not names:
                return ""
            parts.append("(?:" + "|".join(_string_literal(v) for v in names) + ")")
        if not parts:
            return None
        from .regex import INTERSECT, RegexError, compile_regex

        try:
            compile_regex(INTERSECT.join(parts))
        except RegexError as e:
            if e.reason.startswith("matches nothing"):
                return ""
            raise SchemaError(pp, f"propertyNames: {e.detail}") from None
        return INTERSECT.join(parts)

    def choice(self, alts: list[str]) -> str | None:
        """A rule for the alternatives ('' = the empty sequence); None when there are none; '' when only empty."""
        if not alts:
            return None
        body = [a for a in dict.fromkeys(alts) if a]
        if not body:
            return ""
        text = " | ".join(body)
        return self.new_rule(f"({text})?" if "" in alts else text)

    def object_states(self, members, required, deps, extra_nt, lo, hi, ptr) -> str:
        """Members in order, counting (for min/maxProperties) and tracking dependentRequired obligations."""
        n = len(members)
        kv = [None if nt is None else f"{_kbnf_regex_literal(name)} colon {nt}" for name, nt in members]
        index = {name: i for i, (name, _) in enumerate(members)}
        req = set(required)
        cap = (hi + 1) if hi is not None else max(lo, 1)
        memo: dict = {}
        tracked = {x for bs in deps.values() for x in bs}
        xmemo: dict = {}

        def extras(k: int) -> str | None:
            key = min(k, cap)
            if key in xmemo:
                return xmemo[key]
            if extra_nt is not None and hi is None and k >= max(lo, 1):
                xmemo[key] = self.new_rule(f"(comma {extra_nt})*")
                return xmemo[key]
            alts = [""] if k >= lo else []
            if extra_nt is not None and (hi is None or k < hi):
                nxt = extras(k + 1)
                if nxt is not None:
                    alts.append(f"{'comma ' if k else ''}{extra_nt} {nxt}".strip())
            xmemo[key] = self.choice(alts)
            return xmemo[key]

        def state(i: int, k: int, owed: frozenset, written: frozenset) -> str | None:
            key = (i, min(k, cap), owed, written)
            if key in memo:
                return memo[key]
            if i == n:
                memo[key] = None if owed else extras(k)
                return memo[key]
            name = members[i][0]
            alts = []
            need = [b for b in deps.get(name, []) if b != name]
            ok = kv[i] is not None and (hi is None or k < hi) and \
                all(index.get(b, -1) > i or b in written for b in need)
            if ok:
                nxt = state(i + 1, k + 1, frozenset((owed | {b for b in need if index.get(b, -1) > i}) - {name}),
                            written | ({name} & tracked))
                if nxt is not None:
                    alts.append(f"{'comma ' if k else ''}{kv[i]} {nxt}".strip())
            if name not in req and name not in owed:
                nxt = state(i + 1, k, owed, written)
                if nxt is not None:
                    alts.append(nxt)
            memo[key] = self.choice(alts)
            return memo[key]

        first = state(0, 0, frozenset(), frozenset())
        if first is None:
            raise Unsatisfiable(ptr, "no combination of properties satisfies required/dependentRequired/"
                                     "minProperties/maxProperties")
        return f"object_begin {first} object_end"


def _length_bounds(pattern: str, searched: bool) -> tuple[int, int | None] | None:
    """(min, max) string length in characters of what a pattern/format regex matches (None: unknown)."""
    from .regex import RegexError, parse

    try:
        pat = _ecma_to_rust(pattern, "") if searched else pattern
        start = pat.startswith("^") if searched else True
        end = (pat.endswith("$") and not pat.endswith("\\$")) if searched else True
        core = pat[1 if searched and start else 0: len(pat) - 1 if searched and end else len(pat)]
        node = parse(f"(?:{core})")
    except (RegexError, SchemaError):
        return None

    def rec(n):
        k = n[0]
        if k == "set":
            return 1, 1
        if k == "cat":
            lo, hi = 0, 0
            for x in n[1]:
                a, b = rec(x)
                lo += a
                hi = None if hi is None or b is None else hi + b
            return lo, hi
        if k == "alt":
            bs = [rec(x) for x in n[1]]
            return min(b[0] for b in bs), None if any(b[1] is None for b in bs) else max(b[1] for b in bs)
        a, b = rec(n[1])
        return a * n[2], None if n[3] is None or b is None else b * n[3]

    lo, hi = rec(node)
    return lo, hi if (start and end) else None


def _search(pattern: str, name: str, ptr: str) -> bool:
    """Does the (ECMA) pattern match somewhere in name? Undecidable here -> assume it does (then refused)."""
    try:
        return re.search(_ecma_to_rust(pattern, ptr), name) is not None
    except re.error:
        return True


def _esc(name: str) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")


def _unknown(s: dict) -> set:
    return {k for k in s if k not in ASSERTIONS and k not in ANNOTATIONS and not k.startswith("_not_")
            and k != "_forbidden"}


def _has_assertions(s: dict) -> bool:
    return any(k in ASSERTIONS or k.startswith("_not_") or k == "_forbidden" for k in s)


def schema_to_kbnf(schema, limits: Limits | None = None, whitespace: str = DEFAULT_WHITESPACE,
                   max_indent: int = DEFAULT_MAX_INDENT) -> str:
    """KBNF text whose ``start`` accepts exactly the JSON texts valid under ``schema`` (see the module doc).

    ``whitespace`` (``bounded``, ``compact`` or ``flexible``) and ``max_indent`` choose the prefix every JSON token
    may carry (``whitespace_regex``); the kbnf-equality claims and the MaskBench run use ``flexible``."""
    ws = whitespace_regex(whitespace, max_indent)
    token = _WS.set(ws)
    try:
        return _schema_to_kbnf(schema, limits, ws)
    finally:
        _WS.reset(token)


def _schema_to_kbnf(schema, limits: Limits | None, ws: str) -> str:
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError("", f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if schema is True:
        schema = {}
    if schema is False:
        raise Unsatisfiable("", "the schema is false")
    if not isinstance(schema, dict):
        raise SchemaError("", "the schema must be a JSON object")
    c = _Converter(schema, limits or LIMITS)
    try:
        root = c.nonterminal(schema, "#")
    except RecursionError:
        raise SchemaError("", "the schema nests too deeply") from None
    return f"start ::= {root};\n" + "\n".join(r for r in c.rules if r) + "\n" + json_header(ws)


def regex_to_kbnf(pattern: str) -> str:
    """A grammar accepting exactly the regex (anchored at both ends; no whitespace is added).

    An open-ended pattern such as ``[0-9]+`` may go on as long as the regex allows: generation stops at EOS,
    which the logits processor allows once the text matches (``EngineConfig.stop_at_first_accept``)."""
    return f"start ::= #'{pattern.replace(chr(92), chr(92) * 2).replace(chr(39), chr(92) + chr(39))}';\n"

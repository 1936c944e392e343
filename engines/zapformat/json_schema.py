"""JSON Schema -> KBNF, in the style of formatron's ``formats/json.py``.

Every JSON token is a regex terminal with an optional whitespace prefix (``[ \\t\\n\\r]*``), one
nonterminal per schema node. Supported: ``type`` (object, array, string, number, integer, boolean,
null, or a list of types), ``properties`` in their given order with ``required`` (optional fields may
be omitted, commas stay correct), ``items``, ``minItems``/``maxItems``, ``enum``/``const``,
``anyOf``/``oneOf``, ``minLength``/``maxLength``/``pattern`` on strings, and ``$ref`` to
``#/$defs/...`` or ``#/definitions/...`` (recursion allowed). Unsupported keywords raise
``SchemaError`` naming the JSON pointer.
"""
from __future__ import annotations

import json
import re

WS = r"[ \t\n\r]*"
HEADER = rf'''integer ::= #"{WS}-?(0|[1-9][0-9]*)";
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
JSON_GRAMMAR = "start ::= object;\n" + HEADER  # generic JSON objects (the spec's "generic JSON CFG")
STRING_CHAR = r'([^\\\\"\u0000-\u001f]|\\\\["\\\\bfnrt/]|\\\\u[0-9A-Fa-f]{4})'
IGNORED = {"title", "description", "$schema", "$id", "examples", "default", "$comment", "additionalProperties",
           "format", "$defs", "definitions"}
MAX_NODES = 2000


class SchemaError(ValueError):
    def __init__(self, pointer: str, message: str):
        self.pointer = pointer or "/"
        super().__init__(f"JSON Schema error at {self.pointer}: {message}")


def _kbnf_regex_literal(value) -> str:
    """A whitespace-prefixed regex terminal matching exactly the JSON text of ``value``."""
    text = json.dumps(value, ensure_ascii=False)
    body = re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)
    body = body.replace("\\", "\\\\").replace("'", "\\'")
    return f"#'{WS}{body}'"


class _Converter:
    def __init__(self, root: dict):
        self.root = root
        self.rules: list[str] = []
        self.names: dict[str, str] = {}  # pointer -> nonterminal
        self.count = 0

    def resolve(self, ref: str, pointer: str) -> tuple[dict, str]:
        if not ref.startswith("#/"):
            raise SchemaError(pointer, f"only local $ref like '#/$defs/name' are supported, got {ref!r}")
        node = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise SchemaError(pointer, f"$ref {ref!r} does not resolve")
            node = node[part]
        return node, ref[1:]

    def nonterminal(self, schema, pointer: str) -> str:
        if isinstance(schema, dict) and "$ref" in schema:
            extra = set(schema) - {"$ref"} - IGNORED
            if extra:
                raise SchemaError(pointer, f"keywords next to $ref are not supported: {sorted(extra)}")
            schema, pointer = self.resolve(schema["$ref"], pointer)
        if pointer in self.names:
            return self.names[pointer]
        self.count += 1
        if self.count > MAX_NODES:
            raise SchemaError(pointer, f"the schema has more than {MAX_NODES} nodes")
        name = f"n{self.count}"
        self.names[pointer] = name
        self.rules.append(f"{name} ::= {self.body(schema, pointer)};")
        return name

    def body(self, s, ptr: str) -> str:
        if s is True or s == {}:
            return "json_value"
        if not isinstance(s, dict):
            raise SchemaError(ptr, f"expected a schema object, got {type(s).__name__}")
        if "const" in s:
            return _kbnf_regex_literal(s["const"])
        if "enum" in s:
            if not isinstance(s["enum"], list) or not s["enum"]:
                raise SchemaError(ptr + "/enum", "enum must be a non-empty list")
            return " | ".join(_kbnf_regex_literal(v) for v in s["enum"])
        for key in ("anyOf", "oneOf"):
            if key in s:
                subs = s[key]
                if not isinstance(subs, list) or not subs:
                    raise SchemaError(f"{ptr}/{key}", f"{key} must be a non-empty list")
                return " | ".join(self.nonterminal(sub, f"{ptr}/{key}/{i}") for i, sub in enumerate(subs))
        unsupported = set(s) - IGNORED - {"type", "properties", "required", "items", "minItems", "maxItems",
                                          "minLength", "maxLength", "pattern"}
        if unsupported:
            raise SchemaError(ptr, f"unsupported keyword(s) {sorted(unsupported)}")
        t = s.get("type")
        if t is None:
            t = "object" if "properties" in s else "array" if "items" in s else None
        if t is None:
            return "json_value"
        if isinstance(t, list):
            return " | ".join(self.body({**s, "type": one}, ptr) for one in t)
        if t == "object":
            return self.object(s, ptr)
        if t == "array":
            return self.array(s, ptr)
        if t == "string":
            return self.string(s, ptr)
        if t in ("number", "integer", "boolean", "null"):
            return t
        raise SchemaError(ptr + "/type", f"unknown type {t!r}")

    def object(self, s: dict, ptr: str) -> str:
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError(ptr + "/properties", "properties must be an object")
        if not props:
            return "object"
        required = s.get("required", [])
        missing = [r for r in required if r not in props]
        if missing:
            raise SchemaError(ptr + "/required", f"required names no property: {missing}")
        keys = list(props)
        kv = [f"{_kbnf_regex_literal(k)} colon {self.nonterminal(props[k], f'{ptr}/properties/{k}')}" for k in keys]
        opt = [k not in required for k in keys]
        n = len(keys)

        def rest(i: int) -> str:  # members i.. after at least one was written (each needs a comma)
            return " ".join(f"(comma {kv[j]})?" if opt[j] else f"comma {kv[j]}" for j in range(i, n))

        if not any(opt):
            return f"object_begin {kv[0]} {rest(1)} object_end"
        base = f"{ptr}#members"
        first = []
        for i in range(n):
            self.count += 1
            first.append(f"m{self.count}")
        for i in range(n):  # first_i: the first written member is i or a later optional one
            alts = [f"{kv[i]} {rest(i + 1)}".strip()]
            if opt[i] and i + 1 < n:
                alts.append(first[i + 1])
            self.rules.append(f"{first[i]} ::= {' | '.join(alts)};")
        self.names.setdefault(base, first[0])
        all_optional = all(opt)
        return f"object_begin {first[0]}{'?' if all_optional else ''} object_end"

    def array(self, s: dict, ptr: str) -> str:
        item = self.nonterminal(s.get("items", True), ptr + "/items")
        lo, hi = int(s.get("minItems", 0)), s.get("maxItems")
        if hi is not None and int(hi) < lo:
            raise SchemaError(ptr + "/maxItems", "maxItems is below minItems")
        if lo == 0 and hi is None:
            return f"array_begin ({item} (comma {item})*)? array_end"
        if hi is not None and int(hi) > 50:
            raise SchemaError(ptr + "/maxItems", "maxItems above 50 is not supported")
        req = [item] + [f"comma {item}"] * (max(lo, 1) - 1)
        tail = f"(comma {item})*" if hi is None else " ".join([f"(comma {item})?"] * (int(hi) - max(lo, 1)))
        inner = f"{' '.join(req)} {tail}".strip()
        return f"array_begin ({inner}){'?' if lo == 0 else ''} array_end"

    def string(self, s: dict, ptr: str) -> str:
        if "pattern" in s:
            pat = s["pattern"]
            pat = pat[1:] if pat.startswith("^") else pat  # JSON Schema patterns are searched; we match whole
            pat = pat[:-1] if pat.endswith("$") and not pat.endswith("\\$") else pat
            if any(a in pat.replace("\\^", "").replace("\\$", "") for a in "^$"):
                raise SchemaError(ptr + "/pattern", "anchors ^ and $ are not supported (patterns match whole strings)")
            body = pat.replace("\\", "\\\\").replace("'", "\\'")
            return f"#'{WS}\"{body}\"'"
        lo, hi = s.get("minLength"), s.get("maxLength")
        if lo is None and hi is None:
            return "string"
        rep = f"{{{int(lo or 0)},{'' if hi is None else int(hi)}}}"
        return f"#'{WS}\"{STRING_CHAR}{rep}\"'"


def schema_to_kbnf(schema) -> str:
    """KBNF text whose ``start`` accepts exactly the JSON texts valid under ``schema`` (supported subset)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError("", f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(schema, dict):
        raise SchemaError("", "the schema must be a JSON object")
    c = _Converter(schema)
    root = c.nonterminal(schema, "")
    return f"start ::= {root};\n" + "\n".join(c.rules) + "\n" + HEADER


def regex_to_kbnf(pattern: str) -> str:
    """A grammar accepting exactly the regex (quoted like a JSON string value, so generation can end)."""
    return f"start ::= #'{pattern.replace(chr(92), chr(92) * 2).replace(chr(39), chr(92) + chr(39))}';\n"

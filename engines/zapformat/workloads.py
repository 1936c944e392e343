"""The gallery of grammars and seeded generators of valid and invalid instances (spec section 4).

JSON Schemas mirror formatron's benchmark schemas (``address`` flat, ``linkedlist`` recursive,
``orders`` nested refs) plus a function-call schema; the generic JSON CFG, an arithmetic-expression
CFG (non-regular, nesting depth <= 8) and two regexes (ISO date-time, e-mail) complete the set.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Callable

from .json_schema import JSON_GRAMMAR, regex_to_kbnf, schema_to_kbnf

ADDRESS = {
    "type": "object",
    "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"},
        "state": {"type": "string", "maxLength": 20},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
    },
    "required": ["street", "city", "state", "zip"],
}
LINKEDLIST = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
            "required": ["value", "next"],
        }
    },
    "$ref": "#/$defs/node",
}
ORDERS = {
    "type": "object",
    "properties": {"orders": {"type": "array", "items": {"$ref": "#/$defs/order"}}},
    "required": ["orders"],
    "$defs": {
        "order": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "customer": {"$ref": "#/$defs/customer"},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
                "total": {"type": "number"},
                "paid": {"type": "boolean"},
            },
            "required": ["id", "customer", "items", "total"],
        },
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
            "required": ["name"],
        },
        "item": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"}},
            "required": ["sku", "qty", "price"],
        },
    },
}
FUNCTION_CALL = {
    "type": "object",
    "properties": {
        "name": {"enum": ["get_weather", "search_web", "send_email"]},
        "arguments": {
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["location"],
        },
    },
    "required": ["name", "arguments"],
}
ARITH = r'''start ::= expr ";";
expr ::= term (#"[+-]" term)*;
term ::= factor (#"[*/]" factor)*;
factor ::= #"[0-9]+(\\.[0-9]+)?" | "(" expr ")" | "-" factor;
'''
DATETIME = r'"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](Z|[+-][0-9]{2}:[0-9]{2})"'
EMAIL = r'"[a-z0-9._%+-]{1,32}@[a-z0-9-]{1,32}(\.[a-z0-9-]{1,32})*\.[a-z]{2,8}"'

WORDS = ["alpha", "Main St", "Springfield", "café", "naïve", "中文", "O'Brien", 'say "hi"', "tab\there", "line\nbreak",
         "Zoë", "42nd", "Ünïcödé", "emoji 🙂", "back\\slash", "Berlin", "São Paulo", "x", "", "New York"]


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # "json_schema" | "cfg" | "regex"
    source: str  # what the user writes: schema JSON, KBNF text or regex
    grammar: str  # the KBNF text
    generate: Callable[[random.Random], str]
    schema: dict | None = None
    is_json: bool = False

    def instances(self, n: int, seed: int = 0) -> list[str]:
        rng = random.Random(f"{self.name}:{seed}")
        return [self.generate(rng) for _ in range(n)]

    def invalid_instances(self, n: int, seed: int = 0) -> list[str]:
        """Corrupted instances that an independent checker (json/jsonschema, re, a parser) rejects."""
        rng = random.Random(f"{self.name}:invalid:{seed}")
        out = []
        for text in self.instances(n, seed):
            for _ in range(100):
                bad = corrupt(text, rng)
                if not self.is_valid(bad):
                    out.append(bad)
                    break
        return out

    def is_valid(self, text: str) -> bool:
        """Independent validity check (not our engine)."""
        import re

        if self.is_json:
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                return False
            if self.schema is None:
                return isinstance(obj, dict)
            import jsonschema

            return jsonschema.Draft202012Validator(self.schema).is_valid(obj)
        if self.kind == "regex":
            return re.fullmatch(self.source, text) is not None
        return _arith_valid(text)


def _word(r: random.Random) -> str:
    return r.choice(WORDS) + (str(r.randint(0, 99)) if r.random() < 0.3 else "")


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


def gen_address(r):
    return _dump({"street": f"{r.randint(1, 999)} {_word(r)}", "city": _word(r), "state": r.choice(["CA", "NY", "Bavaria"]),
                  "zip": f"{r.randint(0, 99999):05d}"})


def gen_linkedlist(r, depth=None):
    depth = r.randint(1, 6) if depth is None else depth
    node = None
    for _ in range(depth):
        node = {"value": r.randint(-1000, 1000), "next": node}
    return _dump(node)


def gen_orders(r):
    def item():
        return {"sku": f"SKU-{r.randint(100, 999)}", "qty": r.randint(1, 9), "price": round(r.uniform(0.5, 99), 2)}

    def order(i):
        o = {"id": i, "customer": {"name": _word(r)}}
        if r.random() < 0.5:
            o["customer"]["email"] = f"{_word(r).lower().replace(' ', '')}@example.com"
        o["items"] = [item() for _ in range(r.randint(1, 3))]
        o["total"] = round(sum(x["qty"] * x["price"] for x in o["items"]), 2)
        if r.random() < 0.5:
            o["paid"] = r.random() < 0.5
        return o

    return _dump({"orders": [order(i) for i in range(r.randint(1, 3))]})


def gen_function_call(r):
    args = {"location": _word(r)}
    if r.random() < 0.6:
        args["unit"] = r.choice(["celsius", "fahrenheit"])
    if r.random() < 0.5:
        args["days"] = r.randint(1, 14)
    return _dump({"name": r.choice(["get_weather", "search_web", "send_email"]), "arguments": args})


def _json_value(r, depth):
    if depth <= 0 or r.random() < 0.3:
        return r.choice([r.randint(-99, 999), round(r.uniform(-10, 10), 3), _word(r), True, False, None])
    if r.random() < 0.5:
        return [_json_value(r, depth - 1) for _ in range(r.randint(0, 3))]
    return {_word(r): _json_value(r, depth - 1) for _ in range(r.randint(0, 3))}


def gen_json(r):
    return _dump({_word(r): _json_value(r, 3) for _ in range(r.randint(1, 4))})


def nested_json(depth: int, r: random.Random | None = None) -> str:
    """A depth-``depth`` nested object whose levels carry a few scalar members (the pruning workload)."""
    r = r or random.Random(depth)
    obj: dict = {"leaf": [1, 2, 3]}
    for d in range(depth - 1):
        obj = {"id": d, "name": _word(r), "child": obj, "tags": ["a", "b"]}
    return _dump(obj)


def gen_arith(r, depth=None):
    depth = r.randint(0, 8) if depth is None else depth

    def expr(d):
        parts = [term(d) for _ in range(r.randint(1, 3))]
        return "".join(p if i == 0 else r.choice("+-") + p for i, p in enumerate(parts))

    def term(d):
        parts = [factor(d) for _ in range(r.randint(1, 2))]
        return "".join(p if i == 0 else r.choice("*/") + p for i, p in enumerate(parts))

    def factor(d):
        if d > 0 and r.random() < 0.7:
            return f"({expr(d - 1)})"
        return str(r.randint(0, 999)) + (f".{r.randint(0, 99)}" if r.random() < 0.2 else "")

    return expr(depth) + ";"


def gen_datetime(r):
    return (f'"{r.randint(1900, 2099)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:'
            f'{r.randint(0, 59):02d}:{r.randint(0, 59):02d}{r.choice(["Z", "+02:00", "-07:30"])}"')


def gen_email(r):
    user = r.choice(["ada", "alan.turing", "grace_h", "k+test", "x"]) + str(r.randint(0, 99))
    return f'"{user}@{r.choice(["example", "mail-server", "uni"])}.{r.choice(["com", "org", "co.uk", "de"])}"'


def _flexible(schema) -> str:
    """Benchmark grammars keep formatron's unbounded whitespace (``[ \\t\\n\\r]*``): the kbnf mask-equality claim
    was measured with it and the peers (LLGuidance ``whitespace_flexible``, XGrammar ``any_whitespace``) run
    flexible too. The tab recompiles ``source`` with the user's whitespace setting."""
    return schema_to_kbnf(schema, whitespace="flexible")


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload("address", "json_schema", json.dumps(ADDRESS, indent=2), _flexible(ADDRESS), gen_address, ADDRESS, True),
        Workload("linkedlist", "json_schema", json.dumps(LINKEDLIST, indent=2), _flexible(LINKEDLIST), gen_linkedlist,
                 LINKEDLIST, True),
        Workload("orders", "json_schema", json.dumps(ORDERS, indent=2), _flexible(ORDERS), gen_orders, ORDERS, True),
        Workload("function_call", "json_schema", json.dumps(FUNCTION_CALL, indent=2), _flexible(FUNCTION_CALL),
                 gen_function_call, FUNCTION_CALL, True),
        Workload("json", "cfg", JSON_GRAMMAR, JSON_GRAMMAR, gen_json, None, True),
        Workload("arith", "cfg", ARITH, ARITH, gen_arith),
        Workload("datetime", "regex", DATETIME, regex_to_kbnf(DATETIME), gen_datetime),
        Workload("email", "regex", EMAIL, regex_to_kbnf(EMAIL), gen_email),
    ]
}
JSON_WORKLOADS = [w for w in WORKLOADS.values() if w.is_json]


def _arith_valid(text: str) -> bool:
    """Recursive-descent check of the arithmetic grammar (independent of the Earley engine)."""
    import re

    num = re.compile(r"[0-9]+(\.[0-9]+)?")
    pos = 0

    def factor():
        nonlocal pos
        if text.startswith("(", pos):
            pos += 1
            expr()
            if not text.startswith(")", pos):
                raise ValueError
            pos += 1
        elif text.startswith("-", pos):
            pos += 1
            factor()
        else:
            m = num.match(text, pos)
            if not m:
                raise ValueError
            pos = m.end()

    def chain(sub, ops):
        nonlocal pos
        sub()
        while pos < len(text) and text[pos] in ops:
            pos += 1
            sub()

    def expr():
        chain(lambda: chain(factor, "*/"), "+-")

    try:
        expr()
        return text[pos:] == ";"
    except (ValueError, RecursionError):
        return False


def corrupt(text: str, r: random.Random) -> str:
    """An invalid variant: a structural character dropped, or a stray one inserted."""
    i = r.randrange(len(text))
    if r.random() < 0.5 and any(c in '{}[]":,;()' for c in text):
        idx = [k for k, c in enumerate(text) if c in '{}[]":,;()']
        k = r.choice(idx)
        return text[:k] + text[k + 1 :]
    return text[:i] + r.choice(["}", "]", "#", ",,", "@", ")"]) + text[i:]

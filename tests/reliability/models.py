"""Every registered parameter model, and what its fields allow (for the property tests)."""
from __future__ import annotations

import math
import types
import typing
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel

from engines import registry


def all_models() -> list[tuple[str, type[BaseModel]]]:
    """(``method.entry``, model) for every entry in the registry, new methods included automatically."""
    out = []
    for m in registry.METHODS + registry.INTERNAL:
        for name in m.entries:
            out.append((f"{m.id}.{name}", registry.params_model(m.id, name)))
    return out


def _strip(tp: Any) -> tuple[Any, bool]:
    """(annotation without Optional/Annotated, whether None is allowed)."""
    optional = False
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            optional = optional or len(args) < len(get_args(tp))
            if len(args) != 1:
                return tp, optional
            tp = args[0]
        else:
            return tp, optional


def kind(tp: Any) -> str:
    base, _ = _strip(tp)
    origin = get_origin(base)
    if base is float:
        return "float"
    if base is bool:
        return "bool"
    if base is int:
        return "int"
    if base is str:
        return "str"
    if origin is Literal:
        return "literal"
    if origin is tuple and Ellipsis not in get_args(base):
        return "fixed"
    if origin in (tuple, list, dict, set, frozenset) or base in (tuple, list, dict):
        return "container"
    return "other"


def bounds(field) -> dict[str, float]:
    out = {}
    for m in field.metadata:
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern"):
            v = getattr(m, name, None)
            if v is not None:
                out[name] = v
    return out


def literal_choices(tp: Any) -> tuple:
    base, _ = _strip(tp)
    return get_args(base) if get_origin(base) is Literal else ()


def item_type(tp: Any) -> Any:
    base, _ = _strip(tp)
    args = [a for a in get_args(base) if a is not Ellipsis]
    return args[0] if args else Any


def floats_in(obj: Any):
    """Every float inside a (JSON-like) value."""
    if isinstance(obj, float):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from floats_in(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from floats_in(v)


def finite_everywhere(obj: Any) -> bool:
    return all(math.isfinite(x) for x in floats_in(obj))

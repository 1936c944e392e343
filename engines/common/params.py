"""Parameter validation with messages that name the offending field.

Every entry point's parameters derive from ``Params``. Float fields use
``FiniteFloat`` (NaN, ±inf, booleans and text are refused) and carry bounds::

    class MyParams(Params):
        lr: FiniteFloat = Field(0.01, gt=0.0, le=1.0, description="step size")
        scale: FiniteFloat | None = Field(None, ge=0.0, le=10.0)
        targets: tuple[FiniteFloat, ...] = Field((1.0, 2.0), max_length=8)

``Params`` also refuses non-finite floats anywhere (``allow_inf_nan=False``), so
a plain ``float`` is finite too; ``tests/reliability`` checks that every float
field of every registered model has both bounds, so a new method is covered as
soon as its entries are in the registry.
"""
from __future__ import annotations

import math
import numbers
import types
import typing
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator

M = TypeVar("M", bound=BaseModel)

#: Most characters of a user's input ever shown back in a message.
ECHO_CHARS = 80


def _real_number(v: Any) -> Any:
    """Numbers only: no booleans, no text, nothing non-finite (pydantic would coerce "1.5" and True)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"must be a number, not {type(v).__name__}")
    if not math.isfinite(float(v)):
        raise ValueError("must be a finite number (NaN and infinity are not allowed)")
    return v


def _whole_number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"must be a whole number, not {type(v).__name__}")
    if not math.isfinite(float(v)):
        raise ValueError("must be a finite whole number")
    return v


#: A float that is a real, finite number. Give it bounds with ``Field(ge=..., le=...)``.
FiniteFloat = Annotated[float, BeforeValidator(_real_number)]
#: An int given as a number (5 or 5.0), never as a boolean, text, NaN or infinity.
WholeNumber = Annotated[int, BeforeValidator(_whole_number)]


def _is_float(tp: Any) -> bool:
    """``float``, ``FiniteFloat``, ``float | None`` (not containers of floats)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _is_float(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return len(args) == 1 and _is_float(args[0])
    return tp is float


@lru_cache(maxsize=None)
def _float_fields(cls: type) -> tuple[str, ...]:
    return tuple(name for name, f in cls.model_fields.items() if _is_float(f.annotation))


class Params(BaseModel):
    """Base class for every entry point's parameters: unknown fields are errors, floats are finite numbers.

    Plain ``float`` fields get the same protection as ``FiniteFloat`` (no NaN/±inf anywhere, no
    booleans or text in a float field), so a new method is covered without extra code.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _floats_are_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in _float_fields(cls):
                v = data.get(name)
                if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                    raise ValueError(f"{name}: must be a number, not {type(v).__name__}")
        return data


def require_unique(values: Any, what: str) -> Any:
    """``values`` unchanged, or ``ValueError("<what> must not repeat")`` when an entry is listed twice."""
    if len(set(values)) != len(values):
        raise ValueError(f"{what} must not repeat")
    return values


def unique_entries(*fields: str, what: str | None = None) -> Any:
    """A field validator that refuses repeated entries in the tuple fields named::

        class RunParams(Params):
            variants: tuple[Variant, ...] = ("a", "b")
            _unique = unique_entries("variants")          # "variants must not repeat"

    The message names ``what``: by default the field for one field, "entries" for several.
    """
    label = what or (fields[0] if len(fields) == 1 else "entries")

    def _check(cls: type, v: Any) -> Any:
        return require_unique(v, label)

    return field_validator(*fields)(classmethod(_check))


class ParamError(ValueError):
    """Bad parameters; ``str()`` names every offending field."""

    def __init__(self, model: str, problems: list[str] | None = None):
        # One-argument form: a full message (how Celery rebuilds the exception).
        self.model = model
        self.problems = problems or []
        super().__init__(f"invalid parameters for {model}: " + "; ".join(problems) if problems else model)


def shorten(value: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (messages never echo long inputs)."""
    try:
        text = repr(value)
    except Exception:  # pragma: no cover - a hostile __repr__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bounds(ctx: dict | None) -> str:
    if not ctx:
        return ""
    names = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "at least", "max_length": "at most"}
    return ", ".join(f"{names[k]} {v}" for k, v in ctx.items() if k in names)


def describe(err: ValidationError) -> list[str]:
    out = []
    for e in err.errors(include_url=False):
        field = ".".join(str(p) for p in e["loc"]) or "(input)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown parameter"
        if e["type"] == "finite_number":
            msg = "must be a finite number (NaN and infinity are not allowed)"
        msg = msg.removeprefix("Value error, ")
        value = e.get("input")
        shown = "…" if isinstance(value, dict) else shorten(value, 60)
        if len(msg) > 2 * ECHO_CHARS:
            msg = msg[: 2 * ECHO_CHARS - 1] + "…"
        out.append(f"{shorten(field, 60) if len(field) > 60 else field}: {msg} (got {shown})")
    return out


def validate(model: type[M], data: Any) -> M:
    """Validate ``data`` (dict or model) into ``model`` or raise ParamError naming the fields."""
    if isinstance(data, model):
        return data
    if not isinstance(data, dict):
        raise ParamError(model.__name__, [f"(input): expected an object of parameters, got {type(data).__name__}"])
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ParamError(model.__name__, describe(err)) from None
    except (TypeError, ArithmeticError, AttributeError, IndexError, KeyError) as err:
        # A model validator tripped over a malformed value: still the caller's input, still named.
        raise ParamError(model.__name__, [f"(input): malformed parameters ({type(err).__name__})"]) from None

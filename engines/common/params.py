"""Parameter validation with messages that name the offending field."""
from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class Params(BaseModel):
    """Base class for every entry point's parameters: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamError(ValueError):
    """Bad parameters; ``str()`` names every offending field."""

    def __init__(self, model: str, problems: list[str] | None = None):
        # One-argument form: a full message (how Celery rebuilds the exception).
        self.model = model
        self.problems = problems or []
        super().__init__(f"invalid parameters for {model}: " + "; ".join(problems) if problems else model)


def describe(err: ValidationError) -> list[str]:
    out = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "(input)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown parameter"
        value = e.get("input")
        shown = repr(value) if not isinstance(value, dict) and len(repr(value)) < 60 else "…"
        out.append(f"{field}: {msg} (got {shown})")
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

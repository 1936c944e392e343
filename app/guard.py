"""Input and error guard for every event handler of the app.

* ``check_inputs`` validates the raw values sent to an event against the input components'
  own constraints (sliders and numbers: finite, within their range; radios, dropdowns and
  checkbox groups: one of their choices; checkboxes: booleans; texts: strings of bounded length)
  *before* Gradio preprocesses them or a handler converts them, so NaN, ±inf, None and wrong
  types never reach a handler or start a job. Messages name the component's label and the
  allowed range and never echo more than ~80 characters of the input.
* ``guard`` wraps each handler: ``gr.Error`` passes (with long inputs cut out of its text),
  ``ParamError`` becomes an "Invalid parameters" error naming the field, and any other exception
  and the project's own ``ValueError`` subclasses (``engines.*``: ImageError, VideoError, …) show
  their message; any other exception becomes a short generic message with a reference that is logged with its traceback — no raw
  exception text reaches a user.
* ``GuardedBlocks`` is the ``gr.Blocks`` the app builds on: it runs ``check_inputs`` in
  ``preprocess_data`` and maps Gradio's own preprocessing failures to named messages.
"""
from __future__ import annotations

import functools
import inspect
import logging
import math
import numbers
import uuid
from typing import Any, Callable

import gradio as gr
from gradio import components
from gradio.exceptions import ComponentProcessingError, Error

from engines.common.params import ECHO_CHARS, ParamError, shorten

log = logging.getLogger("paperlab.app")

#: Longest text any Textbox without its own ``max_length`` accepts.
MAX_TEXT = 2_000_000
MAX_MESSAGE = 600


def label_of(block) -> str:
    label = getattr(block, "label", None)
    if label:
        return str(label)
    return getattr(block, "elem_id", None) or block.get_block_name()


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))


def _choice_values(block) -> list:
    return [c[1] if isinstance(c, (tuple, list)) else c for c in (getattr(block, "choices", None) or [])]


def _choices_text(values: list) -> str:
    text = ", ".join(map(str, values))
    return text if len(text) <= 200 else text[:199] + "…"


def check_value(block, value: Any) -> str | None:
    """A message naming what is wrong with ``value`` for ``block``, or None when it is acceptable."""
    name = label_of(block)
    got = shorten(value, 40)
    if isinstance(block, (components.Slider, components.Number)):
        lo, hi = getattr(block, "minimum", None), getattr(block, "maximum", None)
        rng = (f" between {_fmt(lo)} and {_fmt(hi)}" if lo is not None and hi is not None
               else f" ≥ {_fmt(lo)}" if lo is not None else f" ≤ {_fmt(hi)}" if hi is not None else "")
        if not _is_number(value):
            return f"'{name}' must be a finite number{rng} (got {got})"
        if lo is not None and value < lo:
            return f"'{name}' is below its minimum {_fmt(lo)}: it must be{rng} (got {got})"
        if hi is not None and value > hi:
            return f"'{name}' is above its maximum {_fmt(hi)}: it must be{rng} (got {got})"
        return None
    if isinstance(block, components.Checkbox):
        return None if isinstance(value, bool) else f"'{name}' must be true or false (got {got})"
    if isinstance(block, components.CheckboxGroup):
        allowed = _choice_values(block)
        if not isinstance(value, list) or len(value) > max(1, len(allowed)):
            return f"'{name}' must be a list of choices from: {_choices_text(allowed)} (got {got})"
        bad = [v for v in value if v not in allowed]
        return f"'{name}': {shorten(bad[0], 40)} is not one of {_choices_text(allowed)}" if bad else None
    if isinstance(block, (components.Radio, components.Dropdown)):
        if getattr(block, "allow_custom_value", False):
            if value is None or isinstance(value, (str, int, float)) and not isinstance(value, bool):
                return None if not isinstance(value, str) or len(value) <= 1000 else \
                    f"'{name}' is too long (at most 1000 characters)"
            return f"'{name}' must be a single value (got {got})"
        allowed = _choice_values(block)
        values = value if getattr(block, "multiselect", False) and isinstance(value, list) else [value]
        if value is None:
            return None if getattr(block, "multiselect", False) else f"'{name}' needs a choice from: {_choices_text(allowed)}"
        bad = [v for v in values if v not in allowed or isinstance(v, bool) != any(isinstance(a, bool) for a in allowed)]
        return f"'{name}' must be one of: {_choices_text(allowed)} (got {shorten(bad[0], 40)})" if bad else None
    if isinstance(block, (components.Textbox, components.Code)):
        if value is None:
            return None
        if not isinstance(value, str):
            return f"'{name}' must be text (got {type(value).__name__})"
        cap = getattr(block, "max_length", None) or MAX_TEXT
        if len(value) > cap:
            return f"'{name}' is too long: {len(value):,} characters (at most {cap:,})"
        return None
    return None


def check_inputs(block_fn, inputs: list[Any], state=None) -> None:
    """Raise ``gr.Error`` naming the first input that its component would not accept."""
    for i, block in enumerate(block_fn.inputs):
        if i >= len(inputs) or getattr(block, "stateful", False):
            continue
        if state is not None and block._id in state:
            block = state[block._id]
        value = inputs[i]
        if i in getattr(block_fn, "component_prop_inputs", ()):
            value = value.get("value") if isinstance(value, dict) else value
        msg = check_value(block, value)
        if msg:
            raise gr.Error(msg, title="Invalid input")


# ------------------------------------------------------------------------------------ messages


def sanitize(message: Any, inputs: tuple = ()) -> str:
    """Cut long inputs out of a message and bound its length."""
    text = str(message) if message is not None else ""
    for v in _strings(inputs):
        if len(v) > ECHO_CHARS and v[:ECHO_CHARS] in text:
            text = text.replace(v, v[: ECHO_CHARS - 1] + "…")
            while v[:ECHO_CHARS] in text:  # a partial echo
                text = text.replace(v[:ECHO_CHARS], v[: ECHO_CHARS - 1] + "…")
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return text or "the request failed"


def _strings(obj, depth: int = 0):
    if depth > 4:
        return
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj[:1000]:
            yield from _strings(v, depth + 1)


def to_user_error(exc: BaseException, inputs: tuple = (), where: str = "") -> Error:
    """The ``gr.Error`` a user sees for ``exc`` (unexpected ones are logged with a reference)."""
    if isinstance(exc, Error):
        exc.message = sanitize(exc.message, inputs)
        return exc
    if isinstance(exc, ParamError):
        return gr.Error(sanitize(exc, inputs), title="Invalid parameters")
    if isinstance(exc, ValueError) and type(exc).__module__.startswith(("engines.", "app.", "workers.")):
        # The project's own input errors (ImageError, VideoError, ArtifactError, …) speak to the user.
        return gr.Error(sanitize(exc, inputs), title="Invalid input")
    if isinstance(exc, TimeoutError):
        return gr.Error("The job did not finish in time and was stopped; try smaller settings or later.",
                        title="Timed out")
    ref = uuid.uuid4().hex[:8]
    log.error("unexpected error in %s (reference %s)", where or "a handler", ref, exc_info=exc)
    return gr.Error(f"Something went wrong while handling this request (reference {ref}). It was logged; "
                    "check the inputs and try again.", title="Internal error")


def guard(fn: Callable, where: str = "") -> Callable:
    """Wrap an event handler (function, generator, coroutine) so that only clear messages escape."""
    if getattr(fn, "__paperlab_guarded__", False):
        return fn
    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def agen(*args, **kwargs):
            try:
                async for out in fn(*args, **kwargs):
                    yield out
            except Exception as e:
                raise to_user_error(e, args, where) from None
        wrapped = agen
    elif inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as e:
                raise to_user_error(e, args, where) from None
        wrapped = gen
    elif inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def coro(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except Exception as e:
                raise to_user_error(e, args, where) from None
        wrapped = coro
    else:
        @functools.wraps(fn)
        def func(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                raise to_user_error(e, args, where) from None
        wrapped = func
    wrapped.__paperlab_guarded__ = True
    return wrapped


def guard_all(demo: gr.Blocks) -> gr.Blocks:
    """Wrap every handler of ``demo`` with ``guard``."""
    for block_fn in demo.fns.values():
        if block_fn.fn is not None:
            block_fn.fn = guard(block_fn.fn, block_fn.api_name or block_fn.name or "handler")
    return demo


class GuardedBlocks(gr.Blocks):
    """``gr.Blocks`` whose events check their raw inputs first and never show Gradio's internal errors."""

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        try:
            self.validate_inputs(block_fn, inputs)
        except ValueError:
            raise gr.Error(f"This endpoint expects {len(block_fn.inputs)} input values (got {len(inputs)}).",
                           title="Invalid input") from None
        check_inputs(block_fn, inputs, state)
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except Error as e:
            raise to_user_error(e, tuple(inputs)) from None
        except ComponentProcessingError as e:
            import re

            m = re.search(r"component at index (\d+)", str(e))
            i = int(m.group(1)) if m else -1
            name = label_of(block_fn.inputs[i]) if 0 <= i < len(block_fn.inputs) else "an input"
            kind = block_fn.inputs[i].get_block_name() if 0 <= i < len(block_fn.inputs) else "value"
            raise gr.Error(f"'{name}' could not be read as a {kind} value.", title="Invalid input") from None

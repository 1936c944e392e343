"""Hypothesis strategies for hostile inputs, shared by the parameter and endpoint fuzz tests.

``PAPERLAB_FUZZ_EXAMPLES`` sets the examples per model / endpoint (``make fuzz``: 200; ``make test``: a few).
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from engines.common.params import ECHO_CHARS

EXAMPLES = int(os.environ.get("PAPERLAB_FUZZ_EXAMPLES", "12"))
#: Endpoint calls cost ~0.25 s each through gradio_client: make test sends a few per endpoint.
ENDPOINT_EXAMPLES = int(os.environ.get("PAPERLAB_FUZZ_ENDPOINT_EXAMPLES", os.environ.get("PAPERLAB_FUZZ_EXAMPLES", "3")))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 20,
                suppress_health_check=list(HealthCheck), database=None)
FUZZ_ENDPOINTS = settings(FUZZ, max_examples=ENDPOINT_EXAMPLES, derandomize=ENDPOINT_EXAMPLES <= 20)

#: A long, recognisable text: messages must never echo more than ECHO_CHARS of it.
LONG_TEXT = "Ω" + "paperlab-long-input-" * 5000

BAD_NUMBERS = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 10**30, -(10**30)])
HOSTILE = st.one_of(
    BAD_NUMBERS,
    st.none(),
    st.booleans(),
    st.sampled_from(["", "abc", "NaN", "1e999", "-1", LONG_TEXT, "../../etc/passwd", "<script>x</script>"]),
    st.text(max_size=30),
    st.lists(st.one_of(BAD_NUMBERS, st.text(max_size=5), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
)


def echoes_too_much(message: str, inputs) -> bool:
    """True when ``message`` contains more than ECHO_CHARS consecutive characters of a text input."""
    texts = [x for x in _strings(inputs) if len(x) > ECHO_CHARS]
    if not texts:
        return False
    w = ECHO_CHARS + 1
    windows = {message[i:i + w] for i in range(0, max(0, len(message) - w + 1))}
    return any(win in t for t in texts for win in windows)


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)

"""Property test of every endpoint of the app through gradio_client: hostile input gets a clear refusal.

The app is served in-process with a job backend that validates and records submissions instead of
running them. For every public or undocumented endpoint, hypothesis sends mixes of valid values
(in range, one of the choices) and hostile ones (NaN, ±inf, None, booleans, wrong types, 100k-character
text). Each call must end in one of:

* success or "job accepted" — then every input was valid for its component (no accepted-invalid);
* a ``gr.Error`` whose text is specific (not Gradio's "Could not preprocess…", not a raw exception,
  not the generic internal-error text) and echoes at most 80 characters of any input.

``make fuzz`` runs 200 examples per endpoint; ``make test`` a few.
"""
from __future__ import annotations

import os
import time

import gradio as gr
import pytest
from gradio import components
from hypothesis import given
from hypothesis import strategies as st

from app import jobs
from app.guard import check_value
from engines import registry
from engines.common.params import validate
from tests.reliability.fuzz import FUZZ_ENDPOINTS, HOSTILE, LONG_TEXT, echoes_too_much

ACCEPTED = "fuzz: job accepted"
GENERIC = ("Could not preprocess", "Something went wrong", "Traceback", "Error(", "object has no attribute",
           "cannot convert", "argument must be")
# Endpoints whose valid calls do real work in the web process (seconds): only hostile values are sent.
SLOW_INTERACTIVE = {"slug_targets", "fdgen_inspect", "prototype_apply", "prototype_run_program", "prototype_spec",
                    "object_audio_scene", "object_audio_generate", "cl_angles_neurons", "zapformat_example"}


class RecordingBackend:
    """Validates like the real backends, records, and never runs anything."""

    def __init__(self):
        self.accepted: list[tuple[str, str, dict]] = []

    def submit(self, method_id, entry, params):
        clean = validate(registry.params_model(method_id, entry), params)
        self.accepted.append((method_id, entry, clean.model_dump()))
        raise gr.Error(ACCEPTED)

    def events(self, job_id, timeout=None):  # pragma: no cover - submit never returns
        return iter(())

    def cancel(self, job_id):
        pass


@pytest.fixture
def fuzz_app(inline_app):
    """The session's in-process app, its job backend swapped for a recording one during the test."""
    from gradio_client import Client

    url, demo = inline_app
    prev = jobs._backend
    backend = RecordingBackend()
    jobs.set_backend(backend)
    try:
        yield demo, Client(url, verbose=False), backend
    finally:
        jobs.set_backend(prev)


def endpoints(demo) -> list:
    """Every public or undocumented endpoint with inputs (new tabs are covered automatically)."""
    return [fn for fn in demo.fns.values()
            if fn.api_name and fn.api_visibility != "private" and not fn.api_name.startswith("load_example")
            and any(not getattr(b, "stateful", False) for b in fn.inputs)]


def _valid(block):
    if isinstance(block, (components.Slider, components.Number)):
        lo = block.minimum if block.minimum is not None else -1e3
        hi = block.maximum if block.maximum is not None else 1e3
        if getattr(block, "precision", None) == 0 or (isinstance(block, components.Slider)
                                                        and float(block.step).is_integer()
                                                        and float(lo).is_integer()):
            return st.integers(int(lo), int(hi))
        return st.floats(float(lo), float(hi))
    if isinstance(block, components.Checkbox):
        return st.booleans()
    if isinstance(block, components.CheckboxGroup):
        vals = [c[1] for c in block.choices]
        return st.lists(st.sampled_from(vals), unique=True, max_size=len(vals)) if vals else st.just([])
    if isinstance(block, (components.Radio, components.Dropdown)):
        vals = [c[1] for c in block.choices] or [None]
        return st.sampled_from(vals)
    if isinstance(block, (components.Textbox, components.Code)):
        return st.one_of(st.text(max_size=40), st.just(block.value or ""))
    return st.just(None)


def _inputs(fn, hostile_only: bool):
    blocks = [b for b in fn.inputs if not getattr(b, "stateful", False)]
    files = (gr.File, gr.Image, gr.Sketchpad, gr.ImageEditor, gr.Dataset,
             gr.Audio, gr.Video, gr.Model3D)

    @st.composite
    def strat(draw):
        vals = []
        for b in blocks:
            if isinstance(b, files):
                vals.append(None)
            elif hostile_only or draw(st.integers(0, 3)) == 0:
                vals.append(draw(st.one_of(HOSTILE, st.just(LONG_TEXT))))
            else:
                vals.append(draw(_valid(b)))
        return vals

    return blocks, strat()


def _error_text(e: Exception) -> str:
    return str(getattr(e, "message", None) or e)


def test_every_endpoint_refuses_hostile_input_clearly(fuzz_app):
    demo, client, backend = fuzz_app
    failures, report = [], []
    for fn in endpoints(demo):
        api_name = fn.api_name
        blocks, strat = _inputs(fn, hostile_only=api_name in SLOW_INTERACTIVE)
        stats = {"calls": 0, "refused": 0, "accepted": 0}

        @FUZZ_ENDPOINTS
        @given(strat)
        def prop(values):
            stats["calls"] += 1
            invalid = [m for b, v in zip(blocks, values) if (m := check_value(b, v))]
            try:
                client.predict(*values, api_name=f"/{api_name}")
                ok, msg = True, ""
            except Exception as e:  # AppError carries the user-facing message
                ok, msg = False, _error_text(e)
            if ok or msg == ACCEPTED:
                stats["accepted"] += 1
                assert not invalid, f"{api_name} accepted invalid input: {invalid[0]}"
                return
            stats["refused"] += 1
            assert msg and msg != "None", f"{api_name}: empty error message"
            assert not any(g in msg for g in GENERIC), f"{api_name}: generic/raw message: {msg[:300]}"
            assert not echoes_too_much(msg, values), f"{api_name}: message echoes the input: {msg[:300]}"

        t0 = time.monotonic()
        try:
            prop()
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
        report.append(f"{api_name}\t{stats['calls']}\t{stats['accepted']}\t{stats['refused']}\t"
                      f"{time.monotonic() - t0:.1f}")
    if os.environ.get("PAPERLAB_FUZZ_REPORT"):
        with open(os.environ["PAPERLAB_FUZZ_REPORT"], "w") as f:
            f.write("endpoint\tcalls\taccepted\trefused\tseconds\n" + "\n".join(report) + "\n")
    assert not failures, "\n".join(failures)

"""The tailopt endpoints through gradio_client: a run, diverged runs marked, the gloo check, bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

from engines.tailopt.params import max_processes

# task, noise, ν, s, workers, z, rounds, methods, tune, budget, auto, lr_in, lr_out, d_in, u_in, d_out, u_out, engine
SMALL = ("linear", "cauchy", 1.5, 1.0, 3, 3, 10)
GIVEN = (False, 4, True, 0.05, 1.0, 0.1, 1.0, 0.1, 1.0, "simulator")


def test_run_marks_divergence(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    loss_plot, table, clip_plot, noise_plot, status = c.predict(*SMALL, ["fedavg", "bi2clip"], *GIVEN,
                                                                api_name="/tailopt_run")
    assert loss_plot["plot"].startswith("data:image") and noise_plot["plot"].startswith("data:image")
    rows = {r[0]: r for r in table["data"]}
    assert rows["FedAvg (Local SGD)"][1] == "diverged"
    bc = rows["Bi²Clip (BiClip inner + outer)"]
    assert bc[2] == 0 and bc[3] == 0 and bc[4].startswith("1·d")
    assert "Diverged" in status and "FedAvg" in status and "α̂" in status


def test_tuned_run(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    *_, table, _c, _n, status = c.predict(*SMALL, ["fedadam", "bi2clip"], True, 2, True, 0.01, 1.0, 0.1, 10.0,
                                          0.1, 10.0, "simulator", api_name="/tailopt_run")
    assert len(table["data"]) == 2 and "tuned on a validation seed" in status


def test_bad_input_is_named(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="Select at least one method"):
        c.predict(*SMALL, [], *GIVEN, api_name="/tailopt_run")
    with pytest.raises(Exception, match="d_in"):
        c.predict(*SMALL, ["bi2clip"], False, 4, True, 0.01, 1.0, 5.0, 1.0, 0.1, 1.0, "simulator",
                  api_name="/tailopt_run")
    with pytest.raises(Exception, match="lr_in"):
        c.predict(*SMALL, ["bi2clip"], False, 4, True, 0.0, 1.0, 0.1, 1.0, 0.1, 1.0, "simulator",
                  api_name="/tailopt_run")
    too_many = max_processes() + 1  # more gloo processes than this machine allows
    if too_many <= 32:  # the slider's own maximum guards the rest
        with pytest.raises(Exception, match="workers"):
            c.predict("linear", "cauchy", 1.5, 1.0, too_many, 3, 10, ["bi2clip"], *GIVEN[:-1], "gloo",
                      api_name="/tailopt_run")
    out = c.predict(*SMALL, ["bi2clip"], *GIVEN, api_name="/tailopt_run")
    assert "Done" in out[-1]

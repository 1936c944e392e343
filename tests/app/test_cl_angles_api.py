"""The cl_angles endpoints through gradio_client (inline jobs), with micro sizes, and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

ALL = ["cl", "replay", "ewc", "replay_ewc"]
# angle, ‖μ‖, buffer %, selector, λ, epochs1, epochs2, seed, variants
RUN = (170, 8, 10, "mid", 1e6, 300, 200, 0, ALL)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_run_and_neurons(client):
    curves, neurons, variant, status = client.predict(*RUN, api_name="/cl_angles_run")
    for plot in (curves, neurons):
        assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image")
    assert variant == "cl"
    assert "θ = 170°" in status and "harmful for CL" in status and "Done" in status
    # the neuron view switches variant from the stored result, without training
    again = client.predict("replay", api_name="/cl_angles_neurons")
    assert again["plot"].startswith("data:image")


def test_sweep(client):
    plot, status = client.predict(45, 1, 100, 8, 10, "random", 1e6, ["cl", "replay"], api_name="/cl_angles_sweep")
    assert plot["plot"].startswith("data:image")
    assert "Knee θ_c" in status and "Replay" in status


def test_real_image_jobs(client):
    plot, status = client.predict("digits", 1, 100, api_name="/cl_angles_bins")
    assert plot["plot"].startswith("data:image") and "Mean task-1 error per angle" in status
    sel, gallery, table, status = client.predict("digits", ["4", "5"], ["8", "9"], 5, "pixels", 1, 100,
                                                 ["random", "mid"], api_name="/cl_angles_buffer")
    assert sel["plot"].startswith("data:image") and gallery["plot"].startswith("data:image")
    rows = [r[0] for r in table["data"]]
    assert rows == ["random", "mid-angle", "no replay"] and "per class replayed" in status


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="Select at least one variant"):
        client.predict(*RUN[:-1], [], api_name="/cl_angles_run")
    with pytest.raises(Exception, match="ewc_lambda"):
        client.predict(*RUN[:4], -5, *RUN[5:], api_name="/cl_angles_run")
    with pytest.raises(Exception, match="exactly two classes"):
        client.predict("digits", ["4"], ["8", "9"], 5, "pixels", 1, 100, ["mid"], api_name="/cl_angles_buffer")
    with pytest.raises(Exception, match="four different classes"):
        client.predict("digits", ["4", "5"], ["5", "9"], 5, "pixels", 1, 100, ["mid"], api_name="/cl_angles_buffer")
    with pytest.raises(Exception, match="budget"):
        client.predict(1, 10, 5000, 8, 10, "random", 1e6, ALL, api_name="/cl_angles_sweep")
    # the app keeps serving after bad input
    out = client.predict(*RUN, api_name="/cl_angles_run")
    assert "Done" in out[-1]

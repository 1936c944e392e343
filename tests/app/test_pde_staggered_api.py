"""The pde_staggered endpoints through gradio_client (inline jobs, micro sizes), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

ALL = ["p1", "p1_M", "p4m", "p4m_M"]
# ic, seed, bump row, bump col, bump width, amplitude, dt, sketch
IC = ("swe", "random", 2, 0.4, 0.6, 0.1, 0.2, 0.5, None)
INS = ("ins", "random", 2, 0.4, 0.6, 0.1, 0.2, 0.5, None)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_rollout_frame_and_rotate(client):
    anim, tslider, frame, curves, status = client.predict(*IC, 12, ALL, api_name="/pde_staggered_rollout")
    assert str(anim).endswith(".gif")
    assert tslider["value"] == 12 and tslider["maximum"] == 12
    for plot in (frame, curves):
        assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image")
    assert "Correlation time" in status and "Mass drift" in status and "Done" in status
    again = client.predict(3, api_name="/pde_staggered_frame")
    assert again["plot"].startswith("data:image")

    img, table, status = client.predict(*IC, "rot 90°", 3, ["p1", "p4m_M"], api_name="/pde_staggered_rotate")
    rows = {r[0]: r for r in table["data"]}
    assert rows["p4m/M"][1] < 1e-4 and rows["p4m/M"][2] < 1e-5
    assert rows["p1/∅"][1] > 1e-2
    assert str(img).endswith(".png") and "rot 90°" in status


def test_train_and_benchmark(client):
    img, table, status = client.predict("swe", 20, 3, True, True, ["p1_M"], 0.25, api_name="/pde_staggered_train")
    assert [r[0] for r in table["data"]] == ["p1/M"] and "Trained" in status
    with pytest.raises(Exception, match="noise"):
        client.predict("swe", 20, 3, False, False, ["p1_M"], 2.5, api_name="/pde_staggered_train")
    img, table, status = client.predict("swe", 1, 10, api_name="/pde_staggered_benchmark")
    assert [r[0] for r in table["data"]] == ["p1/∅", "p1/M", "p4m/∅", "p4m/M"]
    assert "Paper ordering" in status


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="Select at least one surrogate"):
        client.predict(*IC, 10, [], api_name="/pde_staggered_rollout")
    with pytest.raises(Exception, match="CFL"):
        client.predict(*IC[:7], 2.0, None, 10, ALL, api_name="/pde_staggered_rollout")
    with pytest.raises(Exception, match="negative depth"):
        client.predict("swe", "bump", 0, 0.5, 0.5, 0.1, -1.2, 0.5, None, 10, ALL, api_name="/pde_staggered_rollout")
    with pytest.raises(Exception, match="drawn initial condition is empty"):
        client.predict("swe", "drawn", *IC[2:], 10, ALL, api_name="/pde_staggered_rollout")
    with pytest.raises(Exception, match="Decaying turbulence starts from"):
        client.predict("ins", "l_shape", *IC[2:], 10, ALL, api_name="/pde_staggered_rollout")
    with pytest.raises(Exception, match="(?i)horizon|maximum value 200"):
        client.predict(*IC, 500, ALL, api_name="/pde_staggered_rollout")
    # the app keeps serving after bad input
    out = client.predict(*IC, 5, ["p4m_M"], api_name="/pde_staggered_rollout")
    assert "Done" in out[-1]


def test_turbulence_rollout_and_rotate(client):
    anim, tslider, frame, curves, status = client.predict(*INS, 6, ALL, api_name="/pde_staggered_rollout")
    assert str(anim).endswith(".gif") and curves["plot"].startswith("data:image")
    assert "NRMSE(ω)" in status and "Momentum drift" in status and "max |div u|" in status
    img, table, status = client.predict(*INS, "flip", 2, ["p1", "p4m_M"], api_name="/pde_staggered_rotate")
    rows = {r[0]: r for r in table["data"]}
    assert rows["p4m/M"][2] < 1e-5 and rows["p1/∅"][1] > 1e-2

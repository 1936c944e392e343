"""The saeuron tab's endpoints through gradio_client: build, erase, benchmark, bad input."""
from __future__ import annotations

from pathlib import Path

import pytest
from gradio_client import Client

ROWS = [-20.0, 8, 0.0, 1.0] + [-5.0, 4, 0.0, 1.0] * 2  # γ, features per timestep, t_start, t_end per concept row
OPTS = ["top_m", 99.5, "sae", True, True]  # selection, τ, units, preserve error, uncond branch


def erase_args(concepts, prompt="", rows=ROWS, opts=OPTS):
    return ["star", "striped", "red", prompt, 0, 2, 6, 4.0, concepts, *rows, *opts]


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    curve, md = c.predict(api_name="/saeuron_build")
    assert "Built" in md and "FVU" in md and "style SAE" in md
    return c


def test_erase_via_client(client):
    grid, judges, hist, heat, table, status = client.predict(*erase_args(["striped", "star"]), api_name="/saeuron_erase")
    for img in (grid, judges, hist, heat):
        assert Path(img).exists()
    assert {r[0] for r in table["data"]} == {"striped", "star"}
    assert "a red star in striped style" in status and "P(striped)" in status and "Done" in status


def test_benchmark_via_client(client):
    table, plot, md = client.predict(["striped"], 1, True, [], -5.0, 4, 6, api_name="/saeuron_benchmark")
    units = [r[1] for r in table["data"]]
    assert units == ["raw", "sae"] or units == ["sae", "raw"]
    for r in table["data"]:
        assert all(0.0 <= float(v) <= 1.0 for v in r[2:])  # metrics stay in [0, 1] (upstream issue #5)
    assert Path(plot).exists() and "UA" in md


def test_bad_input_is_clear(client):
    with pytest.raises(Exception, match="at least one concept"):
        client.predict(*erase_args([]), api_name="/saeuron_erase")
    with pytest.raises(Exception, match="unknown tokens"):
        client.predict(*erase_args(["striped"], prompt="a red dragon in striped style"), api_name="/saeuron_erase")
    with pytest.raises(Exception, match="gamma|γ|greater than maximum|maximum"):
        client.predict(*erase_args(["striped"], rows=[5.0, 4, 0.0, 1.0] * 3), api_name="/saeuron_erase")
    with pytest.raises(Exception, match="t_start"):
        client.predict(*erase_args(["striped"], rows=[-1.0, 4, 0.8, 0.2] * 3), api_name="/saeuron_erase")
    with pytest.raises(Exception, match="two styles"):
        client.predict(["striped"], 1, True, ["dotted"], -5.0, 4, 6, api_name="/saeuron_benchmark")

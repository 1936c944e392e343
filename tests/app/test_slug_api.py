"""The slug endpoints through gradio_client (inline jobs, micro CLIP), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

# kind, target, tower, selection, forget %, baselines, layer, rel step, max evals, max rel, n_forget, n_retain, seed
RUN = ("digit", "two", "text", "best_retain", 5, ["ga"], "", 0, 6, 20, 48, 48, 0)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_unlearn_reset_and_targets(client):
    scatter, trace, bars, cost, table, patch, status = client.predict(*RUN, api_name="/slug_unlearn")
    for plot in (scatter, trace, bars, cost):
        assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image")
    assert "Layers touched: 1" in status and "revert bit-exact: True" in status
    assert "→ **0%**" in status or "→ **3%**" in status  # forget accuracy on "two" ≤ 5 %
    rows = table["data"]
    assert [r[0] for r in rows] == ["SLUG", "GA (all layers)"] and rows[0][5] is True
    assert patch and str(patch).endswith(".safetensors")
    out = client.predict(api_name="/slug_reset")
    assert "original zoo weights" in out[-1]
    upd = client.predict("style", api_name="/slug_targets")
    assert upd == "striped" or upd.get("value") == "striped"


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="does not exist"):
        client.predict(*RUN[:6], "vision_model.encoder.layers.7.mlp.fc1.weight", *RUN[7:], api_name="/slug_unlearn")
    with pytest.raises(Exception, match="unknown object target"):
        client.predict("object", "seven", *RUN[2:], api_name="/slug_unlearn")
    with pytest.raises(Exception, match="fewer than the minimum"):
        client.predict(*RUN[:10], 3, *RUN[11:], api_name="/slug_unlearn")
    with pytest.raises(Exception, match="did not reach forget accuracy"):
        client.predict(*RUN[:4], 0, [], "", 0, 3, 1e-3, 16, 16, 0, api_name="/slug_unlearn")
    # the app keeps serving after bad input
    assert "Layers touched: 1" in client.predict(*RUN[:5], [], *RUN[6:], api_name="/slug_unlearn")[-1]


def test_t2i_endpoint(client):
    before, after, plot, status = client.predict("style", "dotted", 2, 4, api_name="/slug_t2i")
    assert before and after and plot["plot"].startswith("data:image")
    assert "Judge accuracy on *dotted*" in status and "unrelated concepts" in status

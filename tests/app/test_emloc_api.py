"""The emloc endpoints through gradio_client (inline jobs, the test profile's micro model), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

# task, shots, chunk, delta, ratios, queries, seed
BUILD = ("prototype", 32, 16, 0.01, "0.1, 0.2, 0.5", 4, 0)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_build_memory_and_strip(client):
    out = client.predict(*BUILD, api_name="/emloc_build")
    mem_plot, cmp_plot, trace_plot, table, strip, status = out[-6:]
    assert "EMLoC keeps" in status and "224 tokens" in status
    assert [r[0] for r in table["data"]][:2] == ["EMLoC", "full context (MLoC)"]
    assert "kept" in strip and "of 224 tokens" in strip


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="(?i)shots"):
        client.predict("prototype", 0, *BUILD[2:], api_name="/emloc_build")
    with pytest.raises(Exception, match="ratios: write numbers"):
        client.predict(*BUILD[:4], "0.1, lots", *BUILD[5:], api_name="/emloc_build")
    with pytest.raises(Exception, match="strictly between 0 and 1"):
        client.predict(*BUILD[:4], "0.2, 2", *BUILD[5:], api_name="/emloc_build")
    with pytest.raises(Exception, match="JS bound δ.* above its maximum 0.05"):
        client.predict(*BUILD[:3], 0.9, *BUILD[4:], api_name="/emloc_build")
    assert "EMLoC keeps" in client.predict(*BUILD, api_name="/emloc_build")[-1]  # still serving

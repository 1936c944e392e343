"""The SyncMind endpoints through gradio_client: pick an instance, run an episode, a batch, bad input, stop."""
from __future__ import annotations

import pytest
from gradio_client import Client

CALLEE = "1_minilib_callee__minilib.stats.py__summarize__ca7a519a3f"


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_pick_and_gold_episode(client):
    inst, card, err, diff = client.predict("minilib", "callee", CALLEE, api_name="/syncmind_pick")
    assert "Callee instance" in card and "hidden until the episode ends" in card
    assert "FAILURES" in err and "revealed" in diff
    log, verdict, diff, _ = client.predict("minilib", CALLEE, "gold", "independent", "oracle", 1000, 100, 100, 30,
                                              "", "", "", api_name="/syncmind_run")
    assert "Recovered" in verdict and "LA_func ✓" in verdict and "`summarize`" in verdict
    assert log["data"][0][1] == "propose" and "✓ passed" in log["data"][0][-1]
    assert "+++" in diff and "def summarize" in diff


def test_batch_and_bad_input(client):
    table, _, status = client.predict("minilib", ["gold", "noop"], ["independent"], "callee", 1, 1000, 100, 100,
                                         30, "oracle", "", "", "", api_name="/syncmind_batch")
    rows = {(r[0].split(" (")[0], r[2]): r for r in table["data"]}
    assert rows[("Gold replay", "all")][4] == 100 and rows[("No-op", "all")][4] == 0
    assert "2 episodes" in status
    with pytest.raises(Exception, match="endpoint"):
        client.predict("minilib", CALLEE, "openai", "independent", "oracle", 1000, 100, 100, 30, "", "", "",
                       api_name="/syncmind_run")
    with pytest.raises(Exception, match="at least one agent"):
        client.predict("minilib", [], ["independent"], "all", 1, 1000, 100, 100, 30, "oracle", "", "", "",
                       api_name="/syncmind_batch")
    out = client.predict(None, api_name="/syncmind_stop")
    assert "nothing is running" in out or "stop requested" in out

"""The dpsdp endpoints through gradio_client (inline jobs, micro models of the test profile), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

# problem, variant, turns, temperature, markovian, seed
REFINE = ("47+58-26", "dpsdp", 4, 0.0, True, 0)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_refine(client):
    summary, table, plot, status = client.predict(*REFINE, api_name="/dpsdp_refine")
    assert "47+58-26 = 79" in summary and "majority" in summary
    rows = table["data"]
    assert [r[0] for r in rows] == [1, 2, 3, 4] and rows[0][1] == "—"
    assert plot["plot"].startswith("data:image") and "Done: majority" in status
    # the oracle critic names the first wrong digit of the previous answer
    _, table, _, _ = client.predict("47+58-26", "oracle_critic", 3, 0.0, True, 0, api_name="/dpsdp_refine")
    from engines.dpsdp import task

    for prev, row in zip(table["data"], table["data"][1:]):
        assert row[1] == task.oracle_feedback(prev[2] if prev[2] != "∅" else "", "105;079")


def test_random_problem_is_held_out(client):
    from engines.dpsdp import task

    p = client.predict(3, api_name="/dpsdp_random")
    assert task.split_of(*task.parse_problem(p)) == 2


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="not a problem of the form a\\+b-c"):
        client.predict("2+2", *REFINE[1:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="partial results must lie in 0-999"):
        client.predict("10-90+5", *REFINE[1:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="(?i)turns.*maximum 8"):
        client.predict(REFINE[0], REFINE[1], 12, *REFINE[3:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="Pick at least one variant"):
        client.predict(40, 3, "test", [], api_name="/dpsdp_evaluate")
    assert "majority" in client.predict(*REFINE, api_name="/dpsdp_refine")[0]  # still serving


def test_evaluate_and_tree(client):
    curves, flips, table, status = client.predict(40, 3, "test", ["dpsdp", "reference"], api_name="/dpsdp_evaluate")
    assert curves["plot"].startswith("data:image") and flips["plot"].startswith("data:image")
    labels = [r[0] for r in table["data"]]
    assert labels[0].startswith("DPSDP") and labels[-1].startswith("self-consistency@3")
    rows, text = client.predict(1, 0, api_name="/dpsdp_tree")
    levels = [r[0].strip() for r in rows["data"]]
    assert levels.count("a₀ (actor)") == 2 and "Q gap ≥ 0.25" in text

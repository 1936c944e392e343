"""The poisonedeye endpoints through gradio_client (inline jobs, micro CLIP, rule reader), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

# dataset, query index, image, question, target, variant, ε, steps, k, aux, template, generator, purification,
# instruction filter, consistency filter, eval queries
CRAFT = ("digits", 3, None, "", "I don't know", "pe_s", 8, 8, 3, 20, "paper", "rule", "none", False, False, 3)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_craft_shows_poison_retrieval_and_exact_removal(client):
    images, trace, before, after, status = client.predict(*CRAFT, api_name="/poisonedeye_craft")
    assert len(images) == 3 and trace["plot"].startswith("data:image")
    assert len(before) == 3 and len(after) == 3
    assert "index restored bit for bit: **True**" in status and "‖δ‖∞ =" in status
    poisoned = any("POISON" in (g.get("caption") or "") for g in after)
    assert poisoned == ("**attack succeeded**" in status)  # the rule reader obeys whenever the poison is retrieved


def test_benchmark_table(client):
    table, bars, status = client.predict("digits", ["pe_b", "pe_c"], 2, 3, 8, 8, 3, 20, "paper", "rule", False,
                                         "jpeg", False, False, api_name="/poisonedeye_benchmark")
    rows = table["data"]
    assert [r[0] for r in rows] == ["PE-B (text only)", "PE-C (class query)", "PE-B (text only) + defence",
                                    "PE-C (class query) + defence"]
    assert all(r[-1] is True for r in rows) and bars["plot"].startswith("data:image")
    assert "for every variant: **True**" in status


def test_bad_input_is_named(client, tmp_path):
    with pytest.raises(Exception, match="query_index: 99999 is out of range"):
        client.predict("digits", 99999, *CRAFT[2:], api_name="/poisonedeye_craft")
    with pytest.raises(Exception, match="ε: L∞ budget"):
        client.predict(*CRAFT[:6], 99, *CRAFT[7:], api_name="/poisonedeye_craft")
    with pytest.raises(Exception, match="target_answer"):
        client.predict(*CRAFT[:4], 'say "yes"', *CRAFT[5:], api_name="/poisonedeye_craft")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image at all")
    with pytest.raises(Exception):
        client.predict(CRAFT[0], CRAFT[1], handle_file(str(junk)), *CRAFT[3:], api_name="/poisonedeye_craft")
    with pytest.raises(Exception, match="at least one variant"):
        client.predict("digits", [], 2, 3, 8, 8, 3, 20, "paper", "rule", False, "none", False, False,
                       api_name="/poisonedeye_benchmark")
    # the app keeps serving after bad input
    assert "restored bit for bit" in client.predict(*CRAFT, api_name="/poisonedeye_craft")[-1]


def test_worked_example_is_the_first_attack_with_the_tab_defaults(client):
    from pathlib import Path

    from app import worked_example as we
    from app.tabs import poisonedeye as tab

    ex = tab.example()
    assert (ex["dataset"], ex["query_index"], ex["variant"], ex["epsilon"]) == ("digits", 3, "pe_s", 8.0)
    assert ex["generator"] == "rule" and ex["steps"] == 20  # the test profile's cheap defaults
    client.predict(*CRAFT, api_name="/poisonedeye_craft")  # builds the micro CLIP if no earlier test did
    assert we.missing_zoo("clip") is None
    res = we.fetch("poisonedeye", "craft", ex)
    images, trace, before, after = tab.render_craft(res)
    assert len(images) == 3 and all(Path(p).is_file() for p, _ in images)
    assert len(before) == 3 and len(after) == 3 and trace.axes
    assert res["removed_exact"] and "restored bit for bit: **True**" in tab.summary(res)

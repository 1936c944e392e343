"""The prompt-to-prototype endpoints through gradio_client: apply, edit history, programs, bad input, jobs."""
from __future__ import annotations

import json

import pytest
from gradio_client import Client


def _rows(df) -> dict:
    return {r[0].replace(" ◀", ""): r for r in df["data"]}


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def _apply(c, text, history=None, domain="chair", mapper="interface"):
    out = c.predict(domain, text, mapper, "induced", 1.0, api_name="/prototype_apply")
    return out


def test_apply_undo_redo_keep_the_history(client):
    c = client
    c.predict("chair", api_name="/prototype_reset")
    model, files, summary, program, commands, params = _apply(c, "make the backrest taller")
    assert "backrest.height: 40 cm → 48 cm" in summary and model.endswith(".glb")
    assert {"backrest.height"} <= {o["target"] for o in json.loads(program)}
    assert "loft" in commands and _rows(params)["backrest.height"][2] == "48 cm"
    *_, params = _apply(c, "make the seat a bit wider")
    assert _rows(params)["seat.width"][2] == "47 cm"
    out = c.predict("chair", "set the seat height to 90 cm", "interface", "induced", 1.0, api_name="/prototype_apply")
    assert "Refused" in out[2] and "outside its range" in out[2]
    assert _rows(out[-1])["seat.width"][2] == "47 cm"  # a refusal keeps the model and the history
    *_, params = c.predict(api_name="/prototype_undo")
    assert _rows(params)["seat.width"][2] == "45 cm" and _rows(params)["backrest.height"][2] == "48 cm"
    *_, params = c.predict(api_name="/prototype_redo")
    assert _rows(params)["seat.width"][2] == "47 cm"


def test_program_editing_and_bad_programs(client):
    c = client
    c.predict("mug", api_name="/prototype_reset")
    out = c.predict("mug", '[{"op": "remove", "target": "handle"}]', "hand", 1.0, api_name="/prototype_run_program")
    assert "handle.present: on → off" in out[2]
    out = c.predict("mug", '[{"op": "adjust", "target": "handle.colour", "dir": "+"}]', "hand", 1.0,
                    api_name="/prototype_run_program")
    assert "unknown target 'handle.colour'" in out[2]
    with pytest.raises(Exception, match="program is empty"):
        c.predict("mug", "  ", "hand", 1.0, api_name="/prototype_run_program")


def test_bad_words_are_explained(client):
    c = client
    c.predict("lamp", api_name="/prototype_reset")
    out = c.predict("lamp", "blorp the zibber quickly", "interface", "induced", 1.0, api_name="/prototype_apply")
    assert "Not understood" in out[2]
    out = c.predict("lamp", "paint the shade purple", "interface", "induced", 1.0, api_name="/prototype_apply")
    assert "the lamp has no colour setting; it has: base (radius, height)" in out[2] and "Refused" in out[2]
    with pytest.raises(Exception, match="limit is 500"):
        c.predict("lamp", "x" * 600, "interface", "induced", 1.0, api_name="/prototype_apply")
    with pytest.raises(Exception, match="Nothing to undo"):
        c.predict("lamp", api_name="/prototype_reset") and c.predict(api_name="/prototype_undo")


def test_spec_panel_and_benchmark_job(client):
    c = client
    md = c.predict("chair", "induced", api_name="/prototype_spec")
    assert "DPMM clusters" in md and "backrest" in md
    gap, err, table, status = c.predict("test", ["interface", "flat"], 1, api_name="/prototype_benchmark")
    assert "Benchmark done: 5 test instructions" in status
    assert {r[0].split(" (")[0] for r in table["data"]} == {"Interface + MiniLM", "Flat parameter list + MiniLM"}
    with pytest.raises(Exception, match="at least one mapper"):
        c.predict("test", [], 1, api_name="/prototype_benchmark")


def test_empty_non_english_and_unknown_product_show_a_message_and_keep_the_model(client):
    c = client
    c.predict("chair", api_name="/prototype_reset")
    out = c.predict("chair", "   ", "interface", "induced", 1.0, api_name="/prototype_apply")
    assert "instruction is empty" in out[2] and _rows(out[-1])["seat.height"][2] == "45 cm"
    out = c.predict("chair", "haz el asiento más alto", "interface", "induced", 1.0, api_name="/prototype_apply")
    assert "only English" in out[2] and "Refused" in out[2] and _rows(out[-1])["seat.height"][2] == "45 cm"
    out = c.predict("lamp", "lower the lamp overall by a fifth", "interface", "induced", 1.0,
                    api_name="/prototype_apply")
    assert "overall.height: 33 cm → 26.4 cm" in out[2] and "**Overall:** height 33 cm → 26.4 cm" in out[2]
    with pytest.raises(Exception, match="sofa|choices|domain"):
        c.predict("sofa", "taller", "interface", "induced", 1.0, api_name="/prototype_apply")

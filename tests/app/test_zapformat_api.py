"""ZapFormat endpoints through gradio_client: gallery, step through, benchmark job, bad input."""
from __future__ import annotations

import json

import pytest
from gradio_client import Client


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


SWITCHES = (True, True, True, True, 1000, 2, "bounded", 16)  # ..., passes, JSON whitespace, max indent


def test_gallery_and_step_through(client):
    kind, grammar, target = client.predict("arithmetic (CFG)", api_name="/zapformat_example")
    assert kind == "cfg" and "expr" in grammar and target.endswith(";")
    plot, table, status, kbnf = client.predict(kind, grammar, "qwen2.5-mini", target, *SWITCHES,
                                               api_name="/zapformat_step")
    assert plot["plot"].startswith("data:image")
    rows = table["data"]
    assert len(rows) > 3 and all(r[2] > 0 for r in rows)  # every step allows some token
    assert rows[0][4] is True or rows[-1][4] is True  # second pass: cache hits
    assert "Complete" in status and "start ::=" in kbnf


def test_target_outside_grammar_is_explained(client):
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    _, table, status, _ = client.predict("json_schema", schema, "qwen2.5-mini", '{"n": "x"}', *SWITCHES,
                                         api_name="/zapformat_step")
    assert "leaves the grammar at token" in status


@pytest.mark.parametrize("grammar, match", [
    ('{"type": "object", "properties": {"a": {"type": "strnig"}}}', "/properties/a"),
    ('{"type": ', "not valid JSON"),
])
def test_bad_schema_points_at_the_problem(client, grammar, match):
    with pytest.raises(Exception, match=match):
        client.predict("json_schema", grammar, "qwen2.5-mini", "{}", *SWITCHES, api_name="/zapformat_step")


def test_bad_grammar_and_empty_inputs(client):
    with pytest.raises(Exception, match="line 1, column 11"):
        client.predict("cfg", "start ::= undefined_rule;", "qwen2.5-mini", "x", *SWITCHES, api_name="/zapformat_step")
    with pytest.raises(Exception, match="Type a target"):
        client.predict("cfg", 'start ::= "a";', "qwen2.5-mini", "", *SWITCHES, api_name="/zapformat_step")
    with pytest.raises(Exception, match="(?i)eager_min_tokens|minimum"):
        client.predict("cfg", 'start ::= "a";', "qwen2.5-mini", "a", True, True, True, True, 0, 2, "bounded", 16,
                       api_name="/zapformat_step")


def test_benchmark_job(client):
    img, table, csv_file, status = client.predict(["zapformat", "kbnf"], ["datetime"], "qwen2.5-mini", 1,
                                                  api_name="/zapformat_benchmark")
    rows = {r[0]: r for r in table["data"]}
    assert set(rows) == {"zapformat", "kbnf"} and all(r[2] == "ok" for r in rows.values())
    assert "Benchmark done" in status
    with pytest.raises(Exception, match="Select at least one engine"):
        client.predict([], ["datetime"], "qwen2.5-mini", 1, api_name="/zapformat_benchmark")


def test_whitespace_setting_reaches_the_compiler(client):
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    *_, status, kbnf = client.predict("json_schema", schema, "qwen2.5-mini", '{"n":1}', *SWITCHES[:6], "compact", 16,
                                      api_name="/zapformat_step")
    assert "Complete" in status and "[ \\t\\n\\r]*" not in kbnf
    _, _, status, _ = client.predict("json_schema", schema, "qwen2.5-mini", '{"n": 1}', *SWITCHES[:6], "compact", 16,
                                     api_name="/zapformat_step")
    assert "leaves the grammar at token" in status
    _, _, status, _ = client.predict("json_schema", schema, "qwen2.5-mini", '{\n\n"n": 1}', *SWITCHES,
                                     api_name="/zapformat_step")
    assert "leaves the grammar at token" in status  # bounded: one newline at most
    _, _, status, _ = client.predict("json_schema", schema, "qwen2.5-mini", '{\n\n"n": 1}', *SWITCHES[:6], "flexible",
                                     16, api_name="/zapformat_step")
    assert "Complete" in status


def test_top_level_regex_may_continue(client):
    _, table, status, _ = client.predict("regex", "[0-9]+", "qwen2.5-mini", "123", *SWITCHES, api_name="/zapformat_step")
    assert len(table["data"]) == 3 and "EOS is allowed" in status


def test_out_of_range_controls_name_the_parameter(client):
    with pytest.raises(Exception, match="(?i)max indent"):
        client.predict("json_schema", "{}", "qwen2.5-mini", "{}", *SWITCHES[:6], "bounded", 99,
                       api_name="/zapformat_step")
    with pytest.raises(Exception, match="(?i)max new tokens"):
        client.predict("json_schema", "{}", "Say hi.", 1, 1000, 0.7, "bounded", 16, api_name="/zapformat_generate")


def test_generate_handler_checks_bounds_and_shows_the_schema_beside_the_samples():
    import gradio as gr

    from app.tabs.zapformat import grammar_panel, render_generate, run_generate

    with pytest.raises(gr.Error, match="max_new_tokens must be a whole number from 8 to 512 \\(got 1000\\)"):
        next(run_generate("json_schema", "{}", "Say hi.", 1, 1000, 0.7))
    with pytest.raises(gr.Error, match="max_indent must be a whole number from 0 to 64"):
        next(run_generate("json_schema", "{}", "Say hi.", 1, 64, 0.7, "bounded", 65))
    schema = '{"type": "integer"}'
    panel = grammar_panel("json_schema", schema, "bounded", 8)
    assert panel.value == schema and "JSON Schema" in panel.label and "8 spaces/tabs" in panel.label
    assert "compact" in grammar_panel("json_schema", schema, "compact", 8).label
    res = {"samples": [{"prompt": "p", "constrained": "12", "constrained_valid": True, "unconstrained": "x",
                        "unconstrained_valid": False, "dead_end": False, "stop": "max_new_tokens"}],
           "constrained_valid_rate": 1.0, "unconstrained_valid_rate": 0.0, "mask_ms_per_token": 0.1,
           "constrained_s": 1.0, "unconstrained_s": 1.0, "max_new_tokens": 16}
    rows, md = render_generate(res)
    assert rows[0][3] == "max new tokens" and "cap of 16 new tokens" in md

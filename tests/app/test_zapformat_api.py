"""ZapFormat endpoints through gradio_client: gallery, step through, benchmark job, bad input."""
from __future__ import annotations

import json

import pytest
from gradio_client import Client


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


SWITCHES = (True, True, True, True, 1000, 2)


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
        client.predict("cfg", 'start ::= "a";', "qwen2.5-mini", "a", True, True, True, True, 0, 2,
                       api_name="/zapformat_step")


def test_benchmark_job(client):
    img, table, csv_file, status = client.predict(["zapformat", "kbnf"], ["datetime"], "qwen2.5-mini", 1,
                                                  api_name="/zapformat_benchmark")
    rows = {r[0]: r for r in table["data"]}
    assert set(rows) == {"zapformat", "kbnf"} and all(r[2] == "ok" for r in rows.values())
    assert "Benchmark done" in status
    with pytest.raises(Exception, match="Select at least one engine"):
        client.predict([], ["datetime"], "qwen2.5-mini", 1, api_name="/zapformat_benchmark")

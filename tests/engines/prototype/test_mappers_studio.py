"""Mappers (MiniLM), the LLM endpoint path against a loopback mock, the interpret round trip."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from engines.prototype.domains import get_domain
from engines.prototype.interface import compile_program, dump_program
from engines.prototype.llm import LLMMapper
from engines.prototype.mappers import FlatMapper, InterfaceMapper
from engines.prototype.specs import get_spec


def _run(domain, text, enc, source="induced"):
    s = get_spec(domain, source)
    m = InterfaceMapper(s, enc).map(text)
    return m, compile_program(s, get_domain(domain).defaults(), m.ops)


@pytest.mark.parametrize("source", ["induced", "hand"])
def test_interface_mapper_headline_instruction(encoder, source):
    m, c = _run("chair", "make the backrest taller and a bit more reclined, keep the seat as is", encoder, source)
    assert {(o["op"], o.get("target")) for o in dump_program(m.ops)} >= {("adjust", "backrest.height"),
                                                                          ("keep", "seat")}
    assert c.ok and set(c.changed_components) == {"backrest"}
    assert c.state["backrest.height"] == 48 and c.state["backrest.tilt"] == 11  # moderate, slight


def test_interface_mapper_units_macros_structure(encoder):
    _, c = _run("chair", "raise the seat by 30 mm", encoder)
    assert c.state["seat.height"] == pytest.approx(48.0)
    _, c = _run("chair", "make it sturdier", encoder, "hand")
    assert {ch.target for ch in c.changes} == {"legs.thickness", "seat.thickness"}
    _, c = _run("mug", "take off the handle", encoder)
    assert c.state["handle.present"] == 0 and len(c.changes) == 1


def test_nonsense_is_not_understood(encoder):
    m, c = _run("lamp", "blorp the zibber quickly", encoder)
    assert not c.changes and m.warnings


def test_flat_mapper_emits_a_raw_patch(encoder):
    m = FlatMapper("chair", encoder).map("make the seat 3 cm higher")
    assert m.patch and all(k in get_domain("chair").by_raw for k in m.patch)


class _MockOpenAI(BaseHTTPRequestHandler):
    replies: list[str] = []
    seen: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _MockOpenAI.seen.append(body)
        content = _MockOpenAI.replies[min(len(_MockOpenAI.seen) - 1, len(_MockOpenAI.replies) - 1)]
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def mock_endpoint():
    srv = HTTPServer(("127.0.0.1", 0), _MockOpenAI)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    _MockOpenAI.seen = []
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()


def test_openai_compatible_mapper_retries_and_validates(mock_endpoint):
    _MockOpenAI.replies = ['[{"op": "adjust", "target": "backrest.hieght", "dir": "+"}]',
                           '```json\n[{"op": "adjust", "target": "backrest.height", "dir": "+", "mag": "slight"},'
                           ' {"op": "keep", "target": "seat"}]\n```']
    m = LLMMapper("chair", get_spec("chair", "hand"), endpoint=mock_endpoint, model="mock").map("back a bit taller")
    assert [o.op for o in m.ops] == ["adjust", "keep"] and m.ops[0].target == "backrest.height"
    assert "unknown target 'backrest.hieght'" in m.warnings[0]
    assert len(_MockOpenAI.seen) == 2 and "invalid" in _MockOpenAI.seen[1]["messages"][-1]["content"]


def test_openai_compatible_mapper_gives_up_without_editing(mock_endpoint):
    _MockOpenAI.replies = ["sure! here you go"]
    m = LLMMapper("mug", get_spec("mug", "hand"), endpoint=mock_endpoint, retries=1).map("bigger handle")
    assert not m.ops and "no valid program" in m.warnings[-1] and len(_MockOpenAI.seen) == 2


def test_interpret_round_trip_exports_and_refuses(encoder):
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings
    from engines.prototype.studio import interpret

    r = interpret({"domain": "lamp", "instruction": "make the shade much taller without touching the stem"})
    assert r.changed == ["shade.height"] and r.realised.watertight and r.realised.bodies == 1
    assert resolve(get_settings().artifacts_dir, r.glb).read_bytes()[:4] == b"glTF"
    r2 = interpret({"domain": "lamp", "instruction": "make the stem 80 cm tall", "state": r.state_after})
    assert r2.refused and r2.state_after == r.state_after and not r2.changed
    with pytest.raises(ValueError, match="outside"):
        interpret({"domain": "lamp", "state": dict(r.state_after, **{"stem.height": 999.0})})


def test_benchmark_entry_on_a_few_instructions(encoder):
    from engines.prototype.benchmark import run_benchmark

    res = run_benchmark({"split": "dev", "mappers": ["interface", "flat"], "spec_sources": ["induced"], "limit": 2})
    assert res.n == 10 and [r.mapper for r in res.runs] == ["interface", "flat"]
    assert all(0 <= r.overall["exact"] <= 1 for r in res.runs)
    assert res.runs[0].validity == 1.0  # compiled interface programs respect ranges and relations

"""SyncMind: builder determinism, bounds, exact budget rules, metrics, sandbox containment, LLM parsing, CSV."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from engines.common.params import ParamError, validate
from engines.syncmind import code as pycode
from engines.syncmind import env as envmod
from engines.syncmind.agents import GoldReplayAgent, HeuristicAgent, NoOpAgent, parse_failure
from engines.syncmind.collaborators import OracleCollaborator
from engines.syncmind.env import (AskAction, EnvAction, EnvConfig, Episode, GiveUpAction, MalformedAction,
                                  ProposeAction)
from engines.syncmind.experiment import run_episode
from engines.syncmind.instances import (build_instances, load_syncbench_csv, parse_repo_id, write_syncbench_csv)
from engines.syncmind.llm_agent import LLMAgent, openai_chat, parse_action
from engines.syncmind.metrics import EpisodeResult, summarize
from engines.syncmind.params import EpisodeParams, LLMParams
from engines.syncmind.sandbox import Limits, RunResult, run_tests
from engines.syncmind.sources import head_dir, instance_set
from engines.syncmind.synthetic import synthetic_repo
from tests.helpers import record_measure


@pytest.fixture(scope="module")
def minilib():
    iset = instance_set("minilib")
    return iset, head_dir("minilib")


def _get(iset, part):
    return next(i for i in iset.instances if part in i.instance_id)


def test_build_is_deterministic_and_fail_to_pass(minilib):
    """Check 1 (one test file; the full build is in `make reproduce`): same ids as the shipped build,
    gold passes with ≥ 1 test, every kept instance fails with its historical function."""
    iset, head = minilib
    built = build_instances(synthetic_repo(), "minilib", head, test_files=["tests/test_stats.py"])
    shipped = [i.instance_id for i in iset.instances if i.unittest_path == "tests/test_stats.py"]
    assert built.ids() == shipped and len(shipped) == 4
    assert {i.instance_type for i in built.instances} == {"caller", "callee"}
    for inst in built.instances:
        assert inst.gold_summary == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
        assert inst.original_summary["failed"] + inst.original_summary["errors"] >= 1
        assert pycode.extract(inst.old_complete_context, inst.fm_qualname).strip() == inst.original_code.strip()
        assert "def " in inst.original_code and len(inst.original_code) < len(inst.old_complete_context)
    kinds = [i.instance_type for i in iset.instances]
    assert len(kinds) >= 8 and kinds.count("caller") >= 3 and kinds.count("callee") >= 3


def test_gold_replay_and_noop_bounds(minilib):
    """Check 2: gold replay succeeds with the right localisation; the no-op agent fails (fail-to-pass)."""
    iset, head = minilib
    for part in ("callee__minilib.stats.py__summarize__ca7", "caller__tests.test_stats.py__test_summarize"):
        inst = _get(iset, part)
        g = run_episode(inst, GoldReplayAgent(inst), EnvConfig(), head)
        assert g.success and g.la_func and g.la_file and g.turns == 1 and g.balance_left == 900
    n = run_episode(inst, NoOpAgent(), EnvConfig(), head)
    assert not n.success and not n.la_func and n.end_reason == "gave up"


def _fail(*a, **k):
    return RunResult(1, False, "1 failed", {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, 0.0)


class Scripted:
    name = "scripted"

    def __init__(self, actions):
        self.actions = list(actions)

    def reset(self, info):
        pass

    def act(self, obs):
        return self.actions.pop(0)


A, P = "ask", "propose"


@pytest.mark.parametrize("mode,script,expect,kinds", [
    # independent: asking is refused (no charge); ends as soon as balance < coding cost
    ("independent", [A, P, P, P, P], [350, 250, 150, 50], ["refused", P, P, P]),
    # collaborative: a proposal it cannot afford is refused; ends only when balance < min(coding, asking)
    ("collaborative", [A, P, P, A, P, A, P], [300, 200, 100, 50, 50, 0], [A, P, P, A, "refused", A]),
])
def test_budget_rules_exact(minilib, monkeypatch, mode, script, expect, kinds):
    """Check 3: scripted ask, fail, fail, … ends exactly at the budget rule, with the right balance each turn."""
    iset, head = minilib
    monkeypatch.setattr(envmod, "run_tests", _fail)
    inst = iset.instances[0]
    acts = [AskAction(question="[QUESTION] which file?") if a == A else
            ProposeAction(answer=[("/workspace/test_repo/x.py", "f")]) for a in script]
    cfg = EnvConfig(mode=mode, total_budget=350, coding_cost=100, asking_cost=50, max_turns=30)
    res = run_episode(inst, Scripted(acts), cfg, head, OracleCollaborator(inst))
    assert [r["balance"] for r in res.log] == expect and [r["kind"] for r in res.log] == kinds
    assert res.end_reason == "budget exhausted" and res.turns == len(expect)
    if mode == "independent":
        assert res.log[0]["kind"] == "refused" and res.log[0]["cost"] == 0
    else:
        assert "File: /workspace/test_repo/" in res.log[0]["response"] and "def " not in res.log[0]["response"]
    # max-turn cutoff
    res = run_episode(inst, Scripted([EnvAction(kind="ls")] * 10), EnvConfig(max_turns=4), head)
    assert res.turns == 4 and res.end_reason == "max turns" and res.balance_left == 1000


def test_metrics_on_fixture_log():
    """Check 4: SR, LA_file, LA_func, CSR, ASR, time allocation against hand-computed values."""
    def ep(kind, s, lf, lfn, env, ask, prop, other):
        return EpisodeResult("i", kind, "a", "collaborative", s, lf, lfn, env + ask + prop + other, env, ask, prop,
                             other, 100.0 * (ask + prop), 1000.0 - 100.0 * (ask + prop), "x")
    rs = [ep("caller", True, True, True, 6, 1, 1, 0), ep("caller", False, True, True, 8, 0, 2, 0),
          ep("callee", False, True, False, 5, 2, 2, 1), ep("callee", False, False, False, 10, 0, 0, 0)]
    s = summarize(rs)
    assert s["SR"] == 25 and s["LA_file"] == 75 and s["LA_func"] == 50 and s["CSR"] == 50
    assert s["ASR"] == pytest.approx(100 * 3 / 38) and s["time_env"] == pytest.approx(100 * 29 / 38)
    assert s["time_propose"] == pytest.approx(100 * 5 / 38) and s["time_other"] == pytest.approx(100 * 1 / 38)
    assert s["mean_cost"] == 200 and s["mean_turns"] == 9.5


def test_sandbox_kills_runaway_and_blocks_network(tmp_path):
    """Check 5: an infinite loop is killed by its limits and a socket connect is refused; the host copy is never
    touched. How long the kill took is recorded for ``make bench`` (budget 10 s), not asserted."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text(
        "import socket\n\ndef test_loop():\n    while True:\n        pass\n\n"
        "def test_net():\n    socket.create_connection(('203.0.113.1', 80), timeout=5)\n\n"
        "def test_write():\n    open('tests/test_x.py', 'w').write('')\n")
    before = (repo / "tests" / "test_x.py").read_text()
    r = run_tests(repo, "tests/test_x.py::test_loop", limits=Limits(timeout_s=2, cpu_s=2))
    assert not r.passed and ("timeout" in r.killed or "CPU-time limit" in r.killed), r.killed
    record_measure("syncmind sandbox: runaway test killed (s)", r.seconds)
    r = run_tests(repo, "tests/test_x.py", {"tests/test_x.py": before.replace("while True:\n        pass", "pass")},
                  limits=Limits(timeout_s=30))
    assert r.summary == {"passed": 2, "failed": 1, "errors": 0, "skipped": 0}
    assert "network access is disabled" in r.log or "Network is unreachable" in r.log
    assert (repo / "tests" / "test_x.py").read_text() == before and not list(repo.rglob("__pycache__"))


def test_heuristic_repairs_a_renamed_attribute(minilib):
    iset, head = minilib
    inst = _get(iset, "callee__minilib.geometry.py__perimeter")
    res = run_episode(inst, HeuristicAgent(), EnvConfig(), head)
    assert res.success and res.la_func and res.n_propose == 1 and res.n_ask == 0
    assert parse_failure(inst.initial_error_log).etype == "AttributeError"


class _Mock(BaseHTTPRequestHandler):
    replies: list[str] = []
    seen: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Mock.seen.append(body)
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": _Mock.replies.pop(0)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def test_openai_compatible_agent_on_a_loopback_server(minilib):
    """Check 6: scripted completions are parsed (<execute_bash>, <execute_ipython>, <question>, <text>) and
    complete an instance; malformed output costs only the turn."""
    iset, head = minilib
    inst = _get(iset, "callee__minilib.geometry.py__rect_area")
    fix = f"import pathlib\np = pathlib.Path('{envmod.WORKSPACE}/{inst.pyfile_path}')\n" \
          f"p.write_text({inst.new_complete_context!r})"
    _Mock.replies = ["I will look around. <execute_bash>grep -n 'def rect_area' -r /workspace/test_repo</execute_bash>",
                     "no tags here",
                     "<question>[QUESTION] Which file is out of sync?</question>",
                     f"<execute_ipython>{fix}</execute_ipython>",
                     f"<text>\n{envmod.WORKSPACE}/{inst.pyfile_path}\nrect_area\n</text>"]
    srv = HTTPServer(("127.0.0.1", 0), _Mock)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        chat = openai_chat(LLMParams(endpoint=f"http://127.0.0.1:{srv.server_port}/v1", model="mock"))
        res = run_episode(inst, LLMAgent(chat, name="openai"), EnvConfig(mode="independent"), head)
    finally:
        srv.shutdown()
    kinds = [r["kind"] for r in res.log]
    assert kinds == ["env", "malformed", "refused", "env", "propose"]
    assert "minilib/geometry.py:" in res.log[0]["response"] and res.success and res.la_func
    assert _Mock.seen[0]["messages"][0]["role"] == "system" and "<text>" in _Mock.seen[0]["messages"][0]["content"]
    assert isinstance(parse_action("<text>only one line</text>"), MalformedAction)


def test_syncbench_csv_round_trip(minilib, tmp_path):
    """Check 8: the official column schema round-trips; repo ids ≥ 10 parse (official bug: instance_id[0])."""
    iset, _ = minilib
    path = write_syncbench_csv(iset.instances[:3], tmp_path / "syncbench_300.csv")
    back = load_syncbench_csv(path)
    for a, b in zip(iset.instances[:3], back):
        for f in ("instance_id", "instance_type", "fm_name", "original_code", "gold_code", "pyfile_path",
                  "unittest_path", "gold_summary", "original_summary", "commit"):
            assert getattr(a, f) == getattr(b, f), f
    assert parse_repo_id("17_optuna_callee__x.py__f__abc") == 17


def test_bad_inputs_are_named():
    with pytest.raises(ParamError, match="max_turns"):
        validate(EpisodeParams, {"max_turns": 0})
    with pytest.raises(ParamError, match="total_budget"):
        validate(EpisodeParams, {"total_budget": float("nan")})
    with pytest.raises(ParamError, match="endpoint"):
        validate(EpisodeParams, {"agent": "openai"})
    with pytest.raises(ParamError, match="unknown parameter"):
        validate(EpisodeParams, {"agnet": "gold"})
    with pytest.raises(ValueError, match="instance_id"):
        from engines.syncmind.experiment import episode
        episode({"instance_id": "nope"})


def test_sandbox_limits_are_set_without_python_code_in_the_forked_child(tmp_path):
    """The limits reach the command (prlimit execs it), and Popen runs no preexec_fn: Python code in a child forked
    from the threaded web process once deadlocked CI (a PyAV deallocation waiting on a slice thread's condition)."""
    import ast
    import inspect
    import sys

    from engines.syncmind import sandbox

    calls = [n for n in ast.walk(ast.parse(inspect.getsource(sandbox))) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", "") == "Popen"]
    assert calls and not any(k.arg == "preexec_fn" for c in calls for k in c.keywords)
    probe = ("import os, resource; print(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20, "
             "resource.getrlimit(resource.RLIMIT_CPU)[0], os.getsid(0) == os.getpid())")
    rc, timed_out, out, _, _, _ = sandbox.execute([sys.executable, "-c", probe], tmp_path,
                                                  Limits(memory_mb=1536, cpu_s=7), tmp_path / "scratch")
    assert (rc, timed_out) == (0, False), out
    assert out.split()[-3:] == ["1536", "7", "True"], out

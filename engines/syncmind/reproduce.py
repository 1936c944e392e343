"""``make reproduce METHOD=syncmind``: the spec's acceptance checks 1-8 and the §4 claims.

Heavy parts: the full minilib build (twice), gold / no-op bounds on both instance sets, the heuristic agent
in both modes on the toolz history, a budget sweep, and SmolLM2-135M as a reported row.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from engines.common.results import Report

from .agents import HeuristicAgent
from .collaborators import OracleCollaborator
from .env import WORKSPACE, AskAction, EnvAction, EnvConfig, ProposeAction
from .experiment import batch, make_agent, run_episode
from .instances import build_instances, load_syncbench_csv, write_syncbench_csv
from .llm_agent import LLMAgent, openai_chat
from .metrics import EpisodeResult, summarize
from .params import LLMParams
from .plots import batch_figure
from .sandbox import Limits, run_tests
from .sources import head_dir, instance_set
from .synthetic import synthetic_repo

PAPER_SR = ("Claude-3.5-Sonnet 33.70 / 28.18 (collab. / indep.), Llama-3.3-70B 19.00 / 16.33, GPT-4o 8.00 / 4.00, "
            "Llama-3.1-8B 1.33 / 0.33")


def _row(rows, agent, mode, kind="all"):
    return next(r for r in rows if r["agent"] == agent and r["mode"] == mode and r["instance_type"] == kind)


class Scripted:
    name = "scripted"

    def __init__(self, actions):
        self.actions = list(actions)

    def reset(self, info):
        pass

    def act(self, obs):
        return self.actions.pop(0)


def budget_check(inst, head) -> tuple[bool, str]:
    """Check 3 on a real instance: proposals of the unchanged (failing) code and real questions."""
    nothing = ProposeAction(answer=[(f"{WORKSPACE}/{inst.pyfile_path}", inst.fm_name)])
    ask = AskAction(question="[QUESTION] Which file is out of sync?")
    out = []
    cases = [("independent", [ask, nothing, nothing, nothing, nothing], [350, 250, 150, 50]),
             ("collaborative", [ask, nothing, nothing, ask, nothing, ask, nothing], [300, 200, 100, 50, 50, 0])]
    ok = True
    for mode, script, expect in cases:
        cfg = EnvConfig(mode=mode, total_budget=350, coding_cost=100, asking_cost=50, max_turns=30)
        r = run_episode(inst, Scripted(script), cfg, head, OracleCollaborator(inst))
        bal = [t["balance"] for t in r.log]
        ok &= bal == expect and r.end_reason == "budget exhausted"
        out.append(f"{mode}: balances {bal} ({r.end_reason})")
    r = run_episode(inst, Scripted([EnvAction(kind="ls")] * 9), EnvConfig(max_turns=5), head)
    ok &= r.turns == 5 and r.end_reason == "max turns"
    out.append(f"turn cap 5: {r.turns} turns ({r.end_reason})")
    return ok, "; ".join(out)


def metrics_check() -> tuple[bool, str]:
    def ep(kind, s, lf, lfn, env, ask, prop, other):
        return EpisodeResult("i", kind, "a", "collaborative", s, lf, lfn, env + ask + prop + other, env, ask, prop,
                             other, 100.0 * (ask + prop), 1000.0 - 100.0 * (ask + prop), "x")
    s = summarize([ep("caller", True, True, True, 6, 1, 1, 0), ep("caller", False, True, True, 8, 0, 2, 0),
                   ep("callee", False, True, False, 5, 2, 2, 1), ep("callee", False, False, False, 10, 0, 0, 0)])
    hand = {"SR": 25.0, "LA_file": 75.0, "LA_func": 50.0, "CSR": 50.0, "ASR": 300 / 38, "time_env": 2900 / 38}
    ok = all(abs(s[k] - v) < 1e-9 for k, v in hand.items())
    return ok, ", ".join(f"{k} {s[k]:.2f} (hand {v:.2f})" for k, v in hand.items())


def sandbox_check(inst, head) -> tuple[bool, str]:
    """Check 5: a runaway proposal and a network call are killed / refused; the host copy is untouched."""
    before = {p: p.read_bytes() for p in head.rglob("*.py")}
    loop = inst.gold_code.split(":\n", 1)[0] + ":\n    while True:\n        pass\n"
    net = inst.gold_code.split(":\n", 1)[0] + (":\n    import socket\n    socket.create_connection(('203.0.113.1', 80), "
                                               "timeout=5)\n")
    res = []
    # the runaway gets a 5 s timeout; the network call a generous one, so that a slow pytest start on a loaded
    # machine cannot turn "refused" into "timed out"
    for name, code, timeout in (("infinite loop", loop, 5), ("network call", net, 120)):
        t0 = time.perf_counter()
        r = run_episode(inst, Scripted([ProposeAction(edits={inst.pyfile_path: inst.new_complete_context.replace(
            inst.gold_code.strip(), code.strip())}, answer=[(inst.pyfile_path, inst.fm_name)])]),
            EnvConfig(max_turns=1, test_timeout_s=timeout), head)
        res.append((name, r.success, time.perf_counter() - t0, r.log[0]["response"]))
    after = {p: p.read_bytes() for p in head.rglob("*.py")}
    loop_ok = not res[0][1] and "killed" in res[0][3] and res[0][2] < 5 + 10
    net_ok = not res[1][1] and ("network access is disabled" in res[1][3] or "unreachable" in res[1][3])
    return (loop_ok and net_ok and before == after,
            f"infinite loop: failed={not res[0][1]}, killed in {res[0][2]:.1f} s (timeout 5 s); network call refused: "
            f"{net_ok}; host tree unchanged: {before == after}")


class _Mock(BaseHTTPRequestHandler):
    replies: list[str] = []

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        out = json.dumps({"choices": [{"message": {"content": _Mock.replies.pop(0)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def openai_check(inst, head) -> tuple[bool, str]:
    fix = (f"import pathlib\npathlib.Path('{WORKSPACE}/{inst.pyfile_path}').write_text({inst.new_complete_context!r})")
    _Mock.replies = [f"<execute_bash>grep -rn 'def {inst.fm_name}' {WORKSPACE}</execute_bash>", "malformed",
                     "<question>[QUESTION] Which function is out of sync?</question>",
                     f"<execute_ipython>{fix}</execute_ipython>", f"<text>{WORKSPACE}/{inst.pyfile_path}\n{inst.fm_name}</text>"]
    srv = HTTPServer(("127.0.0.1", 0), _Mock)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        chat = openai_chat(LLMParams(endpoint=f"http://127.0.0.1:{srv.server_port}/v1"))
        r = run_episode(inst, LLMAgent(chat, "openai"), EnvConfig(mode="collaborative"), head)
    finally:
        srv.shutdown()
    kinds = [t["kind"] for t in r.log]
    return r.success and kinds == ["env", "malformed", "ask", "env", "propose"], f"turns {kinds}, success {r.success}"


def _job(name: str):
    """One independent part of the measurement (run in a worker process: the parts share no state)."""
    if name == "bounds":
        return {repo: batch({"repo": repo, "agents": ["gold", "noop"], "modes": ["independent"],
                             "max_instances": 500}).rows for repo in ("minilib", "toolz")}
    if name in ("toolz_ind", "toolz_col"):
        mode = "independent" if name == "toolz_ind" else "collaborative"
        return batch({"repo": "toolz", "agents": ["heuristic"], "modes": [mode], "max_instances": 500})
    if name == "minilib":
        mb = batch({"repo": "minilib", "agents": ["heuristic"], "modes": ["independent", "collaborative"],
                    "max_instances": 500})
        srs = []
        for budget in (100, 300, 1000):
            out = batch({"repo": "minilib", "agents": ["heuristic"], "modes": ["independent"], "total_budget": budget,
                         "max_instances": 500})
            srs.append(_row(out.rows, "heuristic", "independent")["SR"])
        return mb, srs
    if name == "smollm2":
        return batch({"repo": "minilib", "agents": ["smollm2"], "modes": ["independent"], "max_instances": 3,
                      "max_turns": 6, "llm": {"max_new_tokens": 96}})
    raise ValueError(name)


def _start_parallel() -> dict:
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=int(os.environ.get("SYNCMIND_REPRO_WORKERS", "3")))
    return {n: pool.submit(_job, n) for n in ("toolz_col", "toolz_ind", "bounds", "minilib", "smollm2")}


def _merge(a, b):
    """Two single-mode batch outputs as one (rows and episodes concatenated)."""
    return a.model_copy(update={"rows": a.rows + b.rows, "episodes": a.episodes + b.episodes,
                                "elapsed_s": a.elapsed_s + b.elapsed_s})


def main():
    rep = Report("syncmind", "SyncMind: out-of-sync recovery in collaborative software engineering")
    limits = Limits(timeout_s=120, cpu_s=120)

    # 1. construction: the full minilib build, twice, without any cache
    m_head = head_dir("minilib")
    futs = _start_parallel()
    a = build_instances(synthetic_repo(), "minilib", m_head, limits=limits)
    kinds = [i.instance_type for i in a.instances]
    shipped = instance_set("minilib").ids()
    ok1 = (a.ids() == shipped and len(kinds) >= 8 and kinds.count("caller") >= 3 and kinds.count("callee") >= 3)
    rep.claim("Check 1: minilib build yields ≥ 8 instances (≥ 3 caller, ≥ 3 callee); two builds (this run's and the "
              "shipped one, built earlier by `python -m engines.syncmind.build minilib`) give identical ids",
              "deterministic fail-to-pass construction",
              f"{len(kinds)} instances ({kinds.count('caller')} caller, {kinds.count('callee')} callee); "
              f"identical ids: {a.ids() == shipped}; rejected {a.rejected}", ok1)

    # 2. bounds (this also re-verifies every instance: gold passes with the gold summary, stale fails)
    toolz = instance_set("toolz")
    tk = [i.instance_type for i in toolz.instances]
    bounds = futs["bounds"].result()
    g = [_row(bounds[r], "gold", "independent") for r in bounds]
    n = [_row(bounds[r], "noop", "independent") for r in bounds]
    rep.claim("Check 2: gold replay SR = LA_func = 100 %, no-op SR = 0 % (minilib and toolz; every instance "
              "fail-to-pass)", "bounds 100 % / 0 %",
              f"gold SR {g[0]['SR']:.0f} / {g[1]['SR']:.0f} %, LA_func {g[0]['LA_func']:.0f} / {g[1]['LA_func']:.0f} %; "
              f"no-op SR {n[0]['SR']:.0f} / {n[1]['SR']:.0f} % (minilib {g[0]['n']}, toolz {g[1]['n']} instances: "
              f"{tk.count('caller')} caller, {tk.count('callee')} callee)",
              all(x["SR"] == 100 and x["LA_func"] == 100 for x in g) and all(x["SR"] == 0 for x in n))

    inst = instance_set("minilib").instances[0]
    ok3, txt3 = budget_check(inst, m_head)
    rep.claim("Check 3: budget rules exact — ends when balance < coding cost (indep.) or < min(costs) (collab.); "
              "turn cap", "official resync_run.py rule", txt3, ok3)
    ok4, txt4 = metrics_check()
    rep.claim("Check 4: SR, LA_file, LA_func, CSR, ASR, time allocation on a fixture log equal hand-computed values",
              "definitions §1", txt4, ok4)
    ok5, txt5 = sandbox_check(instance_set("minilib").instances[-1], m_head)
    rep.claim("Check 5: a runaway proposal is killed within the timeout, a network call is refused, both score as "
              "failures; the host copy is untouched", "containment", txt5, ok5)
    ok6, txt6 = openai_check(instance_set("minilib").instances[4], m_head)
    rep.claim("Check 6: OpenAI-compatible agent against a loopback mock parses <execute_bash>, <execute_ipython>, "
              "<question>, <text> and completes an instance", "paper's tags", txt6, ok6)

    # 7. the heuristic agent on the toolz history, independent vs collaborative (oracle)
    hb = _merge(futs["toolz_ind"].result(), futs["toolz_col"].result())
    ind_c, ind_e = _row(hb.rows, "heuristic", "independent", "caller"), _row(hb.rows, "heuristic", "independent", "callee")
    ind, col = _row(hb.rows, "heuristic", "independent"), _row(hb.rows, "heuristic", "collaborative")
    rep.claim("Check 7a: heuristic agent LA_func(caller) > LA_func(callee) on the toolz history (independent)",
              "callee harder for 6/7 agents (Table 1)",
              f"caller {ind_c['LA_func']:.1f} % (n={ind_c['n']}) vs callee {ind_e['LA_func']:.1f} % (n={ind_e['n']})",
              ind_c["LA_func"] > ind_e["LA_func"])
    rep.claim("§4 complexity: heuristic SR(caller) ≥ SR(callee) on toolz (independent)", "Δ_complexity 0 … −6 points",
              f"caller {ind_c['SR']:.1f} % vs callee {ind_e['SR']:.1f} %", ind_c["SR"] >= ind_e["SR"])
    rep.claim("Check 7b: the oracle collaborator raises the heuristic agent's LA_func by ≥ 10 points (toolz)",
              "GPT-4o LA_func +24 / +27 points with the collaborator",
              f"LA_func {ind['LA_func']:.1f} → {col['LA_func']:.1f} % (+{col['LA_func'] - ind['LA_func']:.1f}); "
              f"ASR {col['ASR']:.1f} %", col["LA_func"] - ind["LA_func"] >= 10)
    rep.claim("§4 collaboration: SR_collab ≥ SR_indep for the heuristic agent (toolz)", "collab. ≥ indep. for all 7 agents",
              f"SR {ind['SR']:.1f} → {col['SR']:.1f} %; CSR {ind['CSR']:.1f} → {col['CSR']:.1f} %",
              col["SR"] >= ind["SR"])
    mb, srs = futs["minilib"].result()
    rep.figure(batch_figure(hb.rows), "toolz_heuristic", "Heuristic agent on the toolz history: independent vs "
               "collaborative (oracle); LA_func by instance type; time allocation")
    mi, mc = _row(mb.rows, "heuristic", "independent"), _row(mb.rows, "heuristic", "collaborative")
    rep.reported("Heuristic agent on minilib (indep. → collab.)", "—",
                 f"SR {mi['SR']:.1f} → {mc['SR']:.1f} %, LA_func {mi['LA_func']:.1f} → {mc['LA_func']:.1f} %, "
                 f"caller/callee LA_func {_row(mb.rows, 'heuristic', 'independent', 'caller')['LA_func']:.0f} / "
                 f"{_row(mb.rows, 'heuristic', 'independent', 'callee')['LA_func']:.0f} %, ASR {mc['ASR']:.1f} %")
    rep.reported("Time allocation of the heuristic agent on toolz (env / propose / ask, % of turns, collab.)",
                 "env 69-99 %, ASR ≤ 4.86 % for LLM agents",
                 f"{col['time_env']:.0f} / {col['time_propose']:.0f} / {col['time_ask']:.0f} %; mean turns "
                 f"{col['mean_turns']:.1f}, mean cost ${col['mean_cost']:.0f}")

    # §4: budget monotone at fixed turns
    rep.claim("§4 budget accounting is monotone: raising the budget ($100 → $300 → $1000, 30 turns) never lowers the "
              "heuristic agent's SR (minilib)", "resource awareness study",
              " → ".join(f"{s:.1f} %" for s in srs), srs[0] <= srs[1] <= srs[2])

    # 8. the official CSV schema
    with tempfile.TemporaryDirectory() as d:
        p = write_syncbench_csv(toolz.instances, Path(d) / "syncbench_fixture.csv")
        back = load_syncbench_csv(p)
    fields = ("instance_id", "instance_type", "fm_name", "original_code", "gold_code", "pyfile_path", "gold_summary")
    ok8 = all(getattr(x, f) == getattr(y, f) for x, y in zip(toolz.instances, back) for f in fields) \
        and len(back) == len(toolz.instances)
    rep.claim("Check 8: the SyncBench CSV loader round-trips rows with the official column schema",
              "syncbench_*.csv columns", f"{len(back)} toolz rows round-tripped", ok8)

    # SmolLM2-135M-Instruct through the zoo loader (reported: a 135M model is not expected to recover)
    try:
        sm = futs["smollm2"].result()
        r = _row(sm.rows, "smollm2", "independent")
        mal = sum(e["n_other"] for e in sm.episodes) / max(1, sum(e["turns"] for e in sm.episodes)) * 100
        rep.reported("SmolLM2-135M-Instruct agent (3 minilib instances, 6 turns)", PAPER_SR,
                     f"SR {r['SR']:.0f} %, LA_func {r['LA_func']:.0f} %, malformed/other turns {mal:.0f} %, "
                     f"env {r['time_env']:.0f} %, propose {r['time_propose']:.0f} %")
    except Exception as e:  # the model package may be missing on a machine
        rep.reported("SmolLM2-135M-Instruct agent", PAPER_SR, f"not run: {type(e).__name__}: {str(e)[:150]}")
    rep.section(
        "Notes. The heuristic agent has no tuned parameters (fixed rules), so there is no validation split. LA is "
        "scored on the final answer, a success counting as correct localisation (official `run_eval.py`). The toolz "
        f"history is the 8 PyPI releases {', '.join(('0.9.0', '1.0.0'))} (first, last) committed in release order; "
        f"its {len(tk)} instances come from the five core test files. Per-episode results: "
        "`engines.syncmind.experiment.batch`.")
    return rep.write()


if __name__ == "__main__":
    main()

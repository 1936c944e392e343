"""Tab: SyncMind — out-of-sync recovery of coding agents, with budgets and a collaborator.

Run standalone with ``python -m app.tabs.syncmind`` (inline jobs).
"""
from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path

import gradio as gr

from engines.syncmind.params import AGENT_LABELS, REPO_LABELS

from ..bridge import JobRun, cancel_job

METHOD_ID = "syncmind"
DATA = Path(__file__).resolve().parents[2] / "engines" / "syncmind" / "data"
LOG_HEADERS = ["turn", "action", "command / question / answer", "response", "cost $", "balance $", "tests"]
BATCH_HEADERS = ["agent", "mode", "instances", "n", "SR %", "LA_file %", "LA_func %", "CSR %", "ASR %",
                 "env / propose / ask %", "mean turns", "mean cost $"]


@lru_cache(maxsize=4)
def _instances(repo: str) -> list[dict]:
    path = DATA / f"{repo}_instances.json"
    if not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8"))["instances"]


def instance_choices(repo: str, kind: str) -> list[tuple[str, str]]:
    out = []
    for k, inst in enumerate(_instances(repo)):
        if kind in ("all", inst["instance_type"]):
            out.append((f"#{k + 1} {inst['instance_type']} · fails {inst['unittest_path']} · from commit "
                        f"{inst['commit'][:7]}", inst["instance_id"]))
    return out


def _find(repo: str, instance_id: str) -> dict | None:
    return next((i for i in _instances(repo) if i["instance_id"] == instance_id), None)


def card(inst: dict) -> str:
    s = inst["gold_summary"]
    return (f"**{inst['instance_type'].capitalize()} instance** of `{inst['repo']}` · the test file "
            f"`{inst['unittest_path']}` passes at HEAD ({s['passed']} passed) but fails in the agent's copy "
            f"({inst['original_summary'].get('failed', 0)} failed, {inst['original_summary'].get('errors', 0)} errors). "
            "Which function is stale stays hidden until the episode ends.")


def diff_text(inst: dict) -> str:
    d = difflib.unified_diff(inst["original_code"].splitlines(), inst["gold_code"].splitlines(),
                             f"{inst['pyfile_path']} (out-of-sync, commit {inst['commit'][:7]})",
                             f"{inst['pyfile_path']} (HEAD)", lineterm="")
    return "\n".join(d)


def pick(repo, kind, instance_id):
    choices = instance_choices(repo, kind)
    if not choices:
        raise gr.Error(f"No instances for {repo} ({kind}).", title="No instances")
    ids = [v for _, v in choices]
    if instance_id not in ids:
        instance_id = ids[0]
    inst = _find(repo, instance_id)
    return (gr.update(choices=choices, value=instance_id), card(inst), inst["initial_error_log"],
            "(revealed when the episode ends)")


def log_rows(turns: list[dict]) -> list[list]:
    rows = []
    for t in turns:
        s = t.get("summary")
        tests = "" if not s else f"{s['passed']} passed, {s['failed']} failed, {s['errors']} errors"
        if t.get("success"):
            tests += " ✓ passed"
        rows.append([t["turn"], t["kind"], t["action"][:300], t["response"][:400], t["cost"], t["balance"], tests])
    return rows


def verdict(result: dict, inst: dict) -> str:
    ok = result["success"]
    ans = "; ".join(f"`{p}` :: `{f}`" for p, f in result["answer"]) or "none"
    head = "✓ **Recovered**" if ok else f"✗ **Not recovered** ({result['end_reason']})"
    return (f"{head} in {result['turns']} turns, ${result['cost']:g} spent, ${result['balance_left']:g} left · "
            f"final answer: {ans} · LA_file {'✓' if result['la_file'] else '✗'} · "
            f"LA_func {'✓' if result['la_func'] else '✗'} · {result['n_ask']} question(s)\n\n"
            f"**Ground truth:** {inst['fm_type']} `{inst['fm_qualname']}` in `{inst['pyfile_path']}`, rolled back "
            f"to commit {inst['commit'][:10]} ({inst['instance_type']} instance).")


def _llm(endpoint, model, key) -> dict:
    return {"endpoint": (endpoint or "").strip(), "model": (model or "").strip(), "api_key": (key or "").strip()}


def run_episode(repo, instance_id, agent, mode, collaborator, budget, coding, asking, max_turns, endpoint, model,
                key, progress=gr.Progress()):
    from engines.syncmind.plots import episode_figure

    if not instance_id:
        raise gr.Error("Pick an instance first.", title="No instance")
    if _find(repo, instance_id) is None:
        from engines.common.params import shorten

        raise gr.Error(f"There is no instance {shorten(instance_id, 40)} in {repo}: pick one from the list.",
                       title="Unknown instance")
    params = dict(repo=repo, instance_id=instance_id, agent=agent, mode=mode, collaborator=collaborator,
                  total_budget=float(budget), coding_cost=float(coding), asking_cost=float(asking),
                  max_turns=int(max_turns), llm=_llm(endpoint, model, key))
    job = JobRun(METHOD_ID, "episode", params)
    yield job.id, [], f"Job {job.id[:8]} queued…", gr.skip(), gr.skip()
    for ev in job.stream(progress):
        if ev.preview and ev.preview.get("turns"):
            yield job.id, log_rows(ev.preview["turns"]), f"turn {ev.preview['turns'][-1]['turn']}…", gr.skip(), gr.skip()
    res = job.result
    yield (job.id, log_rows(res["result"]["log"]), verdict(res["result"], res["instance"]), diff_text(res["instance"]),
           episode_figure(res["result"]))


def batch_rows(rows: list[dict]) -> list[list]:
    return [[AGENT_LABELS.get(r["agent"], r["agent"]), r["mode"], r["instance_type"], r["n"], round(r["SR"], 1),
             round(r["LA_file"], 1), round(r["LA_func"], 1), round(r["CSR"], 1), round(r["ASR"], 1),
             f"{r['time_env']:.0f} / {r['time_propose']:.0f} / {r['time_ask']:.0f}", round(r["mean_turns"], 1),
             round(r["mean_cost"], 1)] for r in rows]


def run_batch(repo, agents, modes, kind, max_instances, budget, coding, asking, max_turns, collaborator, endpoint,
              model, key, progress=gr.Progress()):
    from engines.syncmind.plots import batch_figure

    if not agents or not modes:
        raise gr.Error("Select at least one agent and one mode.", title="Nothing selected")
    params = dict(repo=repo, agents=list(agents), modes=list(modes), instance_type=kind,
                  max_instances=int(max_instances), total_budget=float(budget), coding_cost=float(coding),
                  asking_cost=float(asking), max_turns=int(max_turns), collaborator=collaborator,
                  llm=_llm(endpoint, model, key))
    job = JobRun(METHOD_ID, "batch", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, batch_rows(res["rows"]), batch_figure(res["rows"]),
           f"Batch done: {len(res['episodes'])} episodes in {res['elapsed_s']:.0f} s.")


def run_build(progress=gr.Progress()):
    job = JobRun(METHOD_ID, "build", {"repo": "minilib"})
    yield job.id, f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    same = r["ids"] == [i["instance_id"] for i in _instances("minilib")]
    yield job.id, (f"Built {len(r['ids'])} fail-to-pass instances ({r['n_caller']} caller, {r['n_callee']} callee) "
                   f"from the minilib history at HEAD {r['head_commit'][:10]} in {r['elapsed_s']:.0f} s; rejected: "
                   f"{r['rejected']}. Identical to the shipped set: {'yes' if same else 'NO'}.")


def _example() -> dict:
    p = DATA / "worked_example.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    ex = _example()
    ep = ex.get("episode")
    bt = ex.get("batch")
    gr.Markdown(
        "**SyncMind** (ICML 2025): when teammates change a shared repository, an agent's copy goes *out of sync*; "
        "the paper finds that even strong LLM agents rarely recover (Claude-3.5 ≈ 28-34 %), localise stale "
        "*callee* code worse than *caller* code, and seldom ask their collaborator (≤ 4.86 % of turns) although "
        "asking helps. **Start here:** the worked example below shows the heuristic agent asking the oracle "
        "collaborator and recovering; press **Run episode** to replay it live, then try other agents, modes or "
        "instances, and **Run batch** to compare agents."
    )
    job_id = gr.State(None)
    first = ep["instance"] if ep else None
    repo0 = first["repo"] if first else "minilib"
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            repo = gr.Dropdown([(v, k) for k, v in REPO_LABELS.items()], value=repo0, label="Repository")
            kind = gr.Radio(["all", "caller", "callee"], value="all", label="Instance type")
            choices = instance_choices(repo0, "all")
            instance = gr.Dropdown(choices, value=first["instance_id"] if first else (choices[0][1] if choices else None),
                                   label="Out-of-sync instance", elem_id="syncmind_instance",
                                   allow_custom_value=True)
            agent = gr.Radio([(v, k) for k, v in AGENT_LABELS.items()], value="heuristic", label="Agent")
            mode = gr.Radio(["independent", "collaborative"], value="collaborative", label="Mode")
            collaborator = gr.Radio([("Oracle (deterministic, answers only what is asked)", "oracle"),
                                     ("LLM know-everything (endpoint below)", "llm")], value="oracle",
                                    label="Collaborator")
            budget = gr.Slider(0, 5000, value=1000, step=50, label="Budget $")
            coding = gr.Slider(0, 1000, value=100, step=10, label="Coding cost $ (per proposal)")
            asking = gr.Slider(0, 1000, value=100, step=10, label="Asking cost $ (per question)")
            max_turns = gr.Slider(1, 60, value=30, step=1, label="Max turns")
            with gr.Accordion("LLM endpoint (OpenAI-compatible; also used by the LLM collaborator)", open=False):
                endpoint = gr.Textbox("", label="Base URL", placeholder="http://127.0.0.1:8000/v1")
                model = gr.Textbox("", label="Model", placeholder="meta-llama/Llama-3.1-8B-Instruct")
                key = gr.Textbox("", label="API key", type="password")
            with gr.Row():
                run = gr.Button("Run episode", variant="primary", elem_id="syncmind_run")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=3):
            info = gr.Markdown(card(first) if first else "", elem_id="syncmind_card", label="instance card")
            err = gr.Code(first["initial_error_log"] if first else "", label="Initial execution error", lines=8,
                          max_lines=14)
            verdict_md = gr.Markdown(verdict(ep["result"], first) if ep else "", elem_id="syncmind_verdict", label="verdict")
            log = gr.Dataframe(log_rows(ep["result"]["log"]) if ep else [], headers=LOG_HEADERS,
                               label="Turn log (actions, questions and answers, test results)", wrap=True,
                               interactive=False, elem_id="syncmind_log", max_height=420)
            with gr.Row():
                diff = gr.Code(diff_text(first) if first else "", label="Stale → current function (revealed at the end)",
                               lines=10, max_lines=24)
                balance = gr.Plot(label="Balance per turn", elem_id="syncmind_balance_plot")
    with gr.Accordion("Batch evaluation (background job)", open=True):
        with gr.Row():
            agents = gr.CheckboxGroup([(v, k) for k, v in AGENT_LABELS.items()], value=["heuristic", "gold", "noop"],
                                      label="Agents")
            modes = gr.CheckboxGroup(["independent", "collaborative"], value=["independent", "collaborative"],
                                     label="Modes")
            bkind = gr.Radio(["all", "caller", "callee"], value="all", label="Instances")
            max_n = gr.Slider(1, 100, value=16, step=1, label="Max instances")
        with gr.Row():
            brun = gr.Button("Run batch", elem_id="syncmind_batch")
            rebuild = gr.Button("Rebuild minilib instances from its git history")
        bstatus = gr.Markdown(f"Worked example: batch over {bt['repo']} ({len(bt['episodes'])} episodes)." if bt else "", label="batch status")
        btable = gr.Dataframe(batch_rows(bt["rows"]) if bt else [], headers=BATCH_HEADERS, interactive=False,
                              label="SR, localisation (LA), conditional success (CSR), assistance seeking (ASR)")
        bplot = gr.Plot(label="Agents compared", elem_id="syncmind_batch_plot")
    # the worked example's figures are drawn after the page loads (keeps matplotlib out of start-up)
    gr.on(None, lambda: (_fig(ep), _bfig(bt)), None, [balance, bplot], api_visibility="private")
    pick_out = [instance, info, err, diff]
    repo.change(pick, [repo, kind, instance], pick_out, api_name="syncmind_pick")
    kind.change(pick, [repo, kind, instance], pick_out, api_visibility="private")
    instance.input(pick, [repo, kind, instance], pick_out, api_visibility="private")
    ev = run.click(run_episode, [repo, instance, agent, mode, collaborator, budget, coding, asking, max_turns,
                                 endpoint, model, key], [job_id, log, verdict_md, diff, balance],
                   api_name="syncmind_run")
    ev2 = brun.click(run_batch, [repo, agents, modes, bkind, max_n, budget, coding, asking, max_turns, collaborator,
                                 endpoint, model, key], [job_id, btable, bplot, bstatus], api_name="syncmind_batch")
    ev3 = rebuild.click(run_build, None, [job_id, bstatus], api_name="syncmind_build")
    stop.click(cancel_job, job_id, verdict_md, cancels=[ev, ev2, ev3], api_name="syncmind_stop")


def _fig(ep):
    if not ep:
        return None
    from engines.syncmind.plots import episode_figure

    return episode_figure(ep["result"])


def _bfig(bt):
    if not bt:
        return None
    from engines.syncmind.plots import batch_figure

    return batch_figure(bt["rows"])


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

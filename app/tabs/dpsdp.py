"""Tab: DPSDP — an actor and a critic that refine answers turn by turn, trained by DPO on DP value targets.

Run standalone with ``python -m app.tabs.dpsdp`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.dpsdp.params import EXAMPLE, VARIANT_LABELS

from ..bridge import JobRun, cancel_job, whole

METHOD_ID = "dpsdp"
TURN_HEADERS = ["turn", "critic's feedback on the previous answer (its check = verdict)", "actor's answer", "final",
                "right", "running majority"]
PAIR_HEADERS = ["level", "candidate", "Q (DP target)", "pair role"]


def _released(name: str) -> dict | None:
    from engines.dpsdp.release import released_file

    return released_file(name)


def transcript_markdown(res: dict) -> str:
    ok = lambda b: "✅" if b else "❌"  # noqa: E731
    first = res["turns"][0]
    last = res["turns"][-1]
    note = (f" {res['unparsable']} unparsable answer(s) were left out of the vote." if res["unparsable"] else "")
    state = "Markovian state (x, last answer, last feedback)" if res["markovian"] else "full history"
    return (f"### {res['problem']} = {res['truth_final']}  (scratchpad `{res['truth']}`)\n\n"
            f"- **{res['variant_label']}**, {len(res['turns'])} turns, {state}\n"
            f"- first answer `{first['answer']}` {ok(first['correct'])}; last answer `{last['answer']}` "
            f"{ok(last['correct'])}; **majority {res['majority']}** {ok(res['majority_correct'])}.{note}\n\n"
            f"<sub>{res['model']}; {res['elapsed_s']:.2f} s</sub>")


def turn_rows(res: dict) -> list[list]:
    rows = []
    for t in res["turns"]:
        fb = "—" if t["feedback"] is None else (t["feedback"] + ("" if t["feedback_valid"] else "  (not a valid message)"))
        rows.append([t["turn"], fb, t["answer"] or "∅", "unparsable" if t["final"] is None else t["final"],
                     "✅" if t["correct"] else "❌", t["majority"]])
    return rows


def tree_rows(res: dict) -> list[list]:
    role = lambda c: "chosen a⁺" if c["chosen"] else ("rejected a⁻" if c["rejected"] else "")  # noqa: E731
    rows = []
    for a in res["answers"]:
        rows.append(["a₀ (actor)", a["text"] + (" ✅" if a["correct"] else " ❌"), round(a["q"], 3), role(a)])
        for f in a["feedback"]:
            rows.append(["  feedback (critic)", f"{a['text']} → {f['text']}", round(f["q"], 3), role(f)])
            for r in f["refinements"]:
                rows.append(["    refinement (actor)", r["text"] + (" ✅" if r["correct"] else " ❌"),
                             1.0 if r["correct"] else 0.0, role(r)])
    return rows


def run_refine(problem, variant, turns, temperature, markovian, seed, progress=gr.Progress()):
    params = dict(problem=problem or "", variant=variant, turns=whole(turns), temperature=temperature,
                  markovian=bool(markovian), seed=whole(seed))
    job = JobRun(METHOD_ID, "transcript", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.dpsdp.plots import transcript_figure

    yield (job.id, transcript_markdown(res), turn_rows(res), transcript_figure(res),
           f"Done: majority {res['majority']} ({'right' if res['majority_correct'] else 'wrong'}).")


def random_problem(seed):
    """A held-out test problem (web process, no model)."""
    import math

    from engines.dpsdp import task

    if not isinstance(seed, (int, float)) or isinstance(seed, bool) or not math.isfinite(seed) or not 0 <= seed < 2**31:
        raise gr.Error("Seed must be a whole number from 0 to 2147483647.", title="Invalid input")
    return task.problem_text(*task.sample(1, int(seed), "test")[0])


def run_tree(index, seed, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "tree", dict(index=whole(index), seed=whole(seed)))
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, tree_rows(res),
           f"Training problem {res['problem']} (truth `{res['truth']}`): {res['k']} answers × {res['k']} feedbacks × "
           f"{res['m']} refinements sampled from π_ref; pairs at this problem: {res['pairs']} "
           f"(Q gap ≥ {res['margin']}).")


def run_evaluate(n_problems, turns, split, variants, progress=gr.Progress()):
    params = dict(n_problems=whole(n_problems), turns=whole(turns), split=split, variants=list(variants or []))
    if not params["variants"]:
        raise gr.Error("Pick at least one variant to evaluate.", title="Nothing selected")
    job = JobRun(METHOD_ID, "evaluate", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.dpsdp.plots import flip_figure, turn_figure

    c = res["curves"]
    rows = [[VARIANT_LABELS.get(v, v), f"{c[v]['p1'][0]:.1%}", f"{c[v]['p1'][-1]:.1%}", f"{c[v]['m1'][-1]:.1%}",
             f"{c[v]['pass'][-1]:.1%}", f"{sum(c[v]['i2c']):.1%}", f"{sum(c[v]['c2i']):.1%}"] for v in res["variants"]]
    T = res["turns"]
    rows.append([f"self-consistency@{T}, π_ref actor (T = 0.7)", f"{c['sc_reference']['p1'][0]:.1%}", "—",
                 f"{c['sc_reference']['m1'][-1]:.1%}", f"{c['sc_reference']['pass'][-1]:.1%}", "—", "—"])
    yield (job.id, turn_figure(c, res["variants"], f"{res['n_problems']} {res['split']} problems"),
           flip_figure(c, res["variants"]), rows,
           f"Evaluated in {res['elapsed_s']:.0f} s ({res['model']}).")


def run_train(preset, seed, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "train", dict(preset=preset, seed=whole(seed)))
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued (the quick preset takes a few minutes)…"
    res = job.wait(progress)
    from engines.dpsdp.plots import training_figure

    ev = res["eval"]
    yield (job.id, training_figure(res["record"]),
           f"Trained in {res['record']['wall_seconds']:.0f} s. On 200 test problems: DPSDP p1@t1 "
           f"{ev['dpsdp']['p1'][0]:.1%} → m1@t5 {ev['dpsdp']['m1'][-1]:.1%}; π_ref p1@t1 {ev['reference']['p1'][0]:.1%}"
           f" → m1@t5 {ev['reference']['m1'][-1]:.1%}. Pairs: {res['record']['tree']['pairs']}.")


def _figure(ex):
    if not ex:
        return None
    from engines.dpsdp.plots import transcript_figure

    return transcript_figure(ex)


def build() -> None:
    gr.Markdown(
        "**The paper's claim:** an actor answers, a critic gives feedback, and the actor refines, turn after turn; "
        "training both with DPO on their own samples, with preference pairs ranked by dynamic-programming value "
        "targets over the refinement tree, makes refinement actually improve answers (majority over five turns beats "
        "the first answer). **Try first:** press **Refine** on the example, then switch the pair between *DPSDP* and "
        "*reference* and compare; *Evaluate* draws accuracy per turn for every variant on held-out problems."
    )
    job_id = gr.State(None)
    ex = _released("example.json")
    choices = [(v, k) for k, v in VARIANT_LABELS.items()]
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            problem = gr.Textbox(EXAMPLE, label="Problem (a+b-c, numbers below 100)", elem_id="dpsdp_problem")
            with gr.Row():
                rseed = gr.Number(0, label="Seed of the random problem", precision=0, minimum=0)
                rand = gr.Button("Random held-out problem", size="sm")
            variant = gr.Dropdown(choices, value="dpsdp", label="Actor-critic pair", elem_id="dpsdp_variant")
            turns = gr.Slider(1, 8, value=5, step=1, label="Turns (first answer + refinements)")
            temperature = gr.Slider(0, 2, value=0, step=0.05, label="Temperature (0 = greedy)")
            markovian = gr.Checkbox(True, label="Markovian state (actor sees x, last answer, last feedback)")
            seed = gr.Number(0, label="Sampling seed", precision=0, minimum=0)
            with gr.Row():
                go = gr.Button("Refine", variant="primary", elem_id="dpsdp_refine")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="status", elem_id="dpsdp_status")
        with gr.Column(scale=3):
            summary = gr.Markdown(transcript_markdown(ex) if ex else "Press **Refine**.", label="summary",
                                  elem_id="dpsdp_summary")
            table = gr.Dataframe(turn_rows(ex) if ex else None, headers=TURN_HEADERS, interactive=False,
                                 label="Transcript", elem_id="dpsdp_transcript")
            plot = gr.Plot(label="Answers per turn and the vote tally", elem_id="dpsdp_votes")
    with gr.Accordion("Evaluate: accuracy per turn for every variant (background job)", open=False):
        with gr.Row():
            e_n = gr.Slider(20, 2000, value=300, step=20, label="Held-out problems")
            e_turns = gr.Slider(2, 8, value=5, step=1, label="Turns")
            e_split = gr.Radio(["test", "ood"], value="test", label="Split (ood: three-digit first number)")
        e_vars = gr.CheckboxGroup(choices, value=list(VARIANT_LABELS), label="Variants")
        e_btn = gr.Button("Evaluate", elem_id="dpsdp_evaluate")
        e_plot = gr.Plot(label="p1@t_k and m1@t_k", elem_id="dpsdp_curves")
        with gr.Row():
            e_flip = gr.Plot(label="Flip rates")
            e_table = gr.Dataframe(headers=["variant", "p1@t1", "p1@tT", "m1@tT", "pass@tT", "incorrect→correct",
                                            "correct→incorrect"], interactive=False, label="Summary")
    with gr.Accordion("The DP value targets of one training problem (background job)", open=False):
        with gr.Row():
            t_idx = gr.Slider(0, 999, value=0, step=1, label="Training problem #")
            t_seed = gr.Number(0, label="Sampling seed", precision=0, minimum=0)
        t_btn = gr.Button("Sample the tree")
        t_text = gr.Markdown(label="tree summary")
        t_table = gr.Dataframe(headers=PAIR_HEADERS, interactive=False, label="Tree: candidates, Q values, pairs")
    with gr.Accordion("Train the tiny pipeline: pretrain → SFT → DP data → DPO (background job)", open=False):
        with gr.Row():
            p_preset = gr.Radio(["quick", "full"], value="quick", label="Preset (quick ≈ 3 min, full ≈ 10 min)")
            p_seed = gr.Number(1, label="Seed", precision=0, minimum=0)
        p_btn = gr.Button("Train")
        p_plot = gr.Plot(label="Training curves")
        p_text = gr.Markdown(label="training summary")
    gr.Examples([[EXAMPLE, "dpsdp"], [EXAMPLE, "reference"], ["99-87+45", "dpsdp"], ["305+27-18", "dpsdp"]],
                inputs=[problem, variant], label="Examples (then press Refine; the last one is out of distribution)")
    gr.on(None, lambda: _figure(ex), None, plot, api_visibility="private", show_progress="hidden")
    ev = go.click(run_refine, [problem, variant, turns, temperature, markovian, seed],
                  [job_id, summary, table, plot, status], api_name="dpsdp_refine")
    rand.click(random_problem, rseed, problem, api_name="dpsdp_random")
    ev2 = e_btn.click(run_evaluate, [e_n, e_turns, e_split, e_vars], [job_id, e_plot, e_flip, e_table, status],
                      api_name="dpsdp_evaluate")
    ev3 = t_btn.click(run_tree, [t_idx, t_seed], [job_id, t_table, t_text], api_name="dpsdp_tree")
    ev4 = p_btn.click(run_train, [p_preset, p_seed], [job_id, p_plot, p_text], api_name="dpsdp_train")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3, ev4], api_name="dpsdp_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

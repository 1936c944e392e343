"""Tab: DPSDP — an actor and a critic that refine answers turn by turn, trained by DPO on DP value targets.

Run standalone with ``python -m app.tabs.dpsdp`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.dpsdp.llm_params import LLM_LABEL
from engines.dpsdp.params import EXAMPLE, VARIANT_LABELS
from engines.dpsdp.word_problems import WORD_PROBLEMS

from ..bridge import JobRun, cancel_job, whole

METHOD_ID = "dpsdp"
LLM = "smollm2"  # the model choice that runs the prompted chat model (the "chat" entry) instead of a tiny pair
DIFFICULTIES = {"two-digit numbers (held-out test split)": "test",
                "three-digit first number (out of distribution)": "ood",
                "word problem (for SmolLM2)": "word"}
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


def _mark(c) -> str:
    return "?" if c is None else ("✅" if c else "❌")


def chat_markdown(res: dict) -> str:
    """The SmolLM2 transcript's summary: the truth (when known), first and last answers, the majority and
    what was left out of the vote."""
    first, last = res["turns"][0], res["turns"][-1]
    truth = ("unknown (type the right answer to get ✅/❌)" if res["truth"] is None
             else f"{res['truth']} ({res['truth_source']})")
    notes = []
    if res["unparsable"]:
        notes.append(f"{res['unparsable']} of {len(res['turns'])} answers held no number and were left out of the vote")
    if res["empty"]:
        notes.append(f"{res['empty']} answer(s) came back empty from the model")
    maj = "none (no answer held a number)" if res["majority"] is None else res["majority"]
    return (f"### {res['problem']}\n\n- right answer: {truth}\n"
            f"- **{res['variant_label']}** as actor and critic, {len(res['turns'])} turns, Markovian state "
            f"(problem, last answer, last feedback)\n"
            f"- first answer {first['final']} {_mark(first['correct'])}; last answer {last['final']} "
            f"{_mark(last['correct'])}; **majority {maj}** {_mark(res['majority_correct'])}\n"
            + "".join(f"- {n}.\n" for n in notes)
            + f"\n<sub>{res['model']}; {res['elapsed_s']:.1f} s</sub>")


def chat_rows(res: dict) -> list[list]:
    rows = []
    for t in res["turns"]:
        fb = "—" if t["feedback"] is None else ((t["feedback"] or "(empty feedback)")
                                               + (f"  [verdict: {t['verdict']}]" if t["verdict"] else "  [no verdict]"))
        ans = "∅ (the model returned an empty answer)" if t["empty"] else t["answer"]
        final = "unparsable (left out of the vote)" if t["final"] is None else f"{t['final']} ({t['parsed']})"
        rows.append([t["turn"], fb, ans, final, _mark(t["correct"]), "—" if t["majority"] is None else t["majority"]])
    return rows


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


def run_refine(problem, variant, expected, turns, temperature, markovian, seed, progress=gr.Progress()):
    if variant == LLM:
        if not markovian:
            raise gr.Error("The SmolLM2 actor-critic always uses the Markovian state (problem, last answer, last "
                           "feedback); tick the Markovian box.", title="Invalid input")
        job = JobRun(METHOD_ID, "chat", dict(problem=problem or "", expected=expected or "", turns=whole(turns),
                                             temperature=temperature, seed=whole(seed)))
    else:
        job = JobRun(METHOD_ID, "transcript", dict(problem=problem or "", variant=variant, turns=whole(turns),
                                                   temperature=temperature, markovian=bool(markovian),
                                                   seed=whole(seed)))
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.dpsdp.chat_plots import chat_figure
    from engines.dpsdp.plots import transcript_figure

    if variant == LLM:
        left = f" ({res['unparsable']} unparsable answer(s) left out)" if res["unparsable"] else ""
        verdict = {True: "right", False: "wrong", None: "truth unknown"}[res["majority_correct"]]
        yield (job.id, chat_markdown(res), chat_rows(res), chat_figure(res),
               f"Done: majority {res['majority']} ({verdict}){left}.")
        return
    yield (job.id, transcript_markdown(res), turn_rows(res), transcript_figure(res),
           f"Done: majority {res['majority']} ({'right' if res['majority_correct'] else 'wrong'}).")


def random_problem(seed, difficulty):
    """A random problem (web process, no model): a held-out arithmetic problem of the chosen difficulty (the
    task's own generator: two-digit numbers, or a three-digit first number), or a built-in word problem."""
    import math

    from engines.dpsdp import task

    if not isinstance(seed, (int, float)) or isinstance(seed, bool) or not math.isfinite(seed) or not 0 <= seed < 2**31:
        raise gr.Error("Seed must be a whole number from 0 to 2147483647.", title="Invalid input")
    if difficulty not in DIFFICULTIES:
        raise gr.Error(f"Difficulty must be one of: {', '.join(DIFFICULTIES)}.", title="Invalid input")
    kind = DIFFICULTIES[difficulty]
    if kind == "word":
        return WORD_PROBLEMS[int(seed) % len(WORD_PROBLEMS)][0]
    return task.problem_text(*task.sample(1, int(seed), kind)[0])


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


def run_lora(n_problems, k, m, steps, lr, seed, progress=gr.Progress()):
    params = dict(n_problems=whole(n_problems), k=whole(k), m=whole(m), steps=whole(steps), lr=lr, seed=whole(seed))
    job = JobRun(METHOD_ID, "lora", params)
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued (minutes on CPU: SmolLM2 samples the tree, then DPO)…"
    res = job.wait(progress)
    from engines.dpsdp.chat_plots import lora_figure

    t, d = res["tree"], res["dpo"]
    yield (job.id, lora_figure(res),
           f"{t['problems']} problems: first answers right {t['a0_correct']:.0%}, refinements right "
           f"{t['refine_correct']:.0%}; pairs {t['pairs']} (the actor trains on answer + refine pairs). DPO on a "
           f"{d['trainable_params']:,}-parameter LoRA adapter, {d['steps']} steps: loss on the actor's pairs "
           f"{d['loss_before']:.4f} → {d['loss_after']:.4f}. Adapter saved as `{res['adapter']}` ({res['model']}; "
           f"{res['seconds']:.0f} s).")


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
        "*reference* and compare; *Evaluate* draws accuracy per turn for every variant on held-out problems. "
        f"*{LLM_LABEL}* runs a real instruct model as actor and critic on word problems (a job of tens of seconds "
        "on CPU)."
    )
    job_id = gr.State(None)
    ex = _released("example.json")
    choices = [(v, k) for k, v in VARIANT_LABELS.items()]
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            problem = gr.Textbox(EXAMPLE, label="Problem (a+b-c with numbers below 100; a word problem for SmolLM2)",
                                 elem_id="dpsdp_problem")
            with gr.Row():
                rseed = gr.Number(0, label="Seed of the random problem", precision=0, minimum=0)
                difficulty = gr.Dropdown(list(DIFFICULTIES), value=next(iter(DIFFICULTIES)), label="Difficulty")
                rand = gr.Button("Random problem", size="sm")
            variant = gr.Dropdown([*choices, (LLM_LABEL, LLM)], value="dpsdp", label="Actor-critic pair",
                                  elem_id="dpsdp_variant")
            expected = gr.Textbox("", label="Right answer (optional, SmolLM2 only: built-in problems know theirs)",
                                  max_lines=1)
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
                                 wrap=True, column_widths=["7%", "37%", "22%", "10%", "8%", "16%"],
                                 label="Transcript", elem_id="dpsdp_transcript")
            plot = gr.Plot(label="Answers per turn and the vote tally", show_label=False, elem_id="dpsdp_votes")
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
                                            "correct→incorrect"], interactive=False, wrap=True, label="Summary")
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
    with gr.Accordion(f"DPSDP on {LLM_LABEL.split(' (')[0]}: tree → DP targets → pairs → DPO on a LoRA adapter of the "
                      "actor (background job)", open=False):
        gr.Markdown("π_ref is the prompted model; the tree (K answers × K feedbacks × M refinements per problem) is "
                    "sampled at temperature 1 from built-in word problems, ranked by the same DP value targets as the "
                    "tiny pipeline, and the actor's adapter takes a few DPO steps. On CPU keep it small; a GPU worker "
                    "with `PAPERLAB_LLM_MODEL` (a local model folder) and `PAPERLAB_DPSDP_PROBLEMS` runs it larger.")
        with gr.Row():
            l_n = gr.Slider(1, 20, value=3, step=1, label="Problems")
            l_k = gr.Slider(2, 4, value=2, step=1, label="K (answers, feedbacks)")
            l_m = gr.Slider(1, 4, value=2, step=1, label="M (refinements per feedback)")
            l_steps = gr.Slider(1, 50, value=4, step=1, label="DPO steps")
            l_lr = gr.Number(1e-4, label="Learning rate", minimum=0)
            l_seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        l_btn = gr.Button("Run the LoRA job")
        l_plot = gr.Plot(label="DPO on the actor's adapter")
        l_text = gr.Markdown(label="LoRA job summary")
    gr.Examples([[EXAMPLE, "dpsdp"], [EXAMPLE, "reference"], ["99-87+45", "dpsdp"], ["305+27-18", "dpsdp"],
                 [WORD_PROBLEMS[0][0], LLM], [WORD_PROBLEMS[5][0], LLM]],
                inputs=[problem, variant], label="Examples (then press Refine; 305+27-18 is out of distribution, the "
                                                 "word problems are for SmolLM2)")
    gr.on(None, lambda: _figure(ex), None, plot, api_visibility="private", show_progress="hidden")
    ev = go.click(run_refine, [problem, variant, expected, turns, temperature, markovian, seed],
                  [job_id, summary, table, plot, status], api_name="dpsdp_refine")
    rand.click(random_problem, [rseed, difficulty], problem, api_name="dpsdp_random")
    ev2 = e_btn.click(run_evaluate, [e_n, e_turns, e_split, e_vars], [job_id, e_plot, e_flip, e_table, status],
                      api_name="dpsdp_evaluate")
    ev3 = t_btn.click(run_tree, [t_idx, t_seed], [job_id, t_table, t_text], api_name="dpsdp_tree")
    ev4 = p_btn.click(run_train, [p_preset, p_seed], [job_id, p_plot, p_text], api_name="dpsdp_train")
    ev5 = l_btn.click(run_lora, [l_n, l_k, l_m, l_steps, l_lr, l_seed], [job_id, l_plot, l_text], api_name="dpsdp_lora")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3, ev4, ev5], api_name="dpsdp_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

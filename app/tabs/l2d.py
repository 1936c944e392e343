"""Tab: L2D — a frozen LM plus a diffusion path whose accuracy grows with the number of ODE steps.

Run standalone with ``python -m app.tabs.l2d`` (inline jobs).
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from engines.l2d.params import ADAPTIVE, EXAMPLE, SOLVER_LABELS, STEP_GRID

from ..bridge import JobRun, cancel_job, whole

METHOD_ID = "l2d"
RELEASE = Path(__file__).resolve().parents[2] / "release" / "l2d"
STEP_HEADERS = ["steps N", "solver", "answer", "NFE (all tokens)", "correct"]


def answer_markdown(res: dict) -> str:
    ok = lambda b: "✅" if b else "❌"  # noqa: E731
    nfe = ", ".join(str(n) for n in res["nfe_per_token"])
    setting = (f"{res['solver']} with tolerance {res['tolerance']:g}" if res["solver"] in ADAPTIVE
               else f"N = {res['steps']} ({res['solver']})")
    guid = "" if res["guidance"] is None else f", guidance w = {res['guidance']:g}"
    lab = res["label"] or "null (unconditional)"
    t0 = "equals" if res["t0_equals_base"] else "DIFFERS FROM"
    return (
        f"### {res['problem']} → **{res['answer']}** {ok(res['correct'])}  (truth {res['truth']})\n\n"
        f"- **L2D**, {setting}{guid}, class label *{lab}*: `{res['answer']}`; velocity evaluations per token: {nfe}\n"
        f"- **Base LM** (N = 1, its own single step): `{res['base_answer']}` {ok(res['base_correct'])}\n"
        f"- **Step-0 check**: the L2D model at t = 0 answers `{res['t0_answer']}`, which {t0} the base model's "
        f"answer; max |Δ logits| = {res['t0_max_abs_diff']:.1e} (the base weights are frozen and "
        f"g(t) − g(0) = 0 at t = 0)\n\n"
        f"<sub>{res['model']}; {res['elapsed_s']:.2f} s</sub>"
    )


def steps_rows(res: dict) -> list[list]:
    return [[r["steps"] if r["steps"] else "adaptive", r["solver"], r["answer"], r["nfe"], "✅" if r["correct"] else "❌"]
            for r in res["by_steps"]]


def _released(name: str) -> dict | None:
    """A JSON file of the released L2D models (``release/l2d/<key>/``), read without torch."""
    for p in sorted(RELEASE.glob(f"*/{name}")):
        try:
            return json.loads(p.read_text())
        except ValueError:
            return None
    return None


def _example() -> dict | None:
    return _released("example.json")


def _trajectory(ex: dict | None):
    if not ex:
        return None
    from engines.l2d.plots import trajectory_figure

    return trajectory_figure(ex)


def run_solve(problem, steps, solver, tolerance, guidance, task_label, estimator, temperature, seed,
              progress=gr.Progress()):
    params = dict(problem=problem or "", steps=whole(steps), solver=solver, tolerance=tolerance,
                  guidance=guidance, task_label=task_label, estimator=estimator,
                  temperature=temperature, seed=whole(seed), compare_steps=list(STEP_GRID))
    job = JobRun(METHOD_ID, "solve", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.l2d.plots import trajectory_figure

    yield (job.id, answer_markdown(res), steps_rows(res), trajectory_figure(res),
           f"Done: {res['answer']} ({'correct' if res['correct'] else 'wrong'}).")


def random_problem(carries: float, task_name: str, seed: float) -> str:
    """A random held-out test problem with the requested number of carries (web process, no model)."""
    import math

    from engines.l2d import task

    ok = isinstance(seed, (int, float)) and not isinstance(seed, bool) and math.isfinite(seed) and 0 <= seed < 2**31
    if not ok or task_name not in task.TASKS or not isinstance(carries, (int, float)) or not 0 <= carries <= 3:
        raise gr.Error("Seed must be a whole number from 0 to 2147483647, carries 0-3 and the task add or sub.",
                       title="Invalid input")
    pr = task.sample(400, int(seed), "test", tasks=(task_name,))
    want = [i for i in range(len(pr["a"])) if pr["carries"][i] == int(carries)] or [0]
    i = want[0]
    return task.prompt_text(pr["a"][i], pr["b"][i], pr["c"][i], task_name)


def run_benchmark(n_problems, seeds, n_adaptive, progress=gr.Progress()):
    params = dict(n_problems=whole(n_problems), seeds=whole(seeds), n_adaptive=whole(n_adaptive))
    job = JobRun(METHOD_ID, "benchmark", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.l2d.plots import adaptive_figure, guidance_figure, scaling_figure

    mid = res["curves"].get("midpoint") or next(iter(res["curves"].values()))
    accs = ", ".join(f"N={n}: {a:.1%}" for n, a in zip(mid["steps"], mid["acc"]))
    yield (job.id, scaling_figure(res), adaptive_figure(res), guidance_figure(res),
           f"Benchmark done in {res['elapsed_s']:.0f} s on {res['n_problems']} held-out problems. Midpoint: {accs}. "
           f"Base LM {res['baselines']['base']:.1%}.")


def run_real(model_id, train_steps, n_eval, progress=gr.Progress()):
    params = dict(model_id=model_id or "", train_steps=whole(train_steps), n_eval=whole(n_eval))
    job = JobRun(METHOD_ID, "real_model", params)
    yield job.id, f"Job {job.id[:8]} queued (loads the language model first)…"
    res = job.wait(progress)
    lines = [f"**{res['model']}** ({res['base_params'] / 1e6:.0f} M frozen parameters, L2D path "
             f"{res['l2d_params'] / 1e6:.2f} M trainable), {res['train_steps']} training steps, "
             f"final loss {res['final_loss']:.3f}, base bit-identical: {res['base_bit_identical']}, "
             f"t = 0 max |Δ logits| {res['t0_max_abs_diff']:.1e}."]
    lines += [f"- N = {n}: exact match {a:.1%} on {res['n_eval']} held-out problems" for n, a in res["acc"].items()]
    lines += [f"- example: `{e['prompt']}` → {e['answers']}" for e in res["examples"][:3]]
    yield job.id, "\n".join(lines)


def show_training():
    from engines.l2d.plots import training_figure

    man = _released("l2d.json")
    if not man:
        raise gr.Error("No released L2D models: run python -m engines.l2d.release build", title="No release")
    tr = man["training"]
    txt = (f"Base GPT-2 ({tr['base']['params']:,} parameters): {tr['base']['steps']} steps, "
           f"{tr['base']['cpu_seconds']:.0f} CPU-s, validation exact match {tr['base']['val_acc']:.1%}. ")
    if "l2d" in tr:
        txt += (f"L2D path ({tr['l2d']['params']:,} trainable): {tr['l2d']['steps']} steps, "
                f"{tr['l2d']['cpu_seconds']:.0f} CPU-s, validation at N = 8 {tr['l2d']['val_acc_n8']:.1%}; "
                f"base bit-identical after training: {tr['l2d'].get('base_bit_identical')}. ")
    if "lora" in tr:
        txt += f"LoRA baseline rank {tr['lora']['rank']} ({tr['lora']['params']:,} trainable)."
    return training_figure(man), txt


def build() -> None:
    gr.Markdown(
        "**The paper's claim:** a pretrained language model is a one-step diffusion model; adding a small "
        "diffusion path next to the *frozen* model lets each answer token be refined over several ODE steps, so "
        "accuracy grows with the number of steps while the base model's own one-step answer stays exactly the same. "
        "**Try first:** press **Solve** on the worked example below, then drag *Diffusion steps N* from 1 to 32 "
        "(or pick an adaptive solver) and compare with the base answer; *Run benchmark* draws accuracy against steps."
    )
    job_id = gr.State(None)
    ex = _example()
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            problem = gr.Textbox(EXAMPLE, label="Problem (a+b+c= or a+b-c=, numbers < 1000)", elem_id="l2d_problem")
            with gr.Row():
                carries = gr.Slider(0, 3, value=2, step=1, label="Carries")
                task_name = gr.Radio(["add", "sub"], value="add", label="Task")
                rseed = gr.Number(0, label="Seed", precision=0, minimum=0)
            rand = gr.Button("Random held-out problem", size="sm")
            steps = gr.Slider(1, 32, value=8, step=1, label="Diffusion steps N (ODE grid points per token; 1 = base LM)",
                              elem_id="l2d_steps")
            solver = gr.Dropdown([(v, k) for k, v in SOLVER_LABELS.items()], value="midpoint", label="Solver")
            tolerance = gr.Slider(1e-4, 0.1, value=1e-2, step=1e-4, label="Adaptive tolerance (rtol = atol)")
            guidance = gr.Slider(0, 5, value=1, step=0.1, label="Guidance weight w (1 = conditional only)")
            with gr.Accordion("Class label, x̂₁ estimator, noise", open=False):
                task_label = gr.Radio(["auto", "none", "add", "sub"], value="auto", label="Guidance class label",
                                      info="auto: the problem's own task; none: the null class")
                estimator = gr.Radio(["argmax", "sample", "average"], value="argmax", label="x̂₁ estimator")
                temperature = gr.Slider(0, 2, value=1, step=0.05, label="Temperature (sample/average: T·(1 − t))")
                seed = gr.Number(0, label="Noise seed", precision=0, minimum=0)
            with gr.Row():
                solve = gr.Button("Solve", variant="primary", elem_id="l2d_solve")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="status", elem_id="l2d_status")
        with gr.Column(scale=3):
            answer = gr.Markdown(answer_markdown(ex) if ex else "Press **Solve**.", elem_id="l2d_answer", label="answer")
            table = gr.Dataframe(steps_rows(ex) if ex else None, headers=STEP_HEADERS, interactive=False,
                                 label="Answer per step count (same noise seed)", elem_id="l2d_table")
            traj = gr.Plot(label="Top-5 probabilities across ODE time, and the latent path (PCA)",
                           elem_id="l2d_trajectory")
    with gr.Accordion("Benchmark: accuracy vs steps, adaptive NFE, guidance, baselines (background job)", open=False):
        with gr.Row():
            b_n = gr.Slider(50, 2000, value=500, step=50, label="Held-out problems")
            b_seeds = gr.Slider(1, 3, value=1, step=1, label="Noise seeds")
            b_adapt = gr.Slider(5, 300, value=50, step=5, label="Problems for adaptive solvers (one at a time)")
        bench = gr.Button("Run benchmark", elem_id="l2d_benchmark")
        scal_plot = gr.Plot(label="Accuracy vs steps and vs NFE", elem_id="l2d_scaling")
        with gr.Row():
            adapt_plot = gr.Plot(label="Adaptive solvers")
            guid_plot = gr.Plot(label="Guidance")
    with gr.Accordion("Training record of the released models", open=False):
        tr_btn = gr.Button("Show training record")
        tr_plot = gr.Plot(label="Validation curves")
        tr_text = gr.Markdown(label="training record")
    with gr.Accordion("Paper-scale path: L2D on a real frozen LM (SmolLM2-135M-Instruct; gpu queue)", open=False):
        gr.Markdown("Attaches a fresh L2D path (d_f = 256, LoRA rank 32, σ = 64, as the official configs) to the "
                    "frozen model, trains it on the addition task for a few steps and compares N = 1 with N = 8. "
                    "`PAPERLAB_LLM_MODEL` or the field below selects another model (Llama/Qwen2 layouts). "
                    "Minutes on a CPU.")
        with gr.Row():
            r_model = gr.Textbox("", label="Model id or folder (empty = SmolLM2-135M-Instruct, offline)")
            r_steps = gr.Slider(1, 500, value=30, step=1, label="Training steps")
            r_eval = gr.Slider(1, 100, value=10, step=1, label="Evaluation problems")
        r_btn = gr.Button("Train and evaluate")
        r_out = gr.Markdown(label="real-model answer")
    gr.Examples([[EXAMPLE, 8, "midpoint"], ["999+999+999=", 16, "midpoint"], ["505+287-391=", 8, "euler"],
                 ["482+917+356=", 8, "dopri5"]], inputs=[problem, steps, solver], label="Examples (then press Solve)")
    inputs = [problem, steps, solver, tolerance, guidance, task_label, estimator, temperature, seed]
    # the worked example's trajectory is drawn after the page loads (keeps matplotlib out of start-up)
    gr.on(None, lambda: _trajectory(ex), None, traj, api_visibility="private", show_progress="hidden")
    ev = solve.click(run_solve, inputs, [job_id, answer, table, traj, status], api_name="l2d_solve")
    rand.click(random_problem, [carries, task_name, rseed], problem, api_name="l2d_random")
    ev2 = bench.click(run_benchmark, [b_n, b_seeds, b_adapt], [job_id, scal_plot, adapt_plot, guid_plot, status],
                      api_name="l2d_benchmark")
    tr_btn.click(show_training, None, [tr_plot, tr_text], api_name="l2d_training")
    ev3 = r_btn.click(run_real, [r_model, r_steps, r_eval], [job_id, r_out], api_name="l2d_real_model")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3], api_name="l2d_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

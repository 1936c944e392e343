"""Tab: KL-regularised bandits — logarithmic vs √T regret.

Run standalone with ``python -m app.tabs.kl_bandits`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.kl_bandits.params import METHOD_LABELS
from engines.kl_bandits.plots import eta_figure, policy_figure, regret_figure, rlhf_figure

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "kl_bandits"
# the worked example: the first row of the examples, with the default methods (shown on arrival)
EXAMPLE = dict(env="linear", eta=5.0, horizon=5000, dim=8, arms=20, noise=0.1, beta=1.0, seeds=3,
               reference="uniform", methods=["kl_ucb", "kl_greedy", "ucb"])


def summary_rows(res: dict) -> list[list]:
    rows = []
    for c in res["curves"]:
        g = c["growth_16x"]
        rows.append([c["label"], c["objective"], round(c["mean"][-1], 3), round(c["log_fit"]["r2"], 4),
                     round(c["loglog_slope"], 3), "" if g is None else round(g, 2)])
    return rows


SUMMARY_HEADERS = ["method", "regret", "final regret", "R² of a+b·log T", "log-log slope", "Reg(16T₀)/Reg(T₀)"]


def run_curves(env, eta, horizon, dim, arms, noise, beta, seeds, reference, methods, progress=gr.Progress()):
    if not methods:
        raise gr.Error("Select at least one method to run.", title="Nothing selected")
    params = dict(env=env, eta=eta, horizon=int(horizon), dim=int(dim), arms=int(arms), noise=noise,
                  beta=beta, seeds=int(seeds), reference=reference, methods=list(methods))
    job = JobRun(METHOD_ID, "regret_curves", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, *render_curves(res), f"Done in {res['elapsed_s']:.1f} s of compute (job {job.id[:8]}).")


def render_curves(res: dict) -> tuple:
    """The regret plot, the policy plot and the fit table of a ``regret_curves`` result."""
    return regret_figure(res), policy_figure(res), summary_rows(res)


def run_eta_sweep(env, horizon, dim, arms, noise, beta, seeds, reference, progress=gr.Progress()):
    params = dict(env=env, horizon=int(horizon), dim=int(dim), arms=int(arms), noise=noise, beta=beta,
                  seeds=int(seeds), reference=reference)
    job = JobRun(METHOD_ID, "eta_sweep", params)
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, eta_figure(res), f"η sweep done in {res['elapsed_s']:.1f} s."


def run_rlhf(prompts, preference, rounds, candidates, eta, beta, progress=gr.Progress()):
    lines = tuple(s.strip() for s in (prompts or "").splitlines() if s.strip())
    if not lines:
        raise gr.Error("Give at least one prompt (one per line).", title="No prompts")
    params = dict(prompts=lines, preference=preference, rounds=int(rounds), candidates=int(candidates),
                  eta=eta, beta=beta)
    job = JobRun(METHOD_ID, "rlhf", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued (loads the language model first)…"
    res = job.wait(progress)
    rows = [[r["round"], r["prompt"], m, r["chosen"][m], round(r["true_reward"][m], 3)]
            for r in res["rounds"] for m in res["methods"]]
    final = {m: v[-1] for m, v in res["cumulative_regret"].items()}
    yield (job.id, rlhf_figure(res), rows,
           "Final KL regret: " + ", ".join(f"{m} {v:.2f}" for m, v in final.items())
           + f" ({res['elapsed_s']:.0f} s).")


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "Each round the learner sees a context, plays an arm from its policy and observes a noisy reward. "
        "The objective adds a KL penalty to a reference policy π₀ with strength 1/η. "
        "**KL-UCB** plays the Gibbs policy π ∝ π₀·exp(η·R̃) of an optimistic reward estimate; "
        "its KL-regularised regret grows like **log T**, while unregularised UCB pays **√T** on hard instances."
    )
    job_id = gr.State(None)
    ex = EXAMPLE
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            env = gr.Radio(["linear", "hard"], value=ex["env"], label="Environment",
                           info="linear: contextual bandit (A); hard: K-armed, gap √(K/T) (B)")
            eta = gr.Slider(0.5, 200, value=5, step=0.5, label="η (inverse KL strength)")
            horizon = gr.Slider(1000, 50000, value=5000, step=1000, label="Horizon T")
            with gr.Accordion("Environment and algorithm", open=False):
                dim = gr.Slider(2, 32, value=8, step=1, label="Feature dimension d")
                arms = gr.Slider(2, 100, value=20, step=1, label="Arms K")
                noise = gr.Slider(0.0, 0.5, value=0.1, step=0.01, label="Reward noise σ")
                beta = gr.Slider(0.0, 3.0, value=1.0, step=0.05, label="Bonus scale β")
                seeds = gr.Slider(1, 10, value=3, step=1, label="Seeds")
                reference = gr.Radio(["uniform", "peaked"], value="uniform", label="Reference policy π₀")
            methods = gr.CheckboxGroup([(v, k) for k, v in METHOD_LABELS.items()],
                                       value=["kl_ucb", "kl_greedy", "ucb"], label="Methods")
            with gr.Row():
                run = gr.Button("Run", variant="primary", elem_id="kl_bandits_run")
                stop = gr.Button("Stop", variant="stop")
            sweep = gr.Button("Regret vs η")
            status = gr.Markdown(label="status", elem_id="kl_bandits_status")
        with gr.Column(scale=3):
            regret_plot = gr.Plot(label="Cumulative regret against the horizon T (KL-regularised for KL methods)",
                                  elem_id="kl_bandits_regret_plot")
            summary = gr.Dataframe(headers=SUMMARY_HEADERS, label="Fits: log T vs √T growth of each method's regret",
                                   interactive=False, wrap=True, elem_id="kl_bandits_summary")
            policy_plot = gr.Plot(label="Policy on one context: learned Gibbs policy vs reference π₀ and optimum",
                                  elem_id="kl_bandits_policy_plot")
            eta_plot = gr.Plot(label="Final regret against η (appears after 'Regret vs η')")
    with gr.Accordion("LLM instantiation (paper-scale path): π₀ is a language model", open=False):
        gr.Markdown(
            "The Gibbs policy over a language model, made concrete by **soft best-of-N**: sample N answers "
            "from π₀ and play one with probability ∝ exp(η·R̃). R̃ is optimistic (mean + β·std of an "
            "ensemble of reward heads on answer embeddings); the true reward, hidden from the learner, is "
            "linear in those embeddings and prefers the *preference* text. π₀ is SmolLM2-135M-Instruct "
            "offline (`PAPERLAB_LLM_MODEL` selects another model); this runs on the `gpu` queue and takes "
            "minutes on a CPU."
        )
        with gr.Row():
            rl_prompts = gr.Textbox("Describe the sea in one sentence.\nGive me one tip for a rainy day.",
                                    lines=3, label="Prompts (one per line)")
            rl_pref = gr.Textbox("a cheerful, sunny and happy answer", label="Hidden preference (defines R*)")
        with gr.Row():
            rl_rounds = gr.Slider(5, 200, value=20, step=1, label="Rounds")
            rl_n = gr.Slider(2, 32, value=8, step=1, label="Candidates N")
            rl_eta = gr.Slider(1, 100, value=20, step=1, label="η")
            rl_beta = gr.Slider(0, 3, value=1, step=0.1, label="β")
        rl_run = gr.Button("Run LLM loop")
        rl_plot = gr.Plot(label="LLM loop regret")
        rl_table = gr.Dataframe(headers=["round", "prompt", "method", "answer played", "true reward"],
                                label="Answers played", interactive=False, wrap=True)
    gr.Examples(
        [["linear", 5, 5000, 8, 20, 0.1, 1.0, 3, "uniform"],
         ["hard", 5, 16000, 8, 10, 0.1, 1.0, 3, "uniform"],
         ["linear", 20, 10000, 8, 20, 0.1, 1.0, 3, "peaked"]],
        inputs=[env, eta, horizon, dim, arms, noise, beta, seeds, reference],
        label="Examples (then press Run)",
    )
    worked_example.on_load(
        METHOD_ID, "regret_curves", EXAMPLE, render_curves, [regret_plot, policy_plot, summary], status,
        done="Worked example: linear contextual bandit, η = 5, T = 5,000, 3 seeds (press **Run** to recompute, "
             "or change the settings).", cancel_on=[run.click])
    ev = run.click(run_curves, [env, eta, horizon, dim, arms, noise, beta, seeds, reference, methods],
                   [job_id, regret_plot, policy_plot, summary, status], api_name="kl_bandits_run")
    ev2 = sweep.click(run_eta_sweep, [env, horizon, dim, arms, noise, beta, seeds, reference],
                      [job_id, eta_plot, status], api_name="kl_bandits_eta_sweep")
    ev3 = rl_run.click(run_rlhf, [rl_prompts, rl_pref, rl_rounds, rl_n, rl_eta, rl_beta],
                       [job_id, rl_plot, rl_table, status], api_name="kl_bandits_rlhf")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3], api_name="kl_bandits_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

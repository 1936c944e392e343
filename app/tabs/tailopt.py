"""Tab: TailOPT / Bi²Clip — distributed training with local steps under heavy-tailed gradient noise.

Run standalone with ``python -m app.tabs.tailopt`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.tailopt.params import DEFAULT_METHODS, METHOD_LABELS, TASK_LABELS
from engines.tailopt.plots import TABLE_HEADERS, clip_figure, loss_figure, noise_figure, table_rows

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "tailopt"
NOISES = [("Cauchy (ν = 1, infinite mean)", "cauchy"), ("Student-t (tail index ν)", "student_t"),
          ("Gaussian (light tails)", "gaussian"), ("none (minibatch noise only)", "none")]


def example() -> tuple[dict, dict]:
    """The worked example shown on arrival (the first example row, the tab's defaults): compare and noise probe."""
    prob = _problem("linear", "cauchy", 1.5, 1.0, 8, 10, 100)
    compare = dict(prob, methods=list(DEFAULT_METHODS), tune=True, budget=6, engine="simulator",
                   hyper=dict(lr_in=0.005, lr_out=1.0, auto_thresholds=True, d_in=0.1, u_in=10.0, d_out=0.1,
                              u_out=10.0))
    return compare, dict(prob, probes=100)


def render_compare(res: dict, noise: dict) -> tuple:
    """Loss plot, state table, clip plot and noise histogram of a ``compare`` and a ``noise_probe`` result."""
    return loss_figure(res), table_rows(res), clip_figure(res), noise_figure(noise)


def _done(res: dict, nr: dict, tune: bool = True, engine: str = "simulator") -> str:
    div = [r["label"] for r in res["runs"] if r["diverged_at"] is not None]
    how = "tuned on a validation seed" if tune else "with the given hyper-parameters"
    return (f"Done in {res['elapsed_s']:.1f} s ({how}, engine: {engine}). "
            + (f"Diverged (marked ×, not plotted further): {', '.join(div)}. " if div else "No run diverged. ")
            + f"Noise tail index α̂ ≈ {nr['hill_alpha']:.2f}.")


def _example_done(res: dict, nr: dict) -> str:
    div = [r["label"] for r in res["runs"] if r["diverged_at"] is not None]
    return (f"**Worked example** (the defaults, each method tuned with the same budget; computed in "
            f"{res['elapsed_s']:.0f} s): " + (f"diverged: {', '.join(div)}; " if div else "no run diverged; ")
            + f"Hill estimate of the noise's tail index α̂ ≈ {nr['hill_alpha']:.2f}. Press **Run** to recompute.")


def _problem(task, noise, nu, scale, workers, steps, rounds):
    return dict(task=task, noise=noise, tail_index=float(nu), noise_scale=float(scale), workers=int(workers),
                local_steps=int(steps), rounds=int(rounds))


def run_compare(task, noise, nu, scale, workers, steps, rounds, methods, tune, budget, auto, lr_in, lr_out,
                d_in, u_in, d_out, u_out, engine, progress=gr.Progress()):
    if not methods:
        raise gr.Error("Select at least one method to run.", title="Nothing selected")
    params = dict(_problem(task, noise, nu, scale, workers, steps, rounds), methods=list(methods), tune=bool(tune),
                  budget=int(budget), engine=engine,
                  hyper=dict(lr_in=lr_in, lr_out=lr_out, auto_thresholds=bool(auto), d_in=d_in, u_in=u_in,
                             d_out=d_out, u_out=u_out))
    job = JobRun(METHOD_ID, "compare", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    noise_job = JobRun(METHOD_ID, "noise_probe", dict(_problem(task, noise, nu, scale, min(int(workers), 8),
                                                               steps, rounds), probes=100))
    figs = (loss_figure(res), table_rows(res), clip_figure(res))
    yield noise_job.id, *figs, gr.skip(), "Probing the gradient noise…"
    nr = noise_job.wait(progress)
    yield noise_job.id, *figs, noise_figure(nr), _done(res, nr, tune, engine)


def run_equivalence(task, noise, nu, scale, steps, progress=gr.Progress()):
    params = dict(task=task if task != "transformer" else "linear", noise=noise, tail_index=float(nu),
                  noise_scale=float(scale), workers=2, local_steps=int(steps), rounds=3, method="bi2clip")
    job = JobRun(METHOD_ID, "equivalence", params)
    yield job.id, f"Job {job.id[:8]}: simulator, then 2 gloo processes on 127.0.0.1…"
    r = job.wait(progress)
    verdict = "match" if r["max_abs_diff"] <= 1e-6 else "DIFFER"
    yield job.id, (f"Bi²Clip, 3 rounds, 2 workers: simulator and torch.distributed (gloo) {verdict}: "
                   f"max |Δx| = {r['max_abs_diff']:.2e} (|x| up to {r['max_abs_param']:.2f}); "
                   f"floats sent per round per worker {r['floats_per_round_gloo']:g} in both; "
                   f"gloo run took {r['gloo_wall_s']:.1f} s including process start.")


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "**What the paper claims:** when gradient noise is heavy-tailed (infinite variance, as in attention "
        "models), federated averaging with local steps degrades or diverges, while **Bi²Clip** — BiClip "
        "(coordinate-wise clipping from above *and* below) on the workers and again on the server — converges "
        "like an Adam-type method without keeping or sending any optimiser state. "
        "**What to click first:** press **Run** with the defaults (linear regression, Cauchy noise, 8 workers): "
        "every method is tuned on a validation seed with the same budget, then the loss curves, the "
        "state/communication table and the noise histogram appear."
    )
    job_id = gr.State(None)
    ex, ex_noise = example()
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            task = gr.Dropdown([(v, k) for k, v in TASK_LABELS.items()], value="linear", label="Task")
            noise = gr.Radio(NOISES, value="cauchy", label="Gradient noise ξ = s·t_ν per coordinate")
            nu = gr.Slider(0.8, 5.0, value=1.5, step=0.1, label="Tail index ν (Student-t)")
            scale = gr.Slider(0.0, 10.0, value=1.0, step=0.1, label="Noise scale s (× median |∇F_i(x₀)|)")
            with gr.Row():
                workers = gr.Slider(1, 32, value=8, step=1, label="Workers N")
                steps = gr.Slider(1, 50, value=10, step=1, label="Local steps z")
            rounds = gr.Slider(10, 1000, value=100, step=10, label="Rounds T", elem_id="tailopt_rounds")
            methods = gr.CheckboxGroup([(v, k) for k, v in METHOD_LABELS.items()], value=list(DEFAULT_METHODS),
                                       label="Methods")
            with gr.Accordion("Hyper-parameters and thresholds", open=False):
                tune = gr.Checkbox(True, label="Tune every method on a validation seed (same budget each)")
                budget = gr.Slider(2, 32, value=ex["budget"], step=1, label="Configurations per method when tuning")
                auto = gr.Checkbox(True, label="Auto thresholds (multiples of the probe gradient scale)")
                with gr.Row():
                    lr_in = gr.Number(0.005, label="inner lr η_ℓ")
                    lr_out = gr.Number(1.0, label="outer lr η")
                with gr.Row():
                    d_in = gr.Number(0.1, label="inner d")
                    u_in = gr.Number(10.0, label="inner u")
                with gr.Row():
                    d_out = gr.Number(0.1, label="outer d̃")
                    u_out = gr.Number(10.0, label="outer ũ")
            engine = gr.Radio([("in-process simulator", "simulator"), ("torch.distributed gloo (1 process/worker)",
                                                                        "gloo")], value="simulator", label="Engine")
            with gr.Row():
                run = gr.Button("Run", variant="primary", elem_id="tailopt_run")
                stop = gr.Button("Stop", variant="stop")
            check = gr.Button("Check gloo engine = simulator (2 ranks)")
            status = gr.Markdown(label="status", elem_id="tailopt_status")
        with gr.Column(scale=3):
            loss_plot = gr.Plot(label="Excess loss against communication rounds (all methods, shared axis)",
                                elem_id="tailopt_loss_plot")
            table = gr.Dataframe(headers=TABLE_HEADERS, label="Optimiser state and communication (counted)",
                                 interactive=False, wrap=True, elem_id="tailopt_table")
            with gr.Row():
                noise_plot = gr.Plot(label="Gradient-noise histogram (heavy tails: Hill estimate α̂)",
                                     elem_id="tailopt_noise_plot")
                clip_plot = gr.Plot(label="BiClip map and the fraction of clipped coordinates per round",
                                    elem_id="tailopt_clip_plot")
    gr.Examples(
        [["linear", "cauchy", 1.5, 1.0, 8, 10, 100], ["linear", "gaussian", 1.5, 1.0, 8, 10, 100],
         ["logistic", "student_t", 1.5, 1.0, 8, 10, 100], ["digits", "student_t", 1.2, 1.0, 8, 5, 60],
         ["transformer", "none", 1.5, 1.0, 4, 8, 20]],
        inputs=[task, noise, nu, scale, workers, steps, rounds], label="Examples (then press Run)",
    )
    worked_example.on_load(
        METHOD_ID, "compare", ex, render_compare, [loss_plot, table, clip_plot, noise_plot], status,
        more=[("noise_probe", ex_noise)],
        done=_example_done,
        cancel_on=[run.click])
    ev = run.click(run_compare, [task, noise, nu, scale, workers, steps, rounds, methods, tune, budget, auto, lr_in,
                                 lr_out, d_in, u_in, d_out, u_out, engine],
                   [job_id, loss_plot, table, clip_plot, noise_plot, status], api_name="tailopt_run")
    ev2 = check.click(run_equivalence, [task, noise, nu, scale, steps], [job_id, status],
                      api_name="tailopt_equivalence")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="tailopt_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

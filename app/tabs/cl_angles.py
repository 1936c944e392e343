"""Tab: forgetting vs task angle — the feature-learning theory of (replay-based) continual learning.

Run standalone with ``python -m app.tabs.cl_angles`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.cl_angles.params import SELECTOR_LABELS, VARIANT_LABELS
from engines.cl_angles.plots import (bins_figure, curves_figure, neurons_figure, selection_figure,
                                     selection_gallery, sweep_figure)

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "cl_angles"
VARIANT_CHOICES = [(v, k) for k, v in VARIANT_LABELS.items()]
SELECTOR_CHOICES = [(v, k) for k, v in SELECTOR_LABELS.items()]
CLASS_CHOICES = [str(i) for i in range(10)]
# the worked example shown on arrival: the default angle (harmful forgetting without replay)
EXAMPLE = dict(angle=150.0, epochs1=1500, epochs2=1500, seed=0, mu_norm=8.0, buffer_frac=0.1, selector="random",
               ewc_lambda=1e6, variants=list(VARIANT_LABELS))


def _variants(variants) -> list[str]:
    if not variants:
        raise gr.Error("Select at least one variant (CL, Replay, EWC, EWC-Replay).", title="Nothing selected")
    return list(variants)


def _synthetic(mu_norm, buffer_pct, selector, ewc_lambda, variants) -> dict:
    if ewc_lambda is None:
        raise gr.Error("EWC λ is empty: enter a number (0 switches the penalty off).", title="Invalid parameters")
    return dict(mu_norm=float(mu_norm), buffer_frac=float(buffer_pct) / 100.0, selector=selector,
                ewc_lambda=float(ewc_lambda), variants=_variants(variants))


def run_angle(angle, mu_norm, buffer_pct, selector, ewc_lambda, epochs1, epochs2, seed, variants,
              progress=gr.Progress()):
    params = dict(angle=float(angle), epochs1=int(epochs1), epochs2=int(epochs2), seed=int(seed),
                  **_synthetic(mu_norm, buffer_pct, selector, ewc_lambda, variants))
    job = JobRun(METHOD_ID, "angle_run", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, *render_angle(res), angle_summary(res) + f" Done in {res['elapsed_s']:.1f} s.")


def angle_summary(res: dict) -> str:
    first = "cl" if "cl" in res["variants"] else res["variants"][0]
    forg = ", ".join(f"{VARIANT_LABELS[v]} {res['forgetting'][v]:.3f}" for v in res["variants"])
    return (f"θ = {res['angle']:g}°: task-1 error after task 2 — {forg} ({res['regime']} for "
            f"{VARIANT_LABELS[first]}).")


def render_angle(res: dict) -> tuple:
    """(result state, error curves, neuron plot, variant shown) of an ``angle_run`` result."""
    first = "cl" if "cl" in res["variants"] else res["variants"][0]
    return res, curves_figure(res), neurons_figure(res, first), first


def show_neurons(res, variant):
    if not res:
        return gr.skip()
    return neurons_figure(res, variant)


def run_sweep(angle_step, seeds, epochs2, mu_norm, buffer_pct, selector, ewc_lambda, variants,
              progress=gr.Progress()):
    params = dict(angle_step=float(angle_step), seeds=int(seeds), epochs2=int(epochs2),
                  **_synthetic(mu_norm, buffer_pct, selector, ewc_lambda, variants))
    job = JobRun(METHOD_ID, "angle_sweep", params)
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    knees = ", ".join(f"{c['label']} {c['knee']:g}°" if c["knee"] is not None else f"{c['label']} none"
                      for c in res["curves"])
    rho = "" if res["spearman_cl"] is None else f" Spearman(θ, CL error) = {res['spearman_cl']:.2f}."
    yield (job.id, sweep_figure(res),
           f"Knee θ_c (first angle with error > 0.5): {knees}.{rho} Done in {res['elapsed_s']:.0f} s.")


def run_bins(dataset, seeds, epochs, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "angle_bins", dict(dataset=dataset, seeds=int(seeds), epochs=int(epochs)))
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    note = f" {res['note']}" if res["note"] else ""
    angles = ", ".join(f"{b['angle']:.1f}° → {b['mean_forgetting']:.2f}" for b in res["bins"])
    yield job.id, bins_figure(res), f"Mean task-1 error per angle: {angles}.{note} Done in {res['elapsed_s']:.0f} s."


def run_buffer(dataset, task1, task2, buffer_pct, feature_space, seeds, epochs, selectors, progress=gr.Progress()):
    for name, cls in (("Task 1", task1), ("Task 2", task2)):
        if not cls or len(cls) != 2:
            raise gr.Error(f"{name} needs exactly two classes (got {len(cls or [])}).", title="Invalid parameters")
    if not selectors:
        raise gr.Error("Select at least one buffer selector.", title="Nothing selected")
    params = dict(dataset=dataset, task1=[int(c) for c in task1], task2=[int(c) for c in task2],
                  buffer_frac=float(buffer_pct) / 100.0, feature_space=feature_space, seeds=int(seeds),
                  epochs=int(epochs), selectors=list(selectors))
    job = JobRun(METHOD_ID, "buffer_selection", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[o["label"], round(o["forgetting"], 4), round(o["std"], 4), round(o["task2_error"], 4)]
            for o in res["outcomes"]]
    rows.append(["no replay", round(res["no_replay"], 4), None, None])
    note = f" {res['note']}" if res["note"] else ""
    yield (job.id, selection_figure(res), selection_gallery(res), rows,
           f"{res['k_per_class']} samples per class replayed.{note} Done in {res['elapsed_s']:.0f} s.")


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "A two-layer CNN with cubic ReLU learns task 1 (signal μ₁), then task 2 (signal μ₂ at angle θ). "
        "The paper proves that **acute and slightly obtuse angles forget benignly** (task-1 error stays small) "
        "while **large obtuse angles forget harmfully** (error → 1), and that **replay widens the benign range**. "
        "Drag θ and release to train (a few seconds); the filters that learned μ₁ and those that learn μ₂ "
        "are shown below. Further down: the full sweep, and the real-image analogue with mid-angle sampling."
    )
    job_id = gr.State(None)
    result = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            angle = gr.Slider(0, 180, value=150, step=1, label="Angle θ between μ₁ and μ₂ (degrees)",
                              elem_id="cl_angles_angle")
            mu_norm = gr.Slider(1, 20, value=8, step=0.5, label="Signal strength ‖μ‖ (noise σ = 1)")
            buffer_pct = gr.Slider(0, 30, value=10, step=1, label="Replay: % of task-1 samples in task 2's set")
            selector = gr.Dropdown(SELECTOR_CHOICES, value="random", label="Replay buffer selector")
            ewc_lambda = gr.Number(1e6, label="EWC λ (0 = off)")
            variants = gr.CheckboxGroup(VARIANT_CHOICES, value=list(VARIANT_LABELS), label="Variants")
            with gr.Accordion("Training", open=False):
                epochs1 = gr.Slider(100, 5000, value=1500, step=100, label="Epochs on task 1")
                epochs2 = gr.Slider(100, 5000, value=1500, step=100, label="Epochs on task 2")
                seed = gr.Number(0, precision=0, label="Seed", minimum=0)
            with gr.Row():
                run = gr.Button("Run", variant="primary", elem_id="cl_angles_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="run status", elem_id="cl_angles_status")
        with gr.Column(scale=3):
            curves_plot = gr.Plot(label="Test error of task 1 and task 2 over training, per variant",
                                  elem_id="cl_angles_curves")
            neuron_variant = gr.Radio(VARIANT_CHOICES, value="cl", label="Neurons of")
            neurons_plot = gr.Plot(label="Filters and their coefficients on μ₁, μ₂ and the noise",
                                   elem_id="cl_angles_neurons")
    gr.Examples([[60], [120], [135], [150], [180]], inputs=[angle], label="Angles to try (then press Run)")

    with gr.Accordion("Full sweep: forgetting against θ (background job)", open=True):
        with gr.Row():
            sweep_step = gr.Slider(1, 45, value=10, step=1, label="Angle step (degrees)")
            sweep_seeds = gr.Slider(1, 10, value=3, step=1, label="Seeds")
            sweep_epochs = gr.Slider(100, 5000, value=1500, step=100, label="Epochs on task 2")
            sweep_btn = gr.Button("Run sweep", elem_id="cl_angles_sweep")
        sweep_status = gr.Markdown(label="sweep status")
        sweep_plot = gr.Plot(label="Task-1 error after task 2 against the angle θ (appears after 'Run sweep')",
                             elem_id="cl_angles_sweep_plot")

    with gr.Accordion("Real images: task angle and mid-angle sampling (background jobs)", open=False):
        with gr.Row():
            dataset = gr.Radio(["digits", "fashion"], value="digits", label="Data set",
                               info="Fashion-MNIST needs the Debian package dataset-fashion-mnist")
            real_seeds = gr.Slider(1, 10, value=5, step=1, label="Seeds")
            real_epochs = gr.Slider(100, 2000, value=600, step=100, label="Epochs per task")
        gr.Markdown("**Angle bins.** Each task is one class, original vs sign-inverted image; the per-class "
                    "label polarity sets the angle between the tasks' signals. Task-1 accuracy after task 2 "
                    "against the number of replayed task-1 samples.")
        bins_btn = gr.Button("Run angle bins", elem_id="cl_angles_bins")
        bins_status = gr.Markdown(label="angle-bin status")
        bins_plot = gr.Plot(label="Task-1 accuracy after task 2 against replayed samples (after 'Run angle bins')",
                            elem_id="cl_angles_bins_plot")
        gr.Markdown("**Buffer selection.** Two classes per task on a shared head; the buffer keeps k samples "
                    "per class of task 1, chosen by their cosine to the class prototype.")
        with gr.Row():
            task1 = gr.Dropdown(CLASS_CHOICES, value=["4", "5"], multiselect=True, max_choices=2,
                                label="Task-1 classes")
            task2 = gr.Dropdown(CLASS_CHOICES, value=["8", "9"], multiselect=True, max_choices=2,
                                label="Task-2 classes")
            sel_pct = gr.Slider(1, 30, value=5, step=1, label="Buffer: % of task 1's training set")
            space = gr.Radio(["pixels", "network"], value="pixels", label="Cosines in",
                             info="pixels: MNIST script; network: the task-1 network's feature layer")
        selectors = gr.CheckboxGroup(SELECTOR_CHOICES, value=list(SELECTOR_LABELS), label="Selectors")
        buffer_btn = gr.Button("Compare selectors", elem_id="cl_angles_buffer")
        buffer_status = gr.Markdown(label="buffer-selection status")
        sel_plot = gr.Plot(label="Cosines to the class prototype and forgetting per selector (after 'Compare selectors')",
                           elem_id="cl_angles_selection_plot")
        sel_table = gr.Dataframe(headers=["selector", "task-1 error", "std", "task-2 error"], interactive=False,
                                 label="Task-1 test error after task 2 (mean over seeds)")
        gallery = gr.Plot(label="Replayed samples of each selector (seed 0)")

    run_inputs = [angle, mu_norm, buffer_pct, selector, ewc_lambda, epochs1, epochs2, seed, variants]
    run_outputs = [job_id, result, curves_plot, neurons_plot, neuron_variant, status]
    worked_example.on_load(METHOD_ID, "angle_run", EXAMPLE, render_angle,
                           [result, curves_plot, neurons_plot, neuron_variant], status,
                           done=lambda r: f"**Worked example.** {angle_summary(r)} Drag θ to train again.",
                           cancel_on=[run.click, angle.release])
    ev1 = run.click(run_angle, run_inputs, run_outputs, api_name="cl_angles_run")
    ev2 = angle.release(run_angle, run_inputs, run_outputs, api_visibility="private", trigger_mode="always_last")
    neuron_variant.change(show_neurons, [result, neuron_variant], neurons_plot, api_name="cl_angles_neurons")
    ev3 = sweep_btn.click(run_sweep, [sweep_step, sweep_seeds, sweep_epochs, mu_norm, buffer_pct, selector,
                                      ewc_lambda, variants], [job_id, sweep_plot, sweep_status],
                          api_name="cl_angles_sweep")
    ev4 = bins_btn.click(run_bins, [dataset, real_seeds, real_epochs], [job_id, bins_plot, bins_status],
                         api_name="cl_angles_bins")
    ev5 = buffer_btn.click(run_buffer, [dataset, task1, task2, sel_pct, space, real_seeds, real_epochs, selectors],
                           [job_id, sel_plot, gallery, sel_table, buffer_status], api_name="cl_angles_buffer")
    stop.click(cancel_job, job_id, status, cancels=[ev1, ev2, ev3, ev4, ev5], api_name="cl_angles_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

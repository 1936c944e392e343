"""Tab: PDE surrogates on staggered grids — solver vs p1/p4m U-Nets with and without the mass constraint.

Run standalone with ``python -m app.tabs.pde_staggered`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.pde_staggered.params import (ALL_VARIANTS, ELEMENT_NAMES, IC_LABELS, INS_ICS, MAX_HORIZON,
                                          PROBLEM_LABELS, VARIANT_LABELS)

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "pde_staggered"
VARIANT_CHOICES = [(v, k) for k, v in VARIANT_LABELS.items()]
IC_CHOICES = [(v, k) for k, v in IC_LABELS.items()]
PROBLEM_CHOICES = [(v, k) for k, v in PROBLEM_LABELS.items()]
DT_CHOICES = [0.25, 0.5, 1.0, 2.0]


def _path(ref: str | None):
    if not ref:
        return None
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, ref))


def _mask(sketch) -> list[list[float]] | None:
    """A Sketchpad value -> a coarse 0/1 mask (≤ 64×64) of where something was drawn: the union of the
    stroke layers' alpha, or the non-white pixels of the composite when there are no layers."""
    import numpy as np

    if sketch is None:
        return None
    layers = [l for l in (sketch.get("layers") or []) if l is not None] if isinstance(sketch, dict) else []
    drawn = None
    for layer in layers:
        a = np.asarray(_read(layer) if isinstance(layer, str) else layer, dtype=float)
        m = a[..., 3] > 0 if a.ndim == 3 and a.shape[-1] == 4 else (a.mean(-1) if a.ndim == 3 else a) < 200
        drawn = m if drawn is None else drawn | m
    if drawn is None:
        img = sketch.get("composite") if isinstance(sketch, dict) else sketch
        if img is None:
            return None
        a = np.asarray(_read(img) if isinstance(img, str) else img, dtype=float)
        drawn = (a[..., :3].mean(-1) if a.ndim == 3 else a) < 200
    if not drawn.any():
        return None
    step = max(1, int(np.ceil(max(drawn.shape) / 64)))
    return drawn[::step, ::step].astype(float).tolist()


def _read(path: str):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGBA"))


def _ic(problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch) -> dict:
    if seed is None or amplitude is None:
        raise gr.Error("Seed and amplitude must be numbers.", title="Invalid parameters")
    if problem == "ins" and ic not in INS_ICS:
        raise gr.Error(f"Decaying turbulence starts from a random spectrum or a vortex pair, not from "
                       f"'{IC_LABELS.get(ic, ic)}': pick one of those (or switch to shallow water).",
                       title="Invalid initial condition")
    p = dict(problem=problem, ic=ic, seed=int(seed), bump_row=float(bump_row), bump_col=float(bump_col),
             bump_width=float(bump_width), amplitude=float(amplitude), dt=float(dt))
    if ic == "drawn":
        m = _mask(sketch)
        if m is None:
            raise gr.Error("The drawn initial condition is empty: draw a region of raised water on the canvas "
                           "(or pick another initial condition).", title="Empty drawing")
        p["mask"] = m
    return p


def _variants(variants) -> list[str]:
    if not variants:
        raise gr.Error("Select at least one surrogate variant (p1/∅, p1/M, p4m/∅, p4m/M).", title="Nothing selected")
    return [v for v in ALL_VARIANTS if v in variants]


def _status(res: dict) -> str:
    lab = VARIANT_LABELS
    ct = ", ".join(f"{lab[v]} {res['corr_time'][v]:g}" for v in res["variants"])
    md = ", ".join(f"{lab[v]} {res['final_mass_drift'][v]:.1e}" for v in res["variants"])
    err = ", ".join(f"{lab[v]} {res['nrmse'][v][-1]:.3f}" for v in res["variants"])
    div = [lab[v] for v in res["variants"] if res["diverged"][v] >= 0]
    note = f" Diverged (frozen at the last finite state): {', '.join(div)}." if div else ""
    shown, conserved = res.get("shown", "ζ"), res.get("conserved", "mass")
    if res.get("max_divergence"):
        note += " **max |div u|**: " + ", ".join(f"{lab.get(k, k)} {x:.1e}" for k, x in res["max_divergence"].items()) + "."
    sec = res["step_seconds"]
    ms = ", ".join(f"{lab[v]} {1e3 * sec[v]:.1f}" for v in res["variants"])
    return (f"**Correlation time** (steps with ρ > {res['threshold']:g}, of {res['horizon']}): {ct}. "
            f"**NRMSE({shown}) at step {res['horizon']}**: {err}. **{conserved.capitalize()} drift**: solver "
            f"{res['final_mass_drift']['solver']:.1e}, {md}.{note} **ms per step** (one state, CPU): solver "
            f"{1e3 * sec['solver']:.2f}, {ms}. Done in {res['elapsed_s']:.1f} s.")


def _example_status(res: dict) -> str:
    return ("**Worked example** (the defaults; press **Run rollout** to recompute). "
            + worked_example.as_example(_status(res)))


def frame(res, t):
    """Render ζ at step t for the solver and every variant (from the stored rollout)."""
    if not res:
        return gr.skip()
    import numpy as np

    from engines.pde_staggered.plots import frame_figure

    with np.load(_path(res["fields"])) as d:
        return frame_figure(d["zeta"], [str(s) for s in d["names"]], int(t))


def example() -> dict:
    """The worked example shown on arrival: the tab's defaults (shallow water, random bumps, seed 0, 60 steps)."""
    return dict(horizon=60, variants=list(ALL_VARIANTS), **_ic("swe", "random", 0, 0.4, 0.6, 0.1, 0.2, 0.5, None))


def missing_models() -> str | None:
    """Why the example would have to train surrogates first (None when all four are cached or released).
    Runs when the page loads, never at start-up (it imports torch)."""
    from engines.common import release
    from engines.pde_staggered.config import sizes
    from engines.pde_staggered.training import model_path

    sz = sizes()
    miss = []
    for v in ALL_VARIANTS:
        path = model_path(v, sz, 0, False, False)
        if not path.exists() and release.manifest(METHOD_ID, path.stem) is None:
            miss.append(VARIANT_LABELS[v])
    if not miss:
        return None
    return (f"the trained surrogates ({', '.join(miss)}) are neither in the data directory nor in the release, and "
            "page loads never train. Train them with **Train** below (or `make reproduce METHOD=pde_staggered`), "
            "then reload the page.")


def render_rollout(res: dict) -> tuple:
    """(result state, animation, time slider, frame plot, curves plot) of a ``rollout`` result."""
    from engines.pde_staggered.plots import curves_figure

    t = res["horizon"]
    return res, _path(res["animation"]), gr.Slider(maximum=t, value=t), frame(res, t), curves_figure(res)


def run_rollout(problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch, horizon, variants,
                progress=gr.Progress()):
    params = dict(horizon=int(horizon), variants=_variants(variants),
                  **_ic(problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch))
    job = JobRun(METHOD_ID, "rollout", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, *render_rollout(res), _status(res)


def run_rotate(problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch, element, steps, variants,
               progress=gr.Progress()):
    if element not in ELEMENT_NAMES:
        raise gr.Error(f"Unknown symmetry {element!r}: pick one of {', '.join(ELEMENT_NAMES)}.",
                       title="Invalid parameters")
    params = dict(element=ELEMENT_NAMES.index(element), steps=int(steps), variants=_variants(variants),
                  **_ic(problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch))
    job = JobRun(METHOD_ID, "rotate", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[VARIANT_LABELS[v], float(f"{res['errors'][v]:.3g}"), float(f"{max(res['one_step'][v]):.3g}")]
            for v in res["errors"]]
    yield (job.id, _path(res["figure"]), rows,
           f"Input transformed by **{res['element']}**; after {res['steps']} steps the p4m surrogates' predictions "
           f"transform with it (error ≈ float32 round-off), the p1 ones do not. Done in {res['elapsed_s']:.1f} s.")


def run_train(problem, steps, seed, pushforward, augment, variants, noise=0.0, progress=gr.Progress()):
    params = dict(problem=problem, steps=int(steps), seed=int(seed or 0), pushforward=bool(pushforward), augment=bool(augment),
                  variants=_variants(variants), noise=float(noise or 0.0))
    job = JobRun(METHOD_ID, "train", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[VARIANT_LABELS[v], res["params"][v], res["widths"][v], round(res["best_val"][v], 5),
             round(res["seconds"][v], 1)] for v in res["variants"]]
    yield (job.id, _path(res["loss_plot"]), rows,
           f"Trained (or loaded from the cache) {len(rows)} variants in {res['elapsed_s']:.1f} s. These weights are "
           "used by the rollout only if they match its default training configuration.")


def run_benchmark(problem, seeds, horizon, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "benchmark", dict(problem=problem, seeds=int(seeds), horizon=int(horizon)))
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[VARIANT_LABELS[v], round(res["nrmse_at"][v], 4), res["corr_time"][v], float(f"{res['mass_drift'][v]:.2g}"),
             float(f"{max(res['equivariance'][v]):.2g}"), round(res["ood_nrmse"][v], 4), res["params"][v]]
            for v in res["variants"]]
    verdict = "reproduced" if res["ordering"] else "not reproduced"
    yield (job.id, _path(res["figure"]), rows,
           f"Paper ordering p4m/M < p4m/∅ < p1/M ≤ p1/∅ (median NRMSE at step {res['horizon']}, {res['n_test']} "
           f"held-out ICs × {res['seeds']} seeds): **{verdict}**. Done in {res['elapsed_s']:.0f} s.")


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "A closed square basin of shallow water on a staggered **Arakawa C-grid** (height ζ at cell centres, "
        "velocities u, v on the cell faces), or decaying turbulence on a periodic staggered (MAC) grid. The reference "
        "solver is compared with four U-Net surrogates that each jump one coarse time step: plain (**p1**) or rotation/reflection-equivariant (**p4m**, via the paper's "
        "staggered input and output layers), each without (∅) or with a hard physical constraint (M: **mass** "
        "for shallow water; for turbulence a **stream-function** output, divergence-free and momentum-conserving). "
        "The paper's finding: symmetry helps more than physics, and both together stay closest to the solver longest."
    )
    job_id = gr.State(None)
    result = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            problem = gr.Radio(PROBLEM_CHOICES, value="swe", label="Problem", elem_id="pde_staggered_problem",
                               info="shallow water: closed basin, ζ shown; turbulence: periodic, vorticity shown")
            ic = gr.Dropdown(IC_CHOICES, value="random", label="Initial condition", elem_id="pde_staggered_ic")
            seed = gr.Number(0, precision=0, minimum=0, label="Seed (random bumps)")
            horizon = gr.Slider(5, MAX_HORIZON, value=60, step=1, label="Horizon (surrogate steps)",
                                elem_id="pde_staggered_horizon")
            variants = gr.CheckboxGroup(VARIANT_CHOICES, value=list(ALL_VARIANTS), label="Surrogates")
            with gr.Accordion("Bump, drawing and solver", open=False):
                amplitude = gr.Slider(-1.5, 1.5, value=0.2, step=0.05,
                                      label="Amplitude (bump height, mean depth H = 1; vortex strength ÷ 0.2)")
                bump_row = gr.Slider(0.0, 1.0, value=0.4, step=0.01, label="Placed bump: row")
                bump_col = gr.Slider(0.0, 1.0, value=0.6, step=0.01, label="Placed bump: column")
                bump_width = gr.Slider(0.02, 0.4, value=0.1, step=0.01, label="Placed bump: width")
                dt = gr.Dropdown(DT_CHOICES, value=0.5, label="Shallow-water solver time step dt (CFL limit ≈ 0.6)")
                sketch = gr.Sketchpad(label="Draw a region of raised water (choose 'drawn region')", type="numpy",
                                      height=260)
            with gr.Row():
                run = gr.Button("Run rollout", variant="primary", elem_id="pde_staggered_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="rollout status", elem_id="pde_staggered_status")
        with gr.Column(scale=3):
            anim = gr.Image(label="ζ over time: solver and surrogates (animation)", type="filepath",
                            elem_id="pde_staggered_anim", interactive=False)
            tslider = gr.Slider(0, 60, value=0, step=1, label="Time step (shared by all panels)",
                                elem_id="pde_staggered_time")
            frame_plot = gr.Plot(label="ζ at the chosen step for the solver and each surrogate, and |error|",
                                 elem_id="pde_staggered_frame")
            curves_plot = gr.Plot(label="NRMSE, correlation with the solver and mass drift against the step",
                                  elem_id="pde_staggered_curves")
    gr.Examples([["random", 0, 60], ["l_shape", 0, 60], ["vortex", 0, 40], ["bump", 0, 100]],
                inputs=[ic, seed, horizon], label="Initial conditions to try (then press Run rollout)")

    with gr.Accordion("Rotate the input: equivariance check", open=True):
        with gr.Row():
            element = gr.Dropdown(list(ELEMENT_NAMES), value="rot 90°", label="Symmetry g applied to the input")
            rot_steps = gr.Slider(1, 50, value=5, step=1, label="Surrogate steps before comparing")
            rotate_btn = gr.Button("Rotate the input", elem_id="pde_staggered_rotate")
        rotate_status = gr.Markdown(label="rotation check", elem_id="pde_staggered_rotate_status")
        with gr.Row():
            rotate_img = gr.Image(label="G(g·x) vs g·G(x)", type="filepath", elem_id="pde_staggered_rotate_img",
                                  interactive=False, scale=3)
            rotate_table = gr.Dataframe(headers=["variant", "error after the steps", "max one-step error (8 g)"],
                                        interactive=False, label="Relative equivariance error", scale=2, wrap=True)

    with gr.Accordion("Train surrogates (background job)", open=False):
        with gr.Row():
            train_steps = gr.Slider(20, 5000, value=1200, step=20, label="Optimizer steps")
            train_seed = gr.Number(1, precision=0, minimum=0, label="Training seed")
            pushforward = gr.Checkbox(False, label="Pushforward trick")
            augment = gr.Checkbox(False, label="Data augmentation (random D4 transforms)")
            noise = gr.Slider(0.0, 2.0, value=0.0, step=0.05, label="Training noise (× one-step change)",
                              info="noise injection: inputs corrupted, targets clean, so rollouts learn to self-correct")
            train_btn = gr.Button("Train", elem_id="pde_staggered_train")
        train_status = gr.Markdown(label="training status")
        with gr.Row():
            loss_img = gr.Image(label="Training losses", type="filepath", interactive=False, scale=3)
            train_table = gr.Dataframe(label="trained variants", headers=["variant", "parameters", "width", "best val loss", "seconds"],
                                       interactive=False, scale=2, wrap=True)

    with gr.Accordion("Factorial benchmark on held-out initial conditions (background job)", open=False):
        with gr.Row():
            bench_seeds = gr.Slider(1, 5, value=1, step=1, label="Seeds")
            bench_horizon = gr.Slider(10, MAX_HORIZON, value=60, step=5, label="Horizon")
            bench_btn = gr.Button("Run benchmark", elem_id="pde_staggered_benchmark")
        bench_status = gr.Markdown(label="benchmark status")
        bench_img = gr.Image(label="Median NRMSE and correlation", type="filepath", interactive=False)
        bench_table = gr.Dataframe(label="benchmark table", headers=["variant", "NRMSE at horizon", "corr. time", "mass drift",
                                            "equivariance err", "L-shape NRMSE", "parameters"], interactive=False, wrap=True)

    ic_inputs = [problem, ic, seed, bump_row, bump_col, bump_width, amplitude, dt, sketch]
    worked_example.on_load(METHOD_ID, "rollout", example(), render_rollout,
                           [result, anim, tslider, frame_plot, curves_plot], status, done=_example_status,
                           cancel_on=[run.click], missing=missing_models)
    ev1 = run.click(run_rollout, ic_inputs + [horizon, variants],
                    [job_id, result, anim, tslider, frame_plot, curves_plot, status], api_name="pde_staggered_rollout")
    tslider.release(frame, [result, tslider], frame_plot, api_name="pde_staggered_frame")
    ev2 = rotate_btn.click(run_rotate, ic_inputs + [element, rot_steps, variants],
                           [job_id, rotate_img, rotate_table, rotate_status], api_name="pde_staggered_rotate")
    ev3 = train_btn.click(run_train, [problem, train_steps, train_seed, pushforward, augment, variants, noise],
                          [job_id, loss_img, train_table, train_status], api_name="pde_staggered_train")
    ev4 = bench_btn.click(run_benchmark, [problem, bench_seeds, bench_horizon], [job_id, bench_img, bench_table, bench_status],
                          api_name="pde_staggered_benchmark")
    stop.click(cancel_job, job_id, status, cancels=[ev1, ev2, ev3, ev4], api_name="pde_staggered_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

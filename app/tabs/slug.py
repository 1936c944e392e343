"""Tab: SLUG — unlearn a concept by one gradient step on one layer, chosen on the importance/alignment Pareto front.

Run standalone with ``python -m app.tabs.slug`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.slug.params import BASELINE_LABELS, KIND_LABELS, TARGETS

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "slug"
KIND_CHOICES = [(v, k) for k, v in KIND_LABELS.items()]
BASELINE_CHOICES = [(v, k) for k, v in BASELINE_LABELS.items()]
BASELINE_HEADERS = ["method", "layer(s) changed", "forget acc@1", "retain acc", "utility acc", "reached target",
                    "gradient examples", "update seconds", "evaluations", "extra memory (MiB)"]


# the worked example shown on arrival: forget the digit "seven" with the tab's defaults
EXAMPLE = dict(target_kind="digit", target="seven", tower="both", selection="best_retain", forget_target=0.05,
               baselines=[], layer=None, rel_step=None, max_evals=10, max_rel_step=20.0, n_forget=256, n_retain=512,
               seed=0)
EXAMPLES = [["digit", "seven"], ["digit", "three"], ["object", "star"], ["style", "striped"]]


def set_example(kind, target):
    """An example row: the concept type and a target among that type's choices (the dropdown's choices follow)."""
    return kind, gr.update(choices=TARGETS.get(kind, TARGETS["digit"]), value=target)


def target_choices(kind):
    names = TARGETS.get(kind or "digit", TARGETS["digit"])
    default = {"digit": "seven", "object": "star", "style": "striped", "fashion": "trouser"}.get(kind, names[0])
    return gr.update(choices=names, value=default)


def _patch_path(res: dict) -> str:
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, res["patch_ref"]))


def baseline_rows(res: dict) -> list[list]:
    c = res["cost"]
    mib = 2 ** 20
    rows = [["SLUG", res["chosen"], round(res["after"]["forget1"], 3), round(res["after"]["retain"], 3),
             round(res["after"]["utility"], 3), True, c["grad_examples"], round(c["grad_s"], 2), c["chosen_evals"],
             round(c["state_bytes"] / mib, 2)]]
    for b in res["baselines"]:  # every baseline row carries the same cost fields (engines/slug/baselines.py)
        rows.append([b["label"], b["changed"], round(b["forget1"], 3), round(b["retain"], 3), round(b["utility"], 3),
                     bool(b["reached"]), b["grad_examples"], round(b["train_s"], 2),
                     round(b["evals"] / max(1, b.get("n", 1)), 1), round(b["state_bytes"] / mib, 2)])
    return rows


def summary(res: dict) -> str:
    b, a, c = res["before"], res["after"], res["cost"]
    miss = a["forget1"] > res["forget_target"]
    note = (f"  \n⚠ The manual step does not reach the forget target ({res['forget_target']:.0%})." if miss else "")
    return (f"**Layers touched: {len(res['changed'])}** — `{res['chosen']}` ({c['params_changed']:,} of "
            f"{c['params_total']:,} parameters), relative step r = {res['rel_step']:.3g} (λ = {res['lam']:.3g}).  \n"
            f"Forget accuracy on *{res['target']}*: {b['forget1']:.0%} → **{a['forget1']:.0%}**; "
            f"retain accuracy {b['retain']:.0%} → **{a['retain']:.0%}**; utility ({res['utility_task']}) "
            f"{b['utility']:.0%} → {a['utility']:.0%}.  \n"
            f"Cost: one pass over {res['n_forget']} forget + {res['n_retain']} retain pairs "
            f"({c['forget_batches']} + {c['retain_batches']} batches, {c['optimizer_steps']} optimiser steps), "
            f"{c['search_evals']} search evaluations over {len(res['searched'])} Pareto layer(s). "
            f"Original weights untouched; revert bit-exact: {res['revert_exact']}. Done in {res['elapsed_s']:.1f} s." + note)


def run_unlearn(kind, target, tower, selection, forget_pct, baselines, layer, rel_step, max_evals, max_rel, n_forget,
                n_retain, seed, progress=gr.Progress()):
    if not target:
        raise gr.Error("Choose a target concept to forget.", title="Nothing selected")
    if forget_pct is None or rel_step is None or max_rel is None:
        raise gr.Error("Forget target, manual step and largest step must be numbers (manual step 0 = search).",
                       title="Invalid parameters")
    params = dict(target_kind=kind, target=str(target), tower=tower, selection=selection,
                  forget_target=float(forget_pct) / 100.0, baselines=list(baselines or []),
                  layer=(layer or "").strip() or None, rel_step=float(rel_step) if rel_step and rel_step > 0 else None,
                  max_evals=int(max_evals), max_rel_step=float(max_rel), n_forget=int(n_forget), n_retain=int(n_retain), seed=int(seed))
    job = JobRun(METHOD_ID, "unlearn", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, *render_unlearn(res), summary(res)


def render_unlearn(res: dict) -> tuple:
    """(result state, scatter, search trace, accuracy bars, cost plot, table, patch file) of an ``unlearn`` result."""
    from engines.slug.plots import accuracy_bars, cost_figure, layer_scatter, search_trace

    return (res, layer_scatter(res), search_trace(res), accuracy_bars(res), cost_figure(res), baseline_rows(res),
            _patch_path(res))


def run_t2i(kind, target, probe_samples, steps, progress=gr.Progress()):
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings
    from engines.slug.plots import t2i_bars

    if not target:
        raise gr.Error("Choose a concept to forget.", title="Nothing selected")
    params = dict(target_kind=kind, target=str(target), probe_samples=int(probe_samples), steps=int(steps))
    job = JobRun(METHOD_ID, "unlearn_t2i", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued (loads the text-to-image model)…"
    res = job.wait(progress)
    root = get_settings().artifacts_dir
    b, a = res["before"], res["after"]
    msg = (f"Updated `{', '.join(res['chosen_names'])}` (deepest Pareto layer of the text encoder, r = {res['rel_step']:.3g}). "
           f"Judge accuracy on *{res['target']}*: {b['target']:.0%} → **{a['target']:.0%}**; unrelated concepts "
           f"({', '.join(res['others'])}): {b['others']:.0%} → **{a['others']:.0%}**; cross-domain {b['cross']:.0%} → "
           f"{a['cross']:.0%}. {res['cost']['probes']} judged probes, {res['elapsed_s']:.0f} s.")
    yield (job.id, str(resolve(root, res["gallery_before"])), str(resolve(root, res["gallery_after"])), t2i_bars(res), msg)


def reset_model(res):
    """The job never writes the stored weights: dropping the patch is all a reset needs."""
    msg = ("Model reset: the original zoo weights are in use (the stored checkpoint was never modified)."
           if res else "Nothing to reset: no patch has been applied.")
    return None, None, None, None, None, [], None, msg


def build() -> None:
    gr.Markdown(
        "SLUG removes one concept from a CLIP model with **one gradient computation, one layer, one step**. "
        "It computes the gradient of a forget loss (pull each forget image away from its own caption) and of the "
        "CLIP loss on retain data, scores every weight matrix by **importance** ‖g_f‖/‖θ‖ and **alignment** "
        "|cos(g_f, g_r)|, keeps the Pareto-optimal layers (important for forgetting, nearly orthogonal to "
        "retaining), binary-searches the step size for each, and applies the best single-layer patch. "
        "The model here is the zoo's tiny CLIP (trained on digits and minicanvas); the stored weights are never changed."
    )
    job_id = gr.State(None)
    result = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            kind = gr.Radio(KIND_CHOICES, value="digit", label="Concept type", elem_id="slug_kind")
            target = gr.Dropdown(TARGETS["digit"], value="seven", label="Concept to forget", elem_id="slug_target",
                                 allow_custom_value=True)
            tower = gr.Radio(["both", "vision", "text"], value="both", label="Candidate layers from tower(s)")
            selection = gr.Radio([("best retain accuracy among Pareto layers", "best_retain"),
                                  ("deepest Pareto layer (SD script's rule)", "deepest")], value="best_retain",
                                 label="Layer choice")
            forget_pct = gr.Slider(0, 30, value=5, step=1, label="Forget target: stop at forget accuracy ≤ (%)")
            baselines = gr.CheckboxGroup(BASELINE_CHOICES, value=[], label="Baselines at matched forget accuracy")
            with gr.Accordion("Advanced", open=False):
                layer = gr.Textbox("", label="Update this layer instead (parameter name, empty = Pareto choice)",
                                   placeholder="text_model.encoder.layers.2.mlp.fc1.weight", elem_id="slug_layer")
                rel_step = gr.Number(0, label="Manual relative step λ‖g‖/‖θ‖ (0 = binary search)", minimum=0)
                max_evals = gr.Slider(1, 20, value=10, step=1, label="Search evaluations per layer (paper: ≤ 10)")
                max_rel = gr.Number(20, label="Largest relative step the search may try")
                n_forget = gr.Slider(1, 1000, value=256, step=1, label="Forget pairs |D_f| (at most)")
                n_retain = gr.Slider(8, 4000, value=512, step=8, label="Retain pairs |D_r|")
                seed = gr.Number(0, precision=0, label="Seed", minimum=0)
            with gr.Row():
                run = gr.Button("Unlearn", variant="primary", elem_id="slug_run")
                stop = gr.Button("Stop", variant="stop")
                reset = gr.Button("Reset model", elem_id="slug_reset")
            status = gr.Markdown(label="unlearning status", elem_id="slug_status")
            patch = gr.File(label="Single-layer patch (safetensors)", interactive=False)
        with gr.Column(scale=3):
            scatter = gr.Plot(label="Every weight matrix: importance ‖g_f‖/‖θ‖ against alignment |cos(g_f, g_r)| "
                                    "(Pareto front marked)", elem_id="slug_scatter")
            trace = gr.Plot(label="Step-size search on the Pareto layers: forget and retain accuracy per step",
                            elem_id="slug_trace")
            bars = gr.Plot(label="Forget, retain and utility accuracy before and after", elem_id="slug_bars")
            cost = gr.Plot(label="Compute and memory: SLUG against the baselines", elem_id="slug_cost")
            table = gr.Dataframe(headers=BASELINE_HEADERS, interactive=False,
                                 label="SLUG vs baselines (scroll sideways for all columns)", wrap=True,
                                 elem_id="slug_table")
    gr.Examples(EXAMPLES, inputs=[kind, target], outputs=[kind, target], fn=set_example, run_on_click=True,
                cache_examples=False, label="Concepts to try (then press Unlearn)")

    with gr.Accordion("Text-to-image: forget a concept in the text encoder of the tiny Stable Diffusion (job)", open=False):
        gr.Markdown("SLUG updates one block of the pipeline's CLIP text encoder (the deepest Pareto layer; q/k/v or "
                    "fc1+fc2 together, as the official SD script) and the zoo's CNN judges read the generations. "
                    "Rows of the galleries: the forgotten concept first, then unrelated concepts.")
        with gr.Row():
            t_kind = gr.Radio([("minicanvas style", "style"), ("minicanvas object", "object")], value="style",
                              label="Concept type")
            t_target = gr.Dropdown(TARGETS["style"], value="striped", label="Concept to forget", allow_custom_value=True,
                                   elem_id="slug_t2i_target")
            t_samples = gr.Slider(2, 32, value=8, step=1, label="Images per concept per search probe")
            t_steps = gr.Slider(4, 50, value=20, step=1, label="Sampling steps")
            t_run = gr.Button("Unlearn in text-to-image", elem_id="slug_t2i_run")
        t_status = gr.Markdown(label="text-to-image status", elem_id="slug_t2i_status")
        with gr.Row():
            g_before = gr.Image(label="Before (original text encoder)", elem_id="slug_t2i_before")
            g_after = gr.Image(label="After SLUG", elem_id="slug_t2i_after")
        t_plot = gr.Plot(label="Judge accuracy on the forgotten and the unrelated concepts, before and after",
                         elem_id="slug_t2i_plot")

    kind.change(target_choices, kind, target, api_name="slug_targets")
    t_kind.change(target_choices, t_kind, t_target, api_visibility="private")
    ev2 = t_run.click(run_t2i, [t_kind, t_target, t_samples, t_steps], [job_id, g_before, g_after, t_plot, t_status],
                      api_name="slug_t2i")
    ev = run.click(run_unlearn, [kind, target, tower, selection, forget_pct, baselines, layer, rel_step, max_evals,
                                 max_rel, n_forget, n_retain, seed],
                   [job_id, result, scatter, trace, bars, cost, table, patch, status], api_name="slug_unlearn")
    worked_example.on_load(METHOD_ID, "unlearn", EXAMPLE, render_unlearn,
                           [result, scatter, trace, bars, cost, table, patch], status,
                           done=lambda r: "**Worked example** (press **Unlearn** to recompute or pick another concept). "
                                          + worked_example.as_example(summary(r)),
                           cancel_on=[run.click, reset.click], missing=lambda: worked_example.missing_zoo("clip"))
    reset.click(reset_model, result, [result, scatter, trace, bars, cost, table, patch, status], api_name="slug_reset")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="slug_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

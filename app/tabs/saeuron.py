"""Tab: Concept erasure sliders — SAeUron's sparse-autoencoder features, damped at inference time.

Run standalone with ``python -m app.tabs.saeuron`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.common.params import ParamError, validate
from engines.common.settings import get_settings
from engines.saeuron.params import COLOURS, CONCEPTS, KIND, OBJECTS, STYLES, BenchmarkParams, EraseParams

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "saeuron"
MAX_ROWS = 3
CONCEPT_CHOICES = [(f"{c} ({KIND[c]})", c) for c in CONCEPTS]
SEL_HEADERS = ["concept", "step", "timestep", "selected features"]
BENCH_HEADERS = ["target style", "units", "UA", "IRA", "CRA", "avg", "IRA₀", "CRA₀"]


def defaults() -> dict:
    if get_settings().profile == "test":
        return dict(steps=6, n_images=2)
    return dict(steps=25, n_images=4)


def _path(ref: str | None):
    if not ref:
        return None
    from engines.common.artifacts import resolve

    return str(resolve(get_settings().artifacts_dir, ref))


def _check(model, params: dict) -> None:
    try:
        validate(model, params)
    except ParamError as e:
        raise gr.Error(str(e), title="Invalid input") from None


def erase_params(obj, style, colour, prompt, seed, n_images, steps, guidance, concepts, *rest) -> dict:
    rows, (selection, percentile, units, preserve, uncond) = rest[: 4 * MAX_ROWS], rest[4 * MAX_ROWS:]
    concepts = list(concepts or [])
    if not concepts:
        raise gr.Error("Select at least one concept to erase.", title="Nothing selected")
    if len(concepts) > MAX_ROWS:
        raise gr.Error(f"At most {MAX_ROWS} concepts at once (got {len(concepts)}).", title="Too many concepts")
    edits = []
    for i, c in enumerate(concepts):
        gamma, top_m, t0, t1 = rows[4 * i: 4 * i + 4]
        edits.append(dict(concept=c, gamma=float(gamma), top_m=int(top_m), percentile=float(percentile),
                          t_start=float(t0), t_end=float(t1)))
    params = dict(object=obj, style=style, colour=colour, prompt=prompt or "", seed=int(seed), n_images=int(n_images),
                  steps=int(steps), guidance=float(guidance), concepts=edits, selection=selection, units=units,
                  preserve_error=bool(preserve), apply_uncond=bool(uncond))
    _check(EraseParams, params)
    return params


def example() -> dict:
    """The worked example shown on arrival: the first example row (erase 'striped' from a red star) with the
    tab's defaults."""
    d = defaults()
    rows = [-5.0, 4, 0.0, 1.0] * MAX_ROWS
    return erase_params("star", "striped", "red", "", 0, d["n_images"], d["steps"], 4.0, ["striped"], *rows,
                        "top_m", 99.5, "sae", True, True)


def missing_build() -> str | None:
    """Why the example cannot run yet: the SAEs and statistics are trained by a job, never on page load
    (the default setting's are in the model release)."""
    from engines.common import release
    from engines.saeuron.pipeline import build_dir, resolve_build

    d = build_dir(resolve_build(None))
    if (d / "build.json").exists() or release.manifest(METHOD_ID, d.name) is not None:
        return None
    return ("the sparse autoencoders and concept statistics are not built yet (a training job). Press "
            "**Train SAE & statistics** once, then reload the page or press **Erase**.")


def button_variants():
    """Highlight the button to press first: Train when nothing is built, else Erase."""
    try:
        built = missing_build() is None
    except Exception:  # the check must never break the page
        built = True
    return (gr.update(variant="primary" if built else "secondary"),
            gr.update(variant="secondary" if built else "primary"))


def _judge_move(j: dict, c: str) -> str:
    i = j["classes"].index(c)
    return f"P({c}) {j['before'][i]:.2f} → {j['after'][i]:.2f}"


def run_erase(*inputs, progress=gr.Progress()):
    params = erase_params(*inputs)
    job = JobRun(METHOD_ID, "erase", params)
    yield (job.id,) + (gr.skip(),) * 5 + (f"Job {job.id[:8]} running…",)
    r = job.wait(progress)
    yield job.id, *render_erase(r), erase_status(r, params)


def render_erase(r: dict) -> tuple:
    """(grid, judges, scores, heatmap, selected-features table) of an ``erase`` result."""
    return _path(r["grid"]), _path(r["judge_plot"]), _path(r["hist_plot"]), _path(r["heatmap_plot"]), r["selected"]


def erase_status(r: dict, params: dict) -> str:
    js, jo = r["judges"]["style"], r["judges"]["object"]
    moved = "; ".join(_judge_move(r["judges"][KIND[e["concept"]]], e["concept"]) for e in params["concepts"])
    return (f"**{r['prompt']}** — top: original, bottom: erased (same seeds). {moved}. "
            f"Style judge after: {', '.join(js['pred_after'])}; object judge after: {', '.join(jo['pred_after'])}. "
            f"Done in {r['seconds']:.1f} s.")


def build_lines(r: dict, when: str) -> list[str]:
    lines = [f"**Built** ({when}): {r['n_anchor_prompts']} anchor "
             f"prompts × {r['timesteps']} steps, statistics from {r['n_stats_prompts']} validation prompts."]
    for s in r["saes"]:
        lines.append(f"- {s['kind']} SAE at `{s['hook']}`: d_in {s['d_in']} → n {s['num_latents']}, k {s['k']}, "
                     f"FVU {s['fvu']:.3f}, L0 {s['l0']:.1f}, dead {100 * s['dead_fraction']:.1f}%")
    return lines


def current_build():
    """On page load: the training curve and record of the SAEs the tab uses (released or built here), so the
    panel is not empty; nothing when they are not built (the banner says what to do). Never trains."""
    try:
        from engines.saeuron.pipeline import built_summary

        got = built_summary(None)
    except Exception:  # the page must load even when the release is damaged (the example's banner says so)
        got = None
    if got is None:
        return gr.skip(), gr.skip()
    png, res = got
    return (str(png) if png else gr.skip()), "\n".join(build_lines(res.model_dump(), "model release or cache"))


def run_build(progress=gr.Progress()):
    job = JobRun(METHOD_ID, "build", {})
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    when = "cached" if r["cached"] else f"in {r['seconds']:.0f} s"
    lines = build_lines(r, when)
    yield job.id, _path(r.get("curve_plot")) or gr.skip(), "\n".join(lines)


def run_benchmark(targets, samples, baseline, pair, gamma, top_m, steps, progress=gr.Progress()):
    if not targets:
        raise gr.Error("Select at least one target style for the benchmark.", title="Nothing selected")
    params = dict(targets=list(targets), samples=int(samples), baseline=bool(baseline), pair=list(pair or []),
                  gamma=float(gamma), top_m=int(top_m), steps=int(steps))
    if len(params["pair"]) == 1:
        raise gr.Error("Pick two styles for the two-at-once erasure (or none).", title="Invalid input")
    _check(BenchmarkParams, params)
    job = JobRun(METHOD_ID, "benchmark", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    rows = [[x["target"], x["units"], round(x["UA"], 3), round(x["IRA"], 3), round(x["CRA"], 3),
             round((x["UA"] + x["IRA"] + x["CRA"]) / 3, 3), round(x["IRA0"], 3), round(x["CRA0"], 3)] for x in r["rows"]]
    m = r["mean"]
    md = " · ".join(f"**{u}**: UA {v['UA']:.2f}, IRA {v['IRA']:.2f}, CRA {v['CRA']:.2f}, avg {v['avg']:.2f}" for u, v in m.items())
    if r["pair"]:
        pr = r["pair"]
        md += f" · **pair {' + '.join(pr['styles'])}**: UA " + ", ".join(f"{k} {v:.2f}" for k, v in pr["UA"].items()) + \
              f", IRA {pr['IRA']:.2f}"
    md += f" (unedited style accuracy {r['base_style_acc']:.2f}, object {r['base_object_acc']:.2f}; done in {r['seconds']:.0f} s)"
    yield job.id, rows, _path(r["plot"]), md


def _rows_for(concepts):
    concepts = list(concepts or [])[:MAX_ROWS]
    ups = []
    for i in range(MAX_ROWS):
        if i < len(concepts):
            c = concepts[i]
            ups += [gr.update(visible=True), gr.update(value=f"**Erase '{c}'** ({KIND[c]}, one SAE for all {KIND[c]}s)")]
        else:
            ups += [gr.update(visible=False), gr.update()]
    return ups


def build() -> None:
    d = defaults()
    gr.Markdown(
        "**SAeUron** trains a sparse autoencoder (TopK, 16× wider than the block) on the activations of one "
        "cross-attention block of a text-to-image U-Net, over every denoising step. A few of its features carry a "
        "concept (a style, an object). Erasing = at each step, multiply those features by **γ·μ** (γ < 0, μ their mean "
        "on the concept) where they fire above their all-concept mean, decode, and add back the SAE's error, so "
        "everything else passes through untouched. The model's weights never change. "
        "The worked example below erases *striped* from a red star with the SAEs of the model release; pick "
        "concepts, drag the sliders or press **Erase**. Other SAE settings are trained by **Train SAE & statistics** "
        "(a training job, once)."
    )
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=2, min_width=340):
            with gr.Row():
                obj = gr.Dropdown(OBJECTS, value="star", label="object", elem_id="saeuron_object")
                style = gr.Dropdown(STYLES, value="striped", label="style", elem_id="saeuron_style")
                colour = gr.Dropdown(COLOURS, value="red", label="colour")
            prompt = gr.Textbox("", label="free prompt (optional; overrides the builder)",
                                placeholder="a blue heart in dotted style")
            with gr.Row():
                seed = gr.Number(0, precision=0, label="seed", minimum=0)
                n_images = gr.Slider(1, 8, value=d["n_images"], step=1, label="images")
            with gr.Row():
                steps = gr.Slider(2, 100, value=d["steps"], step=1, label="sampling steps")
                guidance = gr.Slider(1, 15, value=4.0, step=0.5, label="guidance (CFG)")
            concepts = gr.Dropdown(CONCEPT_CHOICES, value=["striped"], multiselect=True, max_choices=MAX_ROWS,
                                   label="concepts to erase", elem_id="saeuron_concepts")
            row_boxes, row_titles, row_inputs = [], [], []
            for i in range(MAX_ROWS):
                with gr.Group(visible=i == 0) as box:
                    title = gr.Markdown("**Erase 'striped'** (style, one SAE for all styles)" if i == 0 else "")
                    with gr.Row():
                        gamma = gr.Slider(-30, 0, value=-5.0, step=0.5, label="strength γ", elem_id=f"saeuron_gamma_{i}",
                                          info="multiplier γ·μ; 0 zeroes the features, < 0 pushes away")
                        top_m = gr.Slider(0, 32, value=4, step=1, label="features per timestep")
                    with gr.Row():
                        t0 = gr.Slider(0, 1, value=0.0, step=0.05, label="active from (0 = noisiest step)")
                        t1 = gr.Slider(0, 1, value=1.0, step=0.05, label="active until")
                row_boxes.append(box)
                row_titles.append(title)
                row_inputs += [gamma, top_m, t0, t1]
            with gr.Accordion("Selection and options", open=False):
                selection = gr.Radio([("top-m per timestep", "top_m"), ("percentile τ", "percentile")], value="top_m",
                                     label="feature selection")
                percentile = gr.Slider(90, 100, value=99.5, step=0.05, label="τ (percentile of the scores)")
                units = gr.Radio([("SAE features (SAeUron)", "sae"), ("raw channels (baseline)", "raw")], value="sae",
                                 label="units")
                preserve = gr.Checkbox(True, label="add back the SAE error (x − x̂)")
                uncond = gr.Checkbox(True, label="apply to the unconditional branch too")
            with gr.Row():
                erase_btn = gr.Button("Erase", variant="primary", elem_id="saeuron_erase")
                build_btn = gr.Button("Train SAE & statistics", elem_id="saeuron_build")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="erasure status", elem_id="saeuron_status")
            build_md = gr.Markdown(label="SAE build status", elem_id="saeuron_build_md")
            curve = gr.Image(label="SAE training: fraction of variance unexplained (after training)", type="filepath",
                             height=200)
        with gr.Column(scale=3):
            grid = gr.Image(label="original (top) vs erased (bottom), same seeds", type="filepath",
                            elem_id="saeuron_grid", height=300)
            judges = gr.Image(label="style and object judges' probabilities before / after", type="filepath",
                              elem_id="saeuron_judges")
            hist = gr.Image(label="importance scores of the SAE features (selected features in red)", type="filepath",
                            elem_id="saeuron_hist")
            heat = gr.Image(label="where the selected features fire in the image", type="filepath",
                            elem_id="saeuron_heat")
            table = gr.Dataframe(headers=SEL_HEADERS, label="selected features per timestep", interactive=False,
                                 wrap=True, elem_id="saeuron_table")
    with gr.Accordion("Benchmark: UA / IRA / CRA with the judges (a job)", open=False):
        with gr.Row():
            b_targets = gr.CheckboxGroup(STYLES, value=STYLES[:3], label="target styles")
            b_pair = gr.Dropdown(STYLES, value=["striped", "dotted"], multiselect=True, max_choices=2,
                                 label="two styles at once")
        with gr.Row():
            b_samples = gr.Slider(1, 8, value=1, step=1, label="seeds per prompt")
            b_gamma = gr.Slider(-30, 0, value=-5.0, step=0.5, label="γ")
            b_top = gr.Slider(0, 32, value=4, step=1, label="features per timestep")
            b_base = gr.Checkbox(True, label="raw-channel baseline (same budget)")
        bench_btn = gr.Button("Run benchmark", elem_id="saeuron_bench")
        bench_md = gr.Markdown(label="benchmark status")
        bench_table = gr.Dataframe(headers=BENCH_HEADERS, interactive=False, wrap=True,
                                   label="per target: unlearning (UA), in-domain (IRA) and cross-domain (CRA) accuracy")
        bench_plot = gr.Image(type="filepath", label="SAeUron per target (after 'Run benchmark')")
    gr.Examples([["star", "striped", "red", ["striped"]], ["circle", "dotted", "blue", ["dotted"]],
                 ["heart", "checkered", "green", ["checkered", "heart"]]],
                inputs=[obj, style, colour, concepts], label="Examples (then press Erase)")

    inputs = [obj, style, colour, prompt, seed, n_images, steps, guidance, concepts, *row_inputs,
              selection, percentile, units, preserve, uncond]
    outputs = [job_id, grid, judges, hist, heat, table, status]
    ev1 = erase_btn.click(run_erase, inputs, outputs, api_name="saeuron_erase")
    live = [s.release(run_erase, inputs, outputs, api_visibility="private", trigger_mode="always_last")
            for s in row_inputs]
    concepts.change(_rows_for, concepts, [x for pair in zip(row_boxes, row_titles) for x in pair],
                    api_visibility="private")
    ex = example()
    worked_example.on_load(METHOD_ID, "erase", ex, render_erase, [grid, judges, hist, heat, table], status,
                           done=lambda r: "**Worked example.** " + worked_example.as_example(erase_status(r, ex)), missing=missing_build,
                           cancel_on=[erase_btn.click, *(s.release for s in row_inputs)])
    gr.on(None, button_variants, None, [erase_btn, build_btn], api_visibility="private", show_progress="hidden")
    gr.on(None, current_build, None, [curve, build_md], api_visibility="private", show_progress="hidden")
    ev2 = build_btn.click(run_build, None, [job_id, curve, build_md], api_name="saeuron_build")
    ev3 = bench_btn.click(run_benchmark, [b_targets, b_samples, b_base, b_pair, b_gamma, b_top, steps],
                          [job_id, bench_table, bench_plot, bench_md], api_name="saeuron_benchmark")
    stop.click(cancel_job, job_id, status, cancels=[ev1, ev2, ev3, *live], api_name="saeuron_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

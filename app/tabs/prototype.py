"""Tab: Prompt-to-prototype — a designer's words → interface program → modelling commands → 3D model.

Run standalone with ``python -m app.tabs.prototype`` (inline jobs).
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from engines.prototype.params import DOMAIN_LABELS, MAPPER_LABELS, MAX_INSTRUCTION

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "prototype"
STATIC = Path(__file__).resolve().parents[2] / "static" / "prototype"  # default models, pre-built
EXAMPLES = [
    ["chair", "make the backrest taller and a bit more reclined, keep the seat as is"],
    ["lamp", "lower the lamp overall by a fifth"],
    ["mug", "make it shorter but keep the same volume"],
    ["chair", "round off the seat's corners"],
    ["chair", "make it sturdier"],
    ["stool", "give it three legs and spread the legs out a bit"],
    ["lamp", "make the shade much taller without touching the stem"],
    ["mug", "raise the handle span by 15 mm"],
    ["bottle", "make the spout narrower and the body a touch slimmer"],
    ["chair", "set the seat height to 90 cm"],
]
# the worked example shown on arrival: the first example applied to the default chair
EXAMPLE = {"domain": EXAMPLES[0][0], "instruction": EXAMPLES[0][1], "mapper": "interface", "spec_source": "induced",
           "calibration": 1.0}
PARAM_HEADERS = ["parameter", "before", "now", "unit", "range"]


def _path(ref: str | None) -> str | None:
    if not ref:
        return None
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, ref))


def _run(params: dict, progress=None) -> dict:
    """Embedding mappers and plain rebuilds run here (well under a second once MiniLM is loaded);
    the SmolLM2 mappers run as a job on the worker."""
    if params.get("mapper", "interface").startswith("llm") and params.get("instruction"):
        job = JobRun(METHOD_ID, "interpret", params)
        return job.wait(progress)
    from engines.common.params import ParamError
    from engines.prototype.studio import interpret

    try:
        return json.loads(interpret(params).model_dump_json())
    except (ParamError, ValueError) as e:
        raise gr.Error(str(e), title="Invalid input") from None


def _table(res: dict) -> list[list]:
    from engines.prototype.domains import get_domain
    from engines.prototype.interface import fmt_value

    d = get_domain(res["domain"])
    rows = []
    for p in d.params:
        b, a = res["state_before"][p.id], res["state_after"][p.id]
        mark = " ◀" if p.id in res["changed"] else ""
        rows.append([p.id + mark, fmt_value(b, p.unit), fmt_value(a, p.unit), p.unit,
                     f"{fmt_value(p.lo, p.unit)}–{fmt_value(p.hi, p.unit)}"])
    return rows


def _summary(res: dict, history: dict) -> str:
    lines = []
    if res["instruction"]:
        lines.append(f"**“{res['instruction']}”** → {MAPPER_LABELS[res['mapper']]}")
    if res["described"]:
        lines += ["", "**Executed:**"] + [f"- {d}" for d in res["described"]]
    for n in res["notes"]:
        lines.append(f"- ⚙ {n}")
    if res["refused"]:
        lines += ["", "**Refused — the model was left unchanged:**"] + [f"- ✋ {r}" for r in res["refused"]]
    if res["warnings"]:
        lines += ["", "**Not understood:**"] + [f"- ❓ {w}" for w in res["warnings"]]
    ob, oa = res.get("overall_before") or {}, res.get("overall_after") or {}
    if oa:
        from engines.prototype.interface import fmt_value

        unit = {"overall.capacity": "ml"}
        lines += ["", "**Overall:** " + " · ".join(
            f"{k.split('.')[1]} {fmt_value(ob[k], unit.get(k, 'cm'))}"
            + (f" → {fmt_value(oa[k], unit.get(k, 'cm'))}" if abs(oa[k] - ob[k]) > 1e-6 * max(1, ob[k]) else "")
            for k in oa)]
    r = res["realised"]
    lines += ["", f"Changed components (orange): {', '.join(res['changed_components']) or 'none'} · "
              f"{'valid' if r['watertight'] and r['relations_ok'] and r['bodies'] == 1 else 'INVALID'} solid "
              f"({r['volume_cm3']:.0f} cm³, watertight: {r['watertight']}) · "
              f"step {history['pos'] + 1}/{len(history['states'])} · "
              + " · ".join(f"{k} {v:.0f} ms" for k, v in res["timings_ms"].items())]
    return "\n".join(lines)


def _outputs(res: dict, history: dict):
    files = [p for p in (_path(res["glb"]), _path(res["stl"])) if p]
    program = json.dumps(res["program"], indent=1) if res["program"] else (
        json.dumps(res["patch"], indent=1) if res["patch"] else "[]")
    return (history, _path(res["glb"]), files, _summary(res, history), program,
            "\n".join(res["realised"]["commands"]), _table(res))


def render_example(res: dict):
    """The outputs of Apply for an ``interpret`` result on the default model. The history stays empty: the
    example is what Apply on the default chair gives, and the visitor's first Apply starts from that chair."""
    history = {"domain": res["domain"], "states": [res["state_before"], res["state_after"]], "pos": 1}
    return (gr.skip(), *_outputs(res, history)[1:])


def _new_history(domain: str) -> dict:
    from engines.prototype.domains import get_domain

    return {"domain": domain, "states": [get_domain(domain).defaults()], "pos": 0}


def _show(history: dict, highlight_from: dict | None = None):
    """Rebuild the model at the history's position; after undo / redo the components that differ from the
    previous step are highlighted."""
    from engines.common.context import LocalContext
    from engines.prototype.domains import get_domain
    from engines.prototype.studio import realise

    state = history["states"][history["pos"]]
    res = _run({"domain": history["domain"], "state": state, "export": False})
    if highlight_from is not None:
        d = get_domain(history["domain"])
        res["state_before"] = highlight_from
        res["changed"] = [k for k in state if abs(state[k] - highlight_from[k]) > 1e-12]
        res["changed_components"] = sorted({d.by_id[k].component for k in res["changed"]})
    _, res["glb"], res["stl"] = realise(get_domain(history["domain"]), state, res["changed_components"],
                                        LocalContext(), export=True)
    res["warnings"] = []
    return _outputs(res, history)


def apply(domain, instruction, mapper, spec_source, calibration, history, progress=gr.Progress()):
    if not history or history.get("domain") != domain:
        history = _new_history(domain)
    if len(instruction) > MAX_INSTRUCTION:
        raise gr.Error(f"The instruction is {len(instruction)} characters long; the limit is {MAX_INSTRUCTION}.")
    params = {"domain": domain, "instruction": instruction, "state": history["states"][history["pos"]],
              "mapper": mapper, "spec_source": spec_source, "calibration": calibration}
    res = _run(params, progress)
    if res["changed"]:
        history = dict(history, states=history["states"][: history["pos"] + 1] + [res["state_after"]])
        history["pos"] += 1
    return _outputs(res, history)


def run_program(domain, program, spec_source, calibration, history):
    if not history or history.get("domain") != domain:
        history = _new_history(domain)
    if not (program or "").strip():
        raise gr.Error("The program is empty: write a JSON list of operations.", title="Nothing to run")
    res = _run({"domain": domain, "program": program, "state": history["states"][history["pos"]],
                "spec_source": spec_source, "calibration": calibration})
    if res["changed"]:
        history = dict(history, states=history["states"][: history["pos"] + 1] + [res["state_after"]])
        history["pos"] += 1
    return _outputs(res, history)


def undo(history):
    if not history or history["pos"] == 0:
        raise gr.Error("Nothing to undo.", title="Undo")
    prev = history["states"][history["pos"]]
    history = dict(history, pos=history["pos"] - 1)
    return _show(history, highlight_from=prev)


def redo(history):
    if not history or history["pos"] >= len(history["states"]) - 1:
        raise gr.Error("Nothing to redo.", title="Redo")
    prev = history["states"][history["pos"]]
    history = dict(history, pos=history["pos"] + 1)
    return _show(history, highlight_from=prev)


def reset(domain):
    return _show(_new_history(domain))


def show_spec(domain, spec_source):
    from engines.prototype.specs import get_spec

    s = get_spec(domain, spec_source)
    lines = [f"### {DOMAIN_LABELS[domain]} — {spec_source} interface", "", "| component | names | attributes |",
             "|---|---|---|"]
    for c, e in s["components"].items():
        lines.append(f"| **{c}** | {', '.join(e['synonyms'])} | {', '.join(a.split('.')[1] for a in e['attributes'])} |")
    lines += ["", "| attribute | unit | range | slight / moderate / large | operation words (+ / −) |", "|---|---|---|---|---|"]
    for pid, a in s["attributes"].items():
        ws = s["operations"].get(a["attribute"], {})
        st = " / ".join(f"{v:g}" for v in a["steps"].values())
        lines.append(f"| {pid} | {a['unit']} | {a['range'][0]:g}–{a['range'][1]:g} | {st} | "
                     f"{', '.join(ws.get('+', [])[:6]) or '—'} / {', '.join(ws.get('-', [])[:6]) or '—'} |")
    lines += ["", "**Macros (abstraction layer):** " + ("; ".join(
        f"*{m['name']}* ({', '.join(m['phrases'][:4])}) → " + ", ".join(f"{e['target']} {e['dir']}" for e in m["edits"])
        for m in s["macros"]) or "none"), "", "**Relations:** " + "; ".join(r["reason"] for r in s["relations"])]
    if "induction" in s:
        q = s["induction"]["quality"]
        lines += ["", f"**Induced from** {s['induction']['corpus']} dev instructions: {q['clusters']} DPMM clusters, "
                  f"ARI {q['ari']:.2f} and purity {q['purity']:.2f} against hand labels, "
                  f"{100 * q['coverage']:.0f}% of parameters linked.", "",
                  "| cluster | kind | linked to | members |", "|---|---|---|---|"]
        for c in s["induction"]["clusters"][:40]:
            link = " ".join(map(str, c["link"])) if isinstance(c["link"], list) else (c["link"] or "—")
            lines.append(f"| {c['id']} | {c['kind']} | {link} | {', '.join(c['members'][:8])} |")
    return "\n".join(lines)


def run_specify(domain, alpha, trace_weight, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "specify", {"domains": [domain], "alpha": alpha, "trace_weight": trace_weight})
    yield job.id, "Specification job queued…"
    res = job.wait(progress)
    q = res["specs"][domain]["induction"]["quality"]
    yield job.id, (f"Re-induced the {domain} interface (α = {alpha}, trace weight {trace_weight}): {q['clusters']} "
                   f"clusters, ARI {q['ari']:.2f}, purity {q['purity']:.2f}, coverage {100 * q['coverage']:.0f}%. "
                   f"Saved as a job artifact; the bundled spec is unchanged.")


def run_benchmark(split, mappers, limit, progress=gr.Progress()):
    if not mappers:
        raise gr.Error("Select at least one mapper to benchmark.", title="Nothing selected")
    from engines.prototype.plots import error_figure, gap_figure

    job = JobRun(METHOD_ID, "benchmark", {"split": split, "mappers": list(mappers), "limit": int(limit)})
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Benchmark job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[r["label"], round(100 * r["overall"]["exact"], 1), round(100 * r["overall"]["over"], 1),
             round(100 * r["overall"]["under"], 1), round(r["overall"]["f1"], 3)] for r in res["runs"]]
    yield (job.id, gap_figure(res), error_figure(res), rows,
           f"Benchmark done: {res['n']} {split} instructions in {res['elapsed_s']:.0f} s.")


def build() -> None:
    gr.Markdown(
        "Designers talk about parts and qualities (“a bit more reclined”, “sturdier”); modelling tools take "
        "parameters and commands. An **interface** — components, typed attributes, operations with calibrated "
        "degrees, synonyms and macros, **derived automatically from a corpus** — sits between them: words → "
        "interface program → compiler (ranges, constraints, *keep* scopes) → modelling commands → 3D model. "
        "Only what you named changes (orange)."
    )
    history = gr.State(None)
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            domain = gr.Dropdown([(v, k) for k, v in DOMAIN_LABELS.items()], value="chair", label="Product")
            instruction = gr.Textbox(EXAMPLE["instruction"], label="Design instruction", lines=2, max_lines=4, elem_id="prototype_instruction",
                                     placeholder="make the backrest taller and a bit more reclined, keep the seat as is")
            with gr.Row():
                apply_btn = gr.Button("Apply", variant="primary", elem_id="prototype_apply")
                undo_btn = gr.Button("Undo", elem_id="prototype_undo")
                redo_btn = gr.Button("Redo")
                reset_btn = gr.Button("Reset")
            mapper = gr.Radio([(v, k) for k, v in MAPPER_LABELS.items()], value="interface", label="Mapper")
            spec_source = gr.Radio([("derived automatically", "induced"), ("hand-written", "hand")], value="induced",
                                   label="Interface specification")
            calibration = gr.Slider(0.25, 3.0, value=1.0, step=0.05, label="Degree calibration",
                                    info="scales what slight / moderate / large mean")
            gr.Examples(EXAMPLES, inputs=[domain, instruction], label="Examples (then press Apply)")
        with gr.Column(scale=2):
            model3d = gr.Model3D(str(STATIC / "chair.glb"), label="Prototype (changed components in orange)",
                                 elem_id="prototype_model",
                                 clear_color=(1, 1, 1, 1), height=420)
            example_note = gr.Markdown(label="worked example", elem_id="prototype_example_note")
            summary = gr.Markdown(label="edit summary", elem_id="prototype_summary")
            files = gr.File(label="Download (GLB, STL)", file_count="multiple", elem_id="prototype_files")
        with gr.Column(scale=2):
            program = gr.Code(label="Interface program (editable — fix it instead of rephrasing)", language="json",
                              interactive=True, elem_id="prototype_program")
            run_prog = gr.Button("Run program")
            params_df = gr.Dataframe(headers=PARAM_HEADERS, label="Parameters before and after (◀ = changed)",
                                     interactive=False, wrap=True, elem_id="prototype_params")
            commands = gr.Code(label="Compiled modelling commands", language=None, interactive=False)
    with gr.Accordion("Derived domain specification", open=False):
        spec_md = gr.Markdown(show_spec("chair", "induced"), label="interface specification")
        with gr.Row():
            alpha = gr.Slider(0.1, 20, value=1.0, step=0.1, label="DP concentration α")
            trace_w = gr.Slider(0.0, 10.0, value=4.0, step=0.5, label="Trace-profile weight")
            spec_btn = gr.Button("Re-run specification (job)")
        spec_status = gr.Markdown(label="specification status")
    with gr.Accordion("Benchmark of mappers (background job)", open=False):
        with gr.Row():
            split = gr.Radio(["test", "dev"], value="test", label="Split")
            b_mappers = gr.CheckboxGroup([(v, k) for k, v in MAPPER_LABELS.items()], value=["interface", "flat"],
                                         label="Mappers")
            limit = gr.Slider(0, 68, value=0, step=1, label="Instructions per domain (0 = all)")
        with gr.Row():
            bench_btn = gr.Button("Run benchmark", variant="primary")
            stop_btn = gr.Button("Stop", variant="stop")
        bench_status = gr.Markdown(label="benchmark status")
        with gr.Row():
            gap_plot = gr.Plot(label="Exact match per gap type (after 'Run benchmark')")
            err_plot = gr.Plot(label="Over- / under-specification per mapper (after 'Run benchmark')")
        bench_df = gr.Dataframe(label="benchmark table", headers=["mapper", "exact %", "unintended %", "missed %", "target F1"], interactive=False)

    outs = [history, model3d, files, summary, program, commands, params_df]
    worked_example.on_load(METHOD_ID, "interpret", EXAMPLE, render_example, outs, example_note,
                           done="*Worked example: the instruction above applied to the default chair (what **Apply** "
                                "gives). Type your own instruction and press **Apply**.*", cancel_on=[apply_btn.click, instruction.submit, run_prog.click, reset_btn.click],
                           own_status=True)
    apply_btn.click(apply, [domain, instruction, mapper, spec_source, calibration, history], outs,
                    api_name="prototype_apply")
    instruction.submit(apply, [domain, instruction, mapper, spec_source, calibration, history], outs,
                       api_name=False)
    run_prog.click(run_program, [domain, program, spec_source, calibration, history], outs,
                   api_name="prototype_run_program")
    undo_btn.click(undo, history, outs, api_name="prototype_undo")
    redo_btn.click(redo, history, outs, api_name="prototype_redo")
    reset_btn.click(reset, domain, outs, api_name="prototype_reset")
    domain.change(reset, domain, outs, api_name=False).then(show_spec, [domain, spec_source], spec_md, api_name=False)
    spec_source.change(show_spec, [domain, spec_source], spec_md, api_name="prototype_spec")
    ev1 = spec_btn.click(run_specify, [domain, alpha, trace_w], [job_id, spec_status], api_name="prototype_specify")
    ev2 = bench_btn.click(run_benchmark, [split, b_mappers, limit], [job_id, gap_plot, err_plot, bench_df, bench_status],
                          api_name="prototype_benchmark")
    stop_btn.click(cancel_job, job_id, bench_status, cancels=[ev1, ev2], api_name="prototype_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

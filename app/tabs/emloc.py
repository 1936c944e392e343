"""Tab: EMLoC — compress many in-context demonstrations chunk by chunk into a small per-layer KV memory.

Run standalone with ``python -m app.tabs.emloc`` (inline jobs).
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from engines.emloc.params import BASELINE_LABELS, MAX_SHOTS

from ..bridge import JobRun, cancel_job

METHOD_ID = "emloc"
EXAMPLE = Path(__file__).resolve().parents[2] / "engines" / "emloc" / "example.json"
CLASS_NAMES = "0123456789"


def _example() -> dict | None:
    try:
        return json.loads(EXAMPLE.read_text())
    except (OSError, ValueError):
        return None


def _summary(res: dict) -> str:
    v = res["variants"]
    e, f = v["emloc"], v["full"]
    lat = res.get("latency_s") or {}
    parts = [f"**{res['shots']} demonstrations** ({res['context_tokens']} tokens) in {len(res['chunks'])} chunks of "
             f"{res['chunk_size']}: EMLoC keeps **{100 * e['retained']:.1f}%** of the demonstration KV tokens "
             f"(per layer {e['per_layer']}), built in {res['compress_s']:.2f} s.",
             f"Accuracy on {e['n']} queries: EMLoC {e['correct']}/{e['n']}, full context {f['correct']}/{f['n']}, "
             + ", ".join(f"{BASELINE_LABELS[k].split(' (')[0]} {x['correct']}/{x['n']}" for k, x in v.items()
                         if k not in ("emloc", "full")) + " (baselines at EMLoC's budget).",
             f"JS to the full context's answers: {e.get('js_to_full', float('nan')):.4f} (δ = {res['delta']:g})."]
    if lat:
        parts.append(f"Per-query latency {1000 * lat['emloc']:.2f} ms vs {1000 * lat['full']:.2f} ms full "
                     f"({lat['full'] / max(lat['emloc'], 1e-9):.2f}×).")
    if not res.get("answers_kept", True):
        parts.append("⚠ some answer tokens were dropped.")
    return " ".join(parts)


def _query_rows(res: dict) -> list[list]:
    q = res["first_query"]
    return [[res["labels"].get(k, k), CLASS_NAMES[q[k]] if res["task"] == "digits" else f"class {q[k]}",
             "✓" if q[k] == q["truth"] else "✗"] for k in res["variants"]]


def _strip(res: dict, layer: int) -> str:
    """Which demonstration tokens layer ``layer``'s first KV head keeps: one cell per token, coloured by kind."""
    kept = set(res["kept_positions"][int(layer)][0]["pos"])
    colors = {0: "#4c78a8", 1: "#4c78a8", 2: "#4c78a8", 3: "#4c78a8", 4: "#f58518", 5: "#e45756", 6: "#bbbbbb"}
    n = res["context_tokens"]
    cells = "".join(f'<span title="token {i}" style="display:inline-block;width:4px;height:14px;margin:0;'
                    f'background:{colors[i % 7] if i in kept else "#f0f0f0"}"></span>' for i in range(n))
    return (f"<div style='line-height:0'>{cells}</div><small>layer {layer}, head 0: kept {len(kept)} of {n} tokens "
            "(blue image, orange QUERY, red answer, grey SEP; pale = dropped)</small>")


def _figures(res: dict):
    from engines.emloc.plots import compare_figure, memory_figure, trace_figure

    return memory_figure(res), compare_figure(res), trace_figure(res)


def run_memory(task, shots, chunk, delta, ratios, queries, seed, progress=gr.Progress()):
    try:
        rs = tuple(float(x) for x in str(ratios).replace(";", ",").split(",") if x.strip())
    except ValueError:
        raise gr.Error(f"ratios: write numbers between 0 and 1 separated by commas (got {ratios!r})") from None
    params = dict(task=task, shots=int(shots), chunk_size=int(chunk), delta=float(delta), ratios=list(rs),
                  queries=int(queries), seed=int(seed))
    job = JobRun(METHOD_ID, "build_memory", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    m, c, t = _figures(res)
    yield job.id, res, m, c, t, _query_rows(res), _strip(res, 0), _summary(res)


def run_benchmark(task, episodes, chunk, delta, progress=gr.Progress()):
    from engines.emloc.plots import benchmark_figure

    job = JobRun(METHOD_ID, "benchmark", dict(task=task, episodes=int(episodes), chunk_size=int(chunk),
                                              delta=float(delta)))
    yield job.id, gr.skip(), f"Benchmark job {job.id[:8]} queued…"
    res = job.wait(progress)
    lines = [f"{n} shots: " + ", ".join(f"{res['labels'][v].split(' (')[0]} {100 * x['accuracy']:.1f}% "
                                         f"@ {100 * x['retained']:.0f}%" for v, x in r.items())
             for n, r in res["rows"].items()]
    yield job.id, benchmark_figure(res), "  \n".join(lines)


def build() -> None:
    gr.Markdown(
        "**The paper's claim:** many in-context demonstrations can be compressed *chunk by chunk* into a small "
        "per-layer key/value memory, each layer keeping as few tokens as its Jensen-Shannon budget δ allows, "
        "and still answer as well as the full context at a fraction of the memory and latency. "
        "**What to click first:** the example below is already computed (64 demonstrations of a new labelling "
        "for a tiny multimodal model trained here); drag δ and press **Build memory** to see layers keep more "
        "or fewer tokens.")
    ex = _example()
    job_id = gr.State(None)
    result = gr.State(ex)
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            task = gr.Radio([("synthetic prototypes", "prototype"), ("digits (8×8, real)", "digits")],
                            value="prototype", label="Task", elem_id="emloc_task")
            shots = gr.Slider(1, MAX_SHOTS, value=64, step=1, label="Demonstrations (shots)",
                              elem_id="emloc_shots", info=f"the model was trained up to {MAX_SHOTS}")
            chunk = gr.Slider(1, 64, value=16, step=1, label="Chunk size (demos)", elem_id="emloc_chunk")
            delta = gr.Slider(0.0005, 0.05, value=0.005, step=0.0005, label="JS bound δ", elem_id="emloc_delta")
            ratios = gr.Textbox("0.1, 0.2, 0.5", label="Candidate retention ratios (smallest tried first)",
                                elem_id="emloc_ratios")
            queries = gr.Slider(1, 200, value=20, step=1, label="Queries")
            seed = gr.Number(0, precision=0, label="Episode seed", minimum=0)
            with gr.Row():
                run = gr.Button("Build memory", variant="primary", elem_id="emloc_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(_summary(ex) if ex else "", elem_id="emloc_status", label="memory summary")
        with gr.Column(scale=3):
            m, c, t = _figures(ex) if ex else (None, None, None)
            mem_plot = gr.Plot(m, label="Memory", elem_id="emloc_memory")
            cmp_plot = gr.Plot(c, label="EMLoC vs full vs baselines", elem_id="emloc_compare")
            with gr.Row():
                qtable = gr.Dataframe(_query_rows(ex) if ex else None, headers=["variant", "answer", "right?"],
                                      interactive=False, wrap=True, column_widths=["60%", "25%", "15%"],
                                      label="The first query, answered by each memory",
                                      elem_id="emloc_query")
                with gr.Column():
                    layer = gr.Slider(0, 3, value=0, step=1, label="Token strip: layer")
                    strip = gr.HTML(_strip(ex, 0) if ex else "", elem_id="emloc_strip", label="kept tokens of one layer")
            trace_plot = gr.Plot(t, label="JS search trace", elem_id="emloc_trace")
    with gr.Accordion("Benchmark over held-out episodes (background job)", open=False):
        with gr.Row():
            b_eps = gr.Slider(5, 1000, value=50, step=5, label="Episodes per shot count (128 and 256 shots)")
            b_btn = gr.Button("Run benchmark")
        b_status = gr.Markdown(elem_id="emloc_bench_status", label="benchmark summary")
        b_plot = gr.Plot(label="Accuracy vs retained tokens")
    ev = run.click(run_memory, [task, shots, chunk, delta, ratios, queries, seed],
                   [job_id, result, mem_plot, cmp_plot, trace_plot, qtable, strip, status], api_name="emloc_build")
    layer.change(lambda r, l: _strip(r, l) if r else "", [result, layer], strip, api_name="emloc_strip")
    ev2 = b_btn.click(run_benchmark, [task, b_eps, chunk, delta], [job_id, b_plot, b_status], api_name="emloc_benchmark")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="emloc_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

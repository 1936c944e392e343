"""Tab: ZapFormat — Earley-based constrained decoding with dynamic pruning and a state cache.

Run standalone with ``python -m app.tabs.zapformat`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.common.params import ParamError, validate
from engines.zapformat.params import (MAX_INDENT, MAX_NEW_TOKENS, MIN_NEW_TOKENS, BenchmarkParams, GenerateParams,
                                      StepParams)

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "zapformat"
FIRST = "address (flat schema)"  # the gallery entry of the worked example shown on arrival
KINDS = [("JSON Schema", "json_schema"), ("Regex", "regex"), ("KBNF grammar (CFG)", "cfg")]
VOCABS = [("Qwen2.5, first 2,048 merges (fast)", "qwen2.5-mini"), ("Qwen2.5 (151,643 tokens)", "qwen2.5"),
          ("cl100k (100,256)", "cl100k"), ("Llama-3 (128,000)", "llama3"), ("SmolLM2 (49,152)", "smollm2")]
GALLERY = {
    "address (flat schema)": "address", "linked list (recursive $ref)": "linkedlist", "orders (nested $refs)": "orders",
    "function call": "function_call", "arithmetic (CFG)": "arith", "generic JSON (CFG)": "json",
    "ISO date-time (regex)": "datetime", "e-mail (regex)": "email",
}
STEP_HEADERS = ["step", "token", "allowed", "mask µs", "cache hit", "simulated", "sets before", "items before",
                "sets after", "items after"]
BENCH_HEADERS = ["engine", "workload", "status", "compile s", "cold mean ms", "cold p99 ms", "warm mean ms", "RSS MB"]
SAMPLE_HEADERS = ["prompt", "constrained", "valid", "stopped by", "unconstrained", "valid "]
WHITESPACE = [("bounded: at most one newline, then up to max indent spaces/tabs", "bounded"),
              ("compact: no whitespace at all", "compact"), ("flexible: any whitespace (unbounded)", "flexible")]
STOPS = {"eos": "EOS (complete)", "max_new_tokens": "max new tokens", "dead_end": "dead end"}


def load_example(name: str):
    from engines.zapformat.workloads import WORKLOADS

    if name not in GALLERY:
        raise gr.Error(f"Unknown example {name!r}.", title="Gallery")
    w = WORKLOADS[GALLERY[name]]
    return w.kind, w.source, w.instances(1, seed=1)[0]


def _params(model, **kw):
    try:
        return validate(model, kw)
    except ParamError as e:
        raise gr.Error(str(e), title="Invalid parameters") from None


def _whole(value, name: str, lo: int, hi: int) -> int:
    """A whole number in [lo, hi], or a gr.Error naming the parameter and its range."""
    try:
        if isinstance(value, bool):
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{name} must be a whole number from {lo} to {hi} (got {str(value)[:40]!r}).",
                       title="Invalid parameters") from None
    if v != v or not lo <= v <= hi or v != int(v):
        raise gr.Error(f"{name} must be a whole number from {lo} to {hi} (got {str(value)[:40]}).",
                       title="Invalid parameters")
    return int(v)


def step(kind, grammar, vocab, target, cache, compaction, rpc, eager, threshold, passes, whitespace="bounded",
         max_indent=16):
    from engines.zapformat.experiment import step_through

    if not (grammar or "").strip():
        raise gr.Error("Write a grammar, schema or regex first (or load an example).", title="Empty grammar")
    if not (target or ""):
        raise gr.Error("Type a target text to step through.", title="Empty target")
    p = _params(StepParams, grammar_kind=kind, grammar=grammar, vocab=vocab, target=target, cache=cache,
                compaction=compaction, rejected_prefix_cache=rpc, eager_regex_cache=eager,
                eager_min_tokens=int(threshold), passes=int(passes), whitespace=whitespace,
                max_indent=_whole(max_indent, "max_indent", 0, MAX_INDENT))
    try:
        res = step_through(p).model_dump()
    except ValueError as e:
        raise gr.Error(str(e), title="Invalid grammar") from None
    return render_step(res)


def example_params() -> dict:
    kind, grammar, target = load_example(FIRST)
    return StepParams(grammar_kind=kind, grammar=grammar, vocab="qwen2.5-mini", target=target).model_dump(mode="json")


def render_step(res: dict) -> tuple:
    """Plot, step table, status line and compiled KBNF of a ``step_through`` result."""
    from engines.zapformat.plots import step_figure

    last = res["passes"][-1]
    rows = [[r["step"], repr(r["token"]), r["allowed"], round(r["mask_us"], 1), r["cache_hit"], r["simulated"],
             r["sets_before"], r["items_before"], r["sets_after"], r["items_after"]] for r in last]
    return step_figure(res), rows, step_status(res), res["kbnf"]


def example_status(res: dict) -> str:
    means = ", ".join(f"pass {k + 1}: {m:.0f} µs ({100 * h:.0f}% cache hits)" for k, (m, h) in
                      enumerate(zip(res["mean_us"], res["hit_rate"])))
    return (f"**Worked example:** the gallery's *{FIRST}* replayed over {len(res['passes'][0])} tokens of "
            f"{res['vocab']}; mean mask time {means}. Press **Step through** to replay it yourself.")


def step_status(res: dict) -> str:
    means = ", ".join(f"pass {k + 1}: {m:.0f} µs ({100 * h:.0f}% hits)" for k, (m, h) in
                      enumerate(zip(res["mean_us"], res["hit_rate"])))
    return (f"**{res['message']}**  \n{len(res['passes'][0])} steps on {res['vocab']} ({res['vocab_size']:,} ids); "
            f"compile {res['compile_s']:.2f} s; mean mask time {means}.")


def whitespace_note(kind: str, whitespace: str, max_indent: int) -> str:
    if kind != "json_schema":
        return "whitespace as the grammar writes it"
    return {"bounded": f"bounded whitespace (at most one newline, then ≤ {max_indent} spaces/tabs, before each token)",
            "compact": "compact (no whitespace)", "flexible": "flexible whitespace (any amount)"}[whitespace]


def grammar_panel(kind: str, grammar: str, whitespace: str, max_indent: int):
    """The schema/grammar the samples were constrained by, shown beside them."""
    label = {"json_schema": "JSON Schema", "regex": "Regex", "cfg": "KBNF grammar"}.get(kind, kind)
    return gr.Code(value=grammar, language="json" if kind == "json_schema" else None,
                   label=f"{label} of these samples · {whitespace_note(kind, whitespace, max_indent)}")


def run_generate(kind, grammar, prompt, samples, max_new, temperature, whitespace="bounded", max_indent=16,
                 progress=gr.Progress()):
    max_new = _whole(max_new, "max_new_tokens", MIN_NEW_TOKENS, MAX_NEW_TOKENS)
    p = _params(GenerateParams, grammar_kind=kind, grammar=grammar, prompt=prompt, samples=int(samples),
                max_new_tokens=max_new, temperature=float(temperature), whitespace=whitespace,
                max_indent=_whole(max_indent, "max_indent", 0, MAX_INDENT))
    job = JobRun(METHOD_ID, "generate", p.model_dump())
    yield (job.id, gr.skip(), f"Job {job.id[:8]} queued (SmolLM2 loads on first use)…",
           grammar_panel(p.grammar_kind, p.grammar, p.whitespace, p.max_indent))
    res = job.wait(progress)
    yield (job.id, *render_generate(res), grammar_panel(res.get("grammar_kind", p.grammar_kind),
                                                        res.get("grammar") or p.grammar, p.whitespace, p.max_indent))


def render_generate(res: dict) -> tuple[list, str]:
    rows = [[s["prompt"], s["constrained"], s["constrained_valid"], STOPS.get(s.get("stop", "eos"), s.get("stop")),
             s["unconstrained"], s["unconstrained_valid"]] for s in res["samples"]]
    dead = sum(s["dead_end"] for s in res["samples"])
    capped = sum(s.get("stop") == "max_new_tokens" for s in res["samples"])
    cap = res.get("max_new_tokens")
    md = (f"**Valid: constrained {100 * res['constrained_valid_rate']:.0f}%, unconstrained "
          f"{100 * res['unconstrained_valid_rate']:.0f}%.** Mask overhead {res['mask_ms_per_token']:.2f} ms per token "
          f"per sequence; generation {res['constrained_s']:.1f} s constrained vs {res['unconstrained_s']:.1f} s free."
          + (f" {dead} sample(s) reached a dead end (no allowed token) and stopped." if dead else "")
          + (f" {capped} constrained sample(s) reached the cap of {cap} new tokens before EOS (raise *Max new "
             "tokens* or tighten the grammar)." if capped else ""))
    return rows, md


def run_benchmark(engines, workloads, vocab, instances, progress=gr.Progress()):
    if not engines:
        raise gr.Error("Select at least one engine.", title="Nothing selected")
    if not workloads:
        raise gr.Error("Select at least one workload.", title="Nothing selected")
    p = _params(BenchmarkParams, engines=tuple(engines), workloads=tuple(workloads), vocab=vocab,
                instances=int(instances))
    job = JobRun(METHOD_ID, "benchmark", p.model_dump())
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    root = get_settings().artifacts_dir
    rows = [[r["engine"], r["workload"], r["status"], _r(r.get("compile_s")), _r(r.get("cold_mean_ms")),
             _r(r.get("cold_p99_ms")), _r(r.get("warm_mean_ms")), _r(r.get("rss_mb"), 1)] for r in res["rows"]]
    yield (job.id, str(resolve(root, res["figure"])), rows, str(resolve(root, res["csv"])),
           f"Benchmark done in {res['elapsed_s']:.0f} s (job {job.id[:8]}); machine shared, timings are noisy.")


def _r(v, nd=4):
    return "" if v is None else round(v, nd)


def build() -> None:
    gr.Markdown(
        "A constrained decoder must tell, at every step, which tokens keep the output inside a grammar. "
        "**ZapFormat** runs a byte-level **Earley** recognizer, **prunes** every Earley set that no live item "
        "can reach again, and **caches** each step's mask under the pruned state, so repeated states cost a "
        "dictionary lookup. Write a JSON Schema, regex or KBNF grammar, replay a target text token by token, "
        "and watch masks, cache hits and the Earley sets before and after pruning."
    )
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=2, min_width=360):
            with gr.Row():
                example = gr.Dropdown(list(GALLERY), value=FIRST, label="Gallery", scale=3)
                load = gr.Button("Load example", scale=1)
            kind = gr.Radio(KINDS, value="json_schema", label="Grammar kind")
            ex_kind, ex_grammar, ex_target = load_example(FIRST)
            grammar = gr.Code(ex_grammar, label="Grammar", language="json", lines=12, elem_id="zapformat_grammar")
            target = gr.Textbox(ex_target, label="Target text (replayed token by token)", lines=2,
                                elem_id="zapformat_target")
            vocab = gr.Dropdown(VOCABS, value="qwen2.5-mini", label="Vocabulary")
            with gr.Row():
                whitespace = gr.Dropdown(WHITESPACE, value="bounded", label="JSON whitespace (JSON Schemas only)",
                                         scale=3, elem_id="zapformat_whitespace")
                max_indent = gr.Slider(0, MAX_INDENT, value=16, step=1, label="Max indent (bounded)", scale=1)
            with gr.Accordion("Engine switches (ablation)", open=False):
                cache = gr.Checkbox(True, label="State cache (keyed by the pruned Earley sets)")
                compaction = gr.Checkbox(True, label="Dynamic pruning (Earley-set compaction)")
                rpc = gr.Checkbox(True, label="Rejected-prefix cache")
                eager = gr.Checkbox(True, label="Eager regex cache")
                threshold = gr.Slider(1, 20000, value=1000, step=1, label="Eager cache: minimum tokens per set")
                passes = gr.Slider(1, 3, value=2, step=1, label="Passes over the target (2nd = warm cache)")
            step_btn = gr.Button("Step through", variant="primary", elem_id="zapformat_step")
            status = gr.Markdown(label="step status", elem_id="zapformat_status")
        with gr.Column(scale=3):
            plot = gr.Plot(label="Mask time and live Earley items per decoding step", elem_id="zapformat_plot")
            table = gr.Dataframe(headers=STEP_HEADERS, label="Steps of the last pass (scroll sideways for all columns)",
                                 interactive=False, max_height=320, elem_id="zapformat_table")
            with gr.Accordion("Compiled KBNF", open=False):
                kbnf_out = gr.Code(label="KBNF", lines=10)
    with gr.Tab("Generate with SmolLM2"):
        with gr.Row():
            prompt = gr.Textbox("Give the postal address of a famous building as JSON.", label="Prompt", scale=3)
            samples = gr.Slider(1, 16, value=4, step=1, label="Samples")
            max_new = gr.Slider(MIN_NEW_TOKENS, MAX_NEW_TOKENS, value=96, step=8,
                                label=f"Max new tokens ({MIN_NEW_TOKENS}-{MAX_NEW_TOKENS})")
            temperature = gr.Slider(0.0, 1.5, value=0.7, step=0.1, label="Temperature")
        with gr.Row():
            gen_btn = gr.Button("Generate (constrained vs free)", variant="primary")
            stop1 = gr.Button("Stop", variant="stop")
        gen_md = gr.Markdown(label="generation result")
        with gr.Row():
            gen_table = gr.Dataframe(headers=SAMPLE_HEADERS, label="Samples", interactive=False, wrap=True, scale=3)
            gen_grammar = gr.Code(label="Schema / grammar of these samples", lines=14, interactive=False, scale=2,
                                  elem_id="zapformat_gen_grammar")
    with gr.Tab("Benchmark against peers"):
        with gr.Row():
            engines = gr.CheckboxGroup(["zapformat", "kbnf", "llguidance", "outlines-core", "lm-format-enforcer",
                                        "xgrammar"], value=["zapformat", "kbnf", "llguidance", "lm-format-enforcer"],
                                       label="Engines")
            workloads = gr.CheckboxGroup(list(dict.fromkeys(GALLERY.values())), value=["address", "json", "arith"],
                                         label="Workloads")
        with gr.Row():
            bvocab = gr.Dropdown(VOCABS, value="qwen2.5-mini", label="Vocabulary")
            instances = gr.Slider(1, 20, value=3, step=1, label="Instances per workload")
            bench_btn = gr.Button("Run engine benchmark", variant="primary")
            stop2 = gr.Button("Stop", variant="stop")
        bench_md = gr.Markdown(label="benchmark status")
        bench_img = gr.Image(label="Compile, cold and warm mask time", type="filepath")
        bench_table = gr.Dataframe(headers=BENCH_HEADERS, label="Results", interactive=False)
        bench_csv = gr.File(label="CSV")

    worked_example.on_load(METHOD_ID, "step_through", example_params(),
                           lambda r: (lambda fig, rows, _, kbnf: (fig, rows, kbnf))(*render_step(r)),
                           [plot, table, kbnf_out], status,
                           done=example_status,
                           cancel_on=[step_btn.click])
    load.click(load_example, example, [kind, grammar, target], api_name="zapformat_example")
    step_inputs = [kind, grammar, vocab, target, cache, compaction, rpc, eager, threshold, passes, whitespace, max_indent]
    step_btn.click(step, step_inputs, [plot, table, status, kbnf_out], api_name="zapformat_step")
    ev1 = gen_btn.click(run_generate, [kind, grammar, prompt, samples, max_new, temperature, whitespace, max_indent],
                        [job_id, gen_table, gen_md, gen_grammar], api_name="zapformat_generate")
    ev2 = bench_btn.click(run_benchmark, [engines, workloads, bvocab, instances],
                          [job_id, bench_img, bench_table, bench_csv, bench_md], api_name="zapformat_benchmark")
    stop1.click(cancel_job, job_id, gen_md, cancels=[ev1, ev2], api_name="zapformat_stop")
    stop2.click(cancel_job, job_id, bench_md, cancels=[ev1, ev2], api_visibility="private")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

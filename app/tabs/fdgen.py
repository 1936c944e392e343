"""Tab: FDGen — fair graph generation that removes both feature bias and structural bias.

Run standalone with ``python -m app.tabs.fdgen`` (inline jobs).
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr

from engines.common.params import ParamError, validate
from engines.common.settings import get_settings
from engines.fdgen.params import (ALL_VARIANTS, BACKBONE_LABELS, DATASET_LABELS, VARIANT_LABELS, DataParams,
                                  SweepParams, TrainParams)

from ..bridge import JobRun, cancel_job

METHOD_ID = "fdgen"
# the results table's columns before the first run (engines.fdgen.plots.metrics_table, without importing matplotlib)
TABLE_HEADERS = ["graph", "GCN accuracy", "ΔSP", "ΔEO", "sensitive homophily h_s", "degree gap Δdeg",
                 "probe AUC (s from X)", "feature MMD² between groups", "degree MMD vs real", "clustering MMD vs real",
                 "feature MMD² vs real"]
TEXT_SUFFIXES = {".csv", ".tsv", ".txt", ".edgelist", ".edges"}
BIAS_ROWS = [("nodes", "nodes", "{:.0f}"), ("edges", "edges", "{:.0f}"), ("mean_degree", "mean degree", "{:.1f}"),
             ("minority_share", "share of s = 1", "{:.2f}"), ("base_rate_gap", "label base-rate gap |ΔP(y=1)|", "{:.3f}"),
             ("h_s", "sensitive homophily h_s", "{:.3f}"), ("h_s_random", "h_s under random mixing", "{:.3f}"),
             ("dyadic_gap", "dyadic gap P(e|same) − P(e|diff)", "{:.4f}"), ("degree_gap", "degree gap Δdeg", "{:.2f}"),
             ("feature_mmd_s", "feature MMD² between groups", "{:.4f}"), ("probe_auc", "probe AUC (s from X)", "{:.3f}")]


def defaults() -> dict:
    """Tab defaults; the test profile uses micro sizes so the browser test finishes in seconds."""
    if get_settings().profile == "test":
        return dict(n_nodes=120, epochs=20, steps=4, seeds=1, samples=1)
    return dict(n_nodes=600, epochs=400, steps=12, seeds=1, samples=2)


def _read_upload(path, what: str) -> str:
    if not path:
        return ""
    p = Path(path)
    if p.suffix.lower() not in TEXT_SUFFIXES:
        raise gr.Error(f"The {what} must be a text file ({', '.join(sorted(TEXT_SUFFIXES))}), got '{p.name}'.",
                       title="Wrong file type")
    try:
        return p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise gr.Error(f"The {what} '{p.name}' is not UTF-8 text.", title="Wrong file type") from None


def data_params(dataset, n_nodes, sensitive, knn, minority, homophily, feature_bias, label_bias, avg_degree,
                edges_file, nodes_file) -> dict:
    d = dict(dataset=dataset, n_nodes=int(n_nodes), sensitive=sensitive, knn=int(knn), minority=minority,
             homophily=homophily, feature_bias=feature_bias, label_bias=label_bias, avg_degree=avg_degree)
    if dataset == "upload":
        if not edges_file or not nodes_file:
            raise gr.Error("Upload both an edge list and a node table (CSV with id, s, y and feature columns).",
                           title="Missing upload")
        d["upload_edges"] = _read_upload(edges_file, "edge list")
        d["upload_nodes"] = _read_upload(nodes_file, "node table")
    return d


def _check(model, params: dict) -> None:
    try:
        validate(model, params)
    except ParamError as e:
        raise gr.Error(str(e), title="Invalid input") from None


def run_inspect(*data_inputs):
    from engines.fdgen.experiment import inspect
    from engines.fdgen.plots import inspect_figure

    params = data_params(*data_inputs)
    _check(DataParams, params)
    res, g = inspect(params)
    rows = [[label, fmt.format(res.bias[k])] for k, label, fmt in BIAS_ROWS]
    notes = "; ".join(res.notes)
    md = (f"**{res.label}** — sensitive attribute *{res.s_name}*, label *{res.y_name}*, {res.n_features} features. "
          f"{notes}. Most group-biased feature: `{res.biased_feature}`.")
    return inspect_figure(g, res.bias), rows, md


_EXAMPLE: dict = {}


def inspect_example(*data_inputs):
    """The worked example shown on arrival: the first example's graph inspected (no training on page load).
    Computed once per process by the same function as the Inspect button."""
    key = repr(data_inputs)
    if key not in _EXAMPLE:
        try:
            _EXAMPLE[key] = run_inspect(*data_inputs)
        except Exception as e:  # the tab says why instead of staying empty
            from ..worked_example import banner

            return gr.skip(), gr.skip(), banner(str(e))
    fig, rows, md = _EXAMPLE[key]
    return fig, rows, md + "\n\n*Worked example: press **Train & sample** to train the four generators on it.*"


def _result_outputs(res: dict):
    from engines.common.artifacts import resolve
    from engines.fdgen.plots import fairness_bars, histogram_figure, metrics_table

    root = get_settings().artifacts_dir
    headers, rows = metrics_table(res)
    files = [str(resolve(root, ref)) for refs in res["downloads"].values() for ref in refs]
    drawing = str(resolve(root, res["drawing"])) if res["drawing"] else None
    import pandas as pd

    return drawing, pd.DataFrame(rows, columns=headers), fairness_bars(res), histogram_figure(res), files


def run_train(*inputs, progress=gr.Progress()):
    data, (backbone, lambda_f, lambda_s, feat_mode, epochs, steps, seeds, samples, variants) = inputs[:11], inputs[11:]
    if not variants:
        raise gr.Error("Select at least one generator variant to train.", title="Nothing selected")
    params = data_params(*data) | dict(backbone=backbone, lambda_f=lambda_f, lambda_s=lambda_s, feat_mode=feat_mode,
                                       epochs=int(epochs), steps=int(steps), seeds=int(seeds), samples=int(samples),
                                       variants=list(variants))
    _check(TrainParams, params)
    job = JobRun(METHOD_ID, "train_and_sample", params)
    yield (job.id,) + (gr.skip(),) * 5 + (f"Job {job.id[:8]} queued…",)
    res = job.wait(progress)
    yield (job.id, *_result_outputs(res),
           f"Done in {res['elapsed_s']:.0f} s ({res['backbone_label']}, {res['n_train']} training / "
           f"{res['n_test']} test nodes; mean ± std over seeds × samples).")


def run_sweep(*inputs, progress=gr.Progress()):
    data, (backbone, feat_mode, epochs, steps, seeds, samples, lambdas) = inputs[:11], inputs[11:]
    try:
        lams = [float(x) for x in str(lambdas).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise gr.Error(f"λ values must be numbers separated by commas, got {lambdas!r}.", title="Invalid λ list") from None
    params = data_params(*data) | dict(backbone=backbone, feat_mode=feat_mode, epochs=int(epochs), steps=int(steps),
                                       seeds=int(seeds), samples=int(samples), lambdas=lams)
    _check(SweepParams, params)
    from engines.fdgen.plots import pareto_figure

    job = JobRun(METHOD_ID, "lambda_sweep", params)
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, pareto_figure(res), f"λ sweep done in {res['elapsed_s']:.0f} s."


def build() -> None:
    d = defaults()
    gr.Markdown(
        "Graph generators copy the biases of the graph they learn from: **feature bias** (node attributes that act "
        "as proxies for a sensitive attribute s) and **structural bias** (people linking mostly inside their group). "
        "**FDGen** trains the generator with L = L_gen + λ_f·L_feat + λ_s·L_struct so that the graphs it samples "
        "carry neither; a GCN trained on such a graph treats both groups more equally on the *real* graph. "
        "Compare the vanilla generator, structure-only and feature-only debiasing, and FDGen (both)."
    )
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            dataset = gr.Dropdown([(v, k) for k, v in DATASET_LABELS.items()], value="german", label="Graph",
                                  elem_id="fdgen_dataset")
            n_nodes = gr.Slider(60, 2000, value=d["n_nodes"], step=20, label="Nodes (real tables are subsampled)")
            with gr.Accordion("Real tables", open=False):
                sensitive = gr.Radio(["age", "sex"], value="age", label="German credit: sensitive attribute (age < 25, or female)")
                knn = gr.Slider(2, 40, value=10, step=1, label="k of the similarity (kNN) graph")
            with gr.Accordion("Synthetic SBM bias knobs", open=False):
                minority = gr.Slider(0.1, 0.5, value=0.3, step=0.05, label="minority share (s = 1)")
                homophily = gr.Slider(1, 20, value=5, step=0.5, label="structural bias: same-s / different-s edge odds")
                feature_bias = gr.Slider(0, 4, value=1.5, step=0.1, label="feature bias: proxy strength ‖M_s‖")
                label_bias = gr.Slider(0, 0.6, value=0.2, step=0.05, label="label bias: P(y=1|s=0) − P(y=1|s=1)")
                avg_degree = gr.Slider(2, 40, value=10, step=1, label="mean degree")
            with gr.Accordion("Upload a graph", open=False):
                gr.Markdown("Edge list: two node ids per line. Node table: CSV with `id`, `s` (0/1), `y` (0/1) "
                            "and numeric feature columns.")
                edges_file = gr.File(label="edge list (.csv/.txt)", file_types=[".csv", ".txt", ".tsv", ".edgelist"],
                                     type="filepath")
                nodes_file = gr.File(label="node table (.csv)", file_types=[".csv", ".txt"], type="filepath")
            inspect_btn = gr.Button("Inspect", elem_id="fdgen_inspect")
            gr.Markdown("**Generator**")
            backbone = gr.Radio([(v, k) for k, v in BACKBONE_LABELS.items()], value="diffusion", label="Backbone")
            lambda_f = gr.Slider(0, 10, value=1, step=0.1, label="λ_f (feature debiasing)")
            lambda_s = gr.Slider(0, 10, value=1, step=0.1, label="λ_s (structure debiasing)")
            variants = gr.CheckboxGroup([(v, k) for k, v in VARIANT_LABELS.items()], value=list(ALL_VARIANTS),
                                        label="Variants")
            with gr.Accordion("Training", open=False):
                feat_mode = gr.Radio(["unconditional", "conditional"], value="unconditional",
                                     label="L_feat: match groups overall, or within each class y")
                epochs = gr.Slider(10, 3000, value=d["epochs"], step=10, label="Training iterations")
                steps = gr.Slider(4, 50, value=d["steps"], step=1, label="Diffusion steps T")
                seeds = gr.Slider(1, 5, value=d["seeds"], step=1, label="Generator seeds")
                samples = gr.Slider(1, 5, value=d["samples"], step=1, label="Graphs sampled per generator")
            with gr.Row():
                train_btn = gr.Button("Train & sample", variant="primary", elem_id="fdgen_train")
                stop = gr.Button("Stop", variant="stop")
            with gr.Accordion("λ sweep (Pareto)", open=False):
                lambdas = gr.Textbox("0, 0.3, 1, 3, 10", label="λ_f = λ_s values")
                sweep_btn = gr.Button("Run λ sweep")
            status = gr.Markdown(label="status")
        with gr.Column(scale=3):
            inspect_md = gr.Markdown(label="dataset inspection")
            inspect_plot = gr.Plot(label="Real graph: groups and feature bias", elem_id="fdgen_inspect_plot")
            bias_table = gr.Dataframe(headers=["metric", "value"], label="Bias of the real graph", interactive=False,
                                      elem_id="fdgen_bias_table")
            drawing = gr.Image(label="Real vs generated graphs (colour = group, ● y = 1, ▲ y = 0; after Train & sample)",
                               type="filepath", elem_id="fdgen_drawing")
            table = gr.Dataframe(headers=TABLE_HEADERS, label="Real graph and generators, mean ± std (after Train & "
                                 "sample; scroll sideways for all columns)", interactive=False, wrap=True,
                                 elem_id="fdgen_table")
            bars = gr.Plot(label="ΔSP and ΔEO of a GCN trained on each graph (after Train & sample)")
            hist = gr.Plot(label="Feature histograms by group, real vs generated (after Train & sample)")
            pareto = gr.Plot(label="Accuracy vs ΔSP over λ (after 'Run λ sweep')")
            files = gr.File(label="Generated graphs (edge list, node CSV, GraphML)", file_count="multiple")
    data_inputs = [dataset, n_nodes, sensitive, knn, minority, homophily, feature_bias, label_bias, avg_degree,
                   edges_file, nodes_file]
    gr.Examples(
        [["german", 600, "age", 10], ["german", 600, "sex", 10], ["compas", 600, "age", 10], ["adult", 600, "age", 10], ["sbm", 600, "age", 10]],
        inputs=[dataset, n_nodes, sensitive, knn], label="Examples (then press Inspect or Train & sample)",
    )
    # the worked example: the first example's graph, inspected when the page loads
    gr.on(None, inspect_example, data_inputs, [inspect_plot, bias_table, inspect_md], api_visibility="private",
          show_progress="minimal")
    inspect_btn.click(run_inspect, data_inputs, [inspect_plot, bias_table, inspect_md], api_name="fdgen_inspect")
    ev = train_btn.click(run_train, data_inputs + [backbone, lambda_f, lambda_s, feat_mode, epochs, steps, seeds,
                                                   samples, variants],
                         [job_id, drawing, table, bars, hist, files, status], api_name="fdgen_train")
    ev2 = sweep_btn.click(run_sweep, data_inputs + [backbone, feat_mode, epochs, steps, seeds, samples, lambdas],
                          [job_id, pareto, status], api_name="fdgen_sweep")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="fdgen_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

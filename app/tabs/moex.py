"""Tab: MoE-X — which hidden units of a chess GPT fire at a position, and which board facts each one detects.

Run standalone with ``python -m app.tabs.moex`` (inline jobs).
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from engines.moex.params import MAX_PGN_CHARS, PYCHESS_DIR, VIEW_MODELS
from engines.moex.plots import LABELS, board_svg, curves_figure, grid_figure, move_list_markdown

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "moex"
ROOT = Path(__file__).resolve().parents[2]
# the worked example: the first position the tab shows, computed with the tab's models on the first visit
EXAMPLE = dict(game="synthetic:0", pgn="", position=6, models=list(VIEW_MODELS), top_n=5)
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
RELEASE = ROOT / "release" / "moex"
UNIT_HEADERS = ["model", "rank", "unit (expert·slot)", "activation", "share of max", "labelled as (F1, precision)",
                "true here?"]
SEARCH_HEADERS = ["board feature", "model", "best unit", "F1 (label split)", "precision", "threshold"]
VARIANT_HEADERS = ["model", "seed", "validation loss", "coverage", "reconstruction", "hidden L0", "units",
                   "dead units", "router ρ"]
VARIANT_CHOICES = [("Dense GELU (GPT-2)", "dense_gelu"), ("Dense ReLU", "dense_relu"),
                   ("TopK MoE (Switch, GELU)", "topk_gelu"), ("TopK MoE + ReLU experts", "topk_relu"),
                   ("TopK MoE + sparsity router", "topk_gelu_sparsity"), ("MoE-X", "moex")]


NO_REAL_GAMES = (f"Real games are not listed: they come from the PGN files of Debian's pychess package "
                 f"({PYCHESS_DIR}), which is not installed here (a GTK chess client, ~25 MB with its "
                 f"dependencies, for 2 full games). Paste a real game's PGN below instead.")


def _games() -> tuple[list[tuple[str, str]], str | None]:
    """(choices, why real games are absent or None): random games, then the real games of the Debian pychess PGN
    files when they are installed (titles cached by the first explore job that read them; parsing the files here
    would slow the app's start)."""
    out = [(f"Random legal game #{i}", f"synthetic:{i}") for i in range(10)]
    if next(Path(PYCHESS_DIR).rglob("*.pgn"), None) is None:
        return out, NO_REAL_GAMES
    from engines.common.settings import get_settings

    try:
        titles = json.loads((get_settings().data_dir / "moex" / "real_games.json").read_text())
    except (OSError, ValueError):
        titles = ["Real game #0 (pychess PGN files)", "Real game #1 (pychess PGN files)"]
    return out + [(f"Real: {t}", f"real:{i}") for i, t in enumerate(titles[:20])], None


def _unit_name(model: str, unit: int, cfg: dict | None) -> str:
    if model in ("moex", "topk_gelu") and cfg:
        D = cfg.get("expert_hidden", 0)
        return f"{unit} (E{unit // D}·{unit % D})" if D else str(unit)
    return str(unit)


def unit_rows(res: dict, cfg: dict | None = None) -> list[list]:
    rows = []
    for name, m in res["models"].items():
        for r, u in enumerate(m["units"], 1):
            labs = "; ".join(f"{lb['feature']} ({lb['f1']:.2f}, {lb['precision']:.2f})" for lb in u["labels"][:2]) \
                or "— (no label)"
            true = "yes" if u["labels"] and u["labels"][0]["true_here"] else ("no" if u["labels"] else "")
            rows.append([LABELS.get(name, name), r, _unit_name(name, u["unit"], cfg), round(u["activation"], 3),
                         round(u["relative"], 2), labs, true])
    return rows


def _highlight(res: dict) -> list[str]:
    """Squares named by the MoE-X units' top labels at this position."""
    sq = []
    for u in res["models"].get("moex", {}).get("units", []):
        for lb in u["labels"][:1]:
            parts = lb["feature"].split(" on ")
            if len(parts) == 2:
                sq.append(parts[1])
    return sq


def _status(res: dict) -> str:
    parts = [f"**{res['title']}**, position {res['position']} of {res['n_positions']} (after {res['plies']} plies, "
             f"White to move). True board features here: {len(res['true_features'])}."]
    for name, m in res["models"].items():
        parts.append(f"{LABELS.get(name, name)}: {m['l0']} of {m['width']} units active.")
    return " ".join(parts)


def render_explore(res: dict) -> tuple:
    """Board, move list and unit table of an explore result."""
    return (board_svg(res["fen"], highlight=_highlight(res)), move_list_markdown(res["sans"], res["plies"]),
            unit_rows(res, _cfg()))


def run_explore(game, pgn, position, models, top_n, progress=gr.Progress()):
    params = dict(game=game or "synthetic:0", pgn=(pgn or "").strip(), position=int(position),
                  models=list(models or VIEW_MODELS), top_n=int(top_n))
    job = JobRun(METHOD_ID, "explore", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, *render_explore(res), _status(res))


def run_search(feature, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "search", dict(feature=(feature or "").strip() or "?", top_n=8))
    yield job.id, gr.skip(), f"Searching {feature!r}…"
    res = job.wait(progress)
    rows = []
    for feat, per in res["features"].items():
        for model, hit in per.items():
            rows.append([feat, LABELS.get(model, model)] + ([_unit_name(model, hit["unit"], _cfg()), hit["f1"],
                                                              hit["precision"], hit["threshold"]]
                                                             if hit else ["none (never fires for it)", 0, 0, ""]))
    yield job.id, rows, f"{res['matches']} board feature(s) match {res['query']!r}; the first {len(res['features'])} shown."


def run_grid(variants, steps, seeds, with_sae, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "grid", dict(variants=list(variants or ["moex"]), steps=int(steps), seeds=int(seeds),
                                         with_sae=bool(with_sae)))
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Training job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [_variant_row(r) for r in res["rows"]]
    yield (job.id, rows, grid_figure(res["rows"]), curves_figure(res["curves"]),
           f"Trained and probed {len(res['rows'])} models in {res['elapsed_s']:.0f} s.")


def _variant_row(r: dict) -> list:
    f = lambda v, n=3: round(v, n) if isinstance(v, (int, float)) and v == v else "—"  # noqa: E731
    return [LABELS.get(r["variant"], r["variant"]), r.get("seed", 0), f(r.get("val_loss"), 4), f(r.get("coverage")),
            f(r.get("reconstruction")), f(r.get("l0"), 1), r.get("units"), f(r.get("dead_fraction"), 2),
            f(r.get("router_spearman"), 2)]


def shipped_variant_rows() -> list[list]:
    """The shipped models' measurements (from their manifests' analysis files; no torch)."""
    rows = []
    for d in sorted(RELEASE.glob("*/analysis.json")) if RELEASE.exists() else []:
        try:
            ev = json.loads(d.read_text())["eval"]
        except (OSError, ValueError, KeyError):
            continue
        ev["router_spearman"] = ev.get("routing", {}).get("spearman_token_mean")
        rows.append(_variant_row(ev))
    order = {LABELS[k]: i for i, k in enumerate(VIEW_MODELS)}
    return sorted(rows, key=lambda r: order.get(r[0], 99))


_CFG: dict = {}


def _cfg() -> dict | None:
    if not _CFG:
        for f in RELEASE.glob("moex-*/record.json") if RELEASE.exists() else []:
            try:
                _CFG.update(json.loads(f.read_text())["config"]["model"])
            except (OSError, ValueError, KeyError):
                pass
    return _CFG or None


def missing_models() -> str | None:
    from engines.moex.release import missing_tab_models

    return missing_tab_models()


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "**The paper's claim:** a mixture-of-experts layer is one wide MLP whose hidden code is sparse; with "
        "*ReLU experts* and a router that sends each token to the experts whose codes will be *sparsest*, its "
        "hidden units line up with single concepts, here board facts of a chess-playing GPT, better than a "
        "dense MLP, a standard top-k MoE or an SAE trained afterwards. "
        "**What to click first:** the position below is analysed with the shipped models when the page opens; move the "
        "*Position* slider and press **Show position** to see which units fire and what each one stands for."
    )
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            choices, no_real = _games()
            game = gr.Dropdown(choices, value=EXAMPLE["game"], label="Game", elem_id="moex_game", info=no_real)
            pgn = gr.Textbox(label="…or paste a PGN (overrides the game)", max_lines=4, max_length=MAX_PGN_CHARS,
                             placeholder="1.e4 e5 2.Nf3 Nc6 3.Bb5 a6")
            position = gr.Slider(1, 40, value=EXAMPLE["position"], step=1, label="Position (move number)",
                                 info="the board before White's n-th move", elem_id="moex_position")
            models = gr.CheckboxGroup([(LABELS[m], m) for m in VIEW_MODELS], value=EXAMPLE["models"],
                                      label="Models")
            top_n = gr.Slider(1, 20, value=EXAMPLE["top_n"], step=1, label="Units per model")
            with gr.Row():
                run = gr.Button("Show position", variant="primary", elem_id="moex_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown("", elem_id="moex_status", label="position summary")
        with gr.Column(scale=2):
            with gr.Row():
                board = gr.HTML(board_svg(START), elem_id="moex_board", label="board")
                moves = gr.Markdown("", elem_id="moex_moves", label="move list")
            units = gr.Dataframe(None, headers=UNIT_HEADERS, interactive=False,
                                 label="Most active units at this position (labels learned on held-out games)",
                                 elem_id="moex_units", wrap=True)
    with gr.Accordion("Feature search: which unit detects a board fact?", open=True):
        with gr.Row():
            feature = gr.Textbox("passed pawn", label="Board feature", max_length=80, elem_id="moex_feature",
                                 info="e.g. 'white knight on f3', 'black queen on', 'castle', 'pinned', 'check'")
            search_btn = gr.Button("Search", elem_id="moex_search")
        search_status = gr.Markdown(elem_id="moex_search_status", label="search status")
        search_table = gr.Dataframe(headers=SEARCH_HEADERS, interactive=False, wrap=True, elem_id="moex_search_table",
                                    label="neurons matching the feature")
    with gr.Accordion("Variants: coverage, reconstruction and validation loss", open=False):
        gr.Markdown("Shipped models (seed 0, held-out games). Coverage: mean over board features of the best "
                    "single-unit F1; reconstruction: F1 of boards rebuilt from the active units' labels. Train "
                    "more variants and seeds below (a background job, minutes per model on a CPU).")
        variants_table = gr.Dataframe(shipped_variant_rows(), headers=VARIANT_HEADERS, interactive=False, wrap=True,
                                      elem_id="moex_variants", label="variants: coverage, reconstruction, validation loss")
        with gr.Row():
            grid_variants = gr.CheckboxGroup(VARIANT_CHOICES, value=["dense_gelu", "topk_gelu", "moex"],
                                             label="Variants")
            grid_steps = gr.Slider(20, 3000, value=500, step=10, label="Steps per model")
            grid_seeds = gr.Slider(1, 3, value=1, step=1, label="Seeds")
            grid_sae = gr.Checkbox(False, label="Also an SAE on the dense model")
            grid_btn = gr.Button("Train grid")
        grid_status = gr.Markdown(elem_id="moex_grid_status", label="training status")
        with gr.Row():
            grid_plot = gr.Plot(label="Coverage / reconstruction / loss")
            curve_plot = gr.Plot(label="Training curves")
    ev = run.click(run_explore, [game, pgn, position, models, top_n], [job_id, board, moves, units, status],
                   api_name="moex_explore")
    worked_example.on_load(METHOD_ID, "explore", EXAMPLE, render_explore, [board, moves, units], status,
                           done=lambda r: "**Worked example.** " + _status(r), missing=missing_models,
                           cancel_on=[run.click])
    ev2 = search_btn.click(run_search, [feature], [job_id, search_table, search_status], api_name="moex_search")
    ev3 = grid_btn.click(run_grid, [grid_variants, grid_steps, grid_seeds, grid_sae],
                         [job_id, variants_table, grid_plot, curve_plot, grid_status], api_name="moex_grid")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3], api_name="moex_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

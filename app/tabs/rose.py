"""Tab: ROSE — zero-shot and few-shot forecasting with a small pre-trained model, beside statistical baselines.

Run standalone with ``python -m app.tabs.rose`` (inline jobs).
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from engines.rose.params import BASELINE_LABELS, MAX_CONTEXT, MAX_HORIZON
from engines.rose.plots import (METRIC_HEADERS, ablation_figure, figure_array, forecast_figure, loss_figure,
                                mask_figure, metrics_rows, register_figure)

from ..bridge import JobRun, cancel_job

METHOD_ID = "rose"
RELEASE = Path(__file__).resolve().parents[2] / "engines" / "rose" / "release"
EXAMPLE = RELEASE / "example.json"  # the worked example, and its two figures as PNGs (cheap to show at start-up)

HELD_OUT = [("Airline passengers (monthly) — held out", "airline"), ("Mauna Loa CO₂ (weekly) — held out", "co2"),
            ("Sunspot numbers (monthly) — held out", "sunspots"),
            ("El Niño sea-surface temperature (monthly) — held out", "elnino"),
            ("Electricity demand, England & Wales (half-hourly) — held out", "taylor")]
PRETRAIN_SEEN = [("Australian wine sales (monthly) — in pre-training", "wineind"),
                 ("San Francisco hourly temperature — in pre-training", "sf_temps"),
                 ("Seattle daily max temperature — in pre-training", "seattle_temp"),
                 ("US real GDP (quarterly) — in pre-training", "gdp"),
                 # bundled but shorter than one pre-training window (context of 2 patches + 96 steps): not seen
                 ("Canadian lynx trappings (yearly) — not seen (too short for pre-training)", "lynx"),
                 ("Nile river flow (yearly) — not seen (too short for pre-training)", "nile")]
SYNTHETIC = [(f"Synthetic: {f.replace('_', ' ')}", f"synthetic:{f}") for f in
             ("multi_seasonal", "trend_season", "arma", "random_walk", "intermittent", "chirp_regime")]
CHOICES = HELD_OUT + PRETRAIN_SEEN + SYNTHETIC


def _example() -> dict | None:
    try:
        return json.loads(EXAMPLE.read_text())
    except (OSError, ValueError):
        return None


def _png(name: str) -> str | None:
    p = RELEASE / name
    return str(p) if p.exists() else None


def _status(res: dict) -> str:
    parts = [f"**{res['title']}**: forecast {res['horizon']} steps from {res['context']} points "
             f"({res['elapsed_s']:.1f} s)."]
    rows = {f["key"]: f for f in res["forecasts"]}
    if res.get("truth") and "rose_zero" in rows and rows["rose_zero"].get("metrics"):
        z = rows["rose_zero"]["metrics"]["mase"]
        parts.append(f"ROSE zero-shot MASE {z:.3f} ({'beats' if z < 1 else 'does not beat'} the in-sample "
                     "seasonal-naive scale 1.0).")
    if res.get("few_shot"):
        fs = res["few_shot"]
        parts.append(f"Few-shot: {fs['train_windows']} training windows, lr {fs['lr']:g} chosen on "
                     f"{fs['val_windows']} validation windows.")
    reg = res.get("register_view")
    if reg:
        fam = [reg["family"][i] for i in reg["topk"]] if reg.get("family") else []
        parts.append(f"Register codes {reg['topk']}" + (f" (domains: {', '.join(f.replace('_', ' ') for f in fam)})"
                                                       if fam else "") + ".")
    parts += res.get("notes", [])
    return " ".join(parts)


def run_forecast(series, csv_file, csv_column, horizon, context, holdout, few_shot, fraction, steps, chosen,
                 coverage, own_model, progress=gr.Progress()):
    params = dict(series=series or "airline", csv_path=str(csv_file) if csv_file else "",
                  csv_column=(csv_column or "").strip(), horizon=int(horizon), context=int(context),
                  holdout=bool(holdout), few_shot=bool(few_shot), few_shot_fraction=float(fraction),
                  few_shot_steps=int(steps), baselines=list(chosen or []), coverage=float(coverage),
                  model_path=own_model or "")
    job = JobRun(METHOD_ID, "forecast", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield (job.id, figure_array(forecast_figure(res)), metrics_rows(res), figure_array(register_figure(res)),
           _status(res))


def run_mask(series, csv_file, csv_column, tau, band, context, progress=gr.Progress()):
    params = dict(series=series or "airline", csv_path=str(csv_file) if csv_file else "",
                  csv_column=(csv_column or "").strip(), tau=float(tau), band=band, context=int(context))
    job = JobRun(METHOD_ID, "mask_view", params)
    yield job.id, gr.skip()
    res = job.wait(progress)
    yield job.id, mask_figure(res)


def run_pretrain(steps, mask_mode, with_register, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "pretrain", dict(steps=int(steps), mask_mode=mask_mode, with_register=bool(with_register)))
    yield job.id, gr.skip(), gr.skip(), gr.skip(), f"Pre-training job {job.id[:8]} queued…"
    res = job.wait(progress)
    rows = [[n, round(v["mse"], 4), round(v["mae"], 4), round(v["mase"], 4)]
            for n, v in res["heldout_zero_shot"].items()]
    reg = res["register_stats"]
    msg = (f"Pre-trained {res['n_params']:,} parameters in {res['elapsed_s']:.0f} s. "
           + (f"Register perplexity {reg['perplexity']:.1f}, NMI with the domain {reg['nmi_family']:.2f}. "
              if reg else "")
           + "Tick *Use the model I pre-trained* to forecast with it.")
    yield job.id, res["model_path"], loss_figure(res["loss_curve"]), rows, msg


def run_ablation(steps, seeds, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "ablation", dict(steps=int(steps), seeds=int(seeds)))
    yield job.id, gr.skip(), f"Ablation job {job.id[:8]} queued…"
    res = job.wait(progress)
    mean = {k: sum(v) / len(v) for k, v in res["mean_mse"].items()}
    yield job.id, ablation_figure(res), ("Mean zero-shot MSE on the held-out series: "
                                         + ", ".join(f"{k.replace('_', ' ')} {v:.4f}" for k, v in mean.items()))


def build() -> None:
    """Create the tab's components inside the current Blocks context."""
    gr.Markdown(
        "**The paper's claim:** one small model, pre-trained on many domains by reconstructing series from "
        "several *frequency-masked views* and storing domain patterns in a *time-series register*, forecasts new "
        "series zero-shot and adapts with few data better than a model trained from scratch. "
        "**What to click first:** the airline example below is already computed with the shipped model "
        "(the series was never seen in pre-training); pick another held-out series or upload a CSV "
        "(a date column and a value column) and press **Forecast**."
    )
    ex = _example()
    job_id = gr.State(None)
    own_path = gr.State("")
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            series = gr.Dropdown(CHOICES, value="airline", label="Series", elem_id="rose_series")
            with gr.Accordion("…or upload a CSV", open=False):
                csv_file = gr.File(label="CSV with a time column and a value column", file_types=[".csv"],
                                   type="filepath")
                csv_column = gr.Textbox(label="Value column (empty = the first numeric column)")
            horizon = gr.Slider(1, MAX_HORIZON, value=24, step=1, label="Horizon H", elem_id="rose_horizon",
                                info=f"heads for 24 / 48 / {MAX_HORIZON}; longer is refused")
            context = gr.Slider(32, MAX_CONTEXT, value=MAX_CONTEXT, step=32, label="Context L")
            holdout = gr.Checkbox(True, label="Hold out the last H points as truth (scores the forecast)")
            few_shot = gr.Checkbox(True, label="Few-shot: also fine-tune ROSE on the history")
            with gr.Accordion("Few-shot and baselines", open=False):
                fraction = gr.Slider(0.02, 1.0, value=0.1, step=0.01, label="Share of the history's windows")
                steps = gr.Slider(5, 400, value=60, step=5, label="Fine-tuning steps (per learning rate)")
                coverage = gr.Slider(0.5, 0.95, value=0.8, step=0.05, label="Interval coverage")
            chosen = gr.CheckboxGroup([(v, k) for k, v in BASELINE_LABELS.items()],
                                      value=["seasonal_naive", "auto_ets", "auto_arima"], label="Baselines",
                                      elem_id="rose_baselines")
            use_own = gr.Checkbox(False, label="Use the model I pre-trained (Pre-training below)")
            with gr.Row():
                run = gr.Button("Forecast", variant="primary", elem_id="rose_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(_status(ex) if ex else "", elem_id="rose_status", label="forecast summary")
        with gr.Column(scale=3):
            plot = gr.Image(_png("example_forecast.png"), label="Forecast", elem_id="rose_plot", type="numpy",
                            interactive=False)
            table = gr.Dataframe(metrics_rows(ex) if ex else None, headers=METRIC_HEADERS, interactive=False,
                                 label="Metrics on the held-out truth (MSE/MAE on the standardised series)",
                                 elem_id="rose_table")
            reg_plot = gr.Image(_png("example_register.png"), label="Register activation", type="numpy",
                                interactive=False, elem_id="rose_register")
    with gr.Accordion("Frequency-masking explorer (the pre-training views)", open=False):
        with gr.Row():
            tau = gr.Slider(0.0, 1.0, value=0.2, step=0.01, label="Threshold τ (share of rFFT bins)")
            band = gr.Radio(["low", "high"], value="low", label="Band zeroed")
            mask_btn = gr.Button("Show view")
        mask_plot = gr.Plot(label="Spectrum and masked view")
    with gr.Accordion("Pre-training and ablations (background jobs)", open=False):
        gr.Markdown("Pre-train a tiny ROSE on the synthetic domains plus the bundled real series that are not "
                    "held out (minutes on a CPU); or run the ablation: frequency vs patch masking, with vs "
                    "without register, zero-shot on the held-out series.")
        with gr.Row():
            pt_steps = gr.Slider(50, 5000, value=500, step=50, label="Steps")
            mask_mode = gr.Radio([("frequency masking", "freq_multi"), ("patch masking", "patch_multi")],
                                 value="freq_multi", label="Masking")
            with_reg = gr.Checkbox(True, label="Register")
            pt_btn = gr.Button("Pre-train")
        with gr.Row():
            ab_steps = gr.Slider(50, 3000, value=300, step=50, label="Ablation steps per run")
            ab_seeds = gr.Slider(1, 3, value=1, step=1, label="Seeds")
            ab_btn = gr.Button("Run ablation")
        pt_status = gr.Markdown(label="pre-training status", elem_id="rose_pretrain_status")
        with gr.Row():
            loss_plot = gr.Plot(label="Pre-training losses")
            zs_table = gr.Dataframe(headers=["held-out series", "MSE", "MAE", "MASE"], interactive=False,
                                    label="Zero-shot on the held-out series")
            ab_plot = gr.Plot(label="Ablation")
    inputs = [series, csv_file, csv_column, horizon, context, holdout, few_shot, fraction, steps, chosen, coverage]
    own_in = gr.State("")
    ev = run.click(lambda *a: a[-1] if a[-2] else "", [use_own, own_path], own_in, api_visibility="private").then(
        run_forecast, inputs + [own_in], [job_id, plot, table, reg_plot, status], api_name="rose_forecast")
    ev2 = mask_btn.click(run_mask, [series, csv_file, csv_column, tau, band, context], [job_id, mask_plot],
                         api_name="rose_mask")
    ev3 = pt_btn.click(run_pretrain, [pt_steps, mask_mode, with_reg], [job_id, own_path, loss_plot, zs_table,
                                                                        pt_status], api_name="rose_pretrain")
    ev4 = ab_btn.click(run_ablation, [ab_steps, ab_seeds], [job_id, ab_plot, pt_status], api_name="rose_ablation")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2, ev3, ev4], api_name="rose_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

"""Entry points: forecast (zero-shot, few-shot, baselines, register view), masking explorer, pre-training,
and the held-out evaluation used by the ablation job and ``reproduce``.

Results are small JSON-able models; the tab and ``reproduce`` turn them into plots.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import ParamError, validate
from engines.common.threads import torch_threads

from . import data
from .params import (BASELINE_LABELS, MIN_HISTORY, AblationParams, ForecastParams, MaskViewParams, PretrainParams,
                     SeriesSpec)


class ModelForecast(BaseModel):
    key: str
    label: str
    mean: list[float]
    lo: list[float] | None = None
    hi: list[float] | None = None
    metrics: dict[str, float] | None = None
    seconds: float = 0.0


class RegisterView(BaseModel):
    topk: list[int]  # codes selected for this series (nearest first)
    distances: list[float]  # squared distance to every code
    pca: list[list[float]]  # 2-D PCA of the codebook
    query: list[float]  # the series' register query in the same PCA plane
    family: list[str]  # generator family that selects each code most often ("" = unused)
    adapter_norm: float | None = None  # ‖u·vᵀ‖ after few-shot fine-tuning


class ForecastResult(BaseModel):
    series: str
    title: str
    period: int
    horizon: int
    context: int
    start: int  # index of the first history point shown
    history: list[float]
    truth: list[float] | None
    forecasts: list[ModelForecast]
    register_view: RegisterView | None
    imputed: int
    notes: list[str]
    few_shot: dict | None = None
    elapsed_s: float


# ----------------------------------------------------------------------------- series resolution

SYNTHETIC_PREFIX = "synthetic:"


def series_choices() -> list[tuple[str, str]]:
    """(label, value) pairs for the picker: held-out real series first, then the rest, then synthetic."""
    out = [(f"{data.REAL[n].title} — held out", n) for n in data.HELD_OUT]
    out += [(data.REAL[n].title, n) for n in data.PRETRAIN_REAL]
    out += [(f"Synthetic: {f.replace('_', ' ')}", SYNTHETIC_PREFIX + f) for f in data.FAMILIES]
    return out


def resolve_series(p: SeriesSpec, seed: int = 0) -> dict:
    if p.csv_path:
        try:
            d = data.load_csv(p.csv_path, p.csv_column)
        except data.SeriesError as e:
            raise ParamError("csv", [f"csv_path: {e}"]) from None
        name = Path(p.csv_path).stem[:40]
        return {"y": d["y"], "name": name, "title": f"{name} ({d['column']}, step {d['step']})",
                "period": p.period or d["period"], "imputed": d["imputed"]}
    if p.series.startswith(SYNTHETIC_PREFIX):
        fam = p.series[len(SYNTHETIC_PREFIX):]
        if fam not in data.FAMILIES:
            raise ParamError("series", [f"series: unknown synthetic family {fam!r}"])
        y = data.synth_series(data.FAMILIES.index(fam), 600, np.random.default_rng(seed + 99))
        guess = {"multi_seasonal": 24, "trend_season": 12, "intermittent": 7}.get(fam, 1)
        return {"y": y, "name": p.series, "title": f"Synthetic {fam.replace('_', ' ')}", "period": p.period or guess,
                "imputed": 0}
    if p.series not in data.REAL:
        raise ParamError("series", [f"series: unknown series {p.series!r}"])
    s = data.REAL[p.series]
    y = data.load_real(p.series)
    _, n_missing = data.impute(s.loader()) if p.series == "co2" else (None, 0)
    return {"y": y, "name": p.series, "title": s.title, "period": p.period or s.period, "imputed": n_missing}


def _model(path: str = ""):
    """The model a forecast uses: ``path`` if given; the shipped release; under the test profile a micro
    model pre-trained once (seconds) and cached in the data directory."""
    from engines.common.settings import get_settings

    from .checkpoint import load_release

    if path:
        return load_release(path)
    s = get_settings()
    if s.profile != "test":
        return load_release()
    stem = s.data_dir / "rose" / "rose_micro"
    if not stem.with_suffix(".json").exists():
        from .checkpoint import save_release
        from .release import pretrain_from_recipe, register_usage

        model, record = pretrain_from_recipe({"size": "micro", "steps": 40, "batch_size": 16, "lr": 3e-3,
                                              "n_series": 60, "seed": 0, "mask_mode": "freq_multi",
                                              "register": True, "real": False})
        record["register"] = register_usage(model, n_per_family=10)
        save_release(model, stem, record)
    return load_release(stem)


# ----------------------------------------------------------------------------- forecast entry


def forecast(params: ForecastParams | dict, ctx: JobContext | None = None) -> ForecastResult:
    p = validate(ForecastParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    s = resolve_series(p, p.seed)
    y, m, H = s["y"], s["period"], p.horizon
    hist = y[:-H] if p.holdout else y
    truth = y[-H:] if p.holdout else None
    if len(hist) < max(MIN_HISTORY, H):
        raise ParamError("ForecastParams", [
            f"horizon: the history is too short: {len(hist)} points"
            + (f" after holding out the last {H}" if p.holdout else "")
            + f"; need at least {max(MIN_HISTORY, H)} (shorten the horizon or use a longer series)"])
    with torch_threads(1):
        return _forecast(p, ctx, s, y, hist, truth, m, H, t0)


def _forecast(p, ctx, s, y, hist, truth, m, H, t0) -> ForecastResult:
    from . import baselines as B
    from . import training

    notes = []
    if s["imputed"]:
        notes.append(f"{s['imputed']} missing values were filled by linear interpolation.")
    mu, sd = float(hist.mean()), float(hist.std() + 1e-9)
    model, manifest = _model(p.model_path)
    ctx.progress(0.05, "ROSE zero-shot")
    context = min(p.context, len(hist), model.cfg.context)
    if context < p.context:
        notes.append(f"History shorter than the context: ROSE reads the {context} available points "
                     f"(left-padded to {model.cfg.context}).")
    out: list[ModelForecast] = []

    def add(key, label, mean, lo=None, hi=None, secs=0.0):
        met = B.metrics(truth, mean, hist, m, mu, sd) if truth is not None else None
        out.append(ModelForecast(key=key, label=label, mean=list(map(float, mean)),
                                 lo=None if lo is None else list(map(float, lo)),
                                 hi=None if hi is None else list(map(float, hi)), metrics=met, seconds=round(secs, 2)))

    t = time.perf_counter()
    yz, info = training.predict(model, hist, H, context, return_info=True)
    q = training.conformal_interval(model, hist, H, p.coverage, context)
    add("rose_zero", "ROSE zero-shot", yz[0], *(_band(yz[0], q)), time.perf_counter() - t)
    reg = _register_view(model, hist, context, manifest) if model.T else None
    few = None
    if p.few_shot:
        t = time.perf_counter()
        fm, rec = training.adapt(model, model.cfg, hist, H, p.few_shot_fraction, p.few_shot_steps, p.seed, context,
                                 on_progress=Subprogress(ctx, 0.1, 0.5), check=ctx.check_cancelled)
        yf = training.predict(fm, hist, H, context, few_shot=True)[0]
        qf = training.conformal_interval(fm, hist, H, p.coverage, context, few_shot=True)
        add("rose_few", f"ROSE few-shot ({rec['train_windows']} windows)", yf, *_band(yf, qf), time.perf_counter() - t)
        few = {k: v for k, v in rec.items() if k != "evals"}
        if reg is not None:
            reg.adapter_norm = float((fm.u @ fm.v).detach().norm())
    for i, b in enumerate(p.baselines):
        ctx.check_cancelled()
        ctx.progress(0.5 + 0.45 * i / max(1, len(p.baselines)), BASELINE_LABELS[b])
        t = time.perf_counter()
        if b == "scratch":
            sm, rec = training.adapt(None, model.cfg, hist, H, p.few_shot_fraction, p.few_shot_steps, p.seed, context,
                                     check=ctx.check_cancelled)
            ys = training.predict(sm, hist, H, context, few_shot=True)[0]
            add(b, BASELINE_LABELS[b], ys, *_band(ys, training.conformal_interval(sm, hist, H, p.coverage, context,
                                                                                    few_shot=True)),
                time.perf_counter() - t)
        else:
            try:
                mean, lo, hi = B.STATISTICAL[b](hist, H, m, p.coverage)
            except Exception as e:  # noqa: BLE001  (a baseline failing on odd data must not sink the forecast)
                notes.append(f"{BASELINE_LABELS[b]} failed: {e}")
                continue
            add(b, BASELINE_LABELS[b], mean, lo, hi, time.perf_counter() - t)
    start = max(0, len(hist) - max(3 * H, 2 * context))
    ctx.progress(1.0, "done")
    return ForecastResult(series=s["name"], title=s["title"], period=m, horizon=H, context=context, start=start,
                          history=list(map(float, hist[start:])),
                          truth=None if truth is None else list(map(float, truth)), forecasts=out, register_view=reg,
                          imputed=s["imputed"], notes=notes, few_shot=few,
                          elapsed_s=round(time.perf_counter() - t0, 2))


def _band(mean, q):
    if q is None:
        return None, None
    return mean - q, mean + q


def _register_view(model, hist, context, manifest) -> RegisterView:
    import torch

    from . import training

    _, info = training.predict(model, hist, min(model.cfg.horizons), context, few_shot=True, return_info=True)
    E = model.codebook.weight.detach().numpy()
    mu = E.mean(0)
    _, _, vt = np.linalg.svd(E - mu, full_matrices=False)
    pca = (E - mu) @ vt[:2].T
    ctx_arr = np.asarray(hist[-min(context, model.cfg.context):], np.float32)
    pad = model.cfg.context - len(ctx_arr)
    x = torch.as_tensor(np.concatenate([np.zeros(pad, np.float32), ctx_arr]))[None]
    v = torch.as_tensor(np.concatenate([np.zeros(pad, bool), np.ones(len(ctx_arr), bool)]))[None]
    from .masking import patchify
    from .model import revin

    with torch.no_grad():
        xn, _, _ = revin(x * v, v)
        qv = model.register_query(patchify(xn, model.cfg.patch_len))[0].numpy()
    usage = np.array(manifest.get("register", {}).get("usage_by_family", []))
    fams = manifest.get("register", {}).get("families", [])
    family = [fams[int(u.argmax())] if len(usage) and u.sum() else "" for u in usage.T] if len(usage) else []
    return RegisterView(topk=info["codes"][0].tolist(), distances=info["distances"][0].tolist(),
                        pca=pca.tolist(), query=((qv - mu) @ vt[:2].T).tolist(), family=family)


# ----------------------------------------------------------------------------- masking explorer


class MaskViewResult(BaseModel):
    series: str
    x: list[float]
    view: list[float]
    spectrum: list[float]  # |rFFT| of the context
    kept: list[bool]  # bins kept by the mask
    tau: float
    band: str
    cut: int


def mask_view(params: MaskViewParams | dict, ctx: JobContext | None = None) -> MaskViewResult:
    import torch

    from .masking import freq_view

    p = validate(MaskViewParams, params)
    s = resolve_series(p)
    x = np.asarray(s["y"][-p.context:], np.float32)
    x = (x - x.mean()) / (x.std() + 1e-6)
    t = torch.as_tensor(x)[None]
    view = freq_view(t, p.tau, p.band == "low")[0].numpy()
    X = np.abs(np.fft.rfft(x))
    cut = int(np.floor(p.tau * len(X)))
    kept = np.arange(len(X)) >= cut if p.band == "low" else np.arange(len(X)) < cut
    return MaskViewResult(series=s["name"], x=x.tolist(), view=view.tolist(), spectrum=X.tolist(),
                          kept=kept.tolist(), tau=p.tau, band=p.band, cut=cut)


# ----------------------------------------------------------------------------- pre-training job


def _profile_recipe(recipe: dict) -> dict:
    """Under the test profile every pre-training is micro-sized (synthetic corpus only, small batches)."""
    from engines.common.settings import get_settings

    if get_settings().profile == "test":
        recipe = {**recipe, "size": "micro", "batch_size": min(recipe["batch_size"], 16),
                  "n_series": min(recipe["n_series"], 60), "real": False}
    return recipe


class PretrainResult(BaseModel):
    model_path: str  # stem of the safetensors + manifest in the job's artifacts (usable as `model_path`)
    loss_curve: list[dict]
    register_stats: dict
    heldout_zero_shot: dict[str, dict[str, float]]
    n_params: int
    elapsed_s: float


def pretrain(params: PretrainParams | dict, ctx: JobContext | None = None) -> PretrainResult:
    from .checkpoint import save_release
    from .release import pretrain_from_recipe, register_usage

    p = validate(PretrainParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    with torch_threads(1):
        recipe = _profile_recipe(p.model_dump())
        sub = Subprogress(ctx, 0.0, 0.85)
        model, record = pretrain_from_recipe(recipe, on_progress=sub)
        record["register"] = register_usage(model, n_per_family=50)
        ctx.progress(0.9, "zero-shot on the held-out series")
        zs = evaluate_zero_shot(model)
    stem = ctx.artifacts.path("rose_pretrained.json").with_suffix("")
    manifest = save_release(model, stem, record)
    ctx.progress(1.0, "done")
    return PretrainResult(model_path=str(stem), loss_curve=record["loss_curve"], register_stats=record["register"],
                          heldout_zero_shot=zs, n_params=manifest["n_params"],
                          elapsed_s=round(time.perf_counter() - t0, 1))


# ----------------------------------------------------------------------------- held-out evaluation


def heldout_origins(n: int, H: int, n_origins: int = 5) -> list[int]:
    """Rolling origins at the end of the series: t_j = n − H − j·⌈H/2⌉, j = 0..n_origins−1 (oldest first)."""
    s = max(1, (H + 1) // 2)
    return sorted(n - H - j * s for j in range(n_origins))


def heldout_series(names=None) -> dict[str, dict]:
    out = {}
    for n, y in data.available_real(names or data.HELD_OUT).items():
        s = data.REAL[n]
        out[n] = {"y": y, "H": s.horizon, "m": s.period}
    return out


def _score(preds: np.ndarray, y: np.ndarray, origins, H, m) -> dict:
    from .baselines import metrics

    first = origins[0]
    mu, sd = float(y[:first].mean()), float(y[:first].std() + 1e-9)
    rows = [metrics(y[t:t + H], preds[i], y[:t], m, mu, sd) for i, t in enumerate(origins)]
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def evaluate_zero_shot(model, names=None) -> dict[str, dict[str, float]]:
    from . import training

    out = {}
    for n, s in heldout_series(names).items():
        y, H, m = s["y"], s["H"], s["m"]
        H = min(H, max(model.cfg.horizons))
        origins = heldout_origins(len(y), H)
        preds = training.predict_many(model, [y[:t] for t in origins], H)
        out[n] = _score(preds, y, origins, H, m)
    return out


def evaluate_adapted(base, cfg, names=None, fraction: float = 0.1, steps: int = 100, seed: int = 0,
                     check=None) -> dict[str, dict[str, float]]:
    """Few-shot (``base`` pre-trained) or from-scratch (``base`` None) on each held-out series' training part."""
    from . import training

    out = {}
    for n, s in heldout_series(names).items():
        y, H, m = s["y"], min(s["H"], max(cfg.horizons)), s["m"]
        origins = heldout_origins(len(y), H)
        model, _ = training.adapt(base, cfg, y[:origins[0]], H, fraction, steps, seed, check=check)
        preds = training.predict_many(model, [y[:t] for t in origins], H, few_shot=True)
        out[n] = _score(preds, y, origins, H, m)
    return out


def evaluate_baselines(names=None, which=("seasonal_naive", "auto_ets", "auto_arima"), max_h: int = 96,
                       check=None) -> dict[str, dict[str, dict[str, float]]]:
    from .baselines import STATISTICAL

    out = {b: {} for b in which}
    for n, s in heldout_series(names).items():
        y, H, m = s["y"], min(s["H"], max_h), s["m"]
        origins = heldout_origins(len(y), H)
        for b in which:
            if check is not None:
                check()
            preds = np.array([STATISTICAL[b](y[:t], H, m)[0] for t in origins])
            out[b][n] = _score(preds, y, origins, H, m)
    return out


def mean_metric(per_series: dict[str, dict[str, float]], key: str) -> float:
    return float(np.mean([v[key] for v in per_series.values()]))


# ----------------------------------------------------------------------------- ablation job

VARIANTS = {"full": ("freq_multi", True), "patch_masking": ("patch_multi", True), "no_register": ("freq_multi", False)}


class AblationResult(BaseModel):
    variants: dict[str, list[dict[str, dict[str, float]]]]  # variant -> per seed -> series -> metrics
    mean_mse: dict[str, list[float]]  # variant -> per-seed mean zero-shot MSE over the held-out series
    elapsed_s: float


def ablation(params: AblationParams | dict, ctx: JobContext | None = None) -> AblationResult:
    from .release import pretrain_from_recipe

    p = validate(AblationParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    runs = [(v, s) for s in range(p.seeds) for v in VARIANTS]
    res: dict[str, list] = {v: [] for v in VARIANTS}
    with torch_threads(1):
        for i, (v, seed) in enumerate(runs):
            mode, reg = VARIANTS[v]
            recipe = _profile_recipe({"size": p.size, "steps": p.steps, "batch_size": p.batch_size, "lr": 1e-3,
                                      "n_series": p.n_series, "seed": seed, "mask_mode": mode, "register": reg})
            sub = Subprogress(ctx, i / len(runs), (i + 1) / len(runs))
            model, _ = pretrain_from_recipe(recipe, on_progress=lambda f, msg, v=v, s=seed: sub(f, f"{v} seed {s}: {msg}"))
            res[v].append(evaluate_zero_shot(model))
    means = {v: [mean_metric(r, "mse") for r in rs] for v, rs in res.items()}
    return AblationResult(variants=res, mean_mse=means, elapsed_s=round(time.perf_counter() - t0, 1))

"""Series: the synthetic multi-domain generators, the bundled real series (offline), CSV uploads.

The pre-training corpus mixes 6 synthetic generator families (each a "domain" with its own spectral profile,
spec §4) with real series bundled in statsmodels, pmdarima and vega_datasets. ``HELD_OUT`` series are the
zero-/few-shot test set. Every real series names the record it samples (``RealSeries.record``); no series whose
record is that of a held-out series enters pre-training (``PRETRAIN_REAL``), so another sampling of held-out
data (statsmodels' yearly sunspots are the annual means of pmdarima's monthly sunspots) is held out too.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

FAMILIES = ("multi_seasonal", "trend_season", "arma", "random_walk", "intermittent", "chirp_regime")


# ----------------------------------------------------------------------------- synthetic domains


def synth_series(family: int, n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n, dtype=np.float64)
    name = FAMILIES[family]
    if name == "multi_seasonal":
        y = np.zeros(n)
        for _ in range(rng.integers(1, 4)):
            period = rng.uniform(4, 200)
            y += rng.uniform(0.3, 2.0) * np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi))
        return y + rng.uniform(0.02, 0.3) * rng.standard_normal(n)
    if name == "trend_season":
        period = rng.choice([7, 12, 24, 48, 52, 96, 168])
        season = np.sin(2 * np.pi * t / period) + 0.5 * rng.uniform(-1, 1) * np.sin(4 * np.pi * t / period)
        slope = np.full(n, rng.normal(0, 0.01))
        for cp in rng.integers(0, n, rng.integers(0, 4)):
            slope[cp:] += rng.normal(0, 0.01)
        return np.cumsum(slope) + rng.uniform(0.3, 1.5) * season + rng.uniform(0.05, 0.4) * rng.standard_normal(n)
    if name == "arma":
        from scipy.signal import lfilter

        p = rng.integers(1, 4)
        roots = rng.uniform(0.3, 0.95, p) * rng.choice([-1, 1], p)
        ar = np.poly(roots)  # stable AR polynomial from real roots inside the unit circle
        ma = np.concatenate([[1.0], rng.uniform(-0.6, 0.6, rng.integers(0, 3))])
        return lfilter(ma, ar, rng.standard_normal(n + 100))[100:]
    if name == "random_walk":
        inc = rng.standard_t(rng.uniform(3, 10), n) * rng.uniform(0.003, 0.015) + rng.normal(0, 0.0005)
        return np.exp(np.cumsum(inc)) if rng.random() < 0.5 else np.cumsum(inc) * 30
    if name == "intermittent":
        period = rng.choice([7, 12, 24])
        rate = np.clip(rng.uniform(0.05, 0.5) * (1 + 0.8 * np.sin(2 * np.pi * t / period)), 0, 1)
        return (rng.random(n) < rate) * rng.gamma(rng.uniform(1, 4), rng.uniform(1, 10), n)
    # chirp / regime switching
    if rng.random() < 0.5:
        f0, f1 = rng.uniform(1 / 200, 1 / 20, 2)
        phase = 2 * np.pi * np.cumsum(np.linspace(f0, f1, n))
        return np.sin(phase) + 0.1 * rng.standard_normal(n)
    periods = rng.uniform(5, 100, 2)
    regime = np.zeros(n, dtype=int)
    for i in range(1, n):
        regime[i] = regime[i - 1] if rng.random() > 0.01 else 1 - regime[i - 1]
    phase = 2 * np.pi * np.cumsum(1.0 / periods[regime])
    return np.where(regime == 0, 1.0, rng.uniform(0.3, 2.0)) * np.sin(phase) + 0.1 * rng.standard_normal(n)


def synthetic_corpus(n_series: int, length: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    fam = np.arange(n_series) % len(FAMILIES)
    return [synth_series(int(f), length, rng).astype(np.float32) for f in fam], fam


# ----------------------------------------------------------------------------- real series (bundled offline)


@dataclass(frozen=True)
class RealSeries:
    name: str
    title: str
    period: int  # seasonal period m (MASE, seasonal naive)
    freq: str
    horizon: int  # default horizon in the tab and the held-out evaluation
    loader: Callable[[], np.ndarray]
    source: str  # the package it is bundled in
    record: str  # the underlying data: series with the same record are samplings of the same measurements


def _sm(name: str):
    import statsmodels.api as sm

    return getattr(sm.datasets, name).load_pandas().data


def _co2():
    return _sm("co2")["co2"].to_numpy(float)


def _elnino():
    d = _sm("elnino")
    return d.drop(columns=["YEAR"]).to_numpy(float).ravel()


def _pm(name: str):
    import pmdarima.datasets as pd_ds

    return np.asarray(getattr(pd_ds, f"load_{name}")(as_series=False), dtype=float).ravel()


def _vega(name: str, column: str):
    from vega_datasets import local_data

    return getattr(local_data, name)()[column].to_numpy(float)


REAL: dict[str, RealSeries] = {s.name: s for s in [
    # held out (zero-/few-shot test set)
    RealSeries("co2", "Mauna Loa CO₂ (weekly)", 52, "W", 48, _co2, "statsmodels", "mauna_loa_co2"),
    RealSeries("sunspots", "Sunspot numbers (monthly)", 1, "M", 24, lambda: _pm("sunspots"), "pmdarima",
               "sunspot_number"),
    RealSeries("airline", "Airline passengers (monthly)", 12, "M", 24, lambda: _pm("airpassengers"), "pmdarima",
               "airline_passengers"),
    RealSeries("elnino", "El Niño sea-surface temperature (monthly)", 12, "M", 24, _elnino, "statsmodels",
               "elnino_sst"),
    RealSeries("taylor", "Electricity demand, England & Wales (half-hourly)", 48, "30min", 96,
               lambda: _pm("taylor"), "pmdarima", "uk_electricity_demand"),
    # the yearly means of the monthly sunspot record: held out with it (never pre-trained on, not evaluated)
    RealSeries("sunspots_yearly", "Sunspot activity (yearly)", 11, "Y", 11,
               lambda: _sm("sunspots")["SUNACTIVITY"].to_numpy(float), "statsmodels", "sunspot_number"),
    # pre-training candidates (``training.build_corpus`` drops the ones shorter than a window)
    RealSeries("nile", "Nile river flow (yearly)", 1, "Y", 8, lambda: _sm("nile")["volume"].to_numpy(float),
               "statsmodels", "nile_flow"),
    RealSeries("gdp", "US real GDP (quarterly)", 4, "Q", 8, lambda: _sm("macrodata")["realgdp"].to_numpy(float),
               "statsmodels", "us_macro_realgdp"),
    RealSeries("cpi", "US CPI (quarterly)", 4, "Q", 8, lambda: _sm("macrodata")["cpi"].to_numpy(float),
               "statsmodels", "us_macro_cpi"),
    RealSeries("unemployment", "US unemployment (quarterly)", 4, "Q", 8,
               lambda: _sm("macrodata")["unemp"].to_numpy(float), "statsmodels", "us_macro_unemp"),
    RealSeries("wineind", "Australian wine sales (monthly)", 12, "M", 24, lambda: _pm("wineind"), "pmdarima",
               "aus_wine_sales"),
    RealSeries("woolyrnq", "Australian woollen yarn (quarterly)", 4, "Q", 8, lambda: _pm("woolyrnq"), "pmdarima",
               "aus_woollen_yarn"),
    RealSeries("lynx", "Canadian lynx trappings (yearly)", 10, "Y", 10, lambda: _pm("lynx"), "pmdarima",
               "canadian_lynx"),
    RealSeries("heartrate", "Heart rate (0.5 s)", 1, "500ms", 24, lambda: _pm("heartrate"), "pmdarima",
               "heart_rate"),
    RealSeries("austres", "Australian residents (quarterly)", 4, "Q", 8, lambda: _pm("austres"), "pmdarima",
               "aus_residents"),
    RealSeries("seattle_hourly", "Seattle hourly temperature (2010)", 24, "h", 96,
               lambda: _vega("seattle_temps", "temp"), "vega_datasets", "seattle_temperature_hourly"),
    RealSeries("seattle_temp", "Seattle daily max temperature", 7, "D", 48,
               lambda: _vega("seattle_weather", "temp_max"), "vega_datasets", "seattle_weather_daily"),
    RealSeries("seattle_wind", "Seattle daily wind", 7, "D", 48, lambda: _vega("seattle_weather", "wind"),
               "vega_datasets", "seattle_weather_daily"),
    RealSeries("sf_temps", "San Francisco hourly temperature", 24, "h", 96, lambda: _vega("sf_temps", "temp"),
               "vega_datasets", "sf_temperature_hourly"),
]}
HELD_OUT = ("co2", "sunspots", "airline", "elnino", "taylor")
#: Records of the held-out series: every sampling of them (another frequency, package or column) stays out of
#: pre-training.
HELD_OUT_RECORDS = frozenset(REAL[n].record for n in HELD_OUT)
#: Candidates for the pre-training corpus; ``training.build_corpus`` keeps those long enough for one context of
#: two patches plus the longest horizon (the release manifest lists the ones used).
PRETRAIN_REAL = tuple(n for n in REAL if REAL[n].record not in HELD_OUT_RECORDS)


@lru_cache(maxsize=64)
def _load_real(name: str) -> tuple[float, ...]:
    y = REAL[name].loader()
    return tuple(impute(np.asarray(y, float))[0].tolist())


def load_real(name: str) -> np.ndarray:
    if name not in REAL:
        raise ValueError(f"unknown series {name!r}; choose one of {', '.join(REAL)} or a synthetic family")
    return np.array(_load_real(name))


def available_real(names=None) -> dict[str, np.ndarray]:
    """The bundled series whose package is installed (a missing optional package only drops its series)."""
    out = {}
    for n in names or REAL:
        try:
            out[n] = load_real(n)
        except ImportError:
            continue
    return out


def impute(y: np.ndarray) -> tuple[np.ndarray, int]:
    """Documented imputation: linear interpolation between observed points, nearest value at the ends."""
    y = np.asarray(y, float)
    bad = ~np.isfinite(y)
    if bad.all():
        raise ValueError("the series has no finite values")
    if bad.any():
        idx = np.arange(len(y))
        y = y.copy()
        y[bad] = np.interp(idx[bad], idx[~bad], y[~bad])
    return y, int(bad.sum())


# ----------------------------------------------------------------------------- CSV uploads

_TIME_NAMES = ("date", "time", "timestamp", "datetime", "ds", "period", "month", "year", "week", "day")
_PERIODS = [(1800, 24 * 2), (3600, 24), (86400, 7), (7 * 86400, 52), (28 * 86400, 12), (89 * 86400, 4),
            (365 * 86400, 1)]


class SeriesError(ValueError):
    """A user series that cannot be forecast; the message says why and what to do."""


def load_csv(path: str | Path, column: str = "", max_missing: float = 0.2) -> dict:
    """Parse an uploaded CSV: a time column, one numeric value column, regular timestamps.

    Gaps that are whole multiples of the usual step become missing values; missing values are imputed by
    linear interpolation (``impute``); irregular or duplicated timestamps are refused with a message."""
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except Exception as e:  # noqa: BLE001
        raise SeriesError(f"could not read the CSV file: {e}") from None
    if df.shape[1] < 2 or len(df) == 0:
        raise SeriesError("the CSV needs a time column and at least one value column (a header row, then rows)")
    tcol = _time_column(df)
    if tcol is None:
        raise SeriesError("the CSV has no time column: add a column of dates or times (e.g. 'date' with "
                          "2020-01-31, 2020-02-29, …) so the step and the seasonal period can be read")
    is_num = pd.api.types.is_numeric_dtype(df[tcol])
    t = None if is_num else pd.to_datetime(df[tcol], errors="coerce", format="mixed")
    if t is None or t.isna().any():
        if pd.api.types.is_numeric_dtype(df[tcol]) and tcol.lower() in ("year", "t", "step", "index"):
            t = None
        else:
            bad = df[tcol][pd.to_datetime(df[tcol], errors="coerce", format="mixed").isna()].head(3).tolist()
            raise SeriesError(f"time column {tcol!r} has values that are not dates: {bad}")
    values = [c for c in df.columns if c != tcol]
    if column:
        if column not in df.columns:
            raise SeriesError(f"column {column!r} is not in the CSV (columns: {', '.join(map(str, values))})")
        vcol = column
    else:
        num = [c for c in values if pd.api.types.is_numeric_dtype(df[c])]
        if not num:
            raise SeriesError("the CSV has no numeric value column")
        vcol = num[0]
    y = pd.to_numeric(df[vcol], errors="coerce").to_numpy(float)
    if t is None:  # integer steps (e.g. a year column)
        steps = np.diff(df[tcol].to_numpy(float))
        seconds = None
    else:
        tv = t.to_numpy("datetime64[s]").astype(np.int64)
        if np.any(np.diff(tv) <= 0):
            raise SeriesError(f"timestamps in {tcol!r} must be strictly increasing (found duplicates or "
                              "unsorted rows); sort the file and aggregate duplicate times")
        steps = np.diff(tv).astype(float)
        seconds = float(np.median(steps))
    if len(steps) == 0:
        raise SeriesError("the series has a single row")
    step = float(np.median(steps))
    ratio = steps / step
    monthly = seconds is not None and 27 * 86400 <= step <= 32 * 86400
    tol = 0.12 if monthly else 0.01  # months and quarters vary in length
    if monthly:
        ratio = np.round(ratio)  # calendar months: a gap of 2 steps is one missing month
    mult = np.round(ratio)
    if np.any(np.abs(ratio - mult) > tol) or np.any(mult < 1):
        i = int(np.argmax(np.abs(ratio - mult) > tol))
        raise SeriesError(f"irregular timestamps: the usual step is {_fmt_step(step, seconds)} but row {i + 2} "
                          f"follows after {_fmt_step(steps[i], seconds)}; resample the series to a regular step "
                          "first")
    # Regular grid: whole missing steps become NaN.
    pos = np.concatenate([[0], np.cumsum(mult).astype(int)])
    full = np.full(pos[-1] + 1, np.nan)
    full[pos] = y
    n_missing_raw = int(np.isnan(full).sum())
    if n_missing_raw > max_missing * len(full):
        raise SeriesError(f"{n_missing_raw} of {len(full)} values are missing (more than "
                          f"{max_missing:.0%}); imputation would invent the series")
    yi, n_imputed = impute(full)
    period = _period_from_step(step) if seconds is not None else 1
    return {"y": yi, "column": str(vcol), "time_column": str(tcol), "imputed": n_imputed, "period": period,
            "step": _fmt_step(step, seconds)}


def _time_column(df) -> str | None:
    import pandas as pd

    for c in df.columns:
        if str(c).strip().lower() in _TIME_NAMES:
            return c
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            parsed = pd.to_datetime(df[c], errors="coerce", format="mixed")
            if parsed.notna().mean() > 0.9:
                return c
    return None


def _period_from_step(step_s: float) -> int:
    for s, m in _PERIODS:
        if step_s <= s * 1.1:
            return m
    return 1


def _fmt_step(step: float, seconds) -> str:
    if seconds is None:
        return f"{step:g} steps"
    for unit, s in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if step >= s:
            return f"{step / s:g} {unit}s"
    return f"{step:g} s"


# ----------------------------------------------------------------------------- windows


def windows(y: np.ndarray, context: int, horizon: int, origins) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contexts [n, context] (left-padded with 0 where the history is shorter), valid masks, targets [n, H].

    ``origins`` are indices t: the context is y[t-context:t], the target y[t:t+H]."""
    X, V, Y = [], [], []
    for t in origins:
        lo = max(0, t - context)
        ctx = y[lo:t]
        pad = context - len(ctx)
        X.append(np.concatenate([np.zeros(pad), ctx]))
        V.append(np.concatenate([np.zeros(pad, bool), np.ones(len(ctx), bool)]))
        Y.append(y[t:t + horizon])
    return np.array(X, np.float32), np.array(V, bool), np.array(Y, np.float32)

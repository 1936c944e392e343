"""Metrics (MSE, MAE on standardised data; MASE) and the statistical baselines with their intervals.

Baselines: seasonal naive; AutoETS = statsmodels ETSModel, the best of several (trend, damping, seasonality)
configurations by AICc; AutoARIMA = pmdarima.auto_arima (stepwise Hyndman-Khandakar search). Both fit the
standardised series (an exact reparametrisation for additive models; on raw half-hourly demand, values
~30,000, the ETS optimiser failed) and AutoETS drops fits whose optimiser did not converge. Periods m ≤ 24 are
modelled directly. Longer periods (weekly CO₂ m = 52, half-hourly demand m = 48) are removed first with a robust
STL decomposition, the non-seasonal model is fitted to the adjusted series and the last seasonal cycle is added
back (R's ``stlf``; R's ``ets`` and statsforecast's AutoETS refuse m > 24, and seasonal ARIMA with m = 48 takes
minutes per fit).
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import norm

MAX_FIT = 360  # baselines fit the most recent points only (speed on 2 cores)


def mase_scale(history: np.ndarray, m: int) -> float:
    """Mean absolute error of the in-sample seasonal naive forecast ŷ_t = y_{t−m} (Hyndman & Koehler 2006)."""
    m = m if len(history) > m else 1
    d = np.abs(history[m:] - history[:-m])
    s = float(d.mean()) if len(d) else 0.0
    return s if s > 1e-12 else 1.0


def metrics(y_true, y_pred, history: np.ndarray, m: int, scale_mu: float, scale_sd: float) -> dict:
    """MSE and MAE on standardised values ((y − μ)/σ of the history) and MASE with seasonal period m."""
    yt, yp = np.asarray(y_true, float), np.asarray(y_pred, float)
    zt, zp = (yt - scale_mu) / scale_sd, (yp - scale_mu) / scale_sd
    return {"mse": float(np.mean((zt - zp) ** 2)), "mae": float(np.mean(np.abs(zt - zp))),
            "mase": float(np.mean(np.abs(yt - yp)) / mase_scale(history, m))}


def seasonal_naive(history: np.ndarray, horizon: int, m: int, coverage: float = 0.8):
    m = m if 1 <= m < len(history) else 1
    last = history[-m:]
    reps = int(np.ceil(horizon / m))
    mean = np.tile(last, reps)[:horizon]
    res = history[m:] - history[:-m]
    sd = float(np.std(res)) if len(res) > 1 else 0.0
    k = np.arange(horizon) // m + 1
    z = norm.ppf(0.5 + coverage / 2)
    return mean, mean - z * sd * np.sqrt(k), mean + z * sd * np.sqrt(k)


def _trail(history: np.ndarray, m: int) -> np.ndarray:
    n = max(MAX_FIT, 4 * m) if m > 1 else MAX_FIT
    return history[-n:]


def _deseasonalise(y: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(adjusted series, seasonal component) by robust STL for m > 24 with two cycles; else (y, None)."""
    if m <= 24 or len(y) < 2 * m + 1:
        return y, None
    from statsmodels.tsa.seasonal import STL

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        season = np.asarray(STL(y, period=m, robust=True).fit().seasonal)
    return y - season, season


def _season_ahead(season: np.ndarray | None, m: int, horizon: int) -> np.ndarray:
    """The last seasonal cycle repeated over the horizon (0 without a seasonal component)."""
    if season is None:
        return np.zeros(horizon)
    return np.tile(season[-m:], int(np.ceil(horizon / m)))[:horizon]


def _standardise(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    mu, sd = float(np.mean(y)), float(np.std(y))
    sd = sd if sd > 1e-12 else 1.0
    return (y - mu) / sd, mu, sd


def auto_ets(history: np.ndarray, horizon: int, m: int, coverage: float = 0.8):
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    import pandas as pd

    y, season = _deseasonalise(_trail(history, m).astype(float), m)
    z, mu, sd = _standardise(y)
    z = pd.Series(z)
    seasonal = season is None and m > 1 and len(z) >= 2 * m + 2
    best, best_aicc = None, np.inf
    configs = [(None, False), ("add", False), ("add", True)]
    for trend, damped in configs:
        for kind in (["add", None] if seasonal else [None]):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = ETSModel(z, error="add", trend=trend, damped_trend=damped, seasonal=kind,
                                   seasonal_periods=m if kind else None).fit(disp=False, maxiter=200)
                aicc = res.aicc if np.isfinite(res.aicc) else res.aic
            except Exception:  # noqa: BLE001  (a configuration that fails to fit is skipped, as AutoETS does)
                continue
            if not (res.mle_retvals or {}).get("converged", True) or not np.isfinite(aicc):
                continue  # an optimiser that stopped early is a failed fit, not a candidate
            if aicc < best_aicc:
                best, best_aicc = res, aicc
    if best is None:
        return seasonal_naive(history, horizon, m, coverage)
    frame = best.get_prediction(start=len(z), end=len(z) + horizon - 1).summary_frame(alpha=1 - coverage)
    add = _season_ahead(season, m, horizon)
    return tuple(frame[c].to_numpy() * sd + mu + add for c in ("mean", "pi_lower", "pi_upper"))


def auto_arima(history: np.ndarray, horizon: int, m: int, coverage: float = 0.8):
    import pmdarima as pm

    y, season = _deseasonalise(_trail(history, m).astype(float), m)
    z, mu, sd = _standardise(y)
    seasonal = season is None and 1 < m <= 24 and len(z) >= 3 * m
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pm.auto_arima(z, m=m if seasonal else 1, seasonal=seasonal, stepwise=True, suppress_warnings=True,
                              error_action="ignore", max_p=2, max_q=2, max_P=1, max_Q=1, max_order=5,
                              maxiter=30)
        mean, ci = model.predict(horizon, return_conf_int=True, alpha=1 - coverage)
    add = _season_ahead(season, m, horizon)
    ci = np.asarray(ci)
    return tuple(np.asarray(a) * sd + mu + add for a in (mean, ci[:, 0], ci[:, 1]))


def _one_blas_thread(fn):
    """statsmodels / pmdarima on one BLAS thread: on a busy 2-core machine OpenBLAS's spinning threads made
    auto_arima 15× slower (8 s vs 124 s on the airline series)."""
    def run(*a, **k):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            return fn(*a, **k)

    run.__name__ = fn.__name__
    return run


STATISTICAL = {"seasonal_naive": seasonal_naive, "auto_ets": _one_blas_thread(auto_ets),
               "auto_arima": _one_blas_thread(auto_arima)}

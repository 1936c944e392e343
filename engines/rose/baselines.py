"""Metrics (MSE, MAE on standardised data; MASE) and the statistical baselines with their intervals.

Baselines: seasonal naive; AutoETS = statsmodels ETSModel, the best of several (trend, damping, seasonality)
configurations by AICc; AutoARIMA = pmdarima.auto_arima (stepwise Hyndman-Khandakar search). Seasonal
ARIMA is used for m ≤ 24; for longer periods (weekly CO₂, half-hourly demand) the series is seasonally
adjusted by per-phase means first and the seasonal pattern added back (seasonal ARIMA with m = 48 or 52 takes
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


def auto_ets(history: np.ndarray, horizon: int, m: int, coverage: float = 0.8):
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    import pandas as pd

    y = pd.Series(_trail(history, m).astype(float))
    seasonal = m > 1 and len(y) >= 2 * m + 2
    best, best_aicc = None, np.inf
    configs = [(None, False), ("add", False), ("add", True)]
    for trend, damped in configs:
        for season in (["add", None] if seasonal else [None]):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = ETSModel(y, error="add", trend=trend, damped_trend=damped, seasonal=season,
                                   seasonal_periods=m if season else None).fit(disp=False, maxiter=200)
                aicc = res.aicc if np.isfinite(res.aicc) else res.aic
            except Exception:  # noqa: BLE001  (a configuration that fails to fit is skipped, as AutoETS does)
                continue
            if aicc < best_aicc:
                best, best_aicc = res, aicc
    if best is None:
        return seasonal_naive(history, horizon, m, coverage)
    pred = best.get_prediction(start=len(y), end=len(y) + horizon - 1)
    frame = pred.summary_frame(alpha=1 - coverage)
    return frame["mean"].to_numpy(), frame["pi_lower"].to_numpy(), frame["pi_upper"].to_numpy()


def auto_arima(history: np.ndarray, horizon: int, m: int, coverage: float = 0.8):
    import pmdarima as pm

    y = _trail(history, m).astype(float)
    season = np.zeros(0)
    seasonal = 1 < m <= 24 and len(y) >= 3 * m
    if m > 24 and len(y) >= 2 * m:  # seasonal adjustment by per-phase means, added back afterwards
        phase = np.arange(len(y)) % m
        season = np.array([y[phase == k].mean() for k in range(m)]) - y.mean()
        y = y - season[phase]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pm.auto_arima(y, m=m if seasonal else 1, seasonal=seasonal, stepwise=True, suppress_warnings=True,
                              error_action="ignore", max_p=2, max_q=2, max_P=1, max_Q=1, max_order=5,
                              maxiter=30)
        mean, ci = model.predict(horizon, return_conf_int=True, alpha=1 - coverage)
    mean, lo, hi = np.asarray(mean), np.asarray(ci)[:, 0], np.asarray(ci)[:, 1]
    if len(season):
        add = season[(np.arange(horizon) + len(y)) % m]
        mean, lo, hi = mean + add, lo + add, hi + add
    return mean, lo, hi


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

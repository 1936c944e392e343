"""Parameters of the ROSE entry points (pydantic only: no numpy, no torch, so the UI validates without them)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from engines.common.params import Params, unique_entries

#: Horizons the tiny model has a linear head for (spec §4); a longer horizon is rejected.
MAX_HORIZON = 96
#: Longest context the tiny model reads (8 patches of 32); shorter histories are left-padded.
MAX_CONTEXT = 256
MIN_HISTORY = 48  # fewer observed points than this: no forecast (and no seasonal-naive scale)

Baseline = Literal["seasonal_naive", "auto_ets", "auto_arima", "scratch"]
BASELINE_LABELS = {
    "seasonal_naive": "Seasonal naive",
    "auto_ets": "AutoETS (statsmodels)",
    "auto_arima": "AutoARIMA (pmdarima)",
    "scratch": "Same model from scratch",
}
MaskMode = Literal["freq_multi", "patch_multi"]


class SeriesSpec(Params):
    """Where the series comes from: a bundled/synthetic name, or an uploaded CSV (path, column)."""

    series: str = Field("co2", min_length=1, max_length=80, description="bundled series name (see the picker)")
    csv_path: str = Field("", max_length=1000, description="uploaded CSV file; overrides `series` when set")
    csv_column: str = Field("", max_length=200, description="value column of the CSV (empty = the first numeric)")
    period: int = Field(0, ge=0, le=1000, description="seasonal period m for MASE / seasonal naive (0 = inferred)")


class ForecastParams(SeriesSpec):
    horizon: int = Field(24, ge=1, le=MAX_HORIZON,
                         description=f"forecast horizon H (the model has heads up to {MAX_HORIZON})")
    context: int = Field(MAX_CONTEXT, ge=32, le=MAX_CONTEXT, description="context length L read by ROSE")
    holdout: bool = Field(True, description="hold the last H points out as truth (else forecast the future)")
    few_shot: bool = Field(True, description="also fine-tune ROSE on the history (few-shot)")
    few_shot_fraction: float = Field(0.1, gt=0.0, le=1.0, description="fraction of the history's windows used")
    few_shot_steps: int = Field(60, ge=1, le=2000, description="fine-tuning steps")
    baselines: tuple[Baseline, ...] = Field(("seasonal_naive", "auto_ets", "auto_arima"), max_length=4)
    coverage: float = Field(0.8, ge=0.5, le=0.99, description="nominal coverage of the intervals")
    model_path: str = Field("", max_length=1000, description="released ROSE weights (empty = the shipped model)")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    _unique = unique_entries("baselines")


class MaskViewParams(SeriesSpec):
    """The frequency-masking explorer: one view with threshold τ, low or high band removed."""

    tau: float = Field(0.2, ge=0.0, le=1.0, description="threshold τ as a fraction of the rFFT bins")
    band: Literal["low", "high"] = Field("low", description="which band is zeroed")
    context: int = Field(MAX_CONTEXT, ge=32, le=MAX_CONTEXT)


class PretrainParams(Params):
    """Pre-train a ROSE model on the synthetic multi-domain + bundled real corpus (held-out series excluded)."""

    size: Literal["tiny", "micro"] = Field("tiny", description="tiny ≈ 0.3M parameters (spec §4); micro for tests")
    steps: int = Field(3000, ge=10, le=100_000, description="optimizer steps")
    batch_size: int = Field(128, ge=4, le=1024)
    lr: float = Field(1e-3, gt=0.0, le=0.1, allow_inf_nan=False)
    n_series: int = Field(6000, ge=60, le=100_000, description="synthetic series in the corpus")
    mask_mode: MaskMode = Field("freq_multi", description="freq_multi = decomposed frequency learning; "
                                                          "patch_multi = random patch masking (ablation)")
    with_register: bool = Field(True, description="use the time-series register (codebook); False = ablation")
    seed: int = Field(0, ge=0, le=2**31 - 1)


class AblationParams(Params):
    """Frequency vs patch masking and with vs without register, several seeds, zero-shot on held-out series."""

    size: Literal["tiny", "micro"] = "tiny"
    steps: int = Field(1500, ge=10, le=50_000)
    batch_size: int = Field(128, ge=4, le=1024)
    n_series: int = Field(4000, ge=60, le=100_000)
    seeds: int = Field(3, ge=1, le=5)

    @model_validator(mode="after")
    def _budget(self):
        if self.steps * self.seeds > 60_000:
            raise ValueError("steps × seeds must be at most 60000")
        return self

"""Parameters of the forgetting-vs-angle experiments (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params, require_unique, unique_entries

Variant = Literal["cl", "replay", "ewc", "replay_ewc"]
Selector = Literal["random", "mid", "small", "big", "herding"]
VARIANT_LABELS: dict[str, str] = {"cl": "CL", "replay": "Replay", "ewc": "EWC", "replay_ewc": "EWC-Replay"}
SELECTOR_LABELS: dict[str, str] = {"random": "random", "mid": "mid-angle", "small": "small-angle",
                                   "big": "big-angle", "herding": "herding"}

# A sweep is refused when its estimated compute exceeds this (2 CPU cores).
MAX_SWEEP_MINUTES = 30.0
# Seconds per (model · training sample · epoch) on 2 shared cores, measured on the default sweep.
SECONDS_PER_UNIT = 1.6e-6


class SyntheticParams(Params):
    """The signal–noise setting of the official synthetic script (its values are the defaults)."""

    mu_norm: FiniteFloat = Field(8.0, ge=0.5, le=40.0, description="‖μ‖, the signal strength (bmu)")
    noise_std: FiniteFloat = Field(1.0, ge=0.05, le=5.0, description="σ of the Gaussian noise patch ξ")
    d: int = Field(100, ge=4, le=400, description="patch length d")
    m: int = Field(10, ge=1, le=64, description="filters per class m")
    n_train: int = Field(100, ge=10, le=1000, description="training samples per task")
    n_test: int = Field(1000, ge=50, le=5000, description="test samples per task")
    lr: FiniteFloat = Field(0.01, gt=0.0, le=1.0, description="gradient-descent step η")
    epochs1: int = Field(1500, ge=10, le=10000, description="full-batch epochs on task 1 (script: 3000)")
    epochs2: int = Field(1500, ge=10, le=10000, description="full-batch epochs on task 2 (script: 3000)")
    buffer_frac: FiniteFloat = Field(0.1, ge=0.0, le=0.3, description="share of task-1 samples in Replay's training set")
    selector: Selector = Field("random", description="how the replayed task-1 samples are chosen")
    ewc_lambda: FiniteFloat = Field(1e6, ge=0.0, le=1e9, description="EWC strength λ (Fisher summed over samples)")
    bias: bool = Field(True, description="filters with a bias, as the script's Conv1d (the theory has none)")
    variants: tuple[Variant, ...] = Field(("cl", "replay", "ewc", "replay_ewc"), min_length=1)

    _unique = unique_entries("variants")


class AngleRunParams(SyntheticParams):
    """One angle, every variant, with training curves and the γ/ρ trace (the live slider run)."""

    angle: FiniteFloat = Field(150.0, ge=0.0, le=180.0, description="θ between μ₁ and μ₂ in degrees")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    eval_points: int = Field(40, ge=2, le=200, description="recorded points per task")


class SweepParams(SyntheticParams):
    """Task-1 error after task 2 against θ for every variant, several seeds."""

    angle_min: FiniteFloat = Field(0.0, ge=0.0, le=180.0)
    angle_max: FiniteFloat = Field(180.0, ge=0.0, le=180.0)
    angle_step: FiniteFloat = Field(10.0, ge=1.0, le=90.0)
    seeds: int = Field(3, ge=1, le=10)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    def angles(self) -> list[float]:
        out, a = [], self.angle_min
        while a <= self.angle_max + 1e-9:
            out.append(round(a, 6))
            a += self.angle_step
        return out

    def estimated_seconds(self) -> float:
        data_sets = len({v.startswith("replay") for v in self.variants})
        lambdas = len({v.endswith("ewc") for v in self.variants})
        models2 = self.seeds * len(self.angles()) * data_sets * lambdas
        units = self.n_train * (self.seeds * self.epochs1 + models2 * self.epochs2) * (self.d * self.m) / 1000
        return units * SECONDS_PER_UNIT

    @model_validator(mode="after")
    def _within_budget(self) -> "SweepParams":
        if self.angle_max < self.angle_min:
            raise ValueError(f"angle_max ({self.angle_max}) must be ≥ angle_min ({self.angle_min})")
        est = self.estimated_seconds() / 60
        if est > MAX_SWEEP_MINUTES:
            raise ValueError(f"this sweep would take about {est:.0f} min on 2 CPU cores, over the "
                             f"{MAX_SWEEP_MINUTES:.0f} min budget: use fewer angles, seeds, variants or epochs")
        return self


class RealParams(Params):
    dataset: Literal["digits", "fashion"] = Field("digits",
                                                  description="scikit-learn digits, or Fashion-MNIST if installed")
    per_class: int = Field(300, ge=20, le=6000, description="Fashion-MNIST images per class (digits: all ~180)")
    train_frac: FiniteFloat = Field(0.5, ge=0.2, le=0.9, description="share of each class used for training")
    m: int = Field(32, ge=2, le=256, description="filters per class")
    lr: FiniteFloat | None = Field(None, gt=0.0, le=10.0, description="step size (default: per data set)")
    epochs: int = Field(600, ge=10, le=5000, description="full-batch epochs per task")
    seeds: int = Field(5, ge=1, le=20)
    seed: int = Field(0, ge=0, le=2**31 - 1)


class AngleBinsParams(RealParams):
    """Polarity tasks at chosen angles; task-1 error after task 2 against the replay-buffer size."""

    targets: tuple[FiniteFloat, ...] = Field((30.0, 100.0, 140.0, 155.0), min_length=2, max_length=8,
                                       description="target task angles in degrees; the closest class pairs are used")
    buffer_sizes: tuple[int, ...] = Field((0, 1, 2, 5, 10, 20), min_length=1, max_length=12,
                                          description="task-1 samples replayed (added to task 2's set)")

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        bad = [t for t in v if not 0.0 <= t <= 180.0]
        if bad:
            raise ValueError(f"every target angle must lie in [0, 180]; got {bad}")
        return tuple(sorted(v))

    @field_validator("buffer_sizes")
    @classmethod
    def _sizes(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        bad = [b for b in v if not 0 <= b <= 500]
        if bad:
            raise ValueError(f"every buffer size must lie in [0, 500]; got {bad}")
        return tuple(sorted(set(v)))


class BufferSelectionParams(RealParams):
    """Split tasks (two classes each, shared head); replay buffer chosen by each selector."""

    task1: tuple[int, int] = Field((4, 5), description="the two classes of task 1")
    task2: tuple[int, int] = Field((8, 9), description="the two classes of task 2")
    buffer_frac: FiniteFloat = Field(0.05, ge=0.005, le=0.5, description="buffer size as a share of task 1's training set")
    selectors: tuple[Selector, ...] = Field(("random", "mid", "small", "big", "herding"), min_length=1)
    feature_space: Literal["network", "pixels"] = Field(
        "network", description="cosines in the task-1 network's feature layer, or in pixel space (MNIST script)")

    @model_validator(mode="after")
    def _classes(self) -> "BufferSelectionParams":
        cls = list(self.task1) + list(self.task2)
        bad = [c for c in cls if not 0 <= c <= 9]
        if bad:
            raise ValueError(f"classes must lie in 0…9; got {bad}")
        if len(set(cls)) != 4:
            raise ValueError(f"the two tasks need four different classes; got task1={self.task1}, task2={self.task2}")
        require_unique(self.selectors, "selectors")
        return self

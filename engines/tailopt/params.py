"""Parameters of the TailOPT experiments (pydantic only: no numpy, no torch, so the UI can import it)."""
from __future__ import annotations

import math
import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import Params, unique_entries

Task = Literal["linear", "logistic", "digits", "transformer"]
Noise = Literal["cauchy", "student_t", "gaussian", "none"]
Engine = Literal["simulator", "gloo"]
Method = Literal["fedavg", "fedavg_clip", "fedadam", "fedyogi", "fedadagrad", "local_adam", "adam2", "diloco",
                 "adam_tailopt", "adagrad_tailopt", "rmsprop_tailopt", "bi2clip"]

METHOD_LABELS: dict[str, str] = {
    "fedavg": "FedAvg (Local SGD)",
    "fedavg_clip": "FedAvg + L2 clip",
    "fedadam": "FedAdam",
    "fedyogi": "FedYogi",
    "fedadagrad": "FedAdagrad",
    "local_adam": "Local Adam (averaged moments)",
    "adam2": "Adam² (Adam inner + Adam outer)",
    "diloco": "DiLoCo-lite (Adam inner, Nesterov outer)",
    "adam_tailopt": "Adam-TailOPT (BiClip inner, Adam outer)",
    "adagrad_tailopt": "Adagrad-TailOPT",
    "rmsprop_tailopt": "RMSProp-TailOPT",
    "bi2clip": "Bi²Clip (BiClip inner + outer)",
}
ADAM_TYPE = ("fedadam", "local_adam", "adam2", "diloco")  # the spec's "best Adam-type method" pool
TASK_LABELS = {"linear": "heavy-tailed linear regression", "logistic": "heavy-tailed logistic regression",
               "digits": "scikit-learn digits (softmax regression)", "transformer": "tiny transformer, Zipf tokens"}
DEFAULT_METHODS: tuple[str, ...] = ("fedavg", "fedavg_clip", "fedadam", "local_adam", "adam_tailopt", "bi2clip")


def max_processes() -> int:
    """The most gloo ranks (one process each) this machine is allowed to start."""
    return max(2, 2 * (os.cpu_count() or 1))


def _finite(v: float | None, name: str) -> None:
    if v is not None and not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number")


class ProblemParams(Params):
    """The task, its workers and the injected gradient noise."""

    task: Task = Field("linear", description="objective the workers minimise together")
    noise: Noise = Field("cauchy", description="distribution of the per-coordinate gradient noise ξ")
    tail_index: float = Field(1.5, ge=0.8, le=5.0, description="ν of Student-t noise (Cauchy is ν = 1)")
    noise_scale: float = Field(1.0, ge=0.0, le=100.0, description="s in ξ = s·t_ν")
    workers: int = Field(8, ge=1, le=64, description="number of workers N")
    local_steps: int = Field(10, ge=1, le=200, description="inner steps z between synchronisations")
    rounds: int = Field(150, ge=1, le=3000, description="communication rounds T")
    batch: int = Field(16, ge=1, le=512, description="minibatch per inner step")
    non_iid: float = Field(0.5, ge=0.0, le=1.0, description="heterogeneity of the workers' data (0 = IID)")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    model: str = Field("", max_length=300, description="transformer task only: hub id or local path of a causal LM "
                       "(paper-scale path; empty = the tiny GPT-2). Hub ids download only when configured")

    @field_validator("tail_index", "noise_scale", "non_iid")
    @classmethod
    def _finite_floats(cls, v: float, info) -> float:
        _finite(v, info.field_name)
        return v


class HyperParams(Params):
    """One method's hyper-parameters. Thresholds are absolute, or multiples of the gradient scale when auto."""

    lr_in: float = Field(0.01, gt=0.0, le=100.0, description="inner (worker) learning rate η_ℓ")
    lr_out: float = Field(1.0, gt=0.0, le=100.0, description="outer (server) learning rate η")
    auto_thresholds: bool = Field(True, description="thresholds as multiples of the probe gradient scale")
    d_in: float = Field(0.1, ge=0.0, le=1e6, description="inner BiClip lower threshold d")
    u_in: float = Field(10.0, gt=0.0, le=1e6, description="inner upper threshold u (also the L2 clip level)")
    d_out: float = Field(0.1, ge=0.0, le=1e6, description="outer BiClip lower threshold d̃")
    u_out: float = Field(10.0, gt=0.0, le=1e6, description="outer BiClip upper threshold ũ")
    gamma: float = Field(0.0, ge=0.0, le=1.0, description="threshold schedule: u_t = u(1+t)^γ, d_t = d(1+t)^−γ")
    server_momentum: float = Field(0.0, ge=0.0, lt=1.0, description="optional Bi²Clip server momentum (d floats)")
    beta1: float = Field(0.9, ge=0.0, lt=1.0)
    beta2: float = Field(0.99, gt=0.0, lt=1.0)
    eps: float = Field(1e-8, gt=0.0, le=1.0)

    @model_validator(mode="after")
    def _thresholds(self):
        for k in ("lr_in", "lr_out", "d_in", "u_in", "d_out", "u_out"):
            _finite(getattr(self, k), k)
        if self.d_in > self.u_in:
            raise ValueError(f"d_in ({self.d_in:g}) must not exceed u_in ({self.u_in:g}): BiClip needs d ≤ u")
        if self.d_out > self.u_out:
            raise ValueError(f"d_out ({self.d_out:g}) must not exceed u_out ({self.u_out:g}): BiClip needs d ≤ u")
        return self


class CompareParams(ProblemParams):
    """Run several methods on one problem; each tuned on a validation seed (same budget) or with given values."""

    methods: tuple[Method, ...] = Field(DEFAULT_METHODS, min_length=1)
    tune: bool = Field(True, description="choose each method's hyper-parameters on the validation seed")
    budget: int = Field(16, ge=1, le=64, description="configurations tried per method when tuning")
    hyper: HyperParams = Field(default_factory=HyperParams, description="used for every method when tune is off")
    engine: Engine = Field("simulator", description="in-process simulator or torch.distributed gloo ranks")

    _unique = unique_entries("methods")

    @model_validator(mode="after")
    def _machine(self):
        if self.engine == "gloo" and self.workers > max_processes():
            raise ValueError(f"workers: {self.workers} gloo processes exceed this machine's limit of "
                             f"{max_processes()} (2 per CPU core); use the simulator for more workers")
        if self.engine == "gloo" and self.task == "transformer":
            raise ValueError("engine: the gloo engine runs the regression and digits tasks")
        return self


class NoiseParams(ProblemParams):
    """Probe the gradient noise at the initial point: histogram and Hill tail-index estimate."""

    probes: int = Field(200, ge=10, le=5000, description="stochastic gradients drawn per worker")


class EquivalenceParams(ProblemParams):
    """Run one method in the simulator and on ``workers`` gloo ranks and compare the parameters."""

    method: Method = "bi2clip"
    hyper: HyperParams = Field(default_factory=HyperParams)
    workers: int = Field(2, ge=1, le=64)
    rounds: int = Field(3, ge=1, le=200)

    @model_validator(mode="after")
    def _machine(self):
        if self.workers > max_processes():
            raise ValueError(f"workers: {self.workers} gloo processes exceed this machine's limit of "
                             f"{max_processes()} (2 per CPU core)")
        if self.task == "transformer":
            raise ValueError("task: the gloo engine runs the regression and digits tasks")
        return self

"""Parameters of the KL-regularised bandit experiments (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from engines.common.params import FiniteFloat, Params, unique_entries

Method = Literal["kl_ucb", "kl_greedy", "ucb", "vw_softmax"]
METHOD_LABELS: dict[str, str] = {
    "kl_ucb": "KL-UCB (Alg. 1)",
    "kl_greedy": "KL-greedy (β = 0)",
    "ucb": "UCB / LinUCB",
    "vw_softmax": "Vowpal Wabbit --softmax (peer)",
}


class EnvParams(Params):
    env: Literal["linear", "hard"] = Field(
        "linear", description="linear: contextual bandit (env A); hard: K-armed horizon-dependent gap Δ_T = √(K/T) (env B)"
    )
    dim: int = Field(8, ge=2, le=64, description="feature dimension d of the linear bandit (an intercept is added)")
    arms: int = Field(20, ge=2, le=200, description="number of arms K")
    contexts: int = Field(50, ge=1, le=1000, description="number of fixed contexts of the linear bandit")
    noise: FiniteFloat = Field(0.1, ge=0.0, le=1.0, description="standard deviation σ of the Gaussian reward noise")
    reference: Literal["uniform", "peaked"] = Field("uniform", description="reference policy π₀")
    reference_temperature: FiniteFloat = Field(1.0, ge=0.05, le=20.0, description="temperature of the peaked π₀")


class RegretCurvesParams(EnvParams):
    eta: FiniteFloat = Field(5.0, ge=0.1, le=500.0, description="η: inverse KL strength (large η = weak regularisation)")
    beta: FiniteFloat = Field(1.0, ge=0.0, le=10.0, description="bonus scale β of KL-UCB and UCB")
    ridge: FiniteFloat = Field(1.0, gt=0.0, le=100.0, description="ridge λ of the least-squares estimate")
    horizon: int = Field(5000, ge=100, le=100_000, description="number of rounds T (largest T for the hard family)")
    seeds: int = Field(3, ge=1, le=20, description="independent runs averaged")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    methods: tuple[Method, ...] = Field(("kl_ucb", "kl_greedy", "ucb"), min_length=1)

    _unique = unique_entries("methods")


class EtaSweepParams(EnvParams):
    etas: tuple[FiniteFloat, ...] = Field((1.0, 2.0, 5.0, 10.0, 20.0, 50.0), min_length=2, max_length=12)
    beta: FiniteFloat = Field(1.0, ge=0.0, le=10.0)
    ridge: FiniteFloat = Field(1.0, gt=0.0, le=100.0)
    horizon: int = Field(5000, ge=100, le=100_000)
    seeds: int = Field(3, ge=1, le=20)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("etas")
    @classmethod
    def _in_range(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        bad = [e for e in v if not (0.1 <= e <= 500.0)]
        if bad:
            raise ValueError(f"every η must lie in [0.1, 500]; got {bad}")
        return tuple(sorted(v))


DEFAULT_PROMPTS = (
    "Describe the sea in one sentence.",
    "Write a short greeting for a friend.",
    "Say something about your weekend.",
    "Give me one tip for a rainy day.",
)


class RLHFParams(Params):
    """The LLM instantiation (spec §5): π₀ is a chat model, the Gibbs policy is soft best-of-N."""

    policy_model: str = Field("", max_length=200, description="hub id or local path of π₀; empty = SmolLM2-135M-Instruct")
    prompts: tuple[str, ...] = Field(DEFAULT_PROMPTS, min_length=1, max_length=32)
    preference: str = Field("a cheerful, sunny and happy answer", min_length=2, max_length=300,
                            description="hidden text defining the true reward R* (cosine of embeddings)")
    rounds: int = Field(30, ge=2, le=500)
    candidates: int = Field(8, ge=2, le=64, description="N responses sampled from π₀ per round")
    eta: FiniteFloat = Field(20.0, ge=0.1, le=200.0)
    beta: FiniteFloat = Field(1.0, ge=0.0, le=10.0)
    ensemble: int = Field(5, ge=2, le=20, description="reward heads E")
    feature_dim: int = Field(8, ge=2, le=64, description="d: principal directions of the response embeddings")
    noise: FiniteFloat = Field(0.05, ge=0.0, le=1.0)
    max_new_tokens: int = Field(24, ge=4, le=128)
    temperature: FiniteFloat = Field(1.0, ge=0.1, le=2.0)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("prompts")
    @classmethod
    def _nonempty(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        v = tuple(s.strip() for s in v if s.strip())
        if not v:
            raise ValueError("give at least one non-empty prompt")
        if any(len(s) > 500 for s in v):
            raise ValueError("prompts must be at most 500 characters")
        return v

"""Parameters of the EMLoC entry points (pydantic only: no torch, no numpy)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from engines.common.params import FiniteFloat, Params, unique_entries

Task = Literal["prototype", "digits"]
Baseline = Literal["full", "truncation", "uniform", "random", "pyramid", "one_shot", "snapkv", "streamingllm", "knorm"]
BASELINE_LABELS = {
    "full": "full context (MLoC)",
    "truncation": "naive truncation (last demos in the budget)",
    "uniform": "uniform-ratio top-k (same budget every layer)",
    "random": "random tokens (same budget every layer)",
    "pyramid": "pyramid schedule (PyramidInfer-style decay, same total budget)",
    "one_shot": "EMLoC without chunking (one chunk)",
    "snapkv": "kvpress SnapKV (whole prefill, same ratio every layer)",
    "streamingllm": "kvpress StreamingLLM (sink + recent tokens, same ratio)",
    "knorm": "kvpress Knorm (lowest key norms, same ratio)",
}
KVPRESS = ("snapkv", "streamingllm", "knorm")
MAX_SHOTS = 256  # the tiny model was trained up to 256 demonstrations (1,792 tokens)


def _ratios(v: tuple[float, ...]) -> tuple[float, ...]:
    if any(not 0.0 < r < 1.0 for r in v):
        raise ValueError(f"ratios: every candidate retention must lie strictly between 0 and 1 (got {list(v)})")
    return tuple(sorted(set(v)))


class MemoryParams(Params):
    task: Task = Field("prototype", description="prototype: synthetic classes; digits: real 8×8 digits")
    shots: int = Field(64, ge=1, le=MAX_SHOTS, description=f"demonstrations (1-{MAX_SHOTS}; the context budget)")
    chunk_size: int = Field(16, ge=1, le=MAX_SHOTS, description="demonstrations per chunk")
    delta: FiniteFloat = Field(0.005, ge=1e-5, le=0.5, description="JS bound δ per chunk")
    ratios: tuple[FiniteFloat, ...] = Field((0.1, 0.2, 0.5), min_length=1, max_length=6,
                                            description="candidate retention ratios, smallest tried first")
    queries: int = Field(20, ge=1, le=200, description="queries answered from the memory")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="which test episode")

    @field_validator("ratios")
    @classmethod
    def _r(cls, v):
        return _ratios(v)


class BenchmarkParams(Params):
    task: Task = Field("prototype")
    shots: tuple[int, ...] = Field((128, 256), min_length=1, max_length=4)
    episodes: int = Field(100, ge=5, le=1000, description="held-out episodes per shot count")
    queries: int = Field(5, ge=1, le=20, description="queries per episode")
    chunk_size: int = Field(16, ge=1, le=MAX_SHOTS)
    delta: FiniteFloat = Field(0.005, ge=1e-5, le=0.5)
    ratios: tuple[FiniteFloat, ...] = Field((0.1, 0.2, 0.5), min_length=1, max_length=6)
    baselines: tuple[Baseline, ...] = Field(("full", "truncation", "uniform", "random", "pyramid"), min_length=1,
                                            max_length=9)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    _unique = unique_entries("baselines")
    @field_validator("ratios")
    @classmethod
    def _r(cls, v):
        return _ratios(v)

    @field_validator("shots")
    @classmethod
    def _shots(cls, v):
        bad = [s for s in v if not 1 <= s <= MAX_SHOTS]
        if bad:
            raise ValueError(f"shots: each shot count must lie in 1-{MAX_SHOTS} (got {bad}); the tiny model's "
                             f"context holds {MAX_SHOTS} demonstrations")
        return tuple(sorted(set(v)))

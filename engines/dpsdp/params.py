"""Parameters of the DPSDP entry points (pydantic only: no torch, no numpy)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import Params, unique_entries

Variant = Literal["dpsdp", "reference", "single_agent", "naive_dpo", "oracle_critic"]
VARIANT_LABELS = {
    "dpsdp": "DPSDP (DPO with DP value targets, actor + critic)",
    "reference": "reference π_ref (SFT only)",
    "single_agent": "single agent (one model, both roles)",
    "naive_dpo": "naive-DPO actor (no DP targets) + π_ref critic",
    "oracle_critic": "π_ref actor + oracle critic (ceiling)",
}
Preset = Literal["quick", "full"]
EXAMPLE = "47+58-26"


class RefineParams(Params):
    problem: str = Field(EXAMPLE, min_length=1, max_length=40, description="a+b-c with numbers below 100 (or a < 1000: OOD)")
    variant: Variant = Field("dpsdp", description="which actor-critic pair runs")
    turns: int = Field(5, ge=1, le=8, description="actor answers: the first one plus turns − 1 refinements")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy")
    markovian: bool = Field(True, description="actor sees (x, last answer, last feedback); off = full history")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("problem")
    @classmethod
    def _problem(cls, v: str) -> str:
        from .task import ProblemError, parse_problem

        try:
            parse_problem(v)
        except ProblemError as e:
            raise ValueError(str(e)) from None
        return v.strip()

    @model_validator(mode="after")
    def _history_fits(self):
        from .task import HISTORY_TURNS, POSITIONS

        if not self.markovian and self.turns > HISTORY_TURNS:
            raise ValueError(f"turns: the full-history state fits at most {HISTORY_TURNS} turns in the tiny model's "
                             f"{POSITIONS} positions (got {self.turns}); the Markovian state runs up to 8")
        return self


class TreeParams(Params):
    index: int = Field(0, ge=0, le=999, description="which training problem's tree")
    seed: int = Field(0, ge=0, le=2**31 - 1)


class EvaluateParams(Params):
    n_problems: int = Field(500, ge=20, le=2000, description="held-out test problems")
    turns: int = Field(5, ge=2, le=8)
    split: Literal["test", "ood"] = Field("test", description="test: in distribution; ood: three-digit first number")
    variants: tuple[Variant, ...] = Field(("dpsdp", "reference", "single_agent", "naive_dpo", "oracle_critic"),
                                          min_length=1, max_length=5)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    _unique = unique_entries("variants")


class TrainParams(Params):
    preset: Preset = Field("quick", description="quick ≈ 6 CPU-minutes (fewer problems and steps); full = the release's recipe")
    seed: int = Field(1, ge=0, le=2**31 - 1)

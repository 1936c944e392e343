"""Parameters of the real-model entry points (pydantic only: no torch): the prompted actor-critic loop on a
word problem, and the small DPSDP LoRA job."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from engines.common.params import Params

from .word_problems import WORD_EXAMPLE

LLM_LABEL = "SmolLM2-135M (prompted)"


class ChatParams(Params):
    problem: str = Field(WORD_EXAMPLE, max_length=600,
                         description="a word problem with a whole-number answer (or a+b-c)")
    expected: str = Field("", max_length=20, description="its right answer, a whole number (optional: built-in and "
                                                         "a+b-c problems know theirs)")
    turns: int = Field(3, ge=1, le=8, description="actor answers: the first one plus turns − 1 refinements")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    max_new_tokens: int = Field(160, ge=16, le=512, description="longest reply of either role, in tokens")

    @field_validator("problem", "expected")
    @classmethod
    def _checked(cls, v: str, info) -> str:
        """``check_problem`` on the problem, or on the expected answer (with a stand-in problem)."""
        from .word_problems import WordProblemError, check_problem

        try:
            check_problem(v) if info.field_name == "problem" else check_problem("1", v)
        except WordProblemError as e:
            raise ValueError(str(e)) from None
        return v.strip()


class LoraParams(Params):
    """The DPSDP data and DPO step on a real chat model with a LoRA adapter on the actor (CPU: a handful of
    problems and steps; a GPU worker with ``PAPERLAB_LLM_MODEL`` and ``PAPERLAB_DPSDP_PROBLEMS`` for more)."""

    source: Literal["builtin", "file"] = Field("builtin", description="built-in word problems, or the JSONL file "
                                                                      "named by PAPERLAB_DPSDP_PROBLEMS")
    n_problems: int = Field(3, ge=1, le=2000, description="restart states (training problems)")
    k: int = Field(2, ge=2, le=8, description="K: first answers per problem and feedbacks per answer")
    m: int = Field(2, ge=1, le=8, description="M: refinements per feedback")
    temperature: float = Field(1.0, gt=0.0, le=2.0, description="sampling temperature of the tree")
    max_new_tokens: int = Field(96, ge=16, le=1024, description="longest reply in the tree, in tokens")
    margin: float = Field(0.25, ge=0.0, le=2.0, description="pairs need a Q gap at least this large")
    pairs_per_state: int = Field(4, ge=1, le=16)
    steps: int = Field(4, ge=1, le=5000, description="DPO steps on the actor's adapter")
    batch: int = Field(2, ge=1, le=64, description="pairs per DPO step")
    lr: float = Field(1e-4, gt=0.0, le=1e-2)
    beta: float = Field(0.1, gt=0.0, le=10.0)
    nll_weight: float = Field(0.0, ge=0.0, le=10.0, description="the chosen reply's NLL added to the DPO loss")
    rank: int = Field(8, ge=1, le=256, description="LoRA rank (q, k, v, o projections)")
    seed: int = Field(0, ge=0, le=2**31 - 1)

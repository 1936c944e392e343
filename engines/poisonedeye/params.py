"""Parameters of the PoisonedEye entry points (pydantic only: the UI validates them without torch).

Names follow the paper: PE-B (text-only poison), PE-S (single-query targeted poison image), PE-C (class-query
targeted poison image). The official code's flags are ``text-only``, ``poison-sample`` and ``poison-class``.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params, unique_entries

Variant = Literal["pe_b", "pe_s", "pe_c"]
VARIANT_LABELS = {"pe_b": "PE-B (text only)", "pe_s": "PE-S (single query)", "pe_c": "PE-C (class query)"}
CODE_FLAGS = {"pe_b": "text-only", "pe_s": "poison-sample", "pe_c": "poison-class"}
Dataset = Literal["digits", "fashion", "minicanvas"]
DATASET_LABELS = {"digits": "handwritten digits (scikit-learn)", "fashion": "Fashion-MNIST (Debian package)",
                  "minicanvas": "minicanvas shapes (procedural)"}
Template = Literal["paper", "window"]
TEMPLATE_LABELS = {"paper": "paper order (instruction, then the question ×3)",
                   "window": "question ×3 first (fits a 32-token retriever window; project adaptation)"}
Generator = Literal["smollm2", "rule"]
GENERATOR_LABELS = {
    "smollm2": "SmolLM2-135M-Instruct (offline LLM; images reach it as the retriever's zero-shot labels)",
    "rule": "rule-based reader (deterministic stand-in, NOT a language model)",
}
ChatFormat = Literal["qwen", "llava"]
Purification = Literal["none", "jpeg", "median", "bitdepth", "jpeg_median", "all"]
PURIFICATION_LABELS = {"none": "none", "jpeg": "JPEG q=50", "median": "3×3 median", "bitdepth": "4-bit depth",
                       "jpeg_median": "JPEG q=50 + 3×3 median", "all": "JPEG + median + 4-bit"}

#: The attacker's default target answer (official code: ``--poison_target_answer "I don't know"``).
TARGET_ANSWER = "I don't know"
#: Largest perturbation budget accepted, in 8-bit levels (the paper's is 8/255).
MAX_EPSILON = 32.0


class SystemParams(Params):
    """The VL-RAG system under attack: knowledge base, retriever depth, generator, defences."""

    dataset: Dataset = Field("digits", description="image domain of knowledge base, auxiliary pool and queries")
    k: int = Field(3, ge=1, le=10, description="retrieved image-text pairs per query (paper: 3)")
    generator: Generator = Field("smollm2", description="what reads the retrieved pairs and answers")
    chat_format: ChatFormat = Field("qwen", description="how retrieved pairs enter the chat (official LLaVA or Qwen2-VL layout)")
    max_new_tokens: int = Field(12, ge=1, le=64, description="answer length of the generator")
    purification: Purification = Field("none", description="image purification of knowledge-base entries at ingestion")
    instruction_filter: bool = Field(False, description="drop knowledge-base texts with answer-forcing instructions")
    consistency_filter: bool = Field(False, description="drop entries whose image and text disagree (cosine outlier)")
    consistency_z: FiniteFloat = Field(3.0, ge=0.5, le=10.0, description="outlier threshold in KB standard deviations")
    seed: int = Field(0, ge=0, le=2**31 - 1)


class AttackParams(Params):
    """The poison optimiser (Sec. 4 of the paper; official ``Database.create_poison``)."""

    epsilon: FiniteFloat = Field(8.0, gt=0.0, le=MAX_EPSILON,
                                 description="L∞ budget in 8-bit pixel levels (8 means 8/255), enforced after quantisation")
    steps: int = Field(100, ge=0, le=1000, description="sign-gradient steps (code: 100)")
    step_fraction: FiniteFloat = Field(1 / 6, gt=0.0, le=1.0, description="step size α as a fraction of ε (code: 0.01/0.0625)")
    aux_number: int = Field(60, ge=2, le=500, description="PE-C: auxiliary images retrieved around the class sample (code: 60)")
    target_answer: str = Field(TARGET_ANSWER, min_length=1, max_length=60, description="the attacker's answer A*")
    template: Template = Field("paper", description="t_p sentence order: the paper's, or the repeated question first")

    @field_validator("target_answer")
    @classmethod
    def _printable(cls, v: str) -> str:
        v = v.strip()
        if not v or any(ch in v for ch in '"\n\r\t'):
            raise ValueError('must be a short answer without quotes or line breaks')
        return v


class CraftParams(SystemParams, AttackParams):
    """Craft one poison for one query, inject it, query before and after, remove it."""

    variant: Variant = Field("pe_s", description="PE-B, PE-S or PE-C")
    query_index: int = Field(0, ge=0, le=100_000, description="index of the target query in the held-out query set")
    question: str = Field("", max_length=200, description="the query text (empty = the dataset's question)")
    image_path: str = Field("", max_length=1000, description="an uploaded query image (overrides query_index)")
    eval_queries: int = Field(10, ge=0, le=200, description="other same-class queries to test the poison on")

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        if any(ch in v for ch in "\n\r"):
            raise ValueError("must be one line")
        return v.strip()


class BenchmarkParams(SystemParams, AttackParams):
    """Class-wise evaluation (the paper's protocol): per class craft on one sample, test held-out same-class queries."""

    variants: tuple[Variant, ...] = Field(("pe_b", "pe_s", "pe_c"), min_length=1, max_length=3)
    classes: int = Field(10, ge=1, le=10, description="number of target classes")
    eval_number: int = Field(20, ge=1, le=30, description="held-out queries per class (code: eval_number)")
    retrieval_only: bool = Field(False, description="skip generation (retrieval metrics only; code: --retrieval_only)")
    compare_defence: bool = Field(False, description="also evaluate with the chosen defences switched on")
    verify_removal: bool = Field(False, description="after removing every poison, answer the clean queries again from scratch")

    _unique = unique_entries("variants")

    @model_validator(mode="after")
    def _defence(self) -> "BenchmarkParams":
        if self.compare_defence and self.purification == "none" and not (self.instruction_filter or self.consistency_filter):
            raise ValueError("compare_defence needs a defence: choose a purification or switch on a filter")
        return self

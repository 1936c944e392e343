"""Parameters of the ZapFormat entry points (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from engines.common.params import FiniteFloat, Params, unique_entries

GrammarKind = Literal["json_schema", "regex", "cfg"]
VocabName = Literal["qwen2.5-mini", "qwen2.5", "cl100k", "llama3", "smollm2"]
EngineName = Literal["zapformat", "kbnf", "llguidance", "outlines-core", "lm-format-enforcer", "xgrammar"]
WorkloadName = Literal["address", "linkedlist", "orders", "function_call", "json", "arith", "datetime", "email"]
MAX_GRAMMAR_CHARS = 20_000
MAX_TARGET_CHARS = 4_000


class Toggles(Params):
    cache: bool = Field(True, description="state cache keyed by the compacted Earley sets")
    compaction: bool = Field(True, description="dynamic pruning (Earley-set compaction)")
    rejected_prefix_cache: bool = Field(True, description="skip tokens that start with a byte prefix already rejected")
    eager_regex_cache: bool = Field(True, description="precomputed token sets per regex DFA state")
    eager_min_tokens: int = Field(1000, ge=1, le=1_000_000, description="store a regex state's sets only if one has this many tokens")


class StepParams(Toggles):
    grammar_kind: GrammarKind = "json_schema"
    grammar: str = Field(..., min_length=1, max_length=MAX_GRAMMAR_CHARS, description="JSON Schema, regex or KBNF text")
    vocab: VocabName = "qwen2.5-mini"
    target: str = Field(..., min_length=1, max_length=MAX_TARGET_CHARS, description="text to replay token by token")
    passes: int = Field(2, ge=1, le=3, description="replays of the target (pass 2+ shows warm caches)")


class GenerateParams(Params):
    grammar_kind: GrammarKind = "json_schema"
    grammar: str = Field(..., min_length=1, max_length=MAX_GRAMMAR_CHARS)
    prompt: str = Field("Describe a person as JSON.", min_length=1, max_length=2000)
    samples: int = Field(4, ge=1, le=64, description="prompts sampled, each constrained and unconstrained")
    max_new_tokens: int = Field(96, ge=8, le=512)
    temperature: FiniteFloat = Field(0.7, ge=0.0, le=2.0)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    vary_prompt: bool = Field(True, description="add a different subject to each sample's prompt")


class BenchmarkParams(Params):
    engines: tuple[EngineName, ...] = Field(("zapformat", "kbnf", "llguidance", "lm-format-enforcer"), min_length=1)
    workloads: tuple[WorkloadName, ...] = Field(("address", "json", "arith"), min_length=1)
    vocab: VocabName = "qwen2.5-mini"
    instances: int = Field(5, ge=1, le=50, description="seeded valid instances per workload")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    _unique = unique_entries("engines", "workloads")

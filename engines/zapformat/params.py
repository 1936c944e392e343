"""Parameters of the ZapFormat entry points (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from engines.common.params import FiniteFloat, Params, unique_entries

GrammarKind = Literal["json_schema", "regex", "cfg"]
VocabName = Literal["qwen2.5-mini", "qwen2.5", "cl100k", "llama3", "smollm2"]
EngineName = Literal["zapformat", "kbnf", "llguidance", "outlines-core", "lm-format-enforcer", "xgrammar"]
WorkloadName = Literal["address", "linkedlist", "orders", "function_call", "json", "arith", "datetime", "email"]
WhitespaceMode = Literal["bounded", "compact", "flexible"]
MAX_GRAMMAR_CHARS = 20_000
MAX_TARGET_CHARS = 4_000
MIN_NEW_TOKENS, MAX_NEW_TOKENS = 8, 512
MAX_INDENT = 64  # json_schema.MAX_INDENT_LIMIT (not imported: this module stays light)


class Decoding(Params):
    """Decoding controls for JSON Schemas (docs: "Decoding controls"); regexes and KBNF grammars are used as written."""

    whitespace: WhitespaceMode = Field("bounded", description="whitespace before each JSON token: bounded = at most one "
                                       "newline then max_indent spaces/tabs; compact = none; flexible = any (unbounded)")
    max_indent: int = Field(16, ge=0, le=MAX_INDENT, description="bounded whitespace: most spaces/tabs after the newline")


class Toggles(Params):
    cache: bool = Field(True, description="state cache keyed by the compacted Earley sets")
    compaction: bool = Field(True, description="dynamic pruning (Earley-set compaction)")
    rejected_prefix_cache: bool = Field(True, description="skip tokens that start with a byte prefix already rejected")
    eager_regex_cache: bool = Field(True, description="precomputed token sets per regex DFA state")
    eager_min_tokens: int = Field(1000, ge=1, le=1_000_000, description="store a regex state's sets only if one has this many tokens")


class StepParams(Toggles, Decoding):
    grammar_kind: GrammarKind = "json_schema"
    grammar: str = Field(..., min_length=1, max_length=MAX_GRAMMAR_CHARS, description="JSON Schema, regex or KBNF text")
    vocab: VocabName = "qwen2.5-mini"
    target: str = Field(..., min_length=1, max_length=MAX_TARGET_CHARS, description="text to replay token by token")
    passes: int = Field(2, ge=1, le=3, description="replays of the target (pass 2+ shows warm caches)")


class GenerateParams(Decoding):
    grammar_kind: GrammarKind = "json_schema"
    grammar: str = Field(..., min_length=1, max_length=MAX_GRAMMAR_CHARS)
    prompt: str = Field("Describe a person as JSON.", min_length=1, max_length=2000)
    samples: int = Field(4, ge=1, le=64, description="prompts sampled, each constrained and unconstrained")
    max_new_tokens: int = Field(96, ge=MIN_NEW_TOKENS, le=MAX_NEW_TOKENS,
                                description="length cap per sample; a sample that reaches it unfinished is marked truncated")
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

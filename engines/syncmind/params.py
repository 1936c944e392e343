"""Parameters of the SyncMind entry points (pydantic only: no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import Params, unique_entries

Repo = Literal["minilib", "toolz"]
AgentName = Literal["heuristic", "gold", "noop", "smollm2", "openai"]
Mode = Literal["independent", "collaborative"]
AGENT_LABELS: dict[str, str] = {
    "heuristic": "Heuristic agent (deterministic)",
    "gold": "Gold replay (upper bound)",
    "noop": "No-op (lower bound)",
    "smollm2": "LLM: SmolLM2-135M-Instruct (offline)",
    "openai": "LLM: OpenAI-compatible endpoint",
}
REPO_LABELS: dict[str, str] = {
    "minilib": "minilib — bundled synthetic history (5 commits)",
    "toolz": "toolz — PyPI releases 0.9.0 → 1.0.0 as git history",
}


class BudgetParams(Params):
    mode: Mode = "independent"
    total_budget: float = Field(1000.0, ge=0.0, le=100_000.0, allow_inf_nan=False, description="initial balance ($)")
    coding_cost: float = Field(100.0, ge=0.0, le=10_000.0, allow_inf_nan=False, description="cost of one proposal ($)")
    asking_cost: float = Field(100.0, ge=0.0, le=10_000.0, allow_inf_nan=False, description="cost of one question ($)")
    max_turns: int = Field(30, ge=1, le=100, description="turn limit")
    collaborator: Literal["oracle", "llm"] = Field("oracle", description="who answers questions in collaborative mode")
    test_timeout_s: float = Field(60.0, ge=1.0, le=600.0, allow_inf_nan=False, description="wall timeout of one test run")


class LLMParams(Params):
    endpoint: str = Field("", max_length=300, description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    model: str = Field("", max_length=200, description="model name at the endpoint (or a local model id for smollm2)")
    api_key: str = Field("", max_length=300)
    max_new_tokens: int = Field(256, ge=16, le=2048)
    temperature: float = Field(0.0, ge=0.0, le=2.0, allow_inf_nan=False)

    @field_validator("endpoint")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip()
        if v and not v.startswith(("http://", "https://")):
            raise ValueError("the endpoint must start with http:// or https://")
        return v.rstrip("/")


class EpisodeParams(BudgetParams):
    repo: Repo = "minilib"
    instance_id: str = Field("", max_length=300, description="instance to run (empty = the first instance)")
    agent: AgentName = "heuristic"
    llm: LLMParams = LLMParams()

    @model_validator(mode="after")
    def _endpoint(self):
        if self.agent == "openai" and not self.llm.endpoint:
            raise ValueError("agent 'openai' needs llm.endpoint (an OpenAI-compatible base URL)")
        if self.mode == "collaborative" and self.collaborator == "llm" and not self.llm.endpoint:
            raise ValueError("the LLM collaborator needs llm.endpoint (an OpenAI-compatible base URL)")
        return self


class BatchParams(BudgetParams):
    repo: Repo = "minilib"
    agents: tuple[AgentName, ...] = Field(("heuristic", "gold", "noop"), min_length=1, max_length=5)
    modes: tuple[Mode, ...] = Field(("independent", "collaborative"), min_length=1, max_length=2)
    instance_type: Literal["all", "caller", "callee"] = "all"
    max_instances: int = Field(16, ge=1, le=500, description="instances per (agent, mode), in id order")
    llm: LLMParams = LLMParams()

    _unique = unique_entries("agents", "modes")

    @model_validator(mode="after")
    def _endpoint(self):
        if "openai" in self.agents and not self.llm.endpoint:
            raise ValueError("agent 'openai' needs llm.endpoint (an OpenAI-compatible base URL)")
        return self


class BuildParams(Params):
    repo: Literal["minilib"] = Field("minilib", description="the bundled repository (toolz is built by its command)")
    trace_mode: Literal["all", "oldest"] = "all"
    strict: bool = False
    max_instances: int = Field(200, ge=1, le=5000)
    test_timeout_s: float = Field(60.0, ge=1.0, le=600.0, allow_inf_nan=False)

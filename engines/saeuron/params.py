"""Parameters of SAeUron (pydantic only: the UI validates with these without importing torch).

``None`` in a ``BuildParams`` field means "the profile's default" (micro sizes under
``PAPERLAB_PROFILE=test``), resolved by ``engines.saeuron.pipeline.resolve_build``.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params

# The minicanvas vocabulary (copied from engines.common.data so this module stays import-light;
# tests/engines/saeuron checks the copy).
OBJECTS = ["circle", "square", "triangle", "star", "heart", "cross", "ring", "diamond", "arrow", "crescent"]
STYLES = ["solid", "striped", "dotted", "checkered", "gradient", "noisy", "outline", "wavy"]
COLOURS = ["red", "orange", "yellow", "green", "cyan", "blue", "purple", "pink"]
CONCEPTS = STYLES + OBJECTS
KIND = {**{s: "style" for s in STYLES}, **{o: "object" for o in OBJECTS}}
PROMPT_WORDS = set(OBJECTS + STYLES + COLOURS + ["a", "an", "in", "style", "the", "painted", "of"])

# Analogues of SD's up.1.1 (objects) and up.1.2 (styles) in the zoo's tiny UNet (layers_per_block = 1).
DEFAULT_HOOKS = {"object": "up_blocks.1.attentions.0", "style": "up_blocks.1.attentions.1"}
_HOOK_RE = re.compile(r"^(down_blocks|up_blocks)\.\d+\.attentions\.\d+$|^mid_block\.attentions\.0$")

Concept = Literal[tuple(CONCEPTS)]  # type: ignore[valid-type]


def _check_hook(v: str) -> str:
    if not _HOOK_RE.match(v):
        raise ValueError(f"hook point {v!r} is not a cross-attention block path such as 'up_blocks.1.attentions.1'")
    return v


class BuildParams(Params):
    """Collect activations, train one SAE per hook point and compute the concept statistics."""

    hook_style: str = Field(DEFAULT_HOOKS["style"], max_length=100, description="hook point of the style SAE (up.1.2 analogue)")
    hook_object: str = Field(DEFAULT_HOOKS["object"], max_length=100, description="hook point of the object SAE (up.1.1 analogue)")
    styles: tuple[Literal[tuple(STYLES)], ...] = Field(tuple(STYLES), min_length=2)  # type: ignore[valid-type]
    objects: tuple[Literal[tuple(OBJECTS)], ...] = Field(tuple(OBJECTS), min_length=2)  # type: ignore[valid-type]
    colours: int | None = Field(None, ge=1, le=8, description="colours per (object, style) anchor prompt")
    steps: int | None = Field(None, ge=2, le=100, description="sampling steps T of collection and statistics")
    guidance: FiniteFloat = Field(4.0, ge=1.0, le=15.0)
    expansion: int | None = Field(None, ge=1, le=64, description="SAE expansion factor (n = expansion · d_in)")
    k: int | None = Field(None, ge=1, le=256, description="active latents per token")
    epochs: int | None = Field(None, ge=1, le=50)
    batch_size: int = Field(4096, ge=64, le=65536, description="tokens per SAE batch")
    lr: FiniteFloat = Field(4e-4, gt=0, le=0.1)
    auxk_alpha: FiniteFloat = Field(1 / 32, ge=0, le=1)
    dead_after_tokens: int | None = Field(None, ge=1000, le=100_000_000)
    stats_seeds: int | None = Field(None, ge=1, le=8, description="validation samples per (object, style) for μ(i,t,c)")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    sae_dir: str = Field("", max_length=1000, description="use released SAEs from this bcywinski/SAeUron-layout "
                         "directory instead of training (paper scale); only the statistics are computed")

    @field_validator("hook_style", "hook_object")
    @classmethod
    def _hooks(cls, v: str) -> str:
        return _check_hook(v)


class ConceptEdit(Params):
    concept: Concept  # type: ignore[valid-type]
    gamma: FiniteFloat = Field(-1.0, ge=-30.0, le=0.0, description="strength γ (< 0 flips the feature, 0 zeroes it)")
    top_m: int = Field(4, ge=0, le=64, description="features per timestep (selection = top_m)")
    percentile: FiniteFloat = Field(99.5, ge=50.0, le=100.0, description="τ (selection = percentile)")
    t_start: FiniteFloat = Field(0.0, ge=0.0, le=1.0, description="first active step, as a fraction of sampling (0 = noisiest)")
    t_end: FiniteFloat = Field(1.0, ge=0.0, le=1.0, description="last active step, as a fraction of sampling")

    @model_validator(mode="after")
    def _range(self):
        if self.t_start > self.t_end:
            raise ValueError(f"active timestep range is empty: t_start {self.t_start} > t_end {self.t_end}")
        return self


class GenerationParams(Params):
    object: Literal[tuple(OBJECTS)] = "star"  # type: ignore[valid-type]
    style: Literal[tuple(STYLES)] = "striped"  # type: ignore[valid-type]
    colour: Literal[tuple(COLOURS)] = "red"  # type: ignore[valid-type]
    prompt: str = Field("", max_length=200, description="free prompt (overrides object/style/colour when set)")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    n_images: int = Field(4, ge=1, le=8)
    steps: int | None = Field(None, ge=2, le=100)
    guidance: FiniteFloat = Field(4.0, ge=1.0, le=15.0)

    @field_validator("prompt")
    @classmethod
    def _known_tokens(cls, v: str) -> str:
        words = re.findall(r"[A-Za-z]+|[^\sA-Za-z]", v.lower())
        unknown = [w for w in words if w not in PROMPT_WORDS]
        if unknown:
            raise ValueError(f"prompt has unknown tokens {sorted(set(unknown))}; the tiny model knows only "
                             f"objects {OBJECTS}, styles {STYLES}, colours {COLOURS} and 'a … in … style'")
        return v.strip()


class EraseParams(GenerationParams):
    concepts: tuple[ConceptEdit, ...] = Field(min_length=1, max_length=4)
    selection: Literal["top_m", "percentile"] = "top_m"
    units: Literal["sae", "raw"] = Field("sae", description="SAE features (SAeUron) or raw channels (baseline)")
    preserve_error: bool = True
    apply_uncond: bool = True
    heatmap_step: FiniteFloat = Field(0.5, ge=0.0, le=1.0, description="sampling fraction whose heatmaps are shown")
    build: BuildParams = BuildParams()

    @field_validator("concepts")
    @classmethod
    def _unique(cls, v):
        names = [c.concept for c in v]
        if len(set(names)) != len(names):
            raise ValueError(f"a concept is listed twice: {names}")
        return v


class BenchmarkParams(Params):
    """UA / IRA / CRA of style erasure, the raw-channel baseline and two styles at once."""

    targets: tuple[Literal[tuple(STYLES)], ...] = Field(tuple(STYLES), min_length=1)  # type: ignore[valid-type]
    samples: int = Field(1, ge=1, le=16, description="seeds per test prompt")
    colours: int = Field(1, ge=1, le=8, description="colours per (object, style) test prompt")
    steps: int | None = Field(None, ge=2, le=100)
    guidance: FiniteFloat = Field(4.0, ge=1.0, le=15.0)
    gamma: FiniteFloat = Field(-1.0, ge=-30.0, le=0.0)
    top_m: int = Field(4, ge=0, le=64)
    baseline: bool = True
    pair: tuple[Literal[tuple(STYLES)], ...] = Field((), max_length=2)  # type: ignore[valid-type]
    seed: int = Field(1000, ge=0, le=2**31 - 1)
    build: BuildParams = BuildParams()

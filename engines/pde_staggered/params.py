"""Parameters of the staggered-grid PDE surrogate experiments (pydantic only: no numpy, no torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params, unique_entries

Variant = Literal["p1", "p1_M", "p4m", "p4m_M"]
ALL_VARIANTS: tuple[str, ...] = ("p1", "p1_M", "p4m", "p4m_M")
VARIANT_LABELS = {"p1": "p1/∅", "p1_M": "p1/M", "p4m": "p4m/∅", "p4m_M": "p4m/M"}
ICKind = Literal["random", "bump", "l_shape", "vortex", "drawn"]
Problem = Literal["swe", "ins"]
PROBLEM_LABELS = {"swe": "shallow water", "ins": "decaying turbulence"}
INS_ICS = ("random", "vortex")
IC_LABELS = {"random": "random bumps (seed)", "bump": "placed bump", "l_shape": "L-shaped bump (OOD)",
             "vortex": "vortex pair (OOD)", "drawn": "drawn region"}
MAX_HORIZON = 200
SURROGATE_DT = 2.0  # time units per surrogate step (4 solver steps of 0.5 by default)
# D4 elements by name, in engines.pde_staggered.groups.ELEMENTS order
ELEMENT_NAMES = ("identity", "rot 90°", "rot 180°", "rot 270°", "flip", "flip + rot 90°", "flip + rot 180°",
                 "flip + rot 270°")


class TrainParams(Params):
    """Train (or load from the cache) the surrogate variants on solver data; sizes come from the profile
    unless given."""

    variants: tuple[Variant, ...] = Field(ALL_VARIANTS, min_length=1, description="surrogate variants")
    seed: int = Field(0, ge=0, le=1000, description="training seed")
    steps: int | None = Field(None, ge=10, le=20000, description="optimizer steps (default: per profile)")
    width: int | None = Field(None, ge=1, le=32, description="p4m regular fields per level 1 (default: per profile)")
    problem: Problem = Field("swe", description="shallow water (closed basin) or decaying turbulence (periodic)")
    pushforward: bool = Field(False, description="pushforward trick: 2-step unrolls, gradient on the last")
    augment: bool = Field(False, description="data augmentation with random D4 transforms (baseline)")
    noise: float | None = Field(None, ge=0.0, le=2.0, description="training-noise injection: input noise in units of "
                                "the one-step change (default: per profile; 0 = none)")

    _unique = unique_entries("variants")


class ICParams(Params):
    """An initial condition for the closed basin."""

    problem: Problem = Field("swe", description="shallow water (closed basin) or decaying turbulence (periodic)")
    ic: ICKind = Field("random", description="kind of initial condition")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the random bumps")
    bump_row: FiniteFloat = Field(0.4, ge=0.0, le=1.0, description="placed bump: row position (fraction of the basin)")
    bump_col: FiniteFloat = Field(0.6, ge=0.0, le=1.0, description="placed bump: column position (fraction)")
    bump_width: FiniteFloat = Field(0.1, ge=0.02, le=0.4, description="placed bump: width (fraction of the basin)")
    amplitude: FiniteFloat = Field(0.2, ge=-2.0, le=2.0, description="bump height (mean depth H = 1)")
    mask: list[list[FiniteFloat]] | None = Field(None, max_length=512, description="drawn region (rows of numbers; > 0 = water)")
    dt: FiniteFloat = Field(0.5, gt=0.0, le=2.0, description="solver time step (a surrogate step spans 2.0)")

    @field_validator("mask")
    @classmethod
    def _mask(cls, m):
        if m is None:
            return m
        if not m or not m[0]:
            raise ValueError("the drawn mask is empty")
        if len(m) > 512 or any(len(r) != len(m[0]) or len(r) > 512 for r in m):
            raise ValueError("the drawn mask must be a rectangular array of at most 512×512")
        return m

    @model_validator(mode="after")
    def _check(self):
        k = SURROGATE_DT / self.dt
        if abs(k - round(k)) > 1e-9:
            raise ValueError(f"dt = {self.dt:g} must divide the surrogate step {SURROGATE_DT:g} "
                             "(e.g. 0.25, 0.5, 1, 2)")
        if self.ic == "drawn" and self.mask is None:
            raise ValueError("ic = 'drawn' needs a drawn mask")
        if self.problem == "ins" and self.ic not in INS_ICS:
            raise ValueError(f"the turbulence problem supports the initial conditions {INS_ICS} (got {self.ic!r}): "
                             "bumps of water only make sense for shallow water")
        return self


class RolloutParams(ICParams):
    """Solver and surrogates side by side from one initial condition."""

    horizon: int = Field(50, ge=1, le=MAX_HORIZON, description=f"surrogate steps (≤ {MAX_HORIZON})")
    variants: tuple[Variant, ...] = Field(ALL_VARIANTS, min_length=1)
    train_seed: int = Field(0, ge=0, le=1000, description="seed of the trained surrogates")


class RotateParams(ICParams):
    """Transform the input by a D4 element and compare G(g·x) with g·G(x) after a few steps."""

    element: int = Field(1, ge=0, le=7, description="D4 element (0 identity, 1-3 rotations, 4-7 reflections)")
    steps: int = Field(5, ge=1, le=50, description="surrogate steps before comparing")
    variants: tuple[Variant, ...] = Field(ALL_VARIANTS, min_length=1)
    train_seed: int = Field(0, ge=0, le=1000)


class BenchmarkParams(Params):
    """The factorial benchmark on held-out initial conditions (several seeds)."""

    problem: Problem = Field("swe")
    seeds: int = Field(1, ge=1, le=5)
    n_test: int | None = Field(None, ge=2, le=200, description="held-out ICs (default: per profile)")
    horizon: int = Field(50, ge=2, le=MAX_HORIZON)
    steps: int | None = Field(None, ge=10, le=20000)

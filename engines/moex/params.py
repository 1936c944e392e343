"""Parameters of the MoE-X entry points (pydantic only: the UI validates them without torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import Params, unique_entries

Variant = Literal["dense_gelu", "dense_relu", "topk_gelu", "topk_relu", "topk_gelu_sparsity", "moex"]
ViewModel = Literal["dense_gelu", "topk_gelu", "moex", "sae"]
VIEW_MODELS = ("dense_gelu", "topk_gelu", "moex", "sae")
MAX_PGN_CHARS = 4000
# Real games: the PGN files of Debian's `pychess` package (read by engines.moex.data, listed by the tab if present).
PYCHESS_DIR = "/usr/share/pychess"


class ExploreParams(Params):
    """One position of a game: the top active units of each shipped model there, with their BSP labels."""

    pgn: str = Field("", max_length=MAX_PGN_CHARS,
                     description="movetext ('1.e4 e5 2.Nf3 …'); empty = the game named by `game`")
    game: str = Field("synthetic:0", max_length=40,
                      description="'synthetic:<seed>' (a random legal game) or 'real:<index>' (pychess PGN files)")
    position: int = Field(4, ge=1, le=200, description="move number: the position before White's n-th move")
    models: tuple[ViewModel, ...] = Field(VIEW_MODELS, min_length=1, max_length=4)
    top_n: int = Field(8, ge=1, le=30, description="units shown per model")

    @field_validator("game")
    @classmethod
    def _game(cls, v: str) -> str:
        kind, _, idx = v.partition(":")
        if kind not in ("synthetic", "real") or not idx.isdigit() or int(idx) > 10**6:
            raise ValueError("game must be 'synthetic:<seed>' or 'real:<index>' (e.g. 'synthetic:3')")
        return v

    _unique = unique_entries("models")


class SearchParams(Params):
    """Which unit of each model best detects a board feature ('white knight on f3', 'passed pawn')."""

    feature: str = Field("white knight on f3", min_length=2, max_length=80)
    top_n: int = Field(5, ge=1, le=20, description="matching features listed")


class GridParams(Params):
    """Train (or load) the variant grid and measure coverage, reconstruction, validation loss and L0."""

    variants: tuple[Variant, ...] = Field(("dense_gelu", "topk_gelu", "moex"), min_length=1, max_length=6)
    seeds: int = Field(1, ge=1, le=3)
    steps: int = Field(500, ge=10, le=20_000, description="optimizer steps per model")
    n_layer: int = Field(4, ge=1, le=8)
    n_embd: int = Field(64, ge=16, le=512, description="residual width d (multiple of the 4 heads)")
    dense_hidden: int = Field(256, ge=16, le=4096, description="dense MLP width = activated MoE width k·D")
    n_experts: int = Field(8, ge=2, le=64)
    top_k: int = Field(2, ge=1, le=8)
    with_sae: bool = Field(False, description="also train an SAE (8x) on the dense GELU model's probed layer")

    _unique = unique_entries("variants")

    @model_validator(mode="after")
    def _sizes(self):
        if self.n_embd % 4:
            raise ValueError(f"n_embd must be a multiple of 4 (the number of heads), got {self.n_embd}")
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k ({self.top_k}) must not exceed n_experts ({self.n_experts})")
        if self.dense_hidden % self.top_k:
            raise ValueError(f"dense_hidden ({self.dense_hidden}) must be divisible by top_k ({self.top_k}) so "
                             "that k·D matches the dense width")
        if self.steps * self.seeds * len(self.variants) > 60_000:
            raise ValueError("steps × seeds × variants must be at most 60000")
        return self

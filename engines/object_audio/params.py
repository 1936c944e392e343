"""Parameters of the object-click audio entries (pydantic only: the UI validates without torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from engines.common.params import FiniteFloat, Params

Segmenter = Literal["flood", "grabcut", "sam"]
Mode = Literal["mask", "text", "whole"]
SEGMENTER_LABELS = {"flood": "Flood fill (classical)", "grabcut": "GrabCut (OpenCV)",
                    "sam": "Segment Anything (LiteMedSAM, or PAPERLAB_SAM_CHECKPOINT)"}
MODE_LABELS = {"mask": "Mask (click → segmentation replaces attention)",
               "text": "Text attention (learned, from a prompt)",
               "whole": "Whole image (uniform weights)"}
IMAGE_ID = r"^[0-9a-f]{40}$"


class TrainParams(Params):
    attention: Literal["dot", "additive"] = Field("dot", description="dot-product (the paper) or additive (ablation)")
    force: bool = Field(False, description="retrain even when cached weights exist")


class ClickParams(Params):
    image_id: str = Field(..., pattern=IMAGE_ID, description="an image stored by the tab (scene or upload)")
    clicks: list[tuple[FiniteFloat, FiniteFloat, int]] = Field(default_factory=list, max_length=20,
                                                   description="(x, y, label) in pixels; label 1 include, 0 exclude")
    segmenter: Segmenter = "flood"
    mode: Mode = "mask"
    prompt: str = Field("", max_length=120, description="text query for the text-attention mode")
    cfg: FiniteFloat = Field(2.0, ge=0.0, le=10.0, description="classifier-free guidance scale (paper: 2.0)")
    steps: int = Field(50, ge=2, le=200, description="DDIM steps (paper: 200)")
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("clicks")
    @classmethod
    def _labels(cls, v):
        for x, y, lab in v:
            if lab not in (0, 1):
                raise ValueError(f"click label must be 1 (include) or 0 (exclude), got {lab}")
        return v


class BenchmarkParams(Params):
    n_scenes: int = Field(200, ge=2, le=2000, description="test scenes with 2-3 sounding objects")
    steps: int = Field(50, ge=2, le=200, description="DDIM steps")
    cfg: FiniteFloat = Field(2.0, ge=0.0, le=10.0)
    additive: bool = Field(True, description="also train and evaluate the additive-attention ablation")
    sam_scenes: int = Field(20, ge=0, le=200, description="scenes for the LiteMedSAM IoU (0 = skip)")
    seed: int = Field(0, ge=0, le=2**31 - 1)

"""Defences (project-defined: the spec's §4 defence check, not the paper's).

1. Image purification at ingestion: every knowledge-base image (the defender cannot tell poison from clean) is
   JPEG-compressed (q = 50), median-filtered (3×3) and/or reduced to 4-bit depth, then re-embedded.
2. Instruction filter: knowledge-base texts with answer-forcing phrases are not indexed.
3. Cross-modal consistency filter: entries whose cos(n(E_I(i)), n(E_T(t))) lies more than z standard deviations
   below the knowledge base's mean are not indexed.
"""
from __future__ import annotations

import io
import re

import numpy as np

_STEPS = {"none": (), "jpeg": ("jpeg",), "median": ("median",), "bitdepth": ("bitdepth",),
          "jpeg_median": ("jpeg", "median"), "all": ("jpeg", "median", "bitdepth")}

INSTRUCTION_PATTERNS = [
    r"\brespond to (all|every|any) questions?\b",
    r"\b(answer|reply) (all|every) questions? with\b",
    r"\bwithout adding any (additional )?information\b",
    r"\bignore (all|any|the) (previous|above|other)\b",
    r"\bprimary goal of this task\b",
]
_INSTRUCTION_RE = re.compile("|".join(INSTRUCTION_PATTERNS), re.I)


def _jpeg(img: np.ndarray, quality: int = 50) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"))


def _median(img: np.ndarray, size: int = 3) -> np.ndarray:
    from PIL import Image, ImageFilter

    return np.asarray(Image.fromarray(img).filter(ImageFilter.MedianFilter(size)))


def _bitdepth(img: np.ndarray, bits: int = 4) -> np.ndarray:
    levels = 2 ** bits - 1
    return (np.rint(img.astype(np.float32) / 255.0 * levels) / levels * 255.0).round().astype(np.uint8)


def purify(images: np.ndarray, kind: str) -> np.ndarray:
    """Apply the purification ``kind`` to uint8 images (N, H, W, 3)."""
    if kind not in _STEPS:
        raise ValueError(f"unknown purification {kind!r}; choose one of {', '.join(_STEPS)}")
    out = np.asarray(images, dtype=np.uint8)
    if not _STEPS[kind]:
        return out
    res = []
    for im in out:
        for step in _STEPS[kind]:
            im = {"jpeg": _jpeg, "median": _median, "bitdepth": _bitdepth}[step](np.ascontiguousarray(im))
        res.append(im)
    return np.stack(res)


def is_instruction(text: str) -> bool:
    return bool(_INSTRUCTION_RE.search(text))


def consistency_scores(image_vecs: np.ndarray, text_vecs: np.ndarray) -> np.ndarray:
    """cos(n(E_I(i)), n(E_T(t))) per entry."""
    return (image_vecs * text_vecs).sum(1)


def consistency_threshold(kb_scores: np.ndarray, z: float) -> float:
    """Entries below mean − z·std of the clean knowledge base's scores are flagged."""
    return float(kb_scores.mean() - z * kb_scores.std())

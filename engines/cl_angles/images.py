"""Real images for the real-data analogue: scikit-learn digits (bundled) and Fashion-MNIST (optional).

Fashion-MNIST comes from the Debian package ``dataset-fashion-mnist`` (idx files under
/usr/share/datasets/fashion-mnist); when it is missing, ``load`` raises ``DatasetMissing`` saying how
to install it, and callers fall back to digits. Pixels are scaled to [0, 1].
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_CLASSES = ("T-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
                   "ankle boot")
DIGIT_CLASSES = tuple(str(i) for i in range(10))


class DatasetMissing(RuntimeError):
    pass


@dataclass(frozen=True)
class Images:
    name: str
    X: np.ndarray  # (N, h·w) float32 in [0, 1]
    y: np.ndarray  # (N,) int class
    shape: tuple[int, int]
    classes: tuple[str, ...]


def fashion_available(root: Path | None = None) -> bool:
    root = root or FASHION_DIR
    return (root / "train-images-idx3-ubyte.gz").exists() and (root / "train-labels-idx1-ubyte.gz").exists()


def _idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


@lru_cache(maxsize=4)
def load(name: str, per_class: int = 0) -> Images:
    """``digits`` (1,797 images 8×8) or ``fashion`` (the first ``per_class`` training images of each
    class, 28×28; 0 = all 6,000)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return Images("digits", (X / 16.0).astype(np.float32), y.astype(int), (8, 8), DIGIT_CLASSES)
    if name == "fashion":
        if not fashion_available():
            raise DatasetMissing(
                f"Fashion-MNIST is not installed (looked in {FASHION_DIR}). Install it with "
                "`sudo apt-get install dataset-fashion-mnist`, or choose the digits data set.")
        X = _idx(FASHION_DIR / "train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
        y = _idx(FASHION_DIR / "train-labels-idx1-ubyte.gz", 8).astype(int)
        if per_class:
            keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(10)])
            keep.sort()
            X, y = X[keep], y[keep]
        return Images("fashion", (X / 255.0).astype(np.float32), y, (28, 28), FASHION_CLASSES)
    raise ValueError(f"unknown data set {name!r}; choose digits or fashion")

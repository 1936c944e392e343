"""Captioned grey-scale image sets: scikit-learn digits (upsampled) and Fashion-MNIST (Debian package).

Both return an ``ImageSet`` (uint8 RGB images, captions, ``labels["label"]``, ``classes["label"]``)
with a deterministic train/test split.
"""
from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import numpy as np

from .minicanvas import ImageSet

DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
FASHION_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"]
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


class DatasetMissing(RuntimeError):
    """An optional dataset is not installed; the message says how to get it."""


def digit_caption(d: int) -> str:
    return f"a photo of the digit {DIGIT_NAMES[d]}"


def fashion_caption(k: int) -> str:
    name = FASHION_NAMES[k]
    return f"a photo of {'an' if name[0] in 'aeiou' else 'a'} {name}"


def _resize(gray: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of (N, h, w) float images to (N, size, size)."""
    import torch
    import torch.nn.functional as F

    t = torch.from_numpy(np.ascontiguousarray(gray, dtype=np.float32))[:, None]
    return F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)[:, 0].numpy()


def _to_rgb_uint8(gray01: np.ndarray) -> np.ndarray:
    g = (np.clip(gray01, 0, 1) * 255 + 0.5).astype(np.uint8)
    return np.repeat(g[..., None], 3, axis=-1)


def _split(n: int, split: str, test_fraction: float, seed: int = 0) -> np.ndarray:
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be train, test or all, got {split!r}")
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return {"train": perm[n_test:], "test": perm[:n_test], "all": np.arange(n)}[split]


@lru_cache(maxsize=8)
def digits(split: str = "train", size: int = 32) -> ImageSet:
    """The 1,797 scikit-learn 8×8 digits, upsampled to ``size``, white on black; 20% held out as test."""
    from sklearn.datasets import load_digits

    d = load_digits()
    idx = _split(len(d.target), split, 0.2)
    img = _to_rgb_uint8(_resize(d.images[idx] / 16.0, size))
    y = d.target[idx].astype(np.int64)
    return ImageSet(img, [digit_caption(int(k)) for k in y], {"label": y}, {"label": DIGIT_NAMES}, None, "digits")


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_available(root: Path = FASHION_DIR) -> bool:
    return (root / "train-images-idx3-ubyte.gz").exists()


@lru_cache(maxsize=8)
def fashion_mnist(split: str = "train", size: int = 32, n: int | None = None, root: Path = FASHION_DIR) -> ImageSet:
    """Fashion-MNIST from Debian's ``dataset-fashion-mnist`` (60k train / 10k test), resized to ``size``.

    ``n`` keeps the first n images of the split. Raises ``DatasetMissing`` when not installed.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be train or test, got {split!r}")
    prefix = "train" if split == "train" else "t10k"
    ip, lp = root / f"{prefix}-images-idx3-ubyte.gz", root / f"{prefix}-labels-idx1-ubyte.gz"
    if not (ip.exists() and lp.exists()):
        raise DatasetMissing(
            f"Fashion-MNIST is not installed (looked for {ip}). Install the Debian package: "
            "`sudo apt-get install dataset-fashion-mnist`."
        )
    x, y = _read_idx(ip), _read_idx(lp).astype(np.int64)
    if n is not None:
        x, y = x[:n], y[:n]
    img = _to_rgb_uint8(_resize(x / 255.0, size))
    return ImageSet(img, [fashion_caption(int(k)) for k in y], {"label": y}, {"label": FASHION_NAMES}, None, "fashion_mnist")

"""Audio-visual scenes: minicanvas shapes that sound (one class each) and silent distractors.

A scene is a 64×64 image with 1-3 objects and one visible mask per object. A training sample picks a
non-empty subset of the visible *sounding* objects; its audio is their gain-randomised mixture and its
caption names only them ("bell and rain"), so silent objects (and sounding objects left out of the
subset) are distractors the text-guided attention must learn to ignore (spec §4).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.common.data.minicanvas import coverage

from . import sounds

SS = 3  # supersampling for anti-aliased edges


@dataclass
class SceneSet:
    images: np.ndarray  # uint8 (N, H, W, 3)
    kinds: list[list[str]]  # per scene, per object: a sound class name or "silent:<shape>"
    masks: list[np.ndarray]  # per scene, bool (K, H, W) visible pixels
    boxes: list[np.ndarray]  # per scene, (K, 4) x0, y0, x1, y1

    def __len__(self) -> int:
        return len(self.images)

    def sounding(self, i: int) -> list[int]:
        """Indices of the objects of scene ``i`` that belong to a sound class."""
        return [j for j, k in enumerate(self.kinds[i]) if k in sounds.SOUND_CLASSES]


def _background(size: int, rng) -> np.ndarray:
    """Light grey with a gentle gradient and faint grain (a 'textured' backdrop)."""
    g = rng.uniform(0.78, 0.92)
    a = rng.uniform(0, 2 * np.pi)
    yy, xx = np.mgrid[0:size, 0:size] / size
    ramp = 0.06 * ((xx - 0.5) * np.cos(a) + (yy - 0.5) * np.sin(a))
    img = g + ramp[..., None] + rng.uniform(-0.02, 0.02, 3) + rng.normal(0, 0.006, (size, size, 1))
    return np.clip(img, 0, 1)


def paint(img: np.ndarray, shape: str, colour, cx: float, cy: float, r: float, theta: float) -> np.ndarray:
    """Paint a solid shape onto ``img`` (float H×W×3) in place; return its coverage in [0, 1]."""
    cover = coverage(shape, cx, cy, r, theta, img.shape[0], ss=SS)
    img[:] = cover[..., None] * np.asarray(colour) + (1 - cover[..., None]) * img
    return cover


def make_scenes(n: int, seed: int = 0, size: int = 64, min_objects: int = 1, max_objects: int = 3,
                p_silent: float = 0.3, classes: list[str] | None = None) -> SceneSet:
    """``n`` scenes; each has ≥ 1 sounding object, distinct classes, and silent shapes with prob. ``p_silent``."""
    classes = classes or sounds.CLASSES
    rng = np.random.default_rng([seed, size, 7])
    imgs, kinds, masks, boxes = [], [], [], []
    for _ in range(n):
        k = int(rng.integers(min_objects, max_objects + 1))
        n_silent = int(sum(rng.random() < p_silent for _ in range(k - 1)))  # at least one sounding object
        n_sound = min(k - n_silent, len(classes))
        kind = [classes[i] for i in rng.choice(len(classes), n_sound, replace=False)]
        kind += ["silent:" + sounds.SILENT_SHAPES[i] for i in rng.choice(len(sounds.SILENT_SHAPES), n_silent, replace=False)]
        order = rng.permutation(len(kind))
        kind = [kind[i] for i in order]
        img = _background(size, rng)
        placed: list[tuple[float, float, float]] = []
        for _try in range(300):
            if len(placed) == len(kind):
                break
            r = size * rng.uniform(0.13, 0.19)
            cx, cy = rng.uniform(r, size - r, 2)
            if all((cx - px) ** 2 + (cy - py) ** 2 >= (1.05 * (r + pr)) ** 2 for px, py, pr in placed):
                placed.append((cx, cy, r))
        kind = kind[: len(placed)]
        if not any(k_ in sounds.SOUND_CLASSES for k_ in kind):  # keep the guarantee after placement
            kind[0] = classes[int(rng.integers(len(classes)))]
            while kind.count(kind[0]) > 1:
                kind[0] = classes[int(rng.integers(len(classes)))]
        vis = np.zeros((len(kind), size, size), bool)
        for j, (name, (cx, cy, r)) in enumerate(zip(kind, placed)):
            if name in sounds.SOUND_CLASSES:
                shape, col = sounds.SOUND_CLASSES[name]["shape"], np.asarray(sounds.SOUND_CLASSES[name]["colour"])
            else:
                shape = name.split(":", 1)[1]
                col = np.asarray(sounds.SILENT_COLOURS[int(rng.integers(len(sounds.SILENT_COLOURS)))])
            col = np.clip(col * rng.uniform(0.93, 1.05), 0, 1)
            cover = paint(img, shape, col, cx, cy, r, rng.uniform(-0.25, 0.25))
            m = cover >= 0.5
            vis[:j] &= ~m
            vis[j] = m
        bx = np.zeros((len(kind), 4), np.int64)
        for j in range(len(kind)):
            ys, xs = np.nonzero(vis[j])
            bx[j] = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) if len(xs) else (0, 0, 0, 0)
        imgs.append((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8))
        kinds.append(kind)
        masks.append(vis)
        boxes.append(bx)
    return SceneSet(np.stack(imgs), kinds, masks, boxes)


def caption(classes: list[str]) -> str:
    """The caption names only the sounding classes: "bell and rain"."""
    return " and ".join(classes)


def training_samples(sc: SceneSet, seed: int = 0):
    """Per scene: a random non-empty subset of its sounding objects → (object indices, caption, waveform)."""
    rng = np.random.default_rng([seed, 11])
    out = []
    for i in range(len(sc)):
        snd = sc.sounding(i)
        m = int(rng.integers(1, len(snd) + 1))
        pick = sorted(rng.choice(snd, m, replace=False).tolist())
        cls = [sc.kinds[i][j] for j in pick]
        out.append((pick, caption(cls), sounds.mixture(cls, rng)))
    return out

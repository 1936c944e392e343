"""MiniCanvas: a procedural analogue of UnlearnCanvas (objects × styles × colours), with captions and masks.

Every image shows one object (``OBJECTS``) painted in one style (``STYLES``) and one colour
(``COLOURS``) on a light grey background. Textures are coarse (stripes, dots and checks with a
period of a quarter / an eighth of the canvas) so they survive a 4× latent autoencoder.
``scenes`` places 2-3 objects on a 64×64 canvas with one visible mask per object.

Everything is a pure function of the seed (``numpy.random.default_rng``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import ndimage

OBJECTS = ["circle", "square", "triangle", "star", "heart", "cross", "ring", "diamond", "arrow", "crescent"]
STYLES = ["solid", "striped", "dotted", "checkered", "gradient", "noisy", "outline", "wavy"]
COLOURS = {
    "red": (0.90, 0.10, 0.10),
    "orange": (1.00, 0.55, 0.00),
    "yellow": (0.95, 0.85, 0.05),
    "green": (0.10, 0.65, 0.15),
    "cyan": (0.00, 0.75, 0.80),
    "blue": (0.10, 0.25, 0.90),
    "purple": (0.55, 0.15, 0.75),
    "pink": (1.00, 0.45, 0.75),
}
COLOUR_NAMES = list(COLOURS)
SS = 2  # supersampling factor for anti-aliased shape edges


def caption(obj: str, style: str, colour: str) -> str:
    return f"a {colour} {obj} in {style} style"


def is_held_out(o: int, s: int, c: int) -> bool:
    """The fixed 1-in-10 (object, style, colour) combinations the text-to-image model never trains on."""
    return (o + 3 * s + 7 * c) % 10 == 0


HELD_OUT = [(o, s, c) for o in range(len(OBJECTS)) for s in range(len(STYLES)) for c in range(len(COLOURS)) if is_held_out(o, s, c)]


# ----------------------------------------------------------------------------- shapes


def _polygon(u: np.ndarray, v: np.ndarray, pts: list[tuple[float, float]]) -> np.ndarray:
    """Even-odd point-in-polygon test, vectorised over points."""
    inside = np.zeros(u.shape, dtype=bool)
    n = len(pts)
    for i in range(n):
        (x1, y1), (x2, y2) = pts[i], pts[(i + 1) % n]
        if y1 == y2:
            continue
        cond = (y1 > v) != (y2 > v)
        xcross = x1 + (v - y1) * (x2 - x1) / (y2 - y1)
        inside ^= cond & (u < xcross)
    return inside


def _star_pts(outer=0.95, inner=0.42, k=5):
    ang = -np.pi / 2 + np.arange(2 * k) * np.pi / k
    rad = np.where(np.arange(2 * k) % 2 == 0, outer, inner)
    return list(zip(rad * np.cos(ang), rad * np.sin(ang)))


_STAR = _star_pts()


def shape_inside(obj: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Is the point (u, v) (object frame, radius ~1, v pointing down) inside the object?"""
    r2 = u * u + v * v
    if obj == "circle":
        return r2 <= 0.88**2
    if obj == "square":
        return (np.abs(u) <= 0.72) & (np.abs(v) <= 0.72)
    if obj == "triangle":
        return _polygon(u, v, [(0.0, -0.92), (0.9, 0.68), (-0.9, 0.68)])
    if obj == "star":
        return _polygon(u, v, _STAR)
    if obj == "heart":
        x, y = u * 1.2, -v * 1.2 + 0.15
        return (x * x + y * y - 1) ** 3 - x * x * y**3 <= 0
    if obj == "cross":
        return ((np.abs(u) <= 0.3) & (np.abs(v) <= 0.9)) | ((np.abs(v) <= 0.3) & (np.abs(u) <= 0.9))
    if obj == "ring":
        return (r2 <= 0.92**2) & (r2 >= 0.45**2)
    if obj == "diamond":
        return np.abs(u) / 0.68 + np.abs(v) / 0.95 <= 1
    if obj == "arrow":
        shaft = (np.abs(v) <= 0.24) & (u >= -0.92) & (u <= 0.05)
        return shaft | _polygon(u, v, [(0.0, -0.7), (0.95, 0.0), (0.0, 0.7)])
    if obj == "crescent":
        return (r2 <= 0.9**2) & ((u - 0.42) ** 2 + (v + 0.05) ** 2 >= 0.72**2)
    raise ValueError(f"unknown object {obj!r}; choose from {OBJECTS}")


# ----------------------------------------------------------------------------- styles


def style_texture(style: str, x: np.ndarray, y: np.ndarray, size: int, inside: np.ndarray, rng) -> np.ndarray:
    """Texture value t in [0, 1] per pixel: 1 = the object's colour, 0 = its dark shade.

    ``outline`` returns -1 where the object's interior shows the background.
    """
    p = size / 4.0  # coarse period: 8 px at 32 px
    if style == "solid":
        return np.ones_like(x)
    if style in ("striped", "wavy"):
        a = rng.integers(4) * np.pi / 4
        s = x * np.cos(a) + y * np.sin(a)
        if style == "wavy":
            s = s + (size / 10.0) * np.sin(2 * np.pi * (-x * np.sin(a) + y * np.cos(a)) / (size / 2.0))
        return ((s / p + rng.random()) % 1.0 < 0.5).astype(float)
    if style == "dotted":
        ox, oy = rng.random(2) * p
        dx = (x + ox) % p - p / 2
        dy = (y + oy) % p - p / 2
        return (dx * dx + dy * dy <= (0.3 * p) ** 2).astype(float)
    if style == "checkered":
        c = size / 8.0
        ox, oy = rng.random(2) * 2 * c
        return ((np.floor((x + ox) / c) + np.floor((y + oy) / c)) % 2).astype(float)
    if style == "gradient":
        a = rng.random() * 2 * np.pi
        s = x * np.cos(a) + y * np.sin(a)
        sin = s[inside] if inside.any() else s
        lo, hi = sin.min(), sin.max()
        return np.clip((s - lo) / max(hi - lo, 1e-6), 0, 1)
    if style == "noisy":
        c = size / 8.0
        ox, oy = rng.integers(0, int(c), 2)
        bx = ((x + ox) // c).astype(int)
        by = ((y + oy) // c).astype(int)
        table = rng.random((bx.max() + 2, by.max() + 2))
        return table[bx, by] ** 0.7
    if style == "outline":
        band = max(1, int(round(size / 14.0)))
        interior = ndimage.binary_erosion(inside, iterations=band)
        return np.where(interior, -1.0, 1.0)
    raise ValueError(f"unknown style {style!r}; choose from {STYLES}")


# ----------------------------------------------------------------------------- rendering


def coverage(obj: str, cx: float, cy: float, radius: float, theta: float, size: int, ss: int = SS) -> np.ndarray:
    """(size, size) fraction of each pixel inside shape ``obj`` centred at (cx, cy) in pixels (``ss``× supersampled)."""
    fine = (np.arange(size * ss) + 0.5) / ss
    fy, fx = np.meshgrid(fine, fine, indexing="ij")
    cos, sin = np.cos(theta), np.sin(theta)
    u = ((fx - cx) * cos + (fy - cy) * sin) / radius
    v = (-(fx - cx) * sin + (fy - cy) * cos) / radius
    return shape_inside(obj, u, v).reshape(size, ss, size, ss).mean(axis=(1, 3))


def _paint(img: np.ndarray, obj: str, style: str, colour: str, cx: float, cy: float, radius: float, theta: float, rng, tex: int | None = None):
    """Paint one object onto ``img`` (H, W, 3 float) in place; return its (H, W) coverage in [0, 1].

    ``tex`` is the canvas size the texture periods are scaled to (default: this canvas).
    """
    size = img.shape[0]
    cover = coverage(obj, cx, cy, radius, theta, size)
    inside = cover >= 0.5
    py, px = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5, indexing="ij")
    t = style_texture(style, px, py, tex or size, inside, rng)
    col = np.asarray(COLOURS[colour])
    paint = t[..., None] * col + (1 - t[..., None]) * 0.3 * col
    alpha = cover.copy()
    if style == "outline":
        alpha = np.where(t < 0, 0.0, alpha)
    img[:] = alpha[..., None] * paint + (1 - alpha[..., None]) * img
    return cover


def _background(size: int, rng) -> np.ndarray:
    g = rng.uniform(0.78, 0.95)
    tint = rng.uniform(-0.03, 0.03, 3)
    return np.broadcast_to(np.clip(g + tint, 0, 1), (size, size, 3)).copy()


@dataclass
class ImageSet:
    """A labelled image set. ``images`` uint8 (N, H, W, 3); ``labels[key]`` int arrays; ``classes[key]`` names."""

    images: np.ndarray
    captions: list[str]
    labels: dict[str, np.ndarray]
    classes: dict[str, list[str]]
    masks: np.ndarray | None = None  # bool (N, H, W): the object's pixels
    name: str = ""

    def __len__(self) -> int:
        return len(self.images)

    def subset(self, idx) -> "ImageSet":
        idx = np.asarray(idx)
        return ImageSet(
            self.images[idx],
            [self.captions[i] for i in idx],
            {k: v[idx] for k, v in self.labels.items()},
            self.classes,
            None if self.masks is None else self.masks[idx],
            self.name,
        )


def render(obj: str, style: str, colour: str, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One image (uint8 H×W×3) and its mask, object centred with a random jitter."""
    rng = np.random.default_rng(seed)
    img, mask = _render_one(OBJECTS.index(obj), STYLES.index(style), COLOUR_NAMES.index(colour), size, rng)
    return img, mask


def _render_one(o: int, s: int, c: int, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    img = _background(size, rng)
    radius = size * rng.uniform(0.30, 0.40)
    cx, cy = size / 2 + rng.uniform(-0.1, 0.1, 2) * size
    theta = rng.uniform(-0.25, 0.25)
    cover = _paint(img, OBJECTS[o], STYLES[s], COLOUR_NAMES[c], cx, cy, radius, theta, rng)
    return (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8), cover >= 0.5


def minicanvas(
    n: int = 1000,
    seed: int = 0,
    size: int = 32,
    objects: list[str] | None = None,
    styles: list[str] | None = None,
    held_out: str = "include",
) -> ImageSet:
    """``n`` single-object images with captions, object/style/colour labels and masks.

    ``objects`` / ``styles`` restrict the classes drawn (labels keep their global indices).
    ``held_out``: "include" (all combinations), "exclude" (never draw ``HELD_OUT``) or "only".
    Deterministic in ``seed``; use different seeds for train and test sets.
    """
    if size not in (32, 64):
        raise ValueError(f"size must be 32 or 64, got {size}")
    if held_out not in ("include", "exclude", "only"):
        raise ValueError("held_out must be include, exclude or only")
    return _minicanvas_cached(n, seed, size, tuple(objects or OBJECTS), tuple(styles or STYLES), held_out)


@lru_cache(maxsize=16)
def _minicanvas_cached(n, seed, size, objects, styles, held_out) -> ImageSet:
    for name in objects:
        if name not in OBJECTS:
            raise ValueError(f"unknown object {name!r}; choose from {OBJECTS}")
    for name in styles:
        if name not in STYLES:
            raise ValueError(f"unknown style {name!r}; choose from {STYLES}")
    combos = [
        (OBJECTS.index(o), STYLES.index(s), c)
        for o in objects
        for s in styles
        for c in range(len(COLOURS))
    ]
    if held_out == "exclude":
        combos = [k for k in combos if not is_held_out(*k)]
    elif held_out == "only":
        combos = [k for k in combos if is_held_out(*k)]
    if not combos:
        raise ValueError("no (object, style, colour) combination left to draw")
    rng = np.random.default_rng([seed, size, 17])
    pick = rng.integers(len(combos), size=n)
    imgs = np.empty((n, size, size, 3), np.uint8)
    masks = np.empty((n, size, size), bool)
    lab = np.empty((n, 3), np.int64)
    for i, j in enumerate(pick):
        o, s, c = combos[j]
        imgs[i], masks[i] = _render_one(o, s, c, size, rng)
        lab[i] = (o, s, c)
    caps = [caption(OBJECTS[o], STYLES[s], COLOUR_NAMES[c]) for o, s, c in lab]
    labels = {"object": lab[:, 0], "style": lab[:, 1], "colour": lab[:, 2]}
    classes = {"object": OBJECTS, "style": STYLES, "colour": COLOUR_NAMES}
    out = ImageSet(imgs, caps, labels, classes, masks, "minicanvas")
    out.images.flags.writeable = False
    return out


# ----------------------------------------------------------------------------- scenes


@dataclass
class SceneSet:
    """Multi-object scenes. ``masks[i]`` is bool (K_i, H, W), one *visible* mask per object of scene i."""

    images: np.ndarray
    captions: list[str]
    objects: list[np.ndarray]  # per scene: object class index per object
    styles: list[np.ndarray]
    colours: list[np.ndarray]
    masks: list[np.ndarray]
    boxes: list[np.ndarray]  # per scene (K_i, 4) x0, y0, x1, y1 of the visible mask
    classes: dict[str, list[str]] = field(default_factory=lambda: {"object": OBJECTS, "style": STYLES, "colour": COLOUR_NAMES})

    def __len__(self) -> int:
        return len(self.images)


def scenes(n: int = 100, seed: int = 0, size: int = 64, min_objects: int = 2, max_objects: int = 3) -> SceneSet:
    """``n`` scenes of ``min_objects``..``max_objects`` distinct objects placed without heavy overlap."""
    if not 1 <= min_objects <= max_objects <= 4:
        raise ValueError("need 1 <= min_objects <= max_objects <= 4")
    rng = np.random.default_rng([seed, size, 23])
    imgs, caps, objs, stys, cols, masks, boxes = [], [], [], [], [], [], []
    for _ in range(n):
        k = int(rng.integers(min_objects, max_objects + 1))
        img = _background(size, rng)
        o = rng.choice(len(OBJECTS), k, replace=False)
        s = rng.integers(len(STYLES), size=k)
        c = rng.choice(len(COLOURS), k, replace=False)
        placed: list[tuple[float, float, float]] = []
        for _try in range(200):
            if len(placed) == k:
                break
            r = size * rng.uniform(0.13, 0.19)
            cx, cy = rng.uniform(r, size - r, 2)
            if all((cx - px) ** 2 + (cy - py) ** 2 >= (0.9 * (r + pr)) ** 2 for px, py, pr in placed):
                placed.append((cx, cy, r))
        k = len(placed)
        vis = np.zeros((k, size, size), bool)
        for j, (cx, cy, r) in enumerate(placed):
            cover = _paint(img, OBJECTS[o[j]], STYLES[s[j]], COLOUR_NAMES[c[j]], cx, cy, r, rng.uniform(-0.25, 0.25), rng, tex=32)
            m = cover >= 0.5
            vis[:j] &= ~m  # later objects occlude earlier ones
            vis[j] = m
        bx = np.zeros((k, 4), np.int64)
        for j in range(k):
            ys, xs = np.nonzero(vis[j])
            bx[j] = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) if len(xs) else (0, 0, 0, 0)
        imgs.append((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8))
        caps.append(" and ".join(caption(OBJECTS[o[j]], STYLES[s[j]], COLOUR_NAMES[c[j]]) for j in range(k)))
        objs.append(o[:k])
        stys.append(s[:k])
        cols.append(c[:k])
        masks.append(vis)
        boxes.append(bx)
    return SceneSet(np.stack(imgs), caps, objs, stys, cols, masks, boxes)

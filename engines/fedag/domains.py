"""Visual domains, silos and the server's synthetic data (spec §4).

Real data: the 1,797 scikit-learn digits (zoo ``data.digits``), split into disjoint per-domain subsets, each
restyled by its domain's transform (tinted, rotated, noisy, blurred, inverted sketch). Each domain's images are
split into client training data, a validation split (used for every choice we tuned) and a test split the
server keeps for evaluation only (the code's ``server_ratio``).

Synthetic data (the Stable-Diffusion analogue; the zoo's text-to-image model draws minicanvas shapes, not
digits). Stable Diffusion knows digits from public web data, not from the clients; our generator's "public
data" is the pool of scikit-learn digits that no silo holds. For a prompt "a {style} image of the digit {k}"
it takes a pool digit of class k, deforms it (random affine + smooth elastic field, stroke gain) and applies the
prompt's style. Without a pool (every digit in a silo) it falls back to font glyphs drawn through the digits'
8×8 sensor (zero-shot CLIP recognises those far less well: 47% vs 96% for clean real digits). A share of
samples is deliberately wrong (another digit, or random strokes) with the prompted label kept, so quality
scoring has something to find. No client image is ever read here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import DOMAIN_LABELS

SIZE = 32
BLUR_SIGMA = 2.5
#: Severities were chosen so that zero-shot tiny CLIP is neither perfect nor at chance on real digits (300 digits,
#: clean 96%): tint 63%, rotate 15-35° ≈ 45%, noise σ=0.3 73%, blur σ=2.5 84%, invert 11% (spec: rotate 30-60° → 14%,
#: blur σ=1.2 → 95%, which leave adapters nothing to learn or nothing to keep).


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, *keys])


def _upsample(gray8: np.ndarray) -> np.ndarray:
    from engines.common.data.greyscale import _resize

    return np.clip(_resize(gray8, SIZE), 0.0, 1.0)


def stylise(gray: np.ndarray, domain: str, seed: int) -> np.ndarray:
    """(N, 32, 32) grey images in [0, 1] (white digit on black) → (N, 32, 32, 3) float in [0, 1] of the domain."""
    from scipy import ndimage

    rng = _rng(seed, 7, list(DOMAIN_LABELS).index(domain))
    n = len(gray)
    g = gray.astype(np.float32)
    if domain == "rotate":
        ang = rng.uniform(15, 35, n) * rng.choice([-1, 1], n)
        g = np.stack([ndimage.rotate(g[i], ang[i], reshape=False, order=1, mode="constant") for i in range(n)])
    elif domain == "blur":
        g = np.stack([ndimage.gaussian_filter(g[i], BLUR_SIGMA) for i in range(n)])
    elif domain == "invert":
        g = 1.0 - g
    rgb = np.repeat(np.clip(g, 0, 1)[..., None], 3, axis=-1)
    if domain == "tint":
        fg = rng.uniform(0.6, 1.0, (n, 1, 1, 3))
        bg = rng.uniform(0.0, 0.15, (n, 1, 1, 3))
        rgb = rgb * fg + (1 - rgb) * bg
    elif domain == "noise":
        rgb = rgb + rng.normal(0, 0.3, rgb.shape)
    return np.clip(rgb, 0, 1).astype(np.float32)


@dataclass
class DomainData:
    """One domain's real images: what its clients hold (``train``) and what the server keeps (``val``, ``test``)."""

    name: str
    train_x: np.ndarray  # (N, 32, 32, 3) float [0, 1]; private to the domain's clients
    train_y: np.ndarray
    val_x: np.ndarray
    val_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


def public_pool(domains_used: int, per_domain: int, split_seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The digits no silo holds (8×8 grey in [0, 1], labels): the synthetic generator's public data."""
    from sklearn.datasets import load_digits

    d = load_digits()
    idx = _rng(split_seed, 1).permutation(len(d.target))[domains_used * per_domain:]
    return d.images[idx] / 16.0, d.target[idx].astype(np.int64)


def real_domains(domains: list[str], per_domain: int, split_seed: int = 0,
                 fractions: tuple[float, float] = (0.6, 0.15)) -> dict[str, DomainData]:
    """Disjoint digit subsets per domain (60% client / 15% validation / 25% server test by default)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    perm = _rng(split_seed, 1).permutation(len(d.target))
    if per_domain * len(domains) > len(perm):
        raise ValueError(f"images_per_domain: {per_domain} × {len(domains)} domains exceeds the "
                         f"{len(perm)} digits available; choose at most {len(perm) // len(domains)}")
    out = {}
    for k, name in enumerate(domains):
        idx = perm[k * per_domain:(k + 1) * per_domain]
        x = stylise(_upsample(d.images[idx] / 16.0), name, split_seed * 31 + k)
        y = d.target[idx].astype(np.int64)
        a, b = int(fractions[0] * per_domain), int((fractions[0] + fractions[1]) * per_domain)
        out[name] = DomainData(name, x[:a], y[:a], x[a:b], y[a:b], x[b:], y[b:])
    return out


def _glyph(k: int, rng: np.random.Generator) -> np.ndarray:
    """One digit glyph rendered at 32 px, through the real digits' 8×8 sensor (16 grey levels)."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (SIZE, SIZE), 0)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=int(rng.integers(36, 46)))
    sw = int(rng.integers(1, 4))
    draw.text((SIZE / 2 + rng.normal(0, 1.5), SIZE / 2 + rng.normal(0, 1.5)), str(k), fill=255, font=font,
              anchor="mm", stroke_width=sw, stroke_fill=255)
    img = img.rotate(float(rng.normal(0, 8)), resample=Image.BILINEAR)
    a = np.asarray(img, np.float32) / 255.0
    a8 = a.reshape(8, 4, 8, 4).mean((1, 3))
    a8 = np.round(a8 / max(a8.max(), 1e-6) * 16) / 16
    return a8


def _strokes(rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageDraw

    img = Image.new("L", (SIZE, SIZE), 0)
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(2, 5))):
        draw.line([tuple(rng.uniform(4, 28, 2)), tuple(rng.uniform(4, 28, 2))], fill=255, width=int(rng.integers(3, 6)))
    a = np.asarray(img, np.float32) / 255.0
    return np.round(a.reshape(8, 4, 8, 4).mean((1, 3)) * 16) / 16


@dataclass
class SyntheticSet:
    """The server's synthetic data of one domain: images, prompted labels, prompts, which renders are corrupted."""

    domain: str
    x: np.ndarray  # (N, 32, 32, 3) float [0, 1]
    y: np.ndarray
    corrupted: np.ndarray  # bool (N,): ground truth of the deliberate corruption (never used by the method)

    @property
    def prompts(self) -> list[str]:
        from engines.common.data.greyscale import DIGIT_NAMES

        return [f"a {DOMAIN_LABELS[self.domain]} image of the digit {DIGIT_NAMES[k]}" for k in self.y]


def _deform(g: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random affine (rotation ±10°, scale 0.9-1.1, shear, shift ±1.5 px) + smooth elastic field on 32×32 grey."""
    from scipy import ndimage

    th, sc, sh = np.deg2rad(rng.normal(0, 5)), rng.uniform(0.9, 1.1), rng.normal(0, 0.08)
    m = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]) @ np.array([[1, sh], [0, 1]]) / sc
    c = np.array([SIZE / 2 - 0.5] * 2)
    off = c - m @ c + rng.uniform(-1.5, 1.5, 2)
    out = ndimage.affine_transform(g, m, offset=off, order=1, mode="constant")
    dx, dy = (ndimage.gaussian_filter(rng.normal(0, 1, (SIZE, SIZE)), 4) * 12 for _ in range(2))
    yy, xx = np.mgrid[:SIZE, :SIZE]
    out = ndimage.map_coordinates(out, [yy + dy, xx + dx], order=1, mode="constant")
    return np.clip(out * rng.uniform(0.9, 1.3), 0, 1)


def synthesise(domain: str, n: int, corruption: float, seed: int = 0,
               pool: tuple[np.ndarray, np.ndarray] | None = None) -> SyntheticSet:
    """Generate ``n`` prompted samples of ``domain`` (balanced classes), a ``corruption`` share of them wrong.

    ``pool``: the generator's public digits (8×8 grey, labels) to deform; ``None`` draws font glyphs."""
    rng = _rng(seed, 3, list(DOMAIN_LABELS).index(domain))
    y = np.arange(n) % 10
    rng.shuffle(y)
    bad = np.zeros(n, bool)
    bad[rng.choice(n, int(round(corruption * n)), replace=False)] = True
    by_class = None
    if pool is not None and all((pool[1] == k).any() for k in range(10)):
        up = _upsample(pool[0])
        by_class = [up[pool[1] == k] for k in range(10)]

    def draw(k: int) -> np.ndarray:
        if by_class is None:
            return _upsample(_glyph(k, rng)[None])[0]
        return _deform(by_class[k][rng.integers(len(by_class[k]))], rng)

    g = []
    for i in range(n):
        if bad[i] and rng.random() < 0.5:
            g.append(_upsample(_strokes(rng)[None])[0])
        elif bad[i]:
            g.append(draw(int((y[i] + rng.integers(1, 10)) % 10)))
        else:
            g.append(draw(int(y[i])))
    x = stylise(np.stack(g), domain, seed * 131 + 17)
    return SyntheticSet(domain, x, y.astype(np.int64), bad)


def synthetic_sets(p, pipe=None, scale=None, size: int = SIZE, cancelled=lambda: False) -> list[SyntheticSet]:
    """The server's synthetic set of every in-domain of ``p`` (a ``FederationParams``), as training uses it.

    ``pipe``: a text-to-image pipeline (paper scale, ``scale`` a ``paper_scale.PaperScale`` with its sampler
    settings): "a {domain style} of a {class}" prompts resized to ``size``. Without one: ``p.generator`` —
    deformed digits of the public pool no silo holds (``"pool"``) or font glyphs (``"glyph"``). The federation
    (``federation.build_setup``) and the tab's preview both call this, so the preview shows what training uses."""
    if pipe is not None:
        from .paper_scale import PaperScale, synthesise_diffusion

        scale = scale or PaperScale()
        return [synthesise_diffusion(pipe, d, p.synthetic_per_domain, p.corruption, p.seed, size, scale.sd_steps,
                                     scale.sd_guidance, scale.sd_resolution, cancelled) for d in p.in_domains]
    pool = public_pool(len(p.domains), p.images_per_domain, p.split_seed) if p.generator == "pool" else None
    return [synthesise(d, p.synthetic_per_domain, p.corruption, p.seed, pool) for d in p.in_domains]

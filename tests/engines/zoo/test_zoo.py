"""The zoo with micro configurations (test profile): API, cache, hooks, round trips, paper-scale wiring."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from engines.common import data, zoo
from engines.common.context import JobCancelled, LocalContext
from engines.common.settings import get_settings


@pytest.fixture(scope="module")
def clip():
    return zoo.load("clip")


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("t2i")


def test_micro_profile_is_used():
    assert get_settings().profile == "test"
    assert zoo.resolve_config("clip").steps < 50 and zoo.resolve_config("t2i").steps < 50


def test_real_clip_tokenizer_ids(clip):
    # The ids OpenAI's CLIP tokenizer gives for this sentence.
    ids = clip.tokenizer("a photo of a cat")["input_ids"]
    assert ids == [49406, 320, 1125, 539, 320, 2368, 49407]
    assert len(clip.tokenizer) == 49408


def test_clip_outputs(clip):
    imgs = data.minicanvas(6, seed=1).images
    with torch.no_grad():
        img = clip.encode_images(imgs)
        txt = clip.encode_texts(["a red star in solid style", "a photo of the digit one"])
        patches = clip.patch_features(imgs)
        states = clip.text_states(["a red star"])
        p = clip.zero_shot(imgs, [["a circle"], ["a square", "a star"]])
    d = clip.model.config.projection_dim
    assert img.shape == (6, d) and txt.shape == (2, d)
    assert torch.allclose(img.norm(dim=-1), torch.ones(6), atol=1e-5)
    assert patches.shape == (6, clip.patch_grid**2, clip.model.config.vision_config.hidden_size)
    assert states.shape == (1, clip.max_length, clip.model.config.text_config.hidden_size)
    assert p.shape == (6, 2) and np.allclose(p.sum(1), 1, atol=1e-5)


def test_load_returns_fresh_objects_and_shared_returns_one(clip):
    again = zoo.load("clip")
    assert again.model is not clip.model
    for (k, a), b in zip(clip.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(a, b), k
    assert zoo.load("judge_style", shared=True) is zoo.load("judge_style", shared=True)


def test_hook_on_up_blocks_1_attentions_1(pipe):
    from engines.common.zoo.t2i import generate

    block = pipe.unet.get_submodule("up_blocks.1.attentions.1")
    seen = []
    h = block.register_forward_hook(lambda m, i, o: seen.append(tuple(o[0].shape)))
    try:
        imgs = generate(pipe, ["a red star in striped style", "a blue ring in dotted style"], steps=3, guidance_scale=3.0)
    finally:
        h.remove()
    ch = pipe.unet.config.block_out_channels[1]
    assert seen == [(4, ch, 4, 4)] * 3  # CFG doubles the batch; 4×4 is the middle resolution of 8×8 latents
    assert imgs.shape == (2, 32, 32, 3) and imgs.dtype == np.uint8


def test_generation_is_deterministic_under_a_seed(pipe):
    from engines.common.zoo.t2i import generate

    a = generate(pipe, ["a red star in striped style"], seed=3, steps=3)
    b = generate(pipe, ["a red star in striped style"], seed=3, steps=3)
    c = generate(pipe, ["a red star in striped style"], seed=4, steps=3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_pipeline_save_load_round_trip_is_bit_exact(pipe, tmp_path):
    from engines.common.zoo import t2i

    pipe.save_pretrained(tmp_path, safe_serialization=True)
    assert list(tmp_path.glob("unet/*.safetensors"))
    back = t2i.load(tmp_path)
    for name in ("unet", "vae", "text_encoder"):
        sa, sb = getattr(pipe, name).state_dict(), getattr(back, name).state_dict()
        assert sa.keys() == sb.keys()
        assert all(torch.equal(sa[k], sb[k]) for k in sa), name


def test_training_is_deterministic(tmp_path):
    from engines.common.zoo import judges

    cfg = zoo.resolve_config("judge_object")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    judges.train(cfg, a, lambda f, m: None)
    judges.train(cfg, b, lambda f, m: None)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    j = judges.load(a)
    assert j.classes == data.OBJECTS and j.predict(data.minicanvas(3, seed=2).images).shape == (3,)


def test_cache_key_progress_and_cancellation():
    small = {"steps": 3}
    assert zoo.model_dir("judge_style", small) != zoo.model_dir("judge_style", {"steps": 4})
    assert not zoo.is_built("judge_style", small)
    seen = []
    ctx = LocalContext(on_progress=lambda f, m, p: seen.append(f))
    zoo.build("judge_style", small, ctx=ctx)
    assert zoo.is_built("judge_style", small) and seen[-1] == 1.0 and seen == sorted(seen)
    meta = zoo.read_meta("judge_style", small)
    assert meta["config"]["steps"] == 3 and "test_accuracy" in meta["metrics"]
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(JobCancelled):
        zoo.build("judge_style", {"steps": 5}, ctx=LocalContext(cancel_event=cancel))
    assert not zoo.is_built("judge_style", {"steps": 5})


def test_status_and_bad_names():
    rows = {r["name"]: r for r in zoo.status()}
    assert set(zoo.NAMES) <= set(rows)
    with pytest.raises(KeyError, match="unknown zoo model"):
        zoo.load("dall-e")
    with pytest.raises(Exception, match="steps"):
        zoo.resolve_config("clip", {"steps": -1})


def test_paper_scale_pipeline_loads_from_a_local_directory(tmp_path, monkeypatch):
    """An SD-v1.5-structured pipeline (reduced widths, random weights) loads through the paper-scale path."""
    from transformers import CLIPTextConfig, CLIPTextModel
    from diffusers import AutoencoderKL, UNet2DConditionModel

    from engines.common.zoo import t2i
    from engines.common.zoo.tokenizer import clip_tokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8, block_out_channels=(32, 32, 64, 64), layers_per_block=2, cross_attention_dim=32,
        down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3, attention_head_dim=8, norm_num_groups=16,
    )
    vae = AutoencoderKL(block_out_channels=(16, 16, 32, 32), down_block_types=("DownEncoderBlock2D",) * 4,
                        up_block_types=("UpDecoderBlock2D",) * 4, latent_channels=4, norm_num_groups=16)
    te = CLIPTextModel(CLIPTextConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      max_position_embeddings=77, vocab_size=49408))
    _, ddim = t2i.make_schedulers()
    t2i.assemble(vae, te, clip_tokenizer(77), unet, ddim).save_pretrained(tmp_path)
    monkeypatch.setenv("PAPERLAB_DIFFUSION_MODEL", str(tmp_path))
    from engines.common.settings import reset_settings

    reset_settings()
    try:
        sd = zoo.load("t2i")
    finally:
        monkeypatch.delenv("PAPERLAB_DIFFUSION_MODEL")
        reset_settings()
    assert type(sd).__name__ == "StableDiffusionPipeline"
    att = sd.unet.get_submodule("up_blocks.1.attentions.2")  # SD's style hook point exists here
    seen = []
    att.register_forward_hook(lambda m, i, o: seen.append(o[0].shape))
    out = sd(["a photo"], num_inference_steps=2, guidance_scale=2.0, height=64, width=64, output_type="np")
    assert out.images.shape == (1, 64, 64, 3) and len(seen) == 2


def test_partial_caption_table_pins_the_right_factors():
    from engines.common.zoo.clip import PARTIAL_TEMPLATES, _text_table

    mc, dg = data.minicanvas(40, seed=5), data.digits("test")
    caps = sorted(set(mc.captions) | set(dg.captions))
    texts, cons, labs, ids = _text_table([mc, dg], caps, partial=True)
    assert texts[: len(caps)] == caps and len(set(texts)) == len(texts)
    assert ids[0].shape == (40, 1 + len(PARTIAL_TEMPLATES)) and ids[1].shape == (len(dg), 1)
    for i in range(40):
        o, s, c = (data.OBJECTS[mc.labels["object"][i]], data.STYLES[mc.labels["style"][i]],
                   data.COLOUR_NAMES[mc.labels["colour"][i]])
        got = [texts[t] for t in ids[0][i].tolist()]
        assert got[0] == mc.captions[i] and got[1] == f"a {o}" and got[4] == f"a {c} shape in {s} style"
        for t in ids[0][i].tolist():  # every text of an image describes it: wildcards or equal factors
            k = cons[t]
            assert bool(((k == -1) | (k == labs[0][i])).all())
    star = texts.index("a star")
    k = cons[star]
    assert k.tolist()[2:] == [-1, -1] and data.OBJECTS[k[1]] == "star"
    # Without partial captions the table is the sorted full captions (the cache keys of such models predate it).
    texts0, _, _, ids0 = _text_table([mc, dg], caps, partial=False)
    assert texts0 == caps and ids0[0].shape == (40, 1)
    assert zoo.model_dir("clip", {"partial_captions": 0.0}) != zoo.model_dir("clip", {"partial_captions": 0.5})


def test_own_cost_subtracts_only_dependencies_built_inside_the_build():
    from engines.common.zoo.reproduce import own_cost

    t2i = {"built_at": "2026-11-30 05:00:00", "train_seconds": 3000.0, "train_cpu_seconds": 2800.0}
    inside = {"built_at": "2026-11-30 04:20:00", "train_seconds": 1000.0, "train_cpu_seconds": 900.0}
    before = {"built_at": "2026-11-30 04:00:00", "train_seconds": 200.0, "train_cpu_seconds": 190.0}
    own = own_cost(t2i, [inside, before, None])
    assert own["train_seconds"] == 2000.0 and own["train_cpu_seconds"] == 1900.0
    assert t2i["train_cpu_seconds"] == 2800.0  # the record itself is untouched


def test_build_overrides_are_parsed_and_checked_against_the_config():
    from engines.common.zoo.__main__ import main, parse_overrides

    assert parse_overrides(["steps=20000", "fashion=false"], ["clip"]) == {"steps": 20000, "fashion": False}
    assert parse_overrides([], []) == {}
    with pytest.raises(ValueError, match="exactly one model"):
        parse_overrides(["steps=10"], ["clip", "vae"])
    with pytest.raises(ValueError, match="no configuration field 'stepz'; it has: .*steps"):
        parse_overrides(["stepz=10"], ["clip"])
    with pytest.raises(ValueError, match="invalid --set for clip: steps"):
        parse_overrides(["steps=0"], ["clip"])
    with pytest.raises(ValueError, match="FIELD=VALUE"):
        parse_overrides(["steps"], ["clip"])
    assert main(["build", "clip", "--set", "steps=-3"]) == 2


def test_build_with_overrides_caches_under_that_configs_key(capsys):
    from engines.common.zoo import catalog
    from engines.common.zoo.__main__ import main

    assert main(["build", "judge_style", "--set", "steps=3"]) == 0
    assert catalog.is_built("judge_style", {"steps": 3})
    assert catalog.read_meta("judge_style", {"steps": 3})["config"]["steps"] == 3
    assert '"test_accuracy"' in capsys.readouterr().out

"""FedAG's paper-scale path with tiny configurations of the paper's own classes (spec §5, check 7).

transformers ``CLIPModel`` (small vision/text towers), timm's ``vit_tiny_patch16_224`` (2 blocks, 32 px, patch 8)
and a diffusers ``StableDiffusionPipeline`` (tiny UNet/VAE/CLIP text encoder), each saved to ``tmp_path`` and
loaded back with ``local_files_only=True`` through ``engines.fedag.paper_scale``; then a short federation runs
end to end with them through the same drivers as the tiny setting."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.fedag import algorithm as alg
from engines.fedag import drivers as dr
from engines.fedag.domains import real_domains
from engines.fedag.federation import build_setup
from engines.fedag.model import ClientNet, to_tensor
from engines.fedag.paper_scale import (DOMAIN_STYLES, FedagClip, PaperScale, PaperScaleError, TimmClient,
                                       diffusion_prompt, load_clip, load_sd, make_timm_client)
from engines.fedag.params import FederationParams

torch.set_num_threads(1)

VIT = "vit_tiny_patch16_224"
VIT_KW = {"depth": 2, "patch_size": 8}  # the ViT-tiny class and width (192), 2 blocks, 32 px inputs
PROJ = 24


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    from engines.common.zoo.tokenizer import clip_tokenizer

    d = tmp_path_factory.mktemp("clip")
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    cfg = CLIPConfig(text_config=dict(vocab_size=49408, max_position_embeddings=77, bos_token_id=49406,
                                      eos_token_id=49407, **small),
                     vision_config=dict(image_size=32, patch_size=8, **small), projection_dim=PROJ)
    torch.manual_seed(0)
    CLIPModel(cfg).save_pretrained(d)
    clip_tokenizer(77).save_pretrained(d)
    CLIPImageProcessor(image_mean=[0.5, 0.4, 0.3], image_std=[0.2, 0.25, 0.3], size={"shortest_edge": 32},
                       crop_size={"height": 32, "width": 32}).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def sd_dir(tmp_path_factory):
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from engines.common.zoo.t2i import assemble
    from engines.common.zoo.tokenizer import clip_tokenizer

    d = tmp_path_factory.mktemp("sd")
    torch.manual_seed(0)
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, block_out_channels=(16, 32),
                                layers_per_block=1, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=4, norm_num_groups=8)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16),
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        layers_per_block=1, norm_num_groups=8, sample_size=16)
    te = CLIPTextModel(CLIPTextConfig(vocab_size=49408, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=77))
    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                          set_alpha_to_one=False, steps_offset=1)
    assemble(vae, te, clip_tokenizer(77), unet, sched).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def vit_ckpt(tmp_path_factory):
    """A ViT-tiny checkpoint with an ImageNet-sized (1,000-class) head, as timm ships them."""
    import timm
    from safetensors.torch import save_file

    torch.manual_seed(3)
    net = timm.create_model(VIT, pretrained=False, img_size=32, **VIT_KW)
    p = tmp_path_factory.mktemp("vit") / "vit_tiny.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(p))
    return p, net.state_dict()


def _scale(clip_dir="", sd_dir="", client=VIT, ckpt=""):
    return PaperScale(clip_dir=str(clip_dir), client_model=client, client_checkpoint=str(ckpt), client_img_size=32,
                      client_kwargs=dict(VIT_KW), sd_dir=str(sd_dir), sd_steps=2, sd_guidance=3.0)


# ---- server CLIP -------------------------------------------------------------------------------------------------

def test_clip_from_local_folder_gives_features_of_its_projection_size(clip_dir):
    clip = load_clip(str(clip_dir))
    assert isinstance(clip, FedagClip) and clip.feature_dim == PROJ
    assert clip.mean == pytest.approx((0.5, 0.4, 0.3)) and clip.std == pytest.approx((0.2, 0.25, 0.3))
    x = np.random.default_rng(0).random((5, 32, 32, 3), dtype=np.float32)
    with torch.no_grad():
        z = clip.encode_images(x, normalize=False)
        t = clip.encode_texts(["a photo of the digit one", "a photo of the digit two"], normalize=False)
    assert z.shape == (5, PROJ) and t.shape == (2, PROJ)
    # the folder's normalisation is the one applied
    pv = clip.pixel_values(x)
    assert torch.allclose(pv[:, 0], (torch.as_tensor(x[..., 0]) - 0.5) / 0.2, atol=1e-5)
    assert not any(p.requires_grad for p in clip.model.parameters())  # frozen


# ---- clients -----------------------------------------------------------------------------------------------------

def test_timm_vit_client_logits_and_prototypes_from_its_penultimate_features():
    net = PaperScale(client_model=VIT, client_img_size=32, client_kwargs=dict(VIT_KW)).client_factory(10)()
    assert isinstance(net, TimmClient) and type(net.net).__name__ == "VisionTransformer"
    assert net.net.patch_embed.img_size == (32, 32) and len(net.net.blocks) == 2
    rng = np.random.default_rng(0)
    x, y = rng.random((20, 32, 32, 3), dtype=np.float32), np.arange(20) % 10
    with torch.no_grad():
        assert net(to_tensor(x)).shape == (20, 10)
        h = net.net.forward_head(net.net.forward_features(to_tensor(x)), pre_logits=True)
    assert h.shape == (20, 192)
    protos = alg.prototypes(net, x, y, 10)
    assert protos.shape == (10, 192)
    assert torch.allclose(protos[3], h[np.flatnonzero(y == 3)].mean(0), atol=1e-5)
    q = alg.score_synthetic(net, protos, x[:10], y[:10])
    assert q.shape == (10,) and np.all(q <= 1 + 1e-5)


def test_timm_client_resizes_inputs_to_its_own_size():
    net = make_timm_client(VIT, 10, img_size=48, **VIT_KW)
    with torch.no_grad():
        assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
        assert net.features(torch.zeros(2, 3, 32, 32)).shape == (2, 192)


def test_vit_from_local_checkpoint_keeps_the_backbone_and_reinitialises_the_head(vit_ckpt):
    path, sd = vit_ckpt
    net = _scale(ckpt=path).client_factory(10)()
    got = net.net.state_dict()
    assert got["head.weight"].shape == (10, 192) and sd["head.weight"].shape == (1000, 192)
    for k in ("blocks.1.attn.qkv.weight", "patch_embed.proj.weight", "pos_embed", "cls_token", "norm.weight"):
        assert torch.equal(got[k], sd[k]), k


# ---- synthetic data ------------------------------------------------------------------------------------------------

def test_stable_diffusion_from_local_folder_makes_prompted_synthetic_sets(sd_dir):
    from engines.fedag.paper_scale import synthesise_diffusion

    pipe = load_sd(str(sd_dir))
    assert type(pipe).__name__ == "StableDiffusionPipeline"
    seen = []
    real_call = type(pipe).__call__

    def spy(self, prompt, **kw):
        seen.extend(prompt)
        return real_call(self, prompt, **kw)

    type(pipe).__call__ = spy
    try:
        syn = synthesise_diffusion(pipe, "blur", 10, 0.2, seed=0, size=32, steps=2, guidance=3.0)
    finally:
        type(pipe).__call__ = real_call
    assert syn.x.shape == (10, 32, 32, 3) and syn.x.dtype == np.float32 and 0 <= syn.x.min() and syn.x.max() <= 1
    assert sorted(syn.y.tolist()) == sorted(list(range(10)))
    assert syn.corrupted.sum() == 2
    assert all(p.startswith(f"a {DOMAIN_STYLES['blur']} of a handwritten digit ") for p in seen) and len(seen) == 10
    # clean samples were drawn from their own class's prompt; corrupted ones from another class's, label kept
    for i, p in enumerate(seen):
        assert (p == diffusion_prompt("blur", int(syn.y[i]))) == (not syn.corrupted[i])


# ---- end to end ----------------------------------------------------------------------------------------------------

def test_federation_round_runs_end_to_end_with_the_paper_classes(clip_dir, sd_dir, monkeypatch):
    p = FederationParams(domains=("tint", "rotate", "blur"), held_out="blur", images_per_domain=40, rounds=1,
                         init_epochs=1, local_epochs=1, interact_epochs=1, synthetic_per_domain=20, batch_size=16,
                         baselines=("fedclip", "fedavg", "zeroshot"))
    data = real_domains(list(p.domains), p.images_per_domain, 0)
    feats = []
    real_features = TimmClient.features

    def spy(self, x):
        h = real_features(self, x)
        feats.append(h.shape)
        return h

    monkeypatch.setattr(TimmClient, "features", spy)
    s = build_setup(p, data=data, scale=_scale(clip_dir, sd_dir))
    assert all(isinstance(c.model, TimmClient) for c in s.clients)
    assert s.text.shape == (10, PROJ) and s.syn_z[0].shape == (20, PROJ)
    assert s.eval_sets["test"]["blur"]["z"].shape[1] == PROJ
    assert [syn.x.shape for syn in s.synthetic] == [(20, 32, 32, 3)] * 2
    res = dr.run_fedag(s)
    h = res["history"][-1]
    assert h["round"] == 1 and 0 <= h["ood"] <= 1 and np.isfinite(h["loss_client_kd"])
    assert len(res["channel"]) == 2 and [len(q) for q in res["quality"]] == [20, 20]
    # the quality prototypes and scores came from the ViT's 192-d penultimate features (train + synthetic images)
    assert (len(s.clients[0]._y), 192) in feats and (20, 192) in feats
    assert all(isinstance(c.model, TimmClient) for c in s.clients)  # merged back into the same architecture
    for run in (dr.run_fedclip, dr.run_fedavg, dr.run_zeroshot):
        assert 0 <= run(s)["history"][-1]["ood"] <= 1


def test_settings_are_read_from_the_environment(clip_dir, sd_dir):
    env = {"PAPERLAB_FEDAG_CLIP_DIR": str(clip_dir), "PAPERLAB_FEDAG_CLIENT_MODEL": VIT,
           "PAPERLAB_FEDAG_CLIENT_IMG_SIZE": "64", "PAPERLAB_FEDAG_SD_DIR": str(sd_dir), "PAPERLAB_FEDAG_SD_STEPS": "3"}
    s = PaperScale.from_env(env)
    assert (s.clip_dir, s.client_model, s.client_img_size, s.sd_dir, s.sd_steps) == (str(clip_dir), VIT, 64,
                                                                                   str(sd_dir), 3)
    assert PaperScale.from_env({}).is_tiny and not s.is_tiny
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_SD_STEPS"):
        PaperScale.from_env({"PAPERLAB_FEDAG_SD_STEPS": "many"})


def test_tiny_default_is_unchanged():
    make = PaperScale().client_factory(10)
    assert isinstance(make(), ClientNet)


# ---- bad paths name the setting ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["missing", "hub_id", "empty_folder", "wrong_model"])
def test_bad_clip_dir_names_the_setting(kind, tmp_path, sd_dir):
    path = {"missing": str(tmp_path / "nope"), "hub_id": "openai/clip-vit-base-patch32", "empty_folder": str(tmp_path),
            "wrong_model": str(sd_dir / "text_encoder")}[kind]
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_CLIP_DIR"):
        load_clip(path)


@pytest.mark.parametrize("kind", ["missing", "hub_id", "clip_folder"])
def test_bad_sd_dir_names_the_setting(kind, tmp_path, clip_dir):
    path = {"missing": str(tmp_path / "nope"), "hub_id": "stabilityai/stable-diffusion-2-1-base",
            "clip_folder": str(clip_dir)}[kind]
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_SD_DIR"):
        load_sd(path)


def test_bad_client_settings_name_the_setting(tmp_path):
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_CLIENT_MODEL"):
        PaperScale(client_model="vit_enormous_patch3").client_factory(10)
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_CLIENT_CHECKPOINT"):
        _scale(ckpt=tmp_path / "missing.safetensors").client_factory(10)
    bad = tmp_path / "cnn.pth"
    torch.save(ClientNet().state_dict(), bad)  # a checkpoint of another architecture
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_CLIENT_CHECKPOINT"):
        _scale(ckpt=bad).client_factory(10)


def test_build_setup_reads_the_settings_and_fails_naming_them(monkeypatch, tmp_path):
    monkeypatch.setenv("PAPERLAB_FEDAG_CLIP_DIR", str(tmp_path / "absent"))
    p = FederationParams(domains=("tint", "rotate", "blur"), images_per_domain=40, synthetic_per_domain=20,
                         rounds=1, baselines=())
    with pytest.raises(PaperScaleError, match="PAPERLAB_FEDAG_CLIP_DIR=.*absent.*not a local folder"):
        build_setup(p)


def test_check7_smoke_runs_the_paper_configs_code_path(monkeypatch, tmp_path):
    """``paper_scale_smoke`` (check 7) end to end, with the CLIP and SD configs it writes shrunk (the ViT-tiny
    client stays full size): json written, read back with local_files_only, one forward through FedAG's code."""
    import json

    from engines.fedag import paper_scale as ps

    full_clip, full_sd = ps.clip_vit_b32_config(), ps.sd21_base_configs()
    clip = json.loads(json.dumps(full_clip))
    for k in ("text_config", "vision_config"):
        clip[k].update(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    clip["projection_dim"] = clip["text_config"]["projection_dim"] = clip["vision_config"]["projection_dim"] = PROJ
    sd = json.loads(json.dumps(full_sd))
    sd["unet"].update(block_out_channels=[32, 32, 64, 64], attention_head_dim=[2, 2, 4, 4], cross_attention_dim=32,
                      layers_per_block=1)
    sd["vae"].update(block_out_channels=[8, 8, 16, 16], layers_per_block=1, norm_num_groups=8)
    sd["unet"]["norm_num_groups"] = 8
    sd["text_encoder"].update(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    monkeypatch.setattr(ps, "clip_vit_b32_config", lambda: clip)
    monkeypatch.setattr(ps, "sd21_base_configs", lambda: sd)
    out = ps.paper_scale_smoke(tmp_path, log=lambda *_: None)
    assert out["clip"]["image_features"] == [2, PROJ] and out["client"]["prototypes"] == [10, 192]
    assert out["client"]["img_size"] == 224 and 5 < out["client"]["params_M"] < 6  # ViT-tiny: 5.5 M
    assert out["sd"]["synthetic"] == [2, 32, 32, 3]
    assert json.loads((tmp_path / "stable-diffusion-2-1-base" / "unet" / "config.json").read_text())[
        "cross_attention_dim"] == 32
    # the real configurations are the paper's models
    assert full_clip["vision_config"]["patch_size"] == 32 and full_clip["projection_dim"] == 512
    assert full_sd["unet"]["cross_attention_dim"] == 1024 and full_sd["unet"]["block_out_channels"][-1] == 1280

"""SAeUron: SAE contract, importance score, the identity of the hook, erasure, bad input, paper-scale loading."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.saeuron import params as P
from engines.saeuron.hooks import HookPointError, SAeUronHook, StepTracker, hooked, locate_block
from engines.saeuron.sae import SaeConfig, SaeFormatError, TopKSae, evaluate_fvu, train_sae
from engines.saeuron.scores import build_plan, empty_plan, heavy_tail_share, importance, select_features

torch.set_num_threads(1)


def sparse_data(n=6000, d=16, atoms=64, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    D = torch.randn(atoms, d, generator=g)
    D /= D.norm(dim=1, keepdim=True)
    idx = torch.stack([torch.randperm(atoms, generator=g)[:k] for _ in range(n)])
    coef = torch.rand(n, k, generator=g) * 2 + 0.5
    return (coef[..., None] * D[idx]).sum(1) + 0.3


@pytest.fixture(scope="module")
def trained():
    x = sparse_data()
    sae, st = train_sae(x, 16, SaeConfig(expansion_factor=8, k=4), epochs=20, batch_size=512, lr=4e-3,
                        dead_after_tokens=20_000, seed=0)
    return x, sae, st


def test_vocabulary_matches_minicanvas():
    from engines.common import data

    assert P.OBJECTS == data.OBJECTS and P.STYLES == data.STYLES and P.COLOURS == data.COLOUR_NAMES


def test_sae_contract(trained, tmp_path):
    x, sae, st = trained
    z = sae.encode(x[:500])
    assert (z > 0).sum(-1).eq(sae.cfg.k).all(), "per-token TopK: exactly k active latents per token"
    assert st.fvu <= 0.25 and evaluate_fvu(sae, x) == pytest.approx(st.fvu, rel=1e-5)
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(sae.num_latents), atol=1e-5)
    # BatchTopK keeps k·B activations over the batch, not k per token.
    zb = sae.select_topk(sae.pre_acts(x[:64]), batch_topk=True)
    assert int((zb > 0).sum()) == sae.cfg.k * 64 and not (zb > 0).sum(-1).eq(sae.cfg.k).all()
    # Upstream layout round trip; the loader resets BatchTopK to per-token TopK.
    sae.cfg.batch_topk = True
    sae.save_to_disk(tmp_path / "s")
    sae.cfg.batch_topk = False
    cfg = json.loads((tmp_path / "s" / "cfg.json").read_text())
    assert {"d_in", "expansion_factor", "k", "num_latents", "normalize_decoder", "batch_topk"} <= set(cfg)
    from safetensors.torch import load_file

    assert set(load_file(str(tmp_path / "s" / "sae.safetensors"))) == {"encoder.weight", "encoder.bias", "W_dec", "b_dec"}
    back = TopKSae.load_from_disk(tmp_path / "s")
    assert back.cfg.batch_topk is False
    assert torch.equal(back(x[:100]), sae(x[:100]))


def test_parallel_gradient_removed_and_auxk():
    sae = TopKSae(8, SaeConfig(expansion_factor=4, k=2), seed=1)
    x = torch.randn(32, 8)
    out = sae.losses(x, dead_mask=torch.ones(sae.num_latents, dtype=torch.bool))
    assert float(out["auxk"].detach()) > 0
    (out["fvu"] + out["auxk"]).backward()
    sae.remove_gradient_parallel_to_decoder_directions()
    assert (sae.W_dec.grad * sae.W_dec.data).sum(1).abs().max() < 1e-6
    assert float(sae.losses(x, dead_mask=torch.zeros(sae.num_latents, dtype=torch.bool))["auxk"]) == 0


def test_bad_sae_directory(tmp_path):
    with pytest.raises(SaeFormatError, match="sae.safetensors"):
        (tmp_path / "cfg.json").write_text(json.dumps({"d_in": 4, "k": 2, "expansion_factor": 2}))
        TopKSae.load_from_disk(tmp_path)


def test_importance_score_and_selection():
    # 2 concepts × 2 prompts, T = 1, n = 4; feature 0 fires only on concept 0.
    mu = torch.tensor([[[4.0, 1, 1, 0]], [[2.0, 1, 1, 0]], [[0.0, 1, 1, 2]], [[0.0, 1, 1, 2]]])
    labels = torch.tensor([0, 0, 1, 1])
    s = importance(mu, labels, 0)
    on, off = torch.tensor([3.0, 1, 1, 0]), torch.tensor([0.0, 1, 1, 2])
    assert torch.allclose(s[0], on / on.sum() - off / off.sum(), atol=1e-6)
    assert select_features(s, "top_m", top_m=2)[0].tolist() == [0]  # only positive scores are selected
    assert select_features(s, "percentile", percentile=50)[0].tolist() == [0]
    plan, info = build_plan(mu, labels, 2, torch.tensor([500.0]), [dict(c=0, gamma=-2.0, top_m=1)])
    assert plan.feats[0].tolist() == [0]
    assert plan.scale[0].item() == pytest.approx(-2.0 * 3.0)  # γ · μ(i, t, c)
    assert plan.thresh[0].item() == pytest.approx(1.5)  # mean over concepts of μ(i, t, ·)
    heavy = torch.zeros(1, 1000)
    heavy[0, :5] = 1.0
    heavy[0, 5:] = 0.001
    assert heavy_tail_share(heavy, 0.01) > 0.5


# ---------------------------------------------------------------------------- on the micro text-to-image model


@pytest.fixture(scope="module")
def bundle():
    from engines.saeuron.pipeline import build, load_bundle

    build({})
    return load_bundle({})


def test_identity_nothing_selected(bundle):
    """Acceptance check 2: the full encode/decode path with no selected features + error add-back = unhooked."""
    from engines.saeuron.pipeline import generate, hook_of

    b = bundle
    prompts = ["a red star in striped style", "a blue circle in dotted style"]
    ref = generate(b.pipe, prompts, 3, 6, 4.0, as_float=True)
    tr = StepTracker()
    hooks = {hook_of(b.params, k): SAeUronHook(empty_plan(b.stats[k].timesteps), tr, sae=b.saes[k]) for k in ("style", "object")}
    out = generate(b.pipe, prompts, 3, 6, 4.0, hooks, tr, as_float=True)
    assert np.abs(out - ref).max() < 1e-4
    # Without the error term the SAE's reconstruction error does change the images: the test can fail.
    hooks = {hook_of(b.params, "style"): SAeUronHook(empty_plan(b.stats["style"].timesteps), tr, sae=b.saes["style"],
                                                     preserve_error=False)}
    assert np.abs(generate(b.pipe, prompts, 3, 6, 4.0, hooks, tr, as_float=True) - ref).max() > 1e-3


def test_erase_changes_images_and_reports(bundle):
    from engines.saeuron.erase import erase

    r = erase({"concepts": [{"concept": "striped", "gamma": -20, "top_m": 8}, {"concept": "star", "gamma": -20}],
               "n_images": 2})
    assert r.mean_abs_change > 0.002
    assert r.prompt == "a red star in striped style"
    assert set(r.judges) == {"style", "object"} and len(r.judges["style"]["before"]) == len(P.STYLES)
    assert {row[0] for row in r.selected} == {"striped", "star"}
    assert r.heatmap_plot and r.grid.endswith(".png")
    raw = erase({"concepts": [{"concept": "striped", "gamma": -20, "top_m": 8}], "n_images": 2, "units": "raw"})
    assert raw.mean_abs_change > 0


def test_bad_inputs(bundle, tmp_path, monkeypatch):
    from engines.saeuron.erase import erase
    from engines.saeuron.paper import MissingCheckpoint, load_paper_sae
    from engines.saeuron.pipeline import NotBuilt, load_bundle

    with pytest.raises(ParamError, match="concepts"):
        validate(P.EraseParams, {"concepts": []})
    with pytest.raises(ParamError, match="gamma"):
        validate(P.EraseParams, {"concepts": [{"concept": "dotted", "gamma": 3}]})
    with pytest.raises(ParamError, match="unknown tokens.*dragon"):
        validate(P.EraseParams, {"prompt": "a red dragon", "concepts": [{"concept": "dotted"}]})
    with pytest.raises(ParamError, match="t_start"):
        validate(P.EraseParams, {"concepts": [{"concept": "dotted", "t_start": 0.9, "t_end": 0.1}]})
    with pytest.raises(ParamError, match="hook point"):
        validate(P.BuildParams, {"hook_style": "up_blocks.1.resnets.0"})
    with pytest.raises(NotBuilt, match="Train SAE"):
        load_bundle({"styles": ["solid", "striped"], "seed": 5})
    from engines.saeuron import pipeline

    small = {"styles": ["solid", "dotted"], "objects": ["circle", "star"]}
    pipeline.build(small)
    with pytest.raises(ParamError, match="no statistics for concept 'wavy'"):
        erase({"concepts": [{"concept": "wavy"}], "n_images": 1, "build": small})
    with pytest.raises(HookPointError, match="does not exist"):
        locate_block(bundle.pipe.unet, "up_blocks.1.attentions.7")
    monkeypatch.delenv("PAPERLAB_SAEURON_SAE_DIR", raising=False)
    with pytest.raises(MissingCheckpoint, match="PAPERLAB_SAEURON_SAE_DIR"):
        load_paper_sae("style")


def test_paper_scale_offline(tmp_path):
    """Acceptance check 8 (reduced latents for speed; reproduce.py loads the full 1280 × 20480 size)."""
    from engines.saeuron.paper import PAPER_HOOKS, load_paper_sae, sd15_structured_unet, write_random_release

    write_random_release(tmp_path, d_in=1280, expansion=2, k=32, kinds=("style",))
    sae = load_paper_sae("style", tmp_path)
    assert (sae.d_in, sae.num_latents, sae.cfg.k, sae.cfg.batch_topk) == (1280, 2560, 32, False)
    unet = sd15_structured_unet(width=16)
    for path in ("up_blocks.1.attentions.1", "up_blocks.1.attentions.2"):
        locate_block(unet, path)
    w = unet.up_blocks[1].attentions[2].out_channels
    small = TopKSae(w, SaeConfig(expansion_factor=4, k=4), seed=0)
    tr = StepTracker()
    T = torch.tensor([999.0, 500.0])
    x = torch.randn(2, 4, 16, 16)
    ehs = torch.randn(2, 5, 64)
    with torch.no_grad():
        ref = unet(x, 999, ehs).sample
        tr.reset(1, cfg=False)
        plan, _ = build_plan(torch.rand(4, 2, small.num_latents), torch.tensor([0, 0, 1, 1]), 2, T,
                             [dict(c=0, gamma=-5.0, top_m=3)])
        with hooked(unet, {PAPER_HOOKS["style"].removeprefix("unet."): SAeUronHook(plan, tr, sae=small)}, tr):
            out = unet(x, 999, ehs).sample
    assert out.shape == ref.shape and torch.isfinite(out).all() and not torch.allclose(out, ref)


def test_build_with_released_sae_directory(bundle, tmp_path):
    """The paper-scale route on the micro model: SAEs come from a bcywinski/SAeUron-layout directory."""
    from engines.saeuron.erase import erase
    from engines.saeuron.paper import write_random_release
    from engines.saeuron.pipeline import build

    d_in = bundle.saes["style"].d_in
    write_random_release(tmp_path, d_in=d_in, expansion=2, k=3)
    bp = {"sae_dir": str(tmp_path), "styles": ["solid", "dotted"], "objects": ["circle", "star"]}
    res = build(bp)
    assert [(s.num_latents, s.k) for s in res.saes] == [(2 * d_in, 3)] * 2
    r = erase({"concepts": [{"concept": "dotted", "gamma": -10}], "n_images": 1, "build": bp})
    assert r.mean_abs_change > 0


def test_released_build_installs_without_training_and_damage_is_reported(bundle, tmp_path, monkeypatch):
    """The model release: a shipped build key installs (verified) instead of training; the key names the
    text-to-image model by its cache key, not by this machine's path; a damaged file names the rebuild command."""
    import shutil

    from engines.common import release
    from engines.saeuron import pipeline as PL

    p = PL.resolve_build({})
    d = PL.build_dir(p)
    assert "/" not in PL._t2i_dir() and PL._t2i_dir() == __import__("engines.common.zoo", fromlist=["x"]).model_dir("t2i").name
    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path / "release"))
    release.publish("saeuron", d.name, d, config={}, record={}, metrics={}, half=True, rebuild="make models MODELS=saeuron")
    saved = tmp_path / "saved"
    shutil.move(str(d), saved)  # a fresh clone: nothing built here
    PL._BUNDLES.clear()
    try:
        b = PL.load_bundle({})
        assert (d / "build.json").exists() and (d / release.INSTALLED).exists()
        for k in PL.KINDS:  # float16 storage restored to float32: the weights agree to half precision
            ref = TopKSae.load_from_disk(saved / k)
            assert torch.allclose(b.saes[k].W_dec, ref.W_dec, atol=2e-3)
            assert b.stats[k].mu.dtype == torch.float32 and b.stats[k].mu.shape == bundle.stats[k].mu.shape
        assert PL.build(p).cached  # a build job finds it done
        shutil.rmtree(d)
        PL._BUNDLES.clear()
        f = tmp_path / "release" / "saeuron" / d.name / "stats.safetensors"
        f.write_bytes(f.read_bytes()[:-8])
        with pytest.raises(release.ReleaseError, match="make models MODELS=saeuron"):
            PL.load_bundle({})
        assert not (d / "build.json").exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.move(str(saved), d)
        PL._BUNDLES.clear()


def test_concept_statistics_keep_the_importance_scores():
    """Stored per concept (the paper's μ(i, t, c)) instead of per prompt: on a balanced design every importance
    score and every selected feature is the same; an unbalanced design is refused (the identity would not hold)."""
    from engines.saeuron.pipeline import concept_statistics

    g = torch.Generator().manual_seed(0)
    P, T, n = 24, 5, 40
    lab = torch.arange(P) % 4
    per = {"mu_style": torch.rand(P, T, n, generator=g) ** 4, "raw_style": torch.rand(P, T, 8, generator=g)}
    out = concept_statistics(per, {"style": lab}, torch.arange(T))
    assert out["mu_style"].shape == (4, T, n) and out["label_style"].tolist() == [0, 1, 2, 3]
    for c in range(4):
        a, b = importance(per["mu_style"], lab, c), importance(out["mu_style"], out["label_style"], c)
        assert torch.allclose(a, b, atol=1e-6)
        assert [x.tolist() for x in select_features(a, top_m=5)] == [x.tolist() for x in select_features(b, top_m=5)]
    with pytest.raises(ValueError, match="unbalanced"):
        concept_statistics(per, {"style": torch.cat([lab[:-1], torch.tensor([0])])}, torch.arange(T))


def test_built_summary_draws_the_training_curve_of_a_finished_build(bundle):
    """What the tab shows on arrival beside the worked example: the record and FVU curve of the SAEs in use."""
    from engines.saeuron.pipeline import built_summary

    png, res = built_summary({})
    assert png is not None and png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert [s.kind for s in res.saes] == ["style", "object"] and all(len(c) > 1 for c in res.curves.values())
    assert built_summary({"k": 3}) is None  # other settings: not built, and nothing trains

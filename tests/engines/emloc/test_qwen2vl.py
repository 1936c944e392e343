"""EMLoC's paper-scale path (spec check 8) on a 2-layer randomly initialised Qwen2-VL: the runner covers every
layer of transformers' model, chunk-wise memory without pruning reproduces the model's own forward (3-D mRoPE
positions from its rope index), a wrong position offset breaks that, the JS-bounded pruning holds its constraint,
and the loader reads only what is configured."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.settings import reset_settings
from engines.emloc import memory, qwen2vl, task


@pytest.fixture(scope="module")
def vl():
    return qwen2vl.VLRunner(qwen2vl.tiny_model(seed=0))


@pytest.fixture(scope="module")
def ep():
    return task.episodes(1, 12, 3, "val", seed=4)[0]


def _full_query_logits(r: qwen2vl.VLRunner, ep) -> torch.Tensor:
    """Last-token logits of [all demos; query] through Qwen2VLForConditionalGeneration.forward, per query."""
    ids, pats = r.chunk_inputs(ep, 0, ep.n_shots)
    qi, qp = r.query_inputs(ep.query_patches)
    return torch.stack([r.full_logits(np.concatenate([ids, qi[k]])[None], np.concatenate([pats, qp[k]])[None])[0, -1]
                        for k in range(len(qi))])


def test_runner_reads_every_layer_of_the_transformers_model(vl, ep):
    """The runner's layers are the language model's, and a build + query runs each one's attention and MLP."""
    m = vl.model
    assert m.config.model_type == "qwen2_vl" and m.config.text_config.num_hidden_layers == 2
    assert list(vl.layers) == list(m.model.language_model.layers) and vl.n_layers == 2
    assert vl.head is m.lm_head and vl.norm is m.model.language_model.norm
    assert vl.rotary is m.model.language_model.rotary_emb and vl.rotary.mrope_section == [2, 3, 3]
    calls = {}
    hooks = [mod.register_forward_hook(lambda *_, key=(l, name): calls.__setitem__(key, calls.get(key, 0) + 1))
             for l, lay in enumerate(vl.layers)
             for name, mod in (("k_proj", lay.self_attn.k_proj), ("o_proj", lay.self_attn.o_proj), ("mlp", lay.mlp))]
    try:
        mem, _ = memory.Compressor(vl, ratios=(), chunk_size=5).build(ep)
        memory.answer(vl, mem, ep.query_patches)
    finally:
        for h in hooks:
            h.remove()
    assert set(calls) == {(l, n) for l in range(2) for n in ("k_proj", "o_proj", "mlp")}
    assert len(set(calls.values())) == 1 and calls[(0, "k_proj")] == 3 + 1  # 3 chunks + the queries
    assert len(mem.keys) == len(mem.values) == 2


def test_positions_are_the_models_own_3d_rope_index(vl, ep):
    """Chunk positions (model's get_rope_index + running offset) equal those of the whole context at once; image
    tokens get their (t, h, w) cell, text tokens three equal components; the offset advances by max + 1."""
    ids, _ = vl.chunk_inputs(ep, 0, ep.n_shots)
    whole, _ = vl.model.model.get_rope_index(**vl.mm_inputs(ids))
    whole = whole[:, 0]
    offset, parts = 0, []
    for lo in range(0, ep.n_shots, 5):
        cid, _ = vl.chunk_inputs(ep, lo, min(ep.n_shots, lo + 5))
        pos, offset = vl.positions(cid, offset)
        parts.append(pos)
    assert torch.equal(torch.cat(parts, 1), whole) and offset == int(whole.max()) + 1
    demo = whole[:, :vl.demo_len]  # <vs> img img img img <ve> QUERY label SEP
    assert demo[:, 1:5].tolist() == [[1, 1, 1, 1], [1, 1, 2, 2], [1, 2, 1, 2]]
    text = demo[:, [0, 5, 6, 7, 8]]
    assert (text == text[0]).all() and text[0].tolist() == [0, 3, 4, 5, 6]
    assert offset == 7 * ep.n_shots < len(ids) == 9 * ep.n_shots  # fewer positions than tokens


@pytest.mark.parametrize("chunk", [1, 5, 12])
def test_no_pruning_reproduces_the_models_own_forward(vl, ep, chunk):
    """Spec check 8: chunk-wise memory + query = Qwen2VLForConditionalGeneration.forward on the whole context."""
    mem, recs = memory.Compressor(vl, ratios=(), chunk_size=chunk).build(ep)
    assert mem.per_layer() == [9 * ep.n_shots] * 2 and len(recs) == -(-ep.n_shots // chunk)
    full = _full_query_logits(vl, ep)
    assert full.dtype == torch.float32 and full.abs().max() > 0.5
    assert (memory.answer(vl, mem, ep.query_patches) - full).abs().max() <= 1e-4


def test_kept_keys_are_the_models_own_cache(vl, ep):
    """Every layer's memory (post-mRoPE keys, values) equals the DynamicCache transformers fills for the context."""
    mem, _ = memory.Compressor(vl, ratios=(), chunk_size=5).build(ep)
    ids, pats = vl.chunk_inputs(ep, 0, ep.n_shots)
    mm = vl.mm_inputs(ids)
    vl.model.model.rope_deltas = None
    with torch.no_grad():
        cache = vl.model(inputs_embeds=vl.embed(ids, pats)[None], use_cache=True, **mm).cache
    assert len(cache.layers) == 2
    for l in range(2):
        assert (mem.keys[l] - cache.layers[l].keys).abs().max() <= 1e-5
        assert (mem.values[l] - cache.layers[l].values).abs().max() <= 1e-5


def test_wrong_positions_fail_the_check(vl, ep):
    """The check can fail: a shifted offset, or 1-D bookkeeping (offset = tokens seen), moves the logits."""
    mem, _ = memory.Compressor(vl, ratios=(), chunk_size=5).build(ep)
    full = _full_query_logits(vl, ep)
    mem.offset += 1
    assert (memory.answer(vl, mem, ep.query_patches) - full).abs().max() > 1e-2
    mem.offset = mem.context_tokens  # what a runner unaware of the image grids would use
    assert (memory.answer(vl, mem, ep.query_patches) - full).abs().max() > 1e-2


def test_pruned_compression_holds_the_js_bound(vl, ep):
    """Ratios {0.1, 0.2, 0.5} and δ = 0.005 on the random Qwen2-VL: every chunk's final JS ≤ δ, a ratio is accepted
    iff its JS ≤ δ, layers are tested top-down, answer tokens stay in every layer and head."""
    mem, recs = memory.Compressor(vl, ratios=memory.RATIOS, delta=memory.DELTA, chunk_size=6).build(ep)
    assert len(recs) == 2
    for r in recs:
        assert r.js_final <= memory.DELTA + 1e-6
        assert all(t["accepted"] == (t["js"] <= memory.DELTA) for t in r.trace)
        layers = [t["layer"] for t in r.trace]
        assert layers == sorted(layers, reverse=True)
    assert any(not t["accepted"] for r in recs for t in r.trace)  # the bound binds somewhere
    assert sum(mem.per_layer()) < 2 * 9 * ep.n_shots  # and something was pruned
    for l in range(2):
        for h in range(vl.nkv):
            assert np.isin(mem.answer_positions, mem.kept_positions[l][h]).all()
            assert len(mem.kept_positions[l][h]) == mem.per_layer()[l]
    ids, _ = vl.chunk_inputs(ep, 0, ep.n_shots)
    assert (ids[mem.answer_positions] >= task.LABEL0).all() and (ids[mem.answer_positions] < task.VOCAB).all()


def test_bfloat16_memory_keeps_the_model_dtype(ep):
    r = qwen2vl.VLRunner(qwen2vl.tiny_model(seed=1).to(torch.bfloat16))
    mem, _ = memory.Compressor(r, ratios=(), chunk_size=6).build(ep)
    assert all(k.dtype == torch.bfloat16 for k in mem.keys + mem.values)
    assert memory.answer(r, mem, ep.query_patches).dtype == torch.bfloat16


@pytest.fixture
def vlm_setting(monkeypatch):
    def set_(value: str | None):
        if value is None:
            monkeypatch.delenv("PAPERLAB_VLM_MODEL", raising=False)
        else:
            monkeypatch.setenv("PAPERLAB_VLM_MODEL", value)
        reset_settings()

    yield set_
    monkeypatch.undo()
    reset_settings()


def test_loader_needs_a_configured_model(vlm_setting, tmp_path):
    vlm_setting(None)
    with pytest.raises(qwen2vl.PaperScaleError, match="PAPERLAB_VLM_MODEL"):
        qwen2vl.load()
    vlm_setting(str(tmp_path / "absent"))
    with pytest.raises(qwen2vl.PaperScaleError, match="no such folder"):
        qwen2vl.load()


def test_loader_reads_a_local_qwen2vl_folder(vlm_setting, tmp_path, ep):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    qwen2vl.tiny_model(seed=2).save_pretrained(tmp_path / "vl")
    vlm_setting(str(tmp_path / "vl"))
    r = qwen2vl.VLRunner(qwen2vl.load(device="cpu", dtype=torch.float32))
    mem, _ = memory.Compressor(r, ratios=(), chunk_size=6).build(ep)
    assert (memory.answer(r, mem, ep.query_patches) - _full_query_logits(r, ep)).abs().max() <= 1e-4
    Qwen2ForCausalLM(Qwen2Config(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1)).save_pretrained(tmp_path / "text")
    with pytest.raises(qwen2vl.PaperScaleError, match="not qwen2_vl"):
        qwen2vl.load(str(tmp_path / "text"), device="cpu")

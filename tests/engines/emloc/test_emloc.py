"""EMLoC engine: exactness of the chunk-wise memory, the JS divergence, the δ constraint, answer tokens,
budgets of the baselines, parameter errors, and the micro-trained model of the test profile."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.emloc import experiment, memory, task
from engines.emloc.model import ModelConfig, TinyICL
from engines.emloc.params import BenchmarkParams, MemoryParams


@pytest.fixture(scope="module")
def rand_model():
    torch.manual_seed(0)
    return TinyICL(ModelConfig()).eval()


def _full_logits(model, ep):
    ids, pats = ep.context()
    out = []
    for qp in ep.query_patches:
        qi = np.array([task.IMG] * task.PATCHES + [task.QUERY])
        qpat = np.zeros((len(qi), task.PATCH_DIM), np.float32)
        qpat[:task.PATCHES] = qp
        with torch.no_grad():
            out.append(model(torch.from_numpy(np.concatenate([ids, qi]))[None],
                             torch.from_numpy(np.concatenate([pats, qpat]))[None])[0, -1])
    return torch.stack(out)


@pytest.mark.parametrize("chunk", [1, 7, 40])
def test_no_pruning_reproduces_full_context_logits(rand_model, chunk):
    """Spec check 1: memory prefixes (post-RoPE keys) and position offsets are right, whatever the chunking."""
    ep = task.episodes(1, 40, 3, "val")[0]
    mem, recs = memory.Compressor(rand_model, ratios=(), chunk_size=chunk).build(ep)
    assert mem.per_layer() == [40 * task.DEMO_LEN] * 4 and len(recs) == -(-40 // chunk)
    diff = (memory.answer(rand_model, mem, ep.query_patches) - _full_logits(rand_model, ep)).abs().max()
    assert diff <= 1e-4
    # a shifted offset breaks it: the check can fail
    mem.offset += 3
    assert (memory.answer(rand_model, mem, ep.query_patches) - _full_logits(rand_model, ep)).abs().max() > 1e-4


def test_js_matches_scipy_and_is_zero_for_identical():
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(14), 5), rng.dirichlet(np.ones(14), 5)
    ours = memory.js_divergence(torch.tensor(p), torch.tensor(q)).numpy()
    ref = np.array([jensenshannon(a, b) ** 2 for a, b in zip(p, q)])
    assert np.allclose(ours, ref, atol=1e-6)
    assert float(memory.js_divergence(torch.tensor(p), torch.tensor(p)).abs().max()) < 1e-12


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 0.05])
def test_js_constraint_and_answer_tokens_hold(rand_model, delta):
    """Checks 3-4: every chunk's final JS on its observation set ≤ δ, every answer token in every layer."""
    ep = task.episodes(1, 48, 2, "val", seed=1)[0]
    mem, recs = memory.Compressor(rand_model, delta=delta, chunk_size=16).build(ep)
    for r in recs:
        assert r.js_final <= delta + 1e-6
        for t in r.trace:
            assert t["accepted"] == (t["js"] <= delta)
        # top-down: a layer is tested before any layer below it
        layers = [t["layer"] for t in r.trace]
        assert layers == sorted(layers, reverse=True)
    for l in range(4):
        for h in range(2):
            assert np.isin(mem.answer_positions, mem.kept_positions[l][h]).all()
            assert len(mem.kept_positions[l][h]) == mem.per_layer()[l]
    assert len(mem.answer_positions) == 48


def test_tiny_delta_keeps_more_than_large_delta(rand_model):
    ep = task.episodes(1, 32, 2, "val", seed=2)[0]
    small, _ = memory.Compressor(rand_model, delta=1e-7, chunk_size=16).build(ep)
    large, _ = memory.Compressor(rand_model, delta=0.5, chunk_size=16).build(ep)
    assert sum(large.per_layer()) < sum(small.per_layer())
    assert large.per_layer() == [32] * 4  # the floor: one answer token per demonstration


def test_baselines_share_emlocs_budget_and_bytes_follow_tokens(rand_model):
    ep = task.episodes(1, 48, 4, "val", seed=3)[0]
    r = experiment.run_episode(rand_model, ep, 16, 1e-4, (0.1, 0.2, 0.5),
                               ("full", "truncation", "uniform", "random", "pyramid"), latency=False)
    v = r["variants"]
    budget = np.mean(v["emloc"]["per_layer"])
    assert np.mean(v["truncation"]["per_layer"]) <= budget
    for b in ("uniform", "random"):
        assert abs(np.mean(v[b]["per_layer"]) - budget) <= len(r["chunks"]) + 1  # ⌈·⌉ per chunk
        assert len(set(v[b]["per_layer"])) == 1
    pyr = v["pyramid"]["per_layer"]
    assert pyr == sorted(pyr, reverse=True)
    ratio_bytes = v["emloc"]["kv_bytes"] / v["full"]["kv_bytes"]
    assert abs(ratio_bytes - v["emloc"]["retained"]) < 0.01
    assert v["full"]["js_to_full"] == 0.0 and r["answers_kept"]


def test_pyramid_schedule_decays_and_keeps_the_mean():
    s = experiment.pyramid(0.3, 4)
    assert s == sorted(s, reverse=True) and abs(np.mean(s) - 0.3) < 1e-9


def test_bad_parameters_are_named():
    with pytest.raises(ParamError, match="shots"):
        validate(MemoryParams, {"shots": 0})
    with pytest.raises(ParamError, match="shots"):
        validate(MemoryParams, {"shots": 300})
    with pytest.raises(ParamError, match="delta"):
        validate(MemoryParams, {"delta": 0.9})
    with pytest.raises(ParamError, match="strictly between 0 and 1"):
        validate(MemoryParams, {"ratios": [0.2, 1.5]})
    with pytest.raises(ParamError, match="each shot count must lie in 1-256"):
        validate(BenchmarkParams, {"shots": [128, 512]})
    with pytest.raises(task.TaskError, match="at least 1 demonstration"):
        task.episode(np.random.default_rng(0), 0)


def test_splits_draw_disjoint_episodes():
    a = task.episodes(3, 8, 1, "train")[0].demo_patches
    b = task.episodes(3, 8, 1, "test")[0].demo_patches
    assert not np.allclose(a, b)
    d = task.episodes(2, 16, 2, "test", "digits")[0]
    assert d.demo_patches.shape == (16, 4, 16) and set(d.perm) == set(range(10))


def test_build_memory_entry_with_the_micro_model():
    """The test profile trains the micro schedule (one short re-training); the entry's payload is complete."""
    res = experiment.build_memory({"shots": 48, "chunk_size": 16, "queries": 6, "delta": 0.01})
    v = res["variants"]
    assert set(v) == {"emloc", "full", "truncation", "uniform", "snapkv"}
    assert len(res["heatmap"]) == 4 and len(res["heatmap"][0]) == 3
    assert all(0 < x <= 1 for row in res["heatmap"] for x in row)
    assert res["answers_kept"] and res["latency_s"]["emloc"] > 0
    assert res["first_query"]["truth"] in range(10)
    assert sum(res["kept_kinds_head0"]["0"].values()) == v["emloc"]["per_layer"][0]


def test_kvpress_peers_keep_the_asked_budget_and_match_the_full_prefill(rand_model):
    """Check 7: kvpress presses hook the same model; a press at ratio 0 is the full context, others keep the budget."""
    from engines.emloc import peers

    ep = task.episodes(1, 32, 3, "val")[0]
    T = 32 * task.DEMO_LEN
    full = _full_logits(rand_model, ep)
    same = peers.press_memory(rand_model, ep, "knorm", 1.0)
    assert same.per_layer() == [T] * 4
    assert (memory.answer(rand_model, same, ep.query_patches) - full).abs().max() <= 1e-4
    for name in peers.PRESSES:
        mem = peers.press_memory(rand_model, ep, name, 0.3)
        assert mem.per_layer() == [int(T * 0.3)] * 4, name
        assert mem.offset == T
        assert (memory.answer(rand_model, mem, ep.query_patches) - full).abs().max() > 1e-4, name  # it did prune

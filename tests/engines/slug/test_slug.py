"""SLUG invariants and numbers on the micro CLIP (test profile): metrics, Pareto front, one-pass gradients,
the single-layer patch, the binary search, and bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError
from engines.slug import layers as L
from engines.slug.concepts import TooFewExamples
from engines.slug.gradients import accumulate_gradients
from engines.slug.search import SearchFailed, binary_search, changed_parameters, patched, snapshot
from engines.slug.unlearn import unlearn

torch.set_num_threads(1)


# ----------------------------------------------------------------------------- metrics and the Pareto front


def test_importance_and_alignment_on_hand_set_gradients():
    theta = torch.tensor([[3.0, 4.0]])  # ‖θ‖ = 5
    g_f = torch.tensor([[1.0, 0.0]])
    g_r = torch.tensor([[-1.0, 1.0]])
    assert L.importance(g_f, theta) == pytest.approx(0.2)
    assert L.alignment(g_f, g_r) == pytest.approx(1 / np.sqrt(2))  # |cos| of opposite-signed components
    assert L.alignment(g_f, -g_f) == pytest.approx(1.0)


def _brute_force(points):
    keep = []
    for i, (a, imp) in enumerate(points):
        dominated = False
        for j, (a2, i2) in enumerate(points):
            if j != i and a2 < a and i2 > imp:
                dominated = True
        if not dominated:
            keep.append(i)
    return keep


@pytest.mark.parametrize("seed", range(20))
def test_pareto_front_is_the_non_dominated_set(seed):
    rng = np.random.default_rng(seed)
    pts = [tuple(map(float, p)) for p in rng.random((int(rng.integers(1, 40)), 2)).round(1)]  # ties included
    front = L.pareto_front(pts)
    assert front == _brute_force(pts)
    # every excluded point is strictly dominated by a front point
    for i in set(range(len(pts))) - set(front):
        assert any(pts[j][0] < pts[i][0] and pts[j][1] > pts[i][1] for j in front)


def test_layer_names_groups_and_depths():
    n = "text_model.encoder.layers.2.self_attn.k_proj.weight"
    assert L.group_of(n, True) == [n.replace("k_proj", "q_proj"), n, n.replace("k_proj", "v_proj")]
    assert L.group_of("text_model.encoder.layers.0.mlp.fc2.weight", True) == [
        "text_model.encoder.layers.0.mlp.fc1.weight", "text_model.encoder.layers.0.mlp.fc2.weight"]
    assert L.group_of(n, False) == [n]
    assert L.depth_of(n, 3) == 2 and L.depth_of("text_projection.weight", 3) == 3
    assert L.tower_of("visual_projection.weight") == "vision" and L.tower_of(n) == "text"


# ----------------------------------------------------------------------------- on the micro CLIP


def test_candidates_are_weight_matrices_split_by_tower(zc):
    names = L.candidate_names(zc.model)
    assert names and all(not any(s in n for s in ("bias", "norm", "embedding", "logit_scale")) for n in names)
    assert "text_model.encoder.layers.0.mlp.fc1.weight" in names and "visual_projection.weight" in names
    assert set(L.candidate_names(zc.model, "vision")) | set(L.candidate_names(zc.model, "text")) == set(names)


def test_one_pass_gradients_count_batches_and_take_no_step(zc, concept):
    calls = []
    h = zc.model.vision_model.register_forward_hook(lambda *a: calls.append(1))
    before = snapshot(zc.model)
    try:
        gf = accumulate_gradients(zc, concept.forget_images, concept.forget_captions, "forget", batch_size=16)
        gr = accumulate_gradients(zc, concept.retain_images, concept.retain_captions, "retain", batch_size=16)
    finally:
        h.remove()
    assert (gf.batches, gr.batches) == (3, 3)  # ⌈40/16⌉, ⌈48/16⌉
    assert len(calls) == gf.batches + gr.batches and gf.optimizer_steps == gr.optimizer_steps == 0
    assert not changed_parameters(zc.model, before)
    assert all(p.grad is None for p in zc.model.parameters())
    # the forget gradient is the mean over batches of ∇(1 − cos): descending it must lower L_f
    name = "visual_projection.weight"
    assert gf.grads[name].norm() > 0 and gr.grads[name].norm() > 0


def test_binary_search_brackets_the_smallest_step():
    """Acceptance 7: on a monotone toy, the returned r lies within one bisection interval of the threshold r*."""
    model = torch.nn.Linear(4, 4, bias=False)
    grads = {"weight": torch.ones(4, 4)}
    theta_norm = float(model.weight.detach().norm())
    r_star = 0.37

    def evaluate(names):
        r = float((model.weight.detach() - w0).norm()) / theta_norm
        return dict(forget1=0.0 if r >= r_star else 1.0, forget5=0.0, retain=1.0 - r, utility=1.0)

    w0 = model.weight.detach().clone()
    tr = binary_search(model, grads, ["weight"], evaluate, forget_target=0.0, max_evals=10, init_rel=0.1)
    assert len(tr.rows) <= 10 and tr.reached
    r_best = tr.best_row["rel"]
    rs = sorted(r["rel"] for r in tr.rows)
    below = max(r for r in rs if r < r_star)
    # 0.1 → 0.2 → 0.4 (reached), then bisections of [0.2, 0.4]: r* lies in the last bracket
    assert below < r_star <= r_best and r_best - below <= 0.2 / 2**6
    assert torch.equal(model.weight.detach(), w0)  # every probe reverted


def test_patch_context_is_bit_exact(zc):
    ref = snapshot(zc.model)
    name = "text_model.encoder.layers.0.mlp.fc1.weight"
    g = {name: torch.randn_like(ref[name])}
    with patched(zc.model, g, [name], 0.3):
        assert changed_parameters(zc.model, ref) == [name]
    assert not changed_parameters(zc.model, ref)


def test_unlearn_forgets_with_one_layer_and_keeps_the_stored_weights(tmp_path):
    from safetensors.torch import load_file

    from engines.common import zoo
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    stored = load_file(str(zoo.model_dir("clip") / "model.safetensors"))
    res = unlearn(dict(target="two", n_forget=64, n_retain=64, n_eval=80, baselines=["ga", "random_layer"],
                       n_random=1, ga_max_steps=5)).model_dump()
    assert res["before"]["forget1"] > 0.5  # the micro model calls everything "two"
    assert res["after"]["forget1"] <= 0.05
    assert res["changed"] == [res["chosen"]] and res["revert_exact"]
    pareto = {l["name"] for l in res["layers"] if l["pareto"]}
    assert res["chosen"] in pareto and {t["layer"] for t in res["searched"]} == pareto
    assert all(len(t["rows"]) <= 10 for t in res["searched"])
    assert res["cost"]["optimizer_steps"] == 0 and res["cost"]["forget_batches"] == 1
    patch = load_file(str(resolve(get_settings().artifacts_dir, res["patch_ref"])))
    assert list(patch) == [res["chosen"]]
    assert not torch.equal(patch[res["chosen"]], stored[res["chosen"]])
    assert {b["name"] for b in res["baselines"]} == {"ga", "random_layer"}
    ga = res["baselines"][0]
    assert ga["tensors_changed"] > 1 and ga["state_bytes"] > res["cost"]["state_bytes"]
    again = load_file(str(zoo.model_dir("clip") / "model.safetensors"))
    assert all(torch.equal(again[k], stored[k]) for k in stored)  # originals never overwritten


def test_manual_layer_and_step(zc):
    name = "text_model.encoder.layers.0.mlp.fc2.weight"
    res = unlearn(dict(target="two", layer=name, rel_step=0.5, n_forget=32, n_retain=32, n_eval=60)).model_dump()
    assert res["chosen"] == name and res["changed"] == [name] and res["rel_step"] == pytest.approx(0.5)
    assert len(res["searched"]) == 1 and len(res["searched"][0]["rows"]) == 1


# ----------------------------------------------------------------------------- bad input


def test_too_few_examples_is_named():
    with pytest.raises(TooFewExamples, match="fewer than the minimum of 500"):
        unlearn(dict(target="two", min_forget=500))


def test_unknown_layer_is_named():
    with pytest.raises(L.UnknownLayer, match="does not exist"):
        unlearn(dict(target="two", layer="text_model.encoder.layers.9.mlp.fc1.weight"))
    with pytest.raises(L.UnknownLayer, match="not a weight matrix"):
        unlearn(dict(target="two", layer="text_model.encoder.layers.0.mlp.fc1.bias"))


def test_failed_search_is_named():
    with pytest.raises(SearchFailed, match="did not reach forget accuracy"):
        unlearn(dict(target="two", init_rel_step=1e-6, max_rel_step=1e-5, max_evals=3, n_forget=16, n_retain=16,
                     n_eval=60, tower="text"))


def test_bad_parameters_name_the_field():
    with pytest.raises(ParamError, match="unknown digit target"):
        unlearn(dict(target="eleven"))
    with pytest.raises(ParamError, match="max_evals"):
        unlearn(dict(max_evals=0))


# ----------------------------------------------------------------------------- text-to-image


def test_t2i_updates_one_text_encoder_block():
    from engines.slug.t2i_unlearn import unlearn_t2i

    res = unlearn_t2i(dict(target="striped", probe_samples=2, final_samples=2, n_other=2, steps=3, max_evals=2,
                           n_forget=24, n_retain=24)).model_dump()
    group = res["chosen_names"]
    assert res["chosen"] in group and len(group) in (1, 2, 3)
    block = {n.split(".self_attn.")[0].split(".mlp.")[0] for n in group}
    assert len(block) == 1  # one block: q/k/v together, or fc1+fc2, or one projection
    assert sorted(c.split("encoder.")[-1] for c in res["changed"]) == sorted(n.split("encoder.")[-1] for n in group)
    assert 1 <= len(res["searched"][0]["rows"]) <= 2
    assert set(res["before"]) >= {"target", "others", "per_concept", "cross"} and len(res["others"]) == 2

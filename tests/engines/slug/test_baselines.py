"""SLUG's baselines (issue 17: the spec's FT, GA+FT, SalUn, SSD, alignment-only and all-Pareto-layers peers):
what each one edits, that it stops at the forget target, and their shared cost fields."""
from __future__ import annotations

import pytest
import torch

from engines.slug import baselines as B
from engines.slug.gradients import accumulate_gradients
from engines.slug.layers import candidate_names, score_layers
from engines.slug.params import UnlearnParams
from engines.slug.search import Evaluator, snapshot

torch.set_num_threads(1)
COST = ("grad_examples", "train_s", "evals", "state_bytes", "changed", "forget1", "retain", "utility", "reached")


def _p(**kw):
    return UnlearnParams(target="two", n_forget=40, n_retain=48, n_eval=60, batch_size=16, **kw)


def test_salun_mask_keeps_the_most_salient_half_over_the_whole_model():
    g = {"a": torch.tensor([[0.1, -5.0], [0.2, 0.0]]), "b": torch.tensor([3.0, -0.3, 0.05, 4.0])}
    m = B.salun_mask(g)
    assert m["a"].tolist() == [[0.0, 1.0], [0.0, 0.0]] and m["b"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert sum(int(t.sum()) for t in m.values()) == 4  # half of 8 weights, ranked across both tensors


def test_ssd_dampens_only_forget_specific_weights_and_never_grows_them(zc, concept):
    ref = snapshot(zc.model)
    res = B.ssd(zc, concept, _p(forget_target=0.0))
    assert all(torch.equal(p, ref[n]) for n, p in zc.model.named_parameters())  # ran on a copy
    lams = [r["lam"] for r in res["sweep"]]
    assert lams == sorted(B.SSD_LAMBDAS, reverse=True)[:len(lams)]  # mildest dampening first
    assert 0 < res["params_changed"] < sum(p.numel() for p in zc.model.parameters())
    # the rule itself: selected where I_f > α·I_r, multiplied by min(λ·I_r/I_f, 1) ≤ 1
    names = {n for n, q in zc.model.named_parameters() if q.numel() > 1}
    i_f = accumulate_gradients(zc, concept.forget_images, concept.forget_captions, "forget", 16, names, square=True)
    i_r = accumulate_gradients(zc, concept.retain_images, concept.retain_captions, "retain", 16, names, square=True)
    n_sel = sum(int((i_f.grads[n] > B.SSD_ALPHA * i_r.grads[n]).sum()) for n in names)
    assert res["params_changed"] == n_sel
    assert res["grad_examples"] == 40 + 48 and res["evals"] == len(lams)
    if res["reached"]:
        assert res["forget1"] == 0.0 and all(r["forget1"] > 0.0 for r in res["sweep"][:-1])


def test_square_gradients_are_squares_of_one_batch(zc, concept):
    name = "visual_projection.weight"
    g = accumulate_gradients(zc, concept.forget_images[:16], concept.forget_captions[:16], "forget", 16, {name})
    g2 = accumulate_gradients(zc, concept.forget_images[:16], concept.forget_captions[:16], "forget", 16, {name},
                              square=True)
    assert torch.allclose(g2.grads[name], g.grads[name] ** 2)


@pytest.mark.parametrize("kind", ["ft", "ga_ft", "salun"])
def test_iterative_baselines_train_a_copy_within_the_step_budget(zc, concept, kind):
    ref = snapshot(zc.model)
    res = B.iterative(zc, concept, _p(ga_max_steps=4, ga_lr=1e-3), kind)
    assert all(torch.equal(p, ref[n]) for n, p in zc.model.named_parameters())
    assert res["steps"] <= 4 and set(COST) <= set(res)
    per_step = {"ft": [16], "ga_ft": [16, 16], "salun": [16, 16]}[kind]
    cycles = res["steps"] // len(per_step)
    extra = 40 if kind == "salun" else 0  # SalUn's saliency pass over D_f
    assert res["grad_examples"] == extra + cycles * sum(per_step)
    assert res["evals"] == cycles + 1  # one stopping check per cycle and the final evaluation
    assert res["tensors_changed"] > 1


def test_salun_moves_only_the_masked_weights(zc, concept, monkeypatch):
    seen = {}
    real = B.salun_mask

    def spy(grads, threshold=B.SALUN_THRESHOLD):
        seen["mask"] = real(grads, threshold)
        return seen["mask"]

    monkeypatch.setattr(B, "salun_mask", spy)
    import copy
    import types

    made = []  # the baseline's own copy of the model (only baselines.py sees this stand-in for the copy module)
    monkeypatch.setattr(B, "copy", types.SimpleNamespace(deepcopy=lambda m: made.append(copy.deepcopy(m)) or made[-1]))
    B.iterative(zc, concept, _p(ga_max_steps=2, ga_lr=1e-3), "salun")
    trained = dict(made[0].named_parameters())
    for n, p in zc.model.named_parameters():
        if n in seen["mask"]:
            frozen = seen["mask"][n] == 0
            assert torch.equal(trained[n].detach()[frozen], p.detach()[frozen]), n
    assert any(not torch.equal(trained[n].detach(), p.detach()) for n, p in zc.model.named_parameters())


def test_layer_ablations_pick_their_layers_and_search_like_slug(zc, concept):
    cands = set(candidate_names(zc.model))
    gf = accumulate_gradients(zc, concept.forget_images, concept.forget_captions, "forget", 16, cands)
    gr = accumulate_gradients(zc, concept.retain_images, concept.retain_captions, "retain", 16, cands)
    scores = score_layers(zc.model, gf.grads, gr.grads)
    ev = Evaluator(zc, concept)
    cost = dict(grad_examples=88, grad_s=0.5, state_bytes=1234)
    p = _p(baselines=("alignment_only", "all_pareto", "importance_only"))
    from engines.common.context import LocalContext, Subprogress

    ref = snapshot(zc.model)
    out = {b["name"]: b for b in B.run_baselines(zc, concept, ev, gf.grads, scores, scores[0].name, cost, p,
                                                  Subprogress(LocalContext(), 0, 1))}
    assert all(torch.equal(p_, ref[n]) for n, p_ in zc.model.named_parameters())  # every probe reverted
    assert out["alignment_only"]["layers"] == [min(scores, key=lambda s: s.alignment).name]
    assert out["importance_only"]["layers"] == [max(scores, key=lambda s: s.importance).name]
    pareto = [s.name for s in scores if s.pareto]
    assert out["all_pareto"]["layers"] == pareto and out["all_pareto"]["trace"]["names"] == pareto
    for b in out.values():  # they reuse SLUG's gradients: SLUG's gradient cost, their own evaluations
        assert (b["grad_examples"], b["train_s"], b["state_bytes"]) == (88, 0.5, 1234) and 1 <= b["evals"] <= 10


def test_all_pareto_layers_move_by_the_same_relative_step(zc, concept):
    names = ["text_model.encoder.layers.0.mlp.fc1.weight", "visual_projection.weight"]
    params = dict(zc.model.named_parameters())
    theta0 = {n: params[n].detach().clone() for n in names}
    grads = {n: torch.randn_like(params[n]) * (10.0 if i else 0.01) for i, n in enumerate(names)}
    seen = []

    def evaluate(changed):  # records each layer's relative change while the patch is applied
        seen.append([float((params[n].detach() - theta0[n]).norm() / theta0[n].norm()) for n in changed])
        return dict(forget1=1.0, forget5=1.0, retain=1.0, utility=1.0)

    res = B.layer_baseline(zc, concept, grads, names, _p(max_evals=3), "all", "all_pareto", evaluate)
    rels = [r["rel"] for r in res["trace"]["rows"]]
    assert rels == pytest.approx([0.1, 0.2, 0.4])  # never reached: the step doubles
    for r, changes in zip(rels, seen):
        assert changes == pytest.approx([r, r], rel=1e-4)  # both layers by r of their own norm
    assert all(torch.equal(params[n].detach(), theta0[n]) for n in names)


def test_baseline_names_are_checked():
    from engines.common.params import ParamError, validate

    with pytest.raises(ParamError, match="baselines"):
        validate(UnlearnParams, dict(baselines=["salun", "esd"]))
    ok = validate(UnlearnParams, dict(baselines=["ft", "ga_ft", "salun", "ssd", "alignment_only", "all_pareto"]))
    assert len(ok.baselines) == 6

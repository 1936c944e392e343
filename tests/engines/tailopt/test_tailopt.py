"""TailOPT / Bi²Clip: the BiClip operator, algorithm properties, instrumentation, engines, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.tailopt.algorithms import LocalComm, run_method
from engines.tailopt.biclip import BiClipSGD, bi_clip, bi_clip_reference, clip_fractions
from engines.tailopt.experiment import compare, equivalence, hill_estimator, noise_probe, tuning_grid
from engines.tailopt.params import CompareParams, HyperParams, ProblemParams, max_processes
from engines.tailopt.tasks import make_task


def test_biclip_operator():
    """Check 1: |out| ∈ {0} ∪ [d, u], sign kept; identity for d = 0, u = ∞; sign·d for d = u; = scalar reference."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5000, generator=g, dtype=torch.float64) * 10 ** torch.empty(5000, dtype=torch.float64).uniform_(-4, 3, generator=g)
    x[:50] = 0.0
    d, u = 0.01, 2.0
    y = bi_clip(x, d, u)
    a = y.abs()
    assert ((a == 0) | ((a >= d) & (a <= u))).all()
    assert (a[x == 0] == 0).all()
    assert (torch.sign(y) == torch.sign(x)).all()
    ref = torch.tensor([bi_clip_reference(float(v), d, u) for v in x], dtype=torch.float64)
    assert torch.equal(y, ref)
    assert torch.equal(bi_clip(x, 0.0, math.inf), x)
    assert torch.equal(bi_clip(x, 0.5, 0.5), 0.5 * torch.sign(x))
    # Tensor thresholds broadcast per row (one row per replica).
    X = torch.stack([x[:10], x[:10]])
    Y = bi_clip(X, torch.tensor([[0.0], [0.5]], dtype=torch.float64), torch.tensor([[math.inf], [0.5]], dtype=torch.float64))
    assert torch.equal(Y[0], x[:10]) and torch.equal(Y[1], 0.5 * torch.sign(x[:10]))
    down, up = clip_fractions(torch.tensor([0.0, 0.001, 0.5, 3.0]), d, u)
    assert float(down) == pytest.approx(0.25) and float(up) == pytest.approx(0.25)


def test_biclip_sgd_optimizer():
    w = torch.nn.Parameter(torch.tensor([1.0, 1.0, 1.0, 1.0]))
    opt = BiClipSGD([w], lr=0.1, d=0.01, u=1.0)
    w.grad = torch.tensor([5.0, -0.001, 0.0, 0.3])
    opt.step()
    assert torch.allclose(w.detach(), torch.tensor([0.9, 1.001, 1.0, 0.97]))
    assert len(opt.state) == 0  # no per-parameter state
    with pytest.raises(ValueError, match="d ≤ u"):
        BiClipSGD([w], d=2.0, u=1.0)


def _problem(**kw) -> ProblemParams:
    base = dict(task="linear", noise="cauchy", workers=3, local_steps=4, rounds=6, seed=3)
    base.update(kw)
    return ProblemParams(**base)


def test_memory_comm():
    """Check 2: extra state per parameter and floats sent per round are counted from the real tensors."""
    p = _problem()
    task = make_task(p)
    expect = {"fedavg": (0, 0, 1), "bi2clip": (0, 0, 1), "fedadam": (0, 2, 1), "adam2": (2, 2, 1),
              "local_adam": (2, 0, 3), "diloco": (2, 1, 1), "adagrad_tailopt": (0, 1, 1)}
    for m, (w, s, f) in expect.items():
        tr = run_method(task, m, [HyperParams(lr_in=1e-3, lr_out=0.01)], p.rounds, LocalComm(p.workers), 1)
        assert (tr.state_worker, tr.state_server, tr.floats_per_round) == (w, s, f * task.dim), m
    tr = run_method(task, "bi2clip", [HyperParams(server_momentum=0.9)], 2, LocalComm(p.workers), 1)
    assert tr.state_server == 1  # optional server momentum costs d floats at the server only


def test_bi2clip_with_open_thresholds_is_fedavg():
    """d = 0, u = ∞ inside and out, η = 1: Bi²Clip reduces to FedAvg on the same random streams."""
    p = _problem(noise="student_t", tail_index=2.5)
    task = make_task(p)
    open_ = HyperParams(lr_in=1e-3, lr_out=1.0, auto_thresholds=False, d_in=0, u_in=1e6, d_out=0, u_out=1e6)
    a = run_method(task, "bi2clip", [open_], p.rounds, LocalComm(p.workers), 7)
    b = run_method(task, "fedavg", [open_], p.rounds, LocalComm(p.workers), 7)
    assert torch.allclose(a.x, b.x, rtol=0, atol=1e-12)


def test_fedavg_one_local_step_is_minibatch_sgd():
    p = _problem(local_steps=1, noise="none", rounds=3)
    task = make_task(p)
    lr = 1e-3
    tr = run_method(task, "fedavg", [HyperParams(lr_in=lr)], 3, LocalComm(p.workers), 11)
    from engines.tailopt.tasks import worker_rngs

    rngs = worker_rngs(11, list(range(p.workers)))
    x = task.x0.clone()
    for _ in range(3):
        g = task.grads(x.reshape(1, 1, -1).repeat(1, p.workers, 1), list(range(p.workers)), rngs)[0]
        x = x - lr * g.mean(0)
    assert torch.allclose(tr.x[0], x, atol=1e-12)


def test_replicas_equal_separate_runs():
    """Tuning runs R configurations side by side on common random numbers; each equals its own run."""
    p = _problem()
    task = make_task(p)
    hs = [HyperParams(lr_in=lr, lr_out=lo, u_in=u) for lr, lo, u in [(1e-3, 0.5, 1.0), (3e-3, 1.5, 5.0)]]
    both = run_method(task, "bi2clip", hs, p.rounds, LocalComm(p.workers), 2)
    for r, h in enumerate(hs):
        one = run_method(task, "bi2clip", [h], p.rounds, LocalComm(p.workers), 2)
        assert torch.allclose(both.x[r], one.x[0], atol=1e-12)


def test_cauchy_breaks_fedavg_not_bi2clip():
    """Large-step FedAvg under Cauchy noise is marked diverged (no flat line); Bi²Clip's loss falls."""
    res = compare({"task": "linear", "noise": "cauchy", "workers": 4, "local_steps": 5, "rounds": 30,
                   "methods": ["fedavg", "bi2clip"], "tune": False,
                   "hyper": {"lr_in": 0.05, "lr_out": 1.0, "u_in": 1.0, "u_out": 1.0}})
    fa, bc = res.runs
    assert fa.diverged_at is not None and fa.final_excess is None
    assert fa.excess[-1] is None and fa.excess[0] is not None
    assert bc.diverged_at is None and bc.final_excess < bc.excess[0]
    assert 0 < bc.clip_in[0] <= 1  # heavy tails: some coordinates were clipped down


def test_tuned_compare():
    res = compare({"task": "linear", "noise": "student_t", "tail_index": 1.5, "workers": 2, "local_steps": 2,
                   "rounds": 4, "methods": ["fedavg", "bi2clip"], "budget": 3})
    assert [r.method for r in res.runs] == ["fedavg", "bi2clip"]
    for r in res.runs:
        assert r.validation_score is not None and r.hyper["lr_in"] > 0


def test_digits_task():
    res = compare({"task": "digits", "noise": "student_t", "tail_index": 1.5, "workers": 2, "local_steps": 2,
                   "rounds": 3, "methods": ["bi2clip"], "tune": False})
    acc = res.runs[0].metrics["test_accuracy"]
    assert 0 <= acc <= 1 and res.dim == 650 and res.f_star > 0
    assert len(tuning_grid("bi2clip", make_task(_problem()), 8)) == 8


def test_engine_equivalence_gloo_two_ranks():
    """Check 5: two gloo processes on 127.0.0.1 reproduce the simulator's parameters after 3 rounds."""
    res = equivalence({"task": "linear", "noise": "cauchy", "workers": 2, "local_steps": 3, "rounds": 3,
                       "method": "bi2clip", "hyper": {"lr_in": 0.01, "server_momentum": 0.5}})
    assert res.max_abs_diff <= 1e-6 and res.max_abs_param > 0
    assert res.floats_per_round_gloo == res.floats_per_round_sim


def test_noise_probe_and_hill():
    rng = np.random.default_rng(0)
    assert hill_estimator(rng.pareto(1.5, 200_000) + 1, 2000) == pytest.approx(1.5, rel=0.1)
    cau = noise_probe({"task": "linear", "noise": "cauchy", "workers": 2, "probes": 30})
    gau = noise_probe({"task": "linear", "noise": "gaussian", "workers": 2, "probes": 30})
    assert cau.hill_alpha < 1.6 < gau.hill_alpha
    assert sum(cau.counts) > 0 and len(cau.bins) == len(cau.counts) + 1


@pytest.mark.parametrize(
    "params, needle",
    [({"hyper": {"d_in": 2.0, "u_in": 1.0}}, "d_in"), ({"hyper": {"d_out": 5.0, "u_out": 1.0}}, "d_out"),
     ({"hyper": {"lr_in": 0.0}}, "lr_in"), ({"hyper": {"lr_out": -1.0}}, "lr_out"),
     ({"hyper": {"lr_in": float("nan")}}, "lr_in"), ({"tail_index": float("nan")}, "tail_index"),
     ({"workers": 0}, "workers"), ({"methods": []}, "methods"), ({"methods": ["fedavg", "fedavg"]}, "methods"),
     ({"methods": ["sgd"]}, "methods"), ({"task": "cifar"}, "task"), ({"rounds": 0}, "rounds"),
     ({"engine": "gloo", "workers": max_processes() + 1}, "workers")],
)
def test_bad_params_name_the_field(params, needle):
    with pytest.raises(ParamError) as e:
        validate(CompareParams, params)
    assert needle in str(e.value)


def test_transformer_task_and_local_checkpoint(tmp_path):
    """The tiny GPT-2 task trains; a causal LM saved to a local path loads through the same code."""
    from engines.tailopt.transformer import tiny_gpt2

    res = compare({"task": "transformer", "noise": "none", "workers": 2, "local_steps": 2, "rounds": 2,
                   "methods": ["bi2clip"], "tune": False, "hyper": {"lr_in": 0.5, "u_in": 10.0}})
    r = res.runs[0]
    assert not res.has_optimum and r.diverged_at is None and r.excess[-1] < r.excess[0]
    tiny_gpt2(n_layer=1, n_embd=8, n_head=2).save_pretrained(tmp_path / "lm")
    task = make_task(ProblemParams(task="transformer", workers=1, model=str(tmp_path / "lm")))
    assert task.dim == sum(p.numel() for p in task.model.parameters())

"""Forgetting vs task angle: exact gradients and decomposition, the selectors, the angle phenomena
at micro size, the real-image analogue, bad input."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from engines.cl_angles import images, signal_noise as sn
from engines.cl_angles.network import Net, backward, init_net, logits
from engines.cl_angles.params import SweepParams
from engines.cl_angles.real_data import angle_bins, buffer_selection
from engines.cl_angles.real_tasks import pick_pairs, polarity_angle, polarity_task
from engines.cl_angles.selection import lower_median, prototype_cosines, select
from engines.cl_angles.synthetic import angle_run, angle_sweep
from engines.cl_angles.training import SampleInfo, gradient_descent
from engines.cl_angles.two_tasks import Setting, knee, run
from engines.common.context import JobCancelled, LocalContext
from engines.common.params import ParamError, validate


@pytest.fixture(autouse=True)
def _one_thread():
    """As the entry points do: small tensor programs run faster on one thread on a shared machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_gradients_match_autograd():
    g = torch.Generator().manual_seed(0)
    for bias, scale in ((True, 1.0), (False, 0.25)):
        net = init_net(3, 2, 4, 7, g, bias=bias, scale=scale)
        net = Net(net.W.double() * 4, None if net.b is None else net.b.double(), 3.0, scale)
        X = torch.randn(3, 11, 2, 7, generator=g, dtype=torch.float64)
        y = torch.randint(0, 2, (3, 11), generator=g)
        w = (torch.rand(3, 11, generator=g) > 0.3).double()
        bw = backward(net, X, y, w)
        W = net.W.clone().requires_grad_()
        b = None if net.b is None else net.b.clone().requires_grad_()
        o = logits(Net(W, b, 3.0, scale), X)  # (G, N, R, 2)
        ce = torch.nn.functional.cross_entropy(o.permute(0, 3, 1, 2), y[:, :, None].expand(3, 11, 2),
                                               reduction="none")
        loss = (ce * w[:, :, None]).sum(1) / w.sum(1, keepdim=True)
        loss.sum().backward()
        torch.testing.assert_close(bw.gW, W.grad)
        if bias:
            torch.testing.assert_close(bw.gb, b.grad)
        torch.testing.assert_close(bw.loss, loss.detach(), rtol=1e-6, atol=1e-9)


def test_signal_noise_decomposition_is_exact():
    """W(t) − W(0) = j·γ·μ/‖μ‖² + Σ_i ρ_i·ξ_i/‖ξ_i‖² (Sec. 3), from the tracked coefficient updates."""
    g = torch.Generator().manual_seed(1)
    d, n, m = 20, 12, 3
    mu = sn.signal(0.0, d, 4.0)
    dr = sn.draw((1,), n, d, 1.0, g)
    X = sn.build(dr, mu).double()
    net = init_net(1, 2, m, d, g, bias=True)
    net = Net(net.W.double(), net.b.double(), 3.0, 1.0)
    W0 = net.W.clone()
    info = SampleInfo(torch.zeros(1, n, dtype=torch.long), dr.sig, dr.y.double(), dr.xi.double().pow(2).sum(-1),
                      (16.0, 16.0))
    h = gradient_descent(net, X, dr.y01, 200, 0.05, info=info)
    j = torch.cat([-torch.ones(m), torch.ones(m)]).double()
    gamma = h.gamma[-1][..., 0]  # (1, 2, F)
    xi = dr.xi[0].double()
    recon = W0 + (j * gamma)[..., None] * mu.double() / 16.0 + torch.einsum(
        "grfn,nd->grfd", h.rho, xi / xi.pow(2).sum(-1, keepdim=True))
    torch.testing.assert_close(net.W, recon)
    assert gamma.max() > 0.5  # the signal was learned


def test_signal_angles_and_patches():
    for th in (0.0, 37.0, 90.0, 135.0, 180.0):
        assert sn.task_angle(sn.signal(0.0, 10, 8.0), sn.signal(th, 10, 8.0)) == pytest.approx(th, abs=1e-3)
    g = torch.Generator().manual_seed(2)
    dr = sn.draw((), 50, 10, 1.0, g)
    X = sn.build(dr, sn.signal(90.0, 10, 8.0))
    sig = X[torch.arange(50), dr.sig]
    torch.testing.assert_close(sig[:, 1], 8.0 * dr.y)
    torch.testing.assert_close(X[torch.arange(50), 1 - dr.sig], dr.xi)


def test_selectors_pick_by_cosine_to_prototype():
    """Check 5: mid = the k cosines nearest the median, small = top k, big = bottom k, k per class."""
    rng = np.random.default_rng(0)
    phi = rng.uniform(0.05, 1.4, 15)
    feats, labels, cos = [], [], []
    for c in (0, 1):  # features ±φ around the class direction: the prototype is that direction
        base = np.array([1.0, 0.0, 0.0]) if c == 0 else np.array([0.0, 0.0, 1.0])
        perp = np.array([0.0, 1.0, 0.0])
        for p in phi:
            for s in (1, -1):
                feats.append(np.cos(p) * base + s * np.sin(p) * perp)
                labels.append(c)
                cos.append(np.cos(p))
    feats, labels, cos = np.array(feats), np.array(labels), np.array(cos)
    for c in (0, 1):
        np.testing.assert_allclose(prototype_cosines(feats[labels == c]), cos[labels == c], atol=1e-12)
    k = 6
    for mode in ("mid", "small", "big", "herding", "random"):
        idx = select(feats, labels, k, mode, np.random.default_rng(1))
        assert len(set(idx)) == 2 * k and all((labels[idx] == c).sum() == k for c in (0, 1))
    for c in (0, 1):
        rows = np.flatnonzero(labels == c)
        cc = cos[rows]
        pick = lambda mode: set(np.intersect1d(select(feats, labels, k, mode), rows))  # noqa: E731
        assert pick("small") == set(rows[np.argsort(-cc)[:k]])
        assert pick("big") == set(rows[np.argsort(cc)[:k]])
        med = lower_median(cc)
        dist = np.abs(cc - med)
        chosen = np.array(sorted(pick("mid")))
        assert dist[np.searchsorted(rows, chosen)].max() <= np.sort(dist)[k - 1] + 1e-12
    with pytest.raises(ValueError, match="unknown selection mode"):
        select(feats, labels, 2, "median")


def test_angle_phenomena_micro():
    """Checks 1-4 at micro size: benign at small angles, harmful at 180°, knee beyond 100°, replay later."""
    s = Setting(epochs1=1000, epochs2=600)
    angles = [0, 60, 100, 120, 130, 140, 150, 160, 170, 180]
    r = run(s, angles, [0], ("cl", "replay", "ewc"))
    cl, rp, ewc = (r.forgetting[0, :, i] for i in range(3))
    assert cl[:3].max() < 0.05 and cl[-1] > 0.9
    assert knee(angles, cl) > 100
    assert knee(angles, rp) >= knee(angles, cl) + 10
    assert all(p <= c + 0.02 for a, c, p in zip(angles, cl, rp) if a >= 120)
    assert ewc[angles.index(150)] < cl[angles.index(150)]
    assert r.task1_error_before[0] < 0.01 and r.task2_error[0, :, 0].max() < 0.05


def test_angle_run_result_and_progress():
    seen = []
    ctx = LocalContext(on_progress=lambda f, msg, prev: seen.append(f))
    res = angle_run({"angle": 170, "epochs1": 400, "epochs2": 300, "variants": ["cl", "replay"],
                     "eval_points": 10}, ctx)
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert res.epochs[0] == 0 and res.epochs[-1] == 700 and res.epochs == sorted(res.epochs)
    for v in ("cl", "replay"):
        assert len(res.task1_error[v]) == len(res.epochs) == len(res.traces[v].gamma1[0])
        assert len(res.traces[v].gamma1) == 20 and len(res.traces[v].xy_final) == 20
    assert res.forgetting["cl"] > 0.9 and res.regime == "harmful"
    assert res.forgetting["replay"] < res.forgetting["cl"]
    assert len(res.buffer) == 10
    tr = res.traces["cl"]
    assert tr.mu1_group and tr.mu2_group
    # the μ₁-learners learned μ₁ in task 1: their γ₁ dominates before task 2
    i1 = res.epochs.index(400)
    assert min(tr.gamma1[f][i1] for f in tr.mu1_group) > 0.3


def test_sweep_micro_and_cancel():
    res = angle_sweep({"angle_step": 90, "seeds": 1, "epochs1": 300, "epochs2": 200, "variants": ["cl"]})
    assert res.angles == [0.0, 90.0, 180.0] and res.curves[0].mean[-1] > 0.9 and res.curves[0].mean[0] < 0.05
    cancel = threading.Event()
    ctx = LocalContext(on_progress=lambda f, msg, prev: cancel.set() if f > 0.05 else None, cancel_event=cancel)
    with pytest.raises(JobCancelled):
        angle_sweep({"angle_step": 45, "seeds": 1, "epochs1": 2000, "epochs2": 200, "variants": ["cl"]}, ctx)


@pytest.mark.parametrize(
    "entry, params, field",
    [(angle_run, {"angle": 200}, "angle"), (angle_run, {"buffer_frac": 0.5}, "buffer_frac"),
     (angle_run, {"variants": []}, "variants"), (angle_run, {"selector": "median"}, "selector"),
     (angle_run, {"epochs2": 0}, "epochs2"), (angle_run, {"angel": 10}, "angel"),
     (angle_run, {"variants": ["cl", "cl"]}, "variants"), (angle_run, {"ewc_lambda": -1}, "ewc_lambda"),
     (angle_sweep, {"angle_min": 120, "angle_max": 60}, "angle_max"),
     (buffer_selection, {"task1": [4, 5], "task2": [5, 9]}, "four different classes"),
     (buffer_selection, {"task1": [4, 12]}, "0…9"), (angle_bins, {"targets": [30, 190]}, "[0, 180]"),
     (angle_bins, {"buffer_sizes": [-1]}, "buffer size")],
)
def test_bad_params_name_the_problem(entry, params, field):
    with pytest.raises(ParamError) as e:
        entry(params)
    assert field in str(e.value)


def test_sweep_over_budget_is_refused_with_estimate():
    with pytest.raises(ParamError, match=r"about \d+ min on 2 CPU cores, over the 30 min budget"):
        validate(SweepParams, {"angle_step": 1, "seeds": 10, "epochs2": 10000})
    assert SweepParams(angle_step=1, seeds=3, epochs1=3000, epochs2=3000).estimated_seconds() < 30 * 60


def test_polarity_tasks_and_angles():
    im = images.load("digits")
    t = polarity_task(im, 3, -1, np.random.default_rng(0), 0.5)
    # label 1 = inverted image for polarity −1: those images are ≤ 0
    assert (t.Xtr[t.ytr == 1] <= 0).all() and (t.Xtr[t.ytr == 0] >= 0).all()
    assert 0.3 < t.ytr.mean() < 0.7
    assert polarity_angle(im, 3, 1, 3, -1) == pytest.approx(180.0, abs=0.05)
    pairs = pick_pairs(im, [30.0, 155.0])
    assert abs(pairs[0][0] - 30) < 2 and abs(pairs[1][0] - 155) < 2 and pairs[1][4] == -1


def test_real_images_micro():
    b = angle_bins({"targets": [30, 155], "buffer_sizes": [0], "seeds": 1, "epochs": 150})
    low, high = sorted(b.bins, key=lambda x: x.angle)
    assert low.mean_forgetting < 0.05 and high.mean_forgetting > 0.5 and b.increasing
    s = buffer_selection({"seeds": 1, "epochs": 150, "buffer_frac": 0.05, "selectors": ["mid", "big"],
                          "feature_space": "pixels"})
    k = s.k_per_class
    assert k == round(0.05 * s.n_task1 / 2) and len(s.cosines) == s.n_task1 == len(s.images)
    lab = np.array(s.labels)
    cos = np.array(s.cosines)
    for o in s.outcomes:
        assert len(o.picked) == 2 * k and all((lab[o.picked] == c).sum() == k for c in (0, 1))
    big = next(o for o in s.outcomes if o.selector == "big")
    assert max(big.picked_cos) <= np.median(cos)  # outliers
    assert 0 <= s.no_replay <= 1


def test_fashion_missing_falls_back_to_digits(monkeypatch, tmp_path):
    monkeypatch.setattr(images, "FASHION_DIR", tmp_path)
    images.load.cache_clear()
    try:
        with pytest.raises(images.DatasetMissing, match="dataset-fashion-mnist"):
            images.load("fashion", 10)
        b = angle_bins({"dataset": "fashion", "targets": [30, 155], "buffer_sizes": [0], "seeds": 1, "epochs": 20})
        assert b.dataset == "digits" and "not installed" in b.note
    finally:
        images.load.cache_clear()

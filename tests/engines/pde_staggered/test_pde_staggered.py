"""Invariants of the C-grid solver and the staggered surrogates (spec section 8), bad input, NaN safety."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError
from engines.pde_staggered import experiment as E
from engines.pde_staggered import groups as G
from engines.pde_staggered import ics, metrics, plots, swe
from engines.pde_staggered.models import VARIANTS, build, n_params

torch.set_num_threads(1)
SCALES = dict(zeta=0.05, vel=0.05, dzeta=0.01, dvel=0.01)


def _random_state(n=16, batch=2, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(batch, n, n)) * 0.1
    u = rng.normal(size=(batch, n, n + 1)) * 0.1
    v = rng.normal(size=(batch, n + 1, n)) * 0.1
    u[..., [0, -1]] = 0
    v[..., [0, -1], :] = 0
    return z, u, v


def test_group_tables_and_actions():
    mult, inv = G.tables()
    assert sorted(mult[3]) == list(range(8)) and all(mult[a, inv[a]] == 0 for a in range(8))
    z, u, v = _random_state()
    for a, g in enumerate(G.ELEMENTS):
        # the action is a homomorphism: g·(h·w) = (g∘h)·w, and q_to_faces inverts faces_to_q
        for b, h in enumerate(G.ELEMENTS):
            lhs = G.act_state(*G.act_state(z, u, v, h), g)
            rhs = G.act_state(z, u, v, G.ELEMENTS[mult[a, b]])
            assert all(np.array_equal(x, y) for x, y in zip(lhs, rhs))
    uu, vv = G.q_to_faces(G.faces_to_q(u, v))
    assert np.array_equal(uu, u) and np.array_equal(vv, v)


def test_solver_equivariance():
    cfg = swe.SWEConfig(n=32)
    z, u, v = ics.batch_random(3, 2, 32)
    ref = swe.rollout(cfg, z, u, v, 25)
    for g in G.ELEMENTS:
        out = swe.rollout(cfg, *G.act_state(z, u, v, g), 25)
        assert max(np.abs(a - b).max() for a, b in zip(out, G.act_state(*ref, g))) < 1e-10, g


def test_solver_mass_and_walls():
    cfg = swe.SWEConfig(n=32)
    z, u, v = ics.batch_random(1, 2, 32)
    zs, us, vs = swe.rollout(cfg, z, u, v, 125)  # 500 solver steps
    m = zs.sum((-2, -1))
    assert np.abs(m - m[:, :1]).max() < 1e-12
    assert metrics.wall_velocity(us, vs) == 0.0
    assert zs.std() > 1e-3 and np.abs(us).max() > 1e-3  # something actually moves


@pytest.mark.parametrize("variant", VARIANTS)
def test_layer_equivariance(variant):
    torch.manual_seed(0)
    model = build(variant, 2, SCALES, zero_head=False).eval()
    errs = metrics.equivariance_errors(model, *_random_state())
    assert errs[0] == 0.0
    if variant.startswith("p4m"):
        assert max(errs) < 1e-5, errs
    else:
        assert min(errs[1:]) > 1e-2, errs


def test_param_matching():
    counts = {v: n_params(build(v, 4, SCALES)) for v in VARIANTS}
    ref = counts["p4m_M"]
    assert all(abs(c - ref) / ref <= 0.10 for c in counts.values()), counts


def test_hard_constraints_on_untrained_models():
    z, u, v = _random_state(batch=3)
    for variant in VARIANTS:
        torch.manual_seed(1)
        model = build(variant, 2, SCALES, zero_head=False).eval()
        with torch.no_grad():
            zn, un, vn = model(*(torch.as_tensor(a, dtype=torch.float32) for a in (z, u, v)))
        dm = np.abs(zn.double().sum((-2, -1)).numpy() - z.sum((-2, -1))) / np.abs(z).sum((-2, -1))
        if variant.endswith("_M"):
            assert dm.max() < 1e-6 and metrics.wall_velocity(un.numpy(), vn.numpy()) == 0.0
        else:
            assert dm.max() > 1e-4 and metrics.wall_velocity(un.numpy(), vn.numpy()) > 0


@pytest.fixture(scope="module")
def roll():
    return E.rollout({"ic": "random", "seed": 3, "horizon": 30}).model_dump()


def test_rollout_with_trained_models(roll):
    assert roll["variants"] == list(VARIANTS)
    for v in ("p1_M", "p4m_M"):
        assert max(roll["mass"][v]) < 1e-5, (v, max(roll["mass"][v]))
        assert roll["wall_velocity"][v] == 0.0
    assert max(roll["mass"]["solver"]) < 1e-12
    assert all(np.isfinite(roll["nrmse"][v]).all() for v in VARIANTS)
    assert all(0 <= roll["corr_time"][v] <= 30 for v in VARIANTS)
    assert all(c[0] == pytest.approx(1.0) for c in roll["corr"].values())


def test_rotate_the_input():
    r = E.rotate({"ic": "l_shape", "element": 1, "steps": 3, "variants": ["p1", "p4m_M"]})
    assert r.errors["p4m_M"] < 1e-4 and max(r.one_step["p4m_M"]) < 1e-5
    assert r.errors["p1"] > 1e-2


def test_bad_input_messages():
    with pytest.raises(ValueError, match="CFL"):
        E.rollout({"dt": 2.0, "horizon": 5})
    with pytest.raises(ValueError, match="negative depth"):
        E.rollout({"ic": "bump", "amplitude": -1.2, "horizon": 5})
    with pytest.raises(ValueError, match="empty"):
        E.rollout({"ic": "drawn", "mask": [[0, 0], [0, 0]], "horizon": 5})
    with pytest.raises(ParamError, match="horizon"):
        E.rollout({"horizon": 500})
    with pytest.raises(ParamError, match="needs a drawn mask"):
        E.rollout({"ic": "drawn"})
    with pytest.raises(ParamError, match="divide"):
        E.rollout({"dt": 0.3})
    with pytest.raises(swe.SolverError, match="wall-normal"):
        z, u, v = swe.zeros(1, 8)
        u[..., 0] = 1.0
        swe.check_state(swe.SWEConfig(n=8), z, u, v)


def test_drawn_ic_and_vortex_run():
    mask = np.zeros((40, 40))
    mask[10:20, 12:30] = 1
    r = E.rollout({"ic": "drawn", "mask": mask.tolist(), "horizon": 3, "variants": ["p4m_M"]})
    assert r.final_mass_drift["p4m_M"] < 1e-5
    r = E.rollout({"ic": "vortex", "horizon": 3, "variants": ["p1"]})
    assert np.isfinite(r.nrmse["p1"]).all()


class _Exploding(torch.nn.Module):
    def forward(self, z, u, v):
        return z * 1e4, u, v


def test_divergence_is_frozen_and_images_have_no_nan():
    z, u, v = _random_state(batch=2)
    zs, us, vs, div = metrics.surrogate_rollout(_Exploding(), z, u, v, 5)
    assert np.isfinite(zs).all() and (div >= 1).all()
    fields = np.stack([zs[0], zs[0] * np.nan])
    gif = plots.animation_gif(fields, ["solver", "p1"])
    assert gif[:3] == b"GIF"
    fig = plots.frame_figure(fields, ["solver", "p1"], 2)
    assert fig is not None


def test_training_noise_keeps_mass_and_walls_and_has_the_stated_scale():
    """Noise injection (``training.corrupt``): ζ noise has zero mean over the basin and the wall faces get none,
    so a /M model can still reach the clean target; its size is σ × the one-step change's scale; σ = 0 keeps the
    released cache key (a new σ is a new model)."""
    from engines.pde_staggered import training as TR
    from engines.pde_staggered.config import sizes

    z, u, v = (torch.as_tensor(a) for a in _random_state(n=32, batch=64))
    model = build("p4m_M", 2, SCALES)
    torch.manual_seed(0)
    nz, nu, nv = TR.corrupt((z, u, v), 0.5, model)
    dz, du, dv = nz - z, nu - u, nv - v
    assert dz.sum((-2, -1)).abs().max() < 1e-9
    assert du[..., [0, -1]].abs().max() == 0 and dv[..., [0, -1], :].abs().max() == 0
    assert abs(float(dz.std()) / (0.5 * SCALES["dzeta"]) - 1) < 0.05
    assert abs(float(du[..., 1:-1].std()) / (0.5 * SCALES["dvel"]) - 1) < 0.05
    from dataclasses import asdict, replace

    from engines.pde_staggered.config import key

    sz = replace(sizes("swe"), noise=0.0)
    legacy = {k: v for k, v in asdict(sz).items() if k != "noise"}
    assert key(sz, ["x"]) == key(legacy, ["x"])  # the cache keys of models trained before noise existed
    assert TR.model_path("p4m_M", replace(sz, noise=0.3), 0, False, False) != TR.model_path("p4m_M", sz, 0, False, False)
    iu, iv = TR.corrupt((u[..., :-1], v[..., :-1, :]), 0.5, model, problem="ins")
    assert abs(float((iu - u[..., :-1]).std()) / (0.5 * SCALES["dvel"]) - 1) < 0.05

"""Decaying turbulence on the periodic MAC grid: solver invariants, stream-function (M) output, momentum,
p4m equivariance with the pseudo-scalar ψ, and the entry points in the test profile."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError
from engines.pde_staggered import experiment as E
from engines.pde_staggered import groups as G
from engines.pde_staggered import ins, metrics
from engines.pde_staggered.models import VARIANTS, build

torch.set_num_threads(1)
SCALES = dict(zeta=1.0, dzeta=1.0, vel=1.0, dvel=0.1)


def _ic(n=16, batch=2, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([ins.random_vorticity(rng, n) for _ in range(batch)])


def test_solver_equivariant_divergence_free_momentum_free():
    cfg = ins.INSConfig(n=16)
    w = _ic()
    us, vs = ins.rollout(cfg, w, 8)
    assert np.abs(ins.divergence(us, vs)).max() < 1e-12
    assert np.abs(us.mean((-2, -1))).max() < 1e-12 and np.abs(vs.mean((-2, -1))).max() < 1e-12
    for g in G.ELEMENTS:
        wg = np.ascontiguousarray(G.spatial(w, g)) * (-1.0 if g[0] else 1.0)  # ω is a pseudo-scalar
        a = ins.rollout(cfg, wg, 8)
        b = ins.act(us, vs, g)
        assert max(np.abs(x - y).max() for x, y in zip(a, b)) < 1e-10, g


@pytest.mark.parametrize("variant", VARIANTS)
def test_layers_on_the_periodic_grid(variant):
    torch.manual_seed(0)
    model = build(variant, 2, SCALES, zero_head=False, problem="ins").eval()
    u, v = ins.corner_velocity(_ic())
    errs = metrics.equivariance_errors_generic(model, (u, v), lambda s, g: ins.act(*s, g))
    if variant.startswith("p4m"):
        assert max(errs) < 1e-5, errs
    else:
        assert min(errs[1:]) > 1e-2, errs
    x = tuple(torch.as_tensor(a, dtype=torch.float32) for a in (u, v))
    with torch.no_grad():
        un, vn = model(*x)
    du, dv = (un - x[0]).double(), (vn - x[1]).double()
    if variant.endswith("_M"):  # stream-function output: exactly divergence-free, zero mean update (ρu)
        assert float(ins.divergence(un, vn).abs().max()) < 1e-6
        assert abs(float(du.mean())) < 1e-7 and abs(float(dv.mean())) < 1e-7
    else:
        assert float(ins.divergence(un, vn).abs().max()) > 1e-3


def test_turbulence_entry_points():
    r = E.rollout({"problem": "ins", "horizon": 8})
    assert r.problem == "ins" and r.conserved == "momentum"
    for v in ("p1_M", "p4m_M"):
        assert max(r.mass[v]) < 1e-7 and r.max_divergence[v] < 1e-6
    assert np.isfinite(r.nrmse["p4m"]).all()
    rot = E.rotate({"problem": "ins", "element": 6, "steps": 2, "variants": ["p1", "p4m"]})
    assert rot.errors["p4m"] < 1e-4 and rot.errors["p1"] > 1e-2
    with pytest.raises(ParamError, match="turbulence problem supports"):
        E.rollout({"problem": "ins", "ic": "l_shape"})
    with pytest.raises(ValueError, match="CFL"):
        E.rollout({"problem": "ins", "ic": "vortex", "amplitude": 2.0, "horizon": 2})

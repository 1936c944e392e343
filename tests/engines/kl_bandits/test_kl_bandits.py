"""KL-regularised bandits: closed forms, the spec's acceptance checks, determinism, bad input."""
from __future__ import annotations

import numpy as np
import pytest

from engines.common.params import ParamError
from engines.kl_bandits import envs, gibbs
from engines.kl_bandits.algorithms import simulate
from engines.kl_bandits.experiment import eta_sweep, log_fit, loglog_slope, regret_curves
from engines.kl_bandits.params import RegretCurvesParams


def test_gibbs_optimal():
    """Check 1: J(π*) is the maximum, and J(π*) − J(π) = η⁻¹ KL(π ‖ π*) for every π."""
    rng = np.random.default_rng(3)
    for eta in (0.5, 5.0, 50.0):
        R = rng.random(9)
        pi0 = rng.dirichlet(np.ones(9))
        pis = rng.dirichlet(np.ones(9) * 0.3, size=10_000)
        J = gibbs.objective(pis, R, pi0, eta)
        star = gibbs.gibbs_policy(R, pi0, eta)
        Jstar = gibbs.optimal_value(R, pi0, eta)
        assert gibbs.objective(star, R, pi0, eta) == pytest.approx(Jstar, abs=1e-12)
        assert J.max() <= Jstar + 1e-12
        np.testing.assert_allclose(Jstar - J, gibbs.kl(pis, star) / eta, atol=1e-9)


def test_gibbs_policy_closed_form():
    R = np.array([0.1, 0.5, 0.9])
    pi0 = np.array([0.5, 0.25, 0.25])
    expected = pi0 * np.exp(2.0 * R)
    np.testing.assert_allclose(gibbs.gibbs_policy(R, pi0, 2.0), expected / expected.sum(), rtol=1e-12)
    # η → 0 returns π₀; large η concentrates on the best arm.
    np.testing.assert_allclose(gibbs.gibbs_policy(R, pi0, 1e-9), pi0, atol=1e-8)
    assert gibbs.gibbs_policy(R, pi0, 500.0)[2] > 0.999


def test_regret_nonnegative_and_seeded():
    p = RegretCurvesParams(horizon=800, seeds=2)
    bandits = [envs.make(p, 800, s) for s in range(2)]
    a = simulate(bandits, ["kl_ucb", "kl_greedy", "ucb"], 5.0, 1.0, 1.0, 800, seed=4)
    b = simulate(bandits, ["kl_ucb", "kl_greedy", "ucb"], 5.0, 1.0, 1.0, 800, seed=4)
    c = simulate(bandits, ["kl_ucb", "kl_greedy", "ucb"], 5.0, 1.0, 1.0, 800, seed=5)
    assert (a.regret >= -1e-7).all()
    np.testing.assert_array_equal(a.regret, b.regret)
    assert not np.array_equal(a.regret, c.regret)


def test_log_fit():
    """Check 2: env A, η = 5, 3 seeds: a + b·log T with R² ≥ 0.95 and log-log slope < 0.3."""
    res = regret_curves({"env": "linear", "eta": 5.0, "horizon": 20000, "seeds": 3, "methods": ["kl_ucb"]})
    c = res.curves[0]
    T = np.array([1000, 2000, 5000, 10000, 20000])
    m = np.array([c.mean[c.horizons.index(t)] for t in T])
    assert log_fit(T.astype(float), m).r2 >= 0.95
    assert loglog_slope(T.astype(float), m) < 0.3


def test_sqrt_vs_log():
    """Check 3: env B, UCB's 16× growth ratio ≥ 3 while KL-UCB's ≤ 2.5."""
    res = regret_curves({"env": "hard", "arms": 10, "eta": 5.0, "horizon": 16000, "seeds": 3,
                         "methods": ["kl_ucb", "ucb"]})
    by = {c.method: c for c in res.curves}
    assert by["kl_ucb"].horizons == [1000, 2000, 4000, 8000, 16000]
    assert by["ucb"].growth_16x >= 3
    assert by["kl_ucb"].growth_16x <= 2.5


def test_eta_monotone():
    """Check 4: final regret at η ∈ {2, 5, 20} is increasing."""
    r = eta_sweep({"etas": [20.0, 2.0, 5.0], "horizon": 3000, "seeds": 3}).final_regret["kl_ucb"]
    assert r[0] < r[1] < r[2]


def test_bonus_shrinks():
    """Check 5: the mean bonus on played actions decays like 1/√t."""
    res = regret_curves({"env": "linear", "horizon": 10000, "seeds": 2, "methods": ["kl_ucb"]})
    assert -0.7 <= res.bonus.loglog_slope <= -0.3
    assert res.bonus.mean_bonus[0] > 3 * res.bonus.mean_bonus[-1]


def test_vw_peer_runs():
    """Check 6: the Vowpal Wabbit softmax peer runs on the same environment; its KL regret is finite."""
    res = regret_curves({"env": "linear", "horizon": 300, "seeds": 1, "contexts": 5, "arms": 5,
                         "methods": ["vw_softmax"]})
    c = res.curves[0]
    assert c.method == "vw_softmax" and np.isfinite(c.mean[-1]) and c.mean[-1] > 0


def test_policy_converges_to_gibbs():
    res = regret_curves({"env": "linear", "horizon": 5000, "seeds": 2, "methods": ["kl_ucb"]})
    kl = res.snapshot.kl_to_optimal["kl_ucb"]
    assert kl[-1] < 0.1 * kl[0]


def test_hard_gap_depends_on_horizon():
    assert envs.hard_gap(10, 1000) == pytest.approx(0.1)
    p = RegretCurvesParams(env="hard", arms=10)
    b = envs.make(p, 4000, 0)
    assert sorted(b.mean_reward[0])[-1] - sorted(b.mean_reward[0])[-2] == pytest.approx(0.05)


@pytest.mark.parametrize(
    "params, field",
    [({"eta": 0.0}, "eta"), ({"horizon": 10}, "horizon"), ({"methods": []}, "methods"),
     ({"methods": ["kl_ucb", "kl_ucb"]}, "methods"), ({"env": "cubic"}, "env"), ({"etta": 1}, "etta"),
     ({"noise": -1}, "noise")],
)
def test_bad_params_name_the_field(params, field):
    with pytest.raises(ParamError) as e:
        regret_curves(params)
    assert field in str(e.value)


def test_vw_peer_refuses_peaked_reference():
    with pytest.raises(ValueError, match="uniform reference"):
        regret_curves({"horizon": 200, "seeds": 1, "reference": "peaked", "methods": ["vw_softmax"]})

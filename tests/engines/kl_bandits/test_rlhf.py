"""The LLM instantiation: realisable reward, Gibbs resampling over candidates, ensemble optimism."""
from __future__ import annotations

import numpy as np
import pytest

from engines.common.params import ParamError
from engines.kl_bandits import rlhf


def test_reward_model_is_linear_in_its_features():
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((40, 16))
    pref = rng.standard_normal(16)
    rm = rlhf.RewardModel(calib, pref, dim=4)
    r = rm.true_reward(calib)
    assert r.min() >= 0 and r.max() <= 1
    assert np.isclose(np.abs(r - 0.5).max(), 0.5)  # calibration responses span [0, 1]
    phi = rm.features(calib)
    assert phi.shape == (40, 5) and np.allclose(phi[:, -1], 1.0)
    w = np.concatenate([rm.scale * rm.theta, [0.5]])
    np.testing.assert_allclose(np.clip(phi @ w, 0, 1), r, atol=1e-12)


def test_candidate_regret_is_kl_to_the_gibbs_weights():
    r = np.array([0.1, 0.5, 0.9, 0.3])
    eta = 5.0
    star = rlhf.gibbs_weights(r, eta)
    assert rlhf.candidate_regret(star, r, eta) == pytest.approx(0.0, abs=1e-12)
    uniform = np.full(4, 0.25)
    reg = rlhf.candidate_regret(uniform, r, eta)
    # J(w*) − J(uniform) on the candidate set, from the definitions.
    J = lambda w: (w * r).sum() - (w * np.log(w * 4)).sum() / eta  # noqa: E731
    assert reg == pytest.approx(J(star) - J(uniform), rel=1e-9) and reg > 0


def test_ensemble_learns_and_its_spread_shrinks():
    rng = np.random.default_rng(1)
    w_true = rng.standard_normal(5)
    ens = rlhf.RewardEnsemble(5, 6, 1.0, np.random.default_rng(2))
    X = rng.standard_normal((200, 5))
    probe = rng.standard_normal((20, 5))
    spreads = []
    for i, x in enumerate(X):
        ens.add(x, float(x @ w_true + 0.01 * rng.standard_normal()))
        if i in (5, 199):
            spreads.append(ens.predict(probe)[1].mean())
    mean, _ = ens.predict(probe)
    np.testing.assert_allclose(mean, probe @ w_true, atol=0.05)
    assert spreads[1] < 0.3 * spreads[0]


def test_loop_with_a_discrete_reference_policy(monkeypatch):
    """π₀ uniform over a fixed pool of answers: learning beats π₀, regret is non-negative and seeded."""
    pool = ["What a wonderful, sunny and happy day!", "I am so glad and cheerful today.",
            "The report is due on Monday.", "Tax forms must be filed in triplicate.",
            "Bright smiles and warm sunshine everywhere.", "The meeting was moved to room 4."]

    def sample(model, tok, prompt, n, max_new_tokens, temperature, seed, cancelled=None):
        r = np.random.default_rng(seed)
        return [pool[i] for i in r.integers(len(pool), size=n)]

    monkeypatch.setattr(rlhf, "load_policy", lambda model_id="": (None, None))
    monkeypatch.setattr(rlhf, "sample_candidates", sample)
    params = {"rounds": 25, "candidates": 6, "eta": 20.0, "feature_dim": 3, "prompts": ["Say something."]}
    a = rlhf.rlhf_loop(params)
    b = rlhf.rlhf_loop(params)
    assert a.cumulative_regret == b.cumulative_regret
    for cum in a.cumulative_regret.values():
        assert all(np.diff([0.0] + cum) >= -1e-12)
    assert a.cumulative_regret["kl_ucb"][-1] < 0.8 * a.cumulative_regret["reference"][-1]


def test_bad_rlhf_params_name_the_field():
    with pytest.raises(ParamError, match="prompts"):
        rlhf.rlhf_loop({"prompts": ["   "]})
    with pytest.raises(ParamError, match="candidates"):
        rlhf.rlhf_loop({"candidates": 1})

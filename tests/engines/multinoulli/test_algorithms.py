"""Objectives, instances and algorithms: counted oracle, bad input, feasibility, ratios, query counts."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from engines.common.params import ParamError, validate
from engines.multinoulli import baselines as bl
from engines.multinoulli.experiment import compare, instance_for, sweep
from engines.multinoulli.objectives import (AOptimalDesign, BlackBox, Coverage, LogDet, ObjectiveError,
                                            Partition, PartitionError, check_objective)
from engines.multinoulli.params import CompareParams, InstanceParams
from engines.multinoulli.scg import multinoulli_scg


def _objectives(rng):
    F = rng.normal(size=(12, 4))
    L = np.exp(-((F[:, None] - F[None]) ** 2).sum(-1) / 4)
    A = rng.random((12, 30)) < 0.2
    return [LogDet(L), AOptimalDesign(rng.normal(size=(12, 5)), 0.5, 1.3), Coverage(A, rng.random(30))]


def test_vectorised_oracle_matches_plain_evaluation():
    rng = np.random.default_rng(0)
    for obj in _objectives(rng):
        S = [1, 5, 9]
        before = obj.evals
        fS, vals = obj.value_and_plus(S, np.arange(12))
        assert obj.evals - before == 13  # f(S) plus one per candidate
        for v in range(12):
            assert vals[v] == pytest.approx(obj._value(np.array(sorted(set(S) | {v}))), rel=1e-9, abs=1e-9)
        assert fS == pytest.approx(obj._value(np.array(S)))
        sets = np.array([[0, 3, 7], [2, 4, 11], [1, 5, 9]])
        np.testing.assert_allclose(obj.values_batch(sets), [obj._value(np.sort(s)) for s in sets], rtol=1e-9)
        check_objective(obj, Partition([range(0, 6), range(6, 12)], [2, 3]))  # all three are monotone


def test_logdet_matches_submodlib():
    """Cross-check of the DPP objective against SubModLib's LogDeterminantFunction (log det(L_S + λI))."""
    sub = pytest.importorskip("submodlib")
    rng = np.random.default_rng(1)
    F = rng.normal(size=(20, 5))
    L = np.exp(-((F[:, None] - F[None]) ** 2).sum(-1) / 5)
    ref = sub.LogDeterminantFunction(n=20, mode="dense", lambdaVal=1.0, sijs=L)
    for S in ([0], [2, 7, 11], list(range(0, 20, 3))):
        assert LogDet(L).value(S) == pytest.approx(ref.evaluate(set(S)), rel=1e-6)


def test_bad_objectives_and_partitions_are_named():
    part = Partition([[0, 1, 2], [3, 4]], [1, 2])
    with pytest.raises(ObjectiveError, match="not monotone"):
        check_objective(BlackBox(lambda S: -len(S), 5, "shrinking"), part)
    with pytest.raises(ObjectiveError, match="finite"):
        check_objective(BlackBox(lambda S: float("nan") if len(S) > 1 else 0.0, 5, "nan"), part)
    with pytest.raises(PartitionError, match="larger than block 2, which has only 2"):
        Partition([[0, 1, 2], [3, 4]], [1, 3])
    with pytest.raises(PartitionError, match="empty"):
        Partition([[0, 1], []], [1, 1])
    with pytest.raises(PartitionError, match="overlap"):
        Partition([[0, 1], [1, 2]], [1, 1])
    # The counter is untouched by the check.
    obj = _objectives(np.random.default_rng(2))[0]
    check_objective(obj, Partition([range(12)], [3]))
    assert obj.evals == 0


def test_bad_parameters_name_the_field():
    with pytest.raises(ParamError, match="budget B = 5 is larger than a segment"):
        validate(CompareParams, {"task": "video", "clip": "carphone", "blocks": 40, "budget": 5})
    with pytest.raises(ParamError, match="T"):
        validate(CompareParams, {"T": 1})
    with pytest.raises(ParamError, match="methods"):
        validate(CompareParams, {"methods": []})
    with pytest.raises(ParamError, match="upload"):
        validate(CompareParams, {"clip": "upload"})
    with pytest.raises(ParamError, match="unknown parameter"):
        validate(CompareParams, {"gamma": 0.5})
    # Community sizes are only known once the graph is split: still a clear error before any algorithm runs.
    with pytest.raises(ValueError, match="larger than community"):
        compare({"task": "coverage", "graph": "karate", "blocks": 8, "budget": 6, "methods": ["greedy"]})
    with pytest.raises(ValueError, match="brute force would enumerate"):
        compare({"task": "design", "methods": ["brute_force", "scg"]})


@pytest.mark.parametrize("task,extra", [("video", {"clip": "digits", "frames": 60, "blocks": 5}),
                                        ("video", {"clip": "carphone", "frames": 40, "blocks": 4}),
                                        ("design", {"design_points": 40, "blocks": 4}),
                                        ("coverage", {"graph": "karate", "blocks": 3})])
def test_every_method_returns_a_feasible_base(task, extra):
    """Check 6: every method's output is feasible and has exactly B_k elements per block."""
    methods = ["scg", "greedy", "residual_random_greedy", "distorted_local_search", "continuous_greedy", "random"]
    res = compare({"task": task, "methods": methods, "T": 10, "dls_epsilon": 0.3, **extra})
    assert [r.method for r in res.runs] == methods
    for r in res.runs:
        assert r.feasible, r
        assert r.evals > 0 and r.curve_evals[-1] == r.evals
    by = {r.method: r for r in res.runs}
    assert by["greedy"].value >= by["random"].value
    assert res.view is not None and res.scg.T == 10 and len(res.scg.relaxed) == 10
    assert 0 < res.gamma <= 1 and res.beta > 0


def test_parameter_free():
    """Check 5: SCG takes no α/γ/β; its run is identical whatever γ, β distorted local search is told."""
    names = set(inspect.signature(multinoulli_scg).parameters)
    assert not names & {"alpha", "gamma", "beta", "phi"}
    base = {"task": "design", "design_points": 40, "blocks": 4, "methods": ["scg", "distorted_local_search"],
            "T": 20, "dls_epsilon": 0.3}
    a = compare({**base, "dls_gamma": 1.0, "dls_beta": 1.0})
    b = compare({**base, "dls_gamma": 0.3, "dls_beta": 3.0})
    sa, sb = a.runs[0], b.runs[0]
    assert (sa.value, sa.selection, sa.evals) == (sb.value, sb.selection, sb.evals)
    assert a.dls_guarantee == pytest.approx(1 - 1 / math.e) and b.dls_guarantee < a.dls_guarantee


def test_ratio_vs_opt_on_brute_forceable_design():
    """Check 3: 10 A-optimal-design instances (here K = 3, |V_k| = 6, B_k = 2; reproduce.py uses the spec's K = 4):
    SCG (T = 100) ≥ (1 − 1/e)·OPT on each, ≥ 0.9·OPT on average."""
    ratios = []
    for seed in range(10):
        inst = instance_for(InstanceParams(task="design", design_points=18, blocks=3, budget=2, seed=seed))
        opt = bl.brute_force(inst.objective, inst.partition)
        assert opt.evals == 15 ** 3
        r = multinoulli_scg(inst.objective, inst.partition, T=100, seed=seed)
        ratios.append(r.value / opt.value)
    assert min(ratios) >= 1 - 1 / math.e
    assert np.mean(ratios) >= 0.9
    assert max(ratios) <= 1 + 1e-12


@pytest.mark.parametrize("task,extra", [("design", {}), ("coverage", {"graph": "les_miserables", "blocks": 6})])
def test_fewer_queries(task, extra):
    """Check 4 (see docs/results for the 5-seed claim): SCG's evaluations are T/N of distorted local search's
    (T = 5/ε against N = 1/ε² samples per swap estimate), here ≤ 25% at ε = 0.05, for ≥ 97% of its value."""
    res = compare({"task": task, "methods": ["scg", "distorted_local_search"], "T": 100, "dls_epsilon": 0.05,
                   **extra})
    scg, dls = res.runs
    assert scg.evals <= 0.25 * dls.evals
    assert scg.value >= 0.97 * dls.value


def test_value_rises_with_T():
    """The relaxed value ME(q^T) grows with T; SCG's evaluations grow linearly in T."""
    res = sweep({"task": "design", "design_points": 60, "blocks": 6, "Ts": [2, 10, 50], "seeds": 2})
    assert res.relaxed_mean[0] < res.relaxed_mean[2]
    assert res.mean[-1] >= 0.95 * res.greedy
    assert res.evals[0] < res.evals[1] < res.evals[2]


def test_seeded_and_deterministic():
    inst = instance_for(InstanceParams(task="coverage", graph="karate", blocks=3))
    a = multinoulli_scg(inst.objective, inst.partition, T=15, seed=3)
    b = multinoulli_scg(inst.objective, inst.partition, T=15, seed=3)
    assert a.selection == b.selection and a.extra["relaxed"] == b.extra["relaxed"]

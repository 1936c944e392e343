"""FDGen engine: metric definitions, data, uploads, losses, generators and the entry points (micro sizes)."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from engines.common.context import JobCancelled, LocalContext
from engines.common.params import ParamError, validate
from engines.fdgen import metrics as M
from engines.fdgen.data import Graph, biased_sbm, load_graph, split_nodes
from engines.fdgen.graphio import parse_upload
from engines.fdgen.params import DataParams, TrainParams

MICRO = dict(dataset="sbm", n_nodes=80, epochs=20, steps=4, seeds=1, samples=1)


def _upload(n=30, edges=None, s=None, y=None):
    s = s if s is not None else [k % 2 for k in range(n)]
    y = y if y is not None else [(k // 2) % 2 for k in range(n)]
    nodes = "id,s,y,f1,f2\n" + "".join(f"n{k},{s[k]},{y[k]},{k * 0.1:.1f},{(k % 3) - 1}\n" for k in range(n))
    edges = edges if edges is not None else "".join(f"n{k},n{k + 1}\n" for k in range(n - 1))
    return edges, nodes


# ------------------------------------------------------------------ acceptance check 1: metric definitions


def test_fairness_gaps_match_fairlearn():
    from fairlearn.metrics import MetricFrame, demographic_parity_difference, true_positive_rate

    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(20, 200))
        y, s, p = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
        s[:2], y[:4] = [0, 1], [1, 1, 1, 1]
        assert abs(M.delta_sp(p, s) - demographic_parity_difference(y, p, sensitive_features=s)) < 1e-9
        tpr = MetricFrame(metrics=true_positive_rate, y_true=y, y_pred=p, sensitive_features=s).by_group
        assert abs(M.delta_eo(p, y, s) - abs(tpr[0] - tpr[1])) < 1e-9


def test_structure_metrics_on_toy_graph():
    e = np.array([[0, 1], [1, 2], [0, 2], [3, 4], [2, 3]])
    g = Graph(e, np.zeros((6, 1), np.float32), np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 0, 1, 0, 1]), ["x"])
    h, h_rand = M.sensitive_homophily(g.edges, g.s)
    assert h == pytest.approx(4 / 5)
    vol1 = 3 / 10  # degrees 2,2,3 | 2,1,0
    assert h_rand == pytest.approx(vol1**2 + (1 - vol1) ** 2)
    assert M.degree_gap(g) == pytest.approx(7 / 3 - 1)
    assert M.dyadic_gap(g.edges, g.s) == pytest.approx(4 / 6 - 1 / 9)
    assert M.clustering(g)[[0, 1, 2, 3]] == pytest.approx([1.0, 1.0, 1 / 3, 0.0])


def test_mmd_and_probe_detect_feature_bias():
    rng = np.random.default_rng(1)
    s = np.r_[np.zeros(150, int), np.ones(150, int)]
    X0 = rng.normal(size=(300, 4))
    X1 = X0 + 2.0 * s[:, None] * np.array([1, 0, 0, 0])
    assert M.mmd2(X0[s == 0], X0[s == 1]) < 0.02 < M.mmd2(X1[s == 0], X1[s == 1])
    assert abs(M.probe_auc(X0, s) - 0.5) < 0.1
    assert M.probe_auc(X1, s) > 0.85
    gA = Graph(np.array([[0, 1], [1, 2]]), X0[:3], s[:3], s[:3], ["a"] * 4)
    assert M.degree_mmd(gA, [gA]) == pytest.approx(0.0, abs=1e-12)


# ------------------------------------------------------------------ data


def test_sbm_knobs_control_the_biases():
    weak = biased_sbm(400, 0.3, 1.0, 0.0, 0.0, 10, 0)
    strong = biased_sbm(400, 0.3, 8.0, 3.0, 0.4, 10, 0)
    assert M.sensitive_homophily(strong.edges, strong.s)[0] > M.sensitive_homophily(weak.edges, weak.s)[0] + 0.2
    assert M.probe_auc(strong.X, strong.s) > 0.9 and M.probe_auc(weak.X, weak.s) < 0.65
    gap = strong.y[strong.s == 0].mean() - strong.y[strong.s == 1].mean()
    assert 0.25 < gap < 0.55
    assert abs(2 * strong.m / strong.n - 10) < 2.5


@pytest.mark.parametrize("ds,extra", [("german", {"sensitive": "age"}), ("german", {"sensitive": "sex"}),
                                      ("compas", {}), ("adult", {})])
def test_real_fairness_tables_become_knn_graphs(ds, extra):
    g = load_graph(DataParams(dataset=ds, n_nodes=200, knn=5, **extra))
    assert g.n == 200 and g.X.shape[0] == 200 and np.isfinite(g.X).all()
    assert set(np.unique(g.s)) == {0, 1} and set(np.unique(g.y)) == {0, 1}
    assert (g.edges[:, 0] < g.edges[:, 1]).all() and len(np.unique(g.edges, axis=0)) == g.m
    assert g.degrees().min() >= 5  # every node keeps its k nearest neighbours
    assert M.sensitive_homophily(g.edges, g.s)[0] > M.sensitive_homophily(g.edges, g.s)[1]  # homophilous
    if ds == "german" and extra["sensitive"] == "sex":
        assert not any(n.startswith("status_sex") for n in g.feature_names)  # would reveal sex exactly
    train, test = split_nodes(g, 0.4, 0)
    assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == g.n


# ------------------------------------------------------------------ uploads


def test_valid_upload_parses():
    edges, nodes = _upload()
    g = parse_upload("source,target\n" + edges, nodes)
    assert len(g.ids) == 30 and len(g.edges) == 29 and g.feature_names == ["f1", "f2"]


@pytest.mark.parametrize("mutate,message", [
    (lambda e, n: (e, n.replace("id,s,y", "id,group,y")), "no 's' column"),
    (lambda e, n: (e, n.replace("n3,1,", "n3,2,")), "must be binary"),
    (lambda e, n: (e, n.replace("n3,1,", "n3,,")), "missing"),
    (lambda e, n: _upload(s=[1] * 30), "constant"),
    (lambda e, n: (e + "n1,ghost\n", n), "'ghost' is not in the node table"),
    (lambda e, n: (e + "n4,n4\n", n), "self-loop"),
    (lambda e, n: ("".join(f"n{k},n{k + 1}\n" for k in range(0, 30, 2)), n), "mostly disconnected|tiny pieces"),
    (lambda e, n: _upload(n=10, edges="n0,n1\n"), "too small"),
    (lambda e, n: (e, n.replace("n5,", "n4,", 1)), "more than once"),
    (lambda e, n: (e, n.replace("0.5,", "abc,", 1)), "not a number"),
])
def test_bad_uploads_are_rejected_with_a_clear_message(mutate, message):
    edges, nodes = mutate(*_upload())
    with pytest.raises(ValueError, match=message):
        parse_upload(edges, nodes)
    with pytest.raises(ParamError, match=message):  # rejected before any job is queued
        validate(DataParams, {"dataset": "upload", "upload_edges": edges, "upload_nodes": nodes})


def test_parameters_are_bounded_and_named():
    with pytest.raises(ParamError, match="n_nodes"):
        validate(TrainParams, {"n_nodes": 5})
    with pytest.raises(ParamError, match="lambda_f"):
        validate(TrainParams, {"lambda_f": -1})
    with pytest.raises(ParamError, match="repeat"):
        validate(TrainParams, {"variants": ["fdgen", "fdgen"]})
    with pytest.raises(ParamError, match="needs both"):
        validate(TrainParams, {"dataset": "upload"})
    assert validate(TrainParams, {"variants": ["fdgen", "vanilla"]}).variants == ("vanilla", "fdgen")


# ------------------------------------------------------------------ losses and the generator


def test_regularisers_vanish_only_without_bias():
    import torch

    from engines.fdgen.generators import torch_threads
    from engines.fdgen.losses import feature_loss, structure_loss

    with torch_threads(1):
        _check_regularisers(torch, feature_loss, structure_loss)


def _check_regularisers(torch, feature_loss, structure_loss):
    torch.manual_seed(0)
    n = 200
    s = torch.arange(n) % 2
    y = (torch.arange(n) // 2) % 2
    X = torch.randn(n, 4)
    Xb = X + 2.0 * s[:, None].float()
    fair, biased = feature_loss(X, s, y, X, y), feature_loss(Xb, s, y, X, y)
    assert 10 * fair < biased
    assert feature_loss(torch.zeros(n, 4), s, y, X, y) > 10 * fair  # collapsing the features is no escape
    assert 5 * feature_loss(X, s, y, X, y, "conditional") < feature_loss(Xb, s, y, X, y, "conditional")
    rho = 0.05
    P = torch.full((n, n), rho) * (1 - torch.eye(n))
    same = (s[:, None] == s[None, :]).float()
    Ph = (2 * rho * same) * (1 - torch.eye(n))
    assert structure_loss(P, s, rho) < 1e-6 < 0.5 < structure_loss(Ph, s, rho)
    assert structure_loss(P * 0, s, rho) > 1.0  # removing all edges is no escape


def test_edge_posterior_is_a_probability_and_respects_certainty():
    import torch

    from engines.fdgen.generators import GraphDiffusion

    m = GraphDiffusion(3, 8, 0.05)
    At = (torch.rand(30, 30) < 0.3).float()
    for t in (1, 4, 8):
        for p0 in (0.0, 0.3, 1.0):
            post = m.edge_posterior(At, torch.full((30, 30), p0), t)
            assert ((post >= 0) & (post <= 1)).all()
    # At the first step (ᾱ_0 = 1) the posterior is the predicted clean edge itself.
    assert torch.allclose(m.edge_posterior(At, torch.full((30, 30), 0.7), 1), torch.full((30, 30), 0.7), atol=1e-5)


@pytest.mark.parametrize("backbone", ["diffusion", "vgae"])
def test_generated_graph_is_valid(backbone):
    """Acceptance check 6: symmetric (i < j, unique), no self-loops, edge count ±20 %, s and y on every node."""
    from engines.fdgen.generators import FairGenerator

    g = biased_sbm(80, 0.3, 4.0, 1.5, 0.2, 8, 0)
    gen = FairGenerator(backbone, steps=4).fit(g, 1.0, 1.0, 20, 0)
    out = gen.sample(0)
    assert out.n == g.n and (out.s == g.s).all() and (out.y == g.y).all()
    assert (out.edges[:, 0] < out.edges[:, 1]).all() and len(np.unique(out.edges, axis=0)) == out.m
    assert abs(out.m - g.m) <= 0.2 * g.m
    assert out.X.shape == g.X.shape and np.isfinite(out.X).all()


def test_fdgen_removes_the_bias_of_the_generated_graph():
    """Vanilla keeps the real graph's biases; FDGen's samples have less feature bias and structural bias."""
    from engines.fdgen.experiment import torch_threads
    from engines.fdgen.generators import FairGenerator

    g = biased_sbm(110, 0.4, 8.0, 3.0, 0.0, 8, 1)
    h_real = M.sensitive_homophily(g.edges, g.s)[0]
    with torch_threads(1):
        van = FairGenerator("diffusion", steps=6).fit(g, 0, 0, 160, 0).sample(0)
        fd = FairGenerator("diffusion", steps=6).fit(g, 3.0, 3.0, 160, 0).sample(0)
    h_van, h_fd = M.sensitive_homophily(van.edges, van.s)[0], M.sensitive_homophily(fd.edges, fd.s)[0]
    parity = (g.s.mean() ** 2 + (1 - g.s.mean()) ** 2)
    assert abs(h_van - h_real) < 0.12
    assert abs(h_fd - parity) < abs(h_van - parity) - 0.1
    assert M.probe_auc(fd.X, fd.s) < M.probe_auc(van.X, van.s) - 0.1


# ------------------------------------------------------------------ entry points


def test_train_and_sample_end_to_end(tmp_path):
    from engines.common.artifacts import resolve
    from engines.fdgen.experiment import train_and_sample

    events = []
    ctx = LocalContext(artifacts_root=tmp_path, on_progress=lambda f, m, p: events.append(f))
    res = train_and_sample(dict(MICRO, variants=["vanilla", "fdgen"]), ctx)
    assert [r.variant for r in res.rows] == ["real", "vanilla", "fdgen"]
    assert events == sorted(events) and events[-1] == 1.0
    for r in res.rows:
        assert 0 <= r.mean["delta_sp"] <= 1 and 0 <= r.mean["accuracy"] <= 1
    assert res.n_train + res.n_test == 80
    assert set(res.histogram.density) == {"real", "vanilla", "fdgen"}
    graphml = [ref for ref in res.downloads["fdgen"] if ref.endswith(".graphml")][0]
    G = nx.read_graphml(resolve(tmp_path, graphml))
    assert G.number_of_nodes() == res.n_train and all("s" in d and "y" in d for _, d in G.nodes(data=True))
    assert resolve(tmp_path, res.drawing).stat().st_size > 1000


def test_cancellation_stops_the_job(tmp_path):
    from engines.fdgen.experiment import train_and_sample

    ctx = LocalContext(artifacts_root=tmp_path)
    ctx.cancel()
    with pytest.raises(JobCancelled):
        train_and_sample(MICRO, ctx)


def test_lambda_sweep_returns_one_point_per_lambda(tmp_path):
    from engines.fdgen.experiment import lambda_sweep

    res = lambda_sweep(dict(MICRO, backbone="vgae", lambdas=[0, 2]), LocalContext(artifacts_root=tmp_path))
    assert [r.lambda_f for r in res.rows] == [0.0, 2.0] and res.rows[0].variant == "vanilla"
    assert all(0 <= r.mean["accuracy"] <= 1 for r in res.rows)

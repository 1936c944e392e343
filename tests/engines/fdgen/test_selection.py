"""Issue 16's stopping rule: the training length is chosen on held-out node pairs of the training graph.

The held-out pairs must never reach the fit (loss, noisy inputs, density), the choice must be the grid point with
the lowest validation loss, and the choice must be unable to see the test nodes."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from engines.fdgen.data import Graph, biased_sbm, edges_from_dense
from engines.fdgen.generators import FairGenerator, holdout_pairs, validation_loss
from engines.fdgen.selection import choose, validation_curve


def _graph(n=40, seed=0) -> Graph:
    return biased_sbm(n, 0.4, 4.0, 1.5, 0.2, 6, seed)


def _with_adjacency(g: Graph, A: np.ndarray) -> Graph:
    return Graph(edges_from_dense(A), g.X.copy(), g.s.copy(), g.y.copy(), g.feature_names, g.name)


def _params(gen: FairGenerator) -> list[torch.Tensor]:
    return [p.detach().clone() for p in gen.model.parameters()]


def test_holdout_is_stratified_symmetric_and_deterministic():
    g = _graph(60)
    hold = holdout_pairs(g, 0.1, 0)
    A = g.adjacency() > 0
    iu = np.triu_indices(g.n, 1)
    assert (hold == hold.T).all() and not hold.diagonal().any()
    n_edges, n_non = A[iu].sum(), (~A[iu]).sum()
    assert hold[iu][A[iu]].sum() == round(0.1 * n_edges)  # the same fraction of edges ...
    assert hold[iu][~A[iu]].sum() == round(0.1 * n_non)  # ... and of non-edges
    assert (holdout_pairs(g, 0.1, 0) == hold).all() and not (holdout_pairs(g, 0.1, 1) == hold).all()


@pytest.mark.parametrize("backbone,lf,ls", [("diffusion", 0.0, 0.0), ("diffusion", 1.0, 1.0), ("vgae", 0.0, 0.0)])
def test_held_out_pairs_never_reach_the_fit(backbone, lf, ls):
    """Flipping the true state of every held-out pair leaves the training trajectory bit-identical (so the pairs are
    in no loss term, no noisy input A_t, no encoder adjacency and not in ρ); flipping one training pair does not."""
    g = _graph()
    hold = holdout_pairs(g, 0.15, 0)
    A = g.adjacency()
    flipped = _with_adjacency(g, np.where(hold, 1.0 - A, A))
    assert flipped.m != g.m  # the held-out truth really differs
    fits = [FairGenerator(backbone, steps=4, reg_every=2).fit(h, lf, ls, 12, 3, holdout=hold) for h in (g, flipped)]
    assert [r["gen"] for r in fits[0].history] == [r["gen"] for r in fits[1].history]
    assert all(torch.equal(a, b) for a, b in zip(_params(fits[0]), _params(fits[1])))
    # ... while the validation loss does read the held-out truth
    assert validation_loss(fits[0], g) != validation_loss(fits[0], flipped)
    # control: one *training* pair flipped changes the trajectory (the check above can fail)
    i, j = np.argwhere(np.triu(~hold, 1))[0]
    B = A.copy()
    B[i, j] = B[j, i] = 1.0 - A[i, j]
    other = FairGenerator(backbone, steps=4, reg_every=2).fit(_with_adjacency(g, B), lf, ls, 12, 3, holdout=hold)
    assert not all(torch.equal(a, b) for a, b in zip(_params(fits[0]), _params(other)))


def test_noisy_inputs_draw_held_out_pairs_from_the_prior():
    """At t = 1 a kept pair is almost surely its true state; a held-out pair is Bern(ρ) whatever its state."""
    from engines.fdgen.generators import GraphDiffusion

    n = 120
    m = GraphDiffusion(2, 4, 0.05)
    m.abar[1] = 1.0  # a noiseless step makes the contrast exact
    A0 = torch.ones(n, n) - torch.eye(n)
    hold = torch.zeros(n, n, dtype=torch.bool)
    hold[:60, :60] = True
    hold.fill_diagonal_(False)
    _, At = m.noisy(torch.zeros(n, 2), A0, 1, hold)
    assert At[60:, 60:].sum() == (n - 60) * (n - 61)  # kept pairs: all true edges present
    frac = At[:60, :60].sum() / (60 * 59)
    assert 0.02 < frac < 0.09  # held-out pairs: the prior density, not their true state (1)


def test_without_holdout_the_fit_is_unchanged():
    """The default path (the tab's, and the claims' refit on all pairs) trains exactly as before: same ρ, and a
    holdout fit with an empty mask gives the same trajectory."""
    g = _graph()
    a = FairGenerator("diffusion", steps=4).fit(g, 0.0, 0.0, 8, 1)
    b = FairGenerator("diffusion", steps=4).fit(g, 0.0, 0.0, 8, 1, holdout=np.zeros((g.n, g.n), bool))
    assert a.holdout is None and abs(a.model.rho - 2 * g.m / (g.n * (g.n - 1))) < 1e-12
    assert abs(a.model.rho - b.model.rho) < 1e-7
    assert np.allclose([r["gen"] for r in a.history], [r["gen"] for r in b.history], rtol=1e-4)
    with pytest.raises(ValueError, match="without held-out"):
        validation_loss(a, g)


def test_choose_picks_the_lowest_validation_loss():
    assert choose([75, 150, 300, 600], [3.0, 2.5, 2.7, 2.9]) == 150
    assert choose([75, 150, 300], [2.0, 2.0, 3.0]) == 75  # ties: the shorter schedule
    assert choose([75, 150, 300], [float("nan"), 2.0, 1.5]) == 300  # NaN never wins
    with pytest.raises(ValueError):
        choose([75, 150], [1.0])


def test_validation_curve_chooses_its_own_minimum(monkeypatch):
    """The curve's E* is its argmin (with the real fits), and follows the losses when they are rigged."""
    g = _graph()
    cur = validation_curve(g, 0.0, 0.0, grid=(4, 8, 16), max_epochs=16, steps=4)
    assert cur["epochs"] == [4, 8, 16] and len(cur["val_loss"]) == 3
    assert cur["chosen"] == cur["epochs"][int(np.argmin(cur["val_loss"]))]
    assert cur["held_pairs"] == int(np.triu(holdout_pairs(g, 0.1, 0), 1).sum())

    import engines.fdgen.generators as G

    rigged = {4: 2.0, 8: 0.5, 16: 1.0}
    monkeypatch.setattr(G, "validation_loss", lambda gen, graph: rigged[gen.history[-1]["epoch"] + 1])
    assert validation_curve(g, 0.0, 0.0, grid=(4, 8, 16), steps=4)["chosen"] == 8


@pytest.mark.parametrize("losses, epochs, chosen, at_edge", [
    ({4: 2.0, 8: 0.5, 16: 1.0}, [4, 8, 16], 8, False),                         # an inner minimum: no extension
    ({4: 2.0, 8: 1.5, 16: 1.0, 32: 0.7, 64: 0.9}, [4, 8, 16, 32, 64], 32, False),  # found by doubling
    ({4: 2.0, 8: 1.5, 16: 1.0, 32: 0.7, 64: 0.6}, [4, 8, 16, 32, 64], 64, True),   # still falling at the cap
    ({4: 2.0, 8: 1.5, 16: 1.0, 32: 1.0}, [4, 8, 16, 32], 16, False),            # a tie goes to the shorter
])
def test_a_minimum_on_the_grids_edge_doubles_the_grid_up_to_the_cap(monkeypatch, losses, epochs, chosen, at_edge):
    """E* on the last grid point is no minimum: the grid extends by doubling while the longest fit is best, up to
    max_epochs, and says when the curve is still falling there."""
    import engines.fdgen.generators as G

    monkeypatch.setattr(G, "validation_loss", lambda gen, graph: losses[gen.history[-1]["epoch"] + 1])
    cur = validation_curve(_graph(), 0.0, 0.0, grid=(4, 8, 16), max_epochs=64, steps=4)
    assert (cur["epochs"], cur["chosen"], cur["at_edge"]) == (epochs, chosen, at_edge)
    assert cur["val_loss"] == [losses[e] for e in epochs]


def test_selection_cannot_see_the_test_nodes(monkeypatch):
    """validation_curve takes one graph (the training graph) and configuration scalars; the reproduce script hands
    it the training subgraph only."""
    sig = inspect.signature(validation_curve)
    assert list(sig.parameters)[:3] == ["train_graph", "lambda_f", "lambda_s"]
    assert all(p.kind is p.KEYWORD_ONLY for p in list(sig.parameters.values())[3:])
    assert not any(w in name for name in sig.parameters for w in ("test", "prep", "full"))

    import engines.fdgen.reproduce as R
    from engines.fdgen.experiment import prepare
    from engines.fdgen.params import TrainParams

    seen = []
    monkeypatch.setattr(R, "validation_curve", lambda graph, lf, ls, **kw: seen.append((graph, kw)) or
                        dict(epochs=[1], val_loss=[0.0], chosen=1))
    params = dict(R.selection_params(dict(n_nodes=80, steps=4, backbone="diffusion"), "sbm", {}), grid=[1])
    out = R.select_lengths(params)
    assert set(out) == {v[0] for v in R.SELECTED}
    prep = prepare(TrainParams(dataset="sbm", n_nodes=80))
    for graph, kw in seen:
        assert graph.n == len(prep.train) < prep.graph.n
        assert (graph.X == prep.train_graph.X).all() and (graph.edges == prep.train_graph.edges).all()
        assert not any(isinstance(v, (Graph, np.ndarray)) for v in kw.values())


def test_train_and_sample_trains_each_variant_for_its_chosen_length(tmp_path):
    from engines.common.context import LocalContext
    from engines.fdgen.experiment import train_and_sample

    res = train_and_sample(dict(dataset="sbm", n_nodes=80, epochs=20, steps=4, seeds=1, samples=1,
                                variants=["vanilla", "fdgen"]), LocalContext(artifacts_root=tmp_path),
                           epochs_by_variant={"vanilla": 13})
    assert res.history["vanilla"][-1]["epoch"] == 12  # E* = 13
    assert res.history["fdgen"][-1]["epoch"] == 19  # not named: params.epochs


def test_the_cache_is_keyed_by_the_chosen_lengths(monkeypatch, tmp_path):
    import engines.fdgen.reproduce as R
    from engines.common.settings import reset_settings

    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path))
    reset_settings()
    try:
        calls = []
        fn = lambda q: calls.append(q) or {"n": len(calls)}  # noqa: E731
        assert R.cached("t", dict(a=1, epochs_by_variant={"vanilla": 75}), fn) == {"n": 1}
        assert R.cached("t", dict(a=1, epochs_by_variant={"vanilla": 75}), fn) == {"n": 1}  # hit
        assert R.cached("t", dict(a=1, epochs_by_variant={"vanilla": 150}), fn) == {"n": 2}  # new E*: recomputed
    finally:
        reset_settings()

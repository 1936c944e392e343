"""The convergence study (issue 16): its objective is the backbone's own loss and falls as training runs longer."""
from __future__ import annotations

from engines.fdgen.convergence import COLUMNS, objective, study


def test_longer_schedules_lower_the_objective_and_every_row_is_complete():
    rows = study(["sbm"], epochs=(10, 120), seeds=1, samples=1, n_nodes=80, progress=lambda _: None)
    assert [(r["variant"], r["epochs"]) for r in rows] == [("vanilla", 10), ("vanilla", 120), ("fdgen", 10),
                                                           ("fdgen", 120)]
    for r in rows:
        assert set(COLUMNS) <= set(r) and r["objective"] > 0 and 0 <= r["h_s"] <= 1
    by = {(r["variant"], r["epochs"]): r["objective"] for r in rows}
    assert by[("vanilla", 120)] < by[("vanilla", 10)]
    assert by[("fdgen", 120)] < by[("fdgen", 10)]


def test_objective_is_deterministic_and_covers_every_step():
    from engines.fdgen.experiment import prepare
    from engines.fdgen.generators import FairGenerator
    from engines.fdgen.params import TrainParams

    g = prepare(TrainParams(dataset="sbm", n_nodes=60)).train_graph
    gen = FairGenerator("diffusion", steps=4).fit(g, 0.0, 0.0, 5, 0)
    assert objective(gen) == objective(gen)  # fixed noise draws
    seen = []
    denoise = gen.model.denoise
    gen.model.denoise = lambda Xt, At, t, cond: seen.append(t) or denoise(Xt, At, t, cond)
    objective(gen, draws=3)
    assert sorted(seen) == [t for t in range(1, 5) for _ in range(3)]  # every step t = 1..T, each draw

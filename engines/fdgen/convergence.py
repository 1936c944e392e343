"""How long to train the generators (issue 16): the training objective and the samples' quality against iterations.

``python -m engines.fdgen.convergence [--datasets german,sbm] [--epochs 75,150,...] [--seeds 2]`` trains the
vanilla generator and FDGen at the reproduce script's scale (``reproduce.BASE``: 200 nodes, T = 12) for each
iteration count as a complete schedule (the learning rate's cosine decay spans the run), and prints one row per
(dataset, variant, iterations), the mean over generator seeds of:

- ``objective``: the backbone's denoising loss L_gen averaged over every diffusion step t (4 fixed noise draws
  each) on the training graph: whether the optimisation has converged;
- ``degree_mmd`` / ``feature_mmd``: the samples against the real training graph: whether the samples improve;
- ``h_s`` / ``probe_auc``: the bias the samples carry (the real graph's values are on the results page).

Single-threaded, like every fdgen fit. Results are written as JSON beside the printout (``--out``).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

EPOCHS = (75, 150, 300, 600, 1200, 2400, 4800)
VARIANTS = (("vanilla", 0.0, 0.0), ("fdgen", 1.0, 1.0))
COLUMNS = ("objective", "degree_mmd", "feature_mmd", "h_s", "probe_auc", "fit_s")


def objective(gen, draws: int = 4, seed: int = 123) -> float:
    """L_gen of a trained diffusion generator, averaged over every step t with fixed noise draws."""
    import torch
    import torch.nn.functional as F

    from .generators import edge_bce

    m, g = gen.model, gen.graph
    X0, A0 = torch.from_numpy(g.X).float(), torch.from_numpy(g.adjacency())
    torch.manual_seed(seed)
    losses = []
    with torch.no_grad():
        for t in range(1, m.T + 1):
            for _ in range(draws):
                Xt, At = m.noisy(X0, A0, t)
                x0, logits = m.denoise(Xt, At, t, gen.cond)
                losses.append(float(F.mse_loss(x0, X0) + edge_bce(logits, A0, m.rho)))
    return float(np.mean(losses))


def study(datasets: list[str], epochs: tuple[int, ...] = EPOCHS, seeds: int = 2, samples: int = 2,
          n_nodes: int | None = None, progress=print) -> list[dict]:
    from . import metrics as M
    from .experiment import prepare
    from .generators import FairGenerator
    from .params import TrainParams
    from .reproduce import BASE, DATASETS

    extra = {ds: kw for ds, kw, _ in DATASETS}
    rows = []
    for ds in datasets:
        prep = prepare(TrainParams(dataset=ds, n_nodes=n_nodes or BASE["n_nodes"], **extra.get(ds, {})))
        real = prep.train_graph
        for variant, lf, ls in VARIANTS:
            for E in epochs:
                per_seed = []
                for k in range(seeds):
                    seed = 1000 * k
                    t0 = time.perf_counter()
                    gen = FairGenerator("diffusion", steps=BASE["steps"]).fit(real, lf, ls, E, seed)
                    fit_s = time.perf_counter() - t0
                    gs = [gen.sample(seed + j) for j in range(samples)]
                    per_seed.append(dict(
                        objective=objective(gen), degree_mmd=M.degree_mmd(real, gs),
                        feature_mmd=float(np.mean([M.mmd2(g.X, real.X) for g in gs])),
                        h_s=float(np.mean([M.sensitive_homophily(g.edges, g.s)[0] for g in gs])),
                        probe_auc=float(np.mean([M.probe_auc(g.X, g.s, seed + j) for j, g in enumerate(gs)])),
                        fit_s=fit_s))
                row = dict(dataset=ds, variant=variant, epochs=E, seeds=seeds,
                           **{c: float(np.mean([r[c] for r in per_seed])) for c in COLUMNS})
                rows.append(row)
                progress(" ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m engines.fdgen.convergence", description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="german,sbm")
    ap.add_argument("--epochs", default=",".join(map(str, EPOCHS)))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default="fdgen_convergence.json")
    a = ap.parse_args(argv)
    print("dataset variant epochs seeds " + " ".join(COLUMNS), flush=True)
    rows = study(a.datasets.split(","), tuple(int(e) for e in a.epochs.split(",")), a.seeds,
                 progress=lambda line: print(line, flush=True))
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

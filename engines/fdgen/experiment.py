"""Entry points: inspect a graph's bias, train and sample the generator variants, sweep λ (Pareto).

Protocol (all variants, all datasets): the real graph's nodes are split (stratified by s and y) into
train and test nodes. Generators are fitted on the subgraph induced by the training nodes, so no test
node is ever seen; each sampled graph G̃ carries the training nodes' templates (s̃, ỹ). A 2-layer GCN
trained on G̃ is then tested on the real test nodes inside the full real graph: accuracy, ΔSP, ΔEO.
The 'real' row trains the same GCN on the real training subgraph.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import metrics as M
from .data import Graph, load_graph, split_nodes
from .params import (ALL_VARIANTS, BACKBONE_LABELS, DATASET_LABELS, VARIANT_LABELS, DataParams,
                     GeneratorParams, SweepParams, TrainParams)

#: metric key -> (label, "lower" / "higher" / "" is better)
METRICS: dict[str, tuple[str, str]] = {
    "accuracy": ("GCN accuracy", "higher"),
    "auc": ("GCN AUC", "higher"),
    "delta_sp": ("ΔSP", "lower"),
    "delta_eo": ("ΔEO", "lower"),
    "h_s": ("sensitive homophily h_s", ""),
    "degree_gap": ("degree gap Δdeg", "lower"),
    "dyadic_gap": ("dyadic gap", "lower"),
    "probe_auc": ("probe AUC (s from X)", "lower"),
    "feature_mmd_s": ("feature MMD² between groups", "lower"),
    "degree_mmd": ("degree MMD vs real", "lower"),
    "clustering_mmd": ("clustering MMD vs real", "lower"),
    "feature_mmd_real": ("feature MMD² vs real", "lower"),
    "edges": ("edges", ""),
}
GCN_EPOCHS = 200


@dataclass
class Prepared:
    graph: Graph  # the full real graph
    train: np.ndarray
    test: np.ndarray
    train_graph: Graph  # subgraph induced by the training nodes (what generators see)


def prepare(p: DataParams) -> Prepared:
    g = load_graph(p)
    train, test = split_nodes(g, p.test_fraction, p.data_seed)
    return Prepared(g, train, test, g.subgraph(train))


class Row(BaseModel):
    """One row of the comparison table: a generator variant (or the real graph) over seeds × samples."""

    variant: str
    label: str
    lambda_f: float
    lambda_s: float
    values: dict[str, list[float]]  # metric -> one value per (seed, sample)
    mean: dict[str, float]
    std: dict[str, float]
    fit_s: float = 0.0


def make_row(variant: str, label: str, lf: float, ls: float, values: dict[str, list[float]], fit_s: float = 0.0) -> Row:
    mean = {k: float(np.nanmean(v)) if len(v) else float("nan") for k, v in values.items()}
    std = {k: float(np.nanstd(v)) if len(v) else float("nan") for k, v in values.items()}
    return Row(variant=variant, label=label, lambda_f=lf, lambda_s=ls, values=values, mean=mean, std=std, fit_s=fit_s)


def score_graph(prep: Prepared, gen: Graph, seed: int, downstream: bool = True) -> dict[str, float]:
    """Bias and quality of one (generated or real-training) graph, plus the downstream GCN on real test nodes."""
    from .gcn import downstream as run_gcn

    real = prep.train_graph
    h, _ = M.sensitive_homophily(gen.edges, gen.s)
    out = {
        "h_s": h,
        "degree_gap": M.degree_gap(gen),
        "dyadic_gap": M.dyadic_gap(gen.edges, gen.s),
        "probe_auc": M.probe_auc(gen.X, gen.s, seed),
        "feature_mmd_s": M.feature_mmd_groups(gen.X, gen.s),
        "edges": float(gen.m),
    }
    if gen is not real:
        out["degree_mmd"] = M.degree_mmd(real, [gen])
        out["clustering_mmd"] = M.clustering_mmd(real, [gen])
        out["feature_mmd_real"] = M.mmd2(gen.X, real.X)
    if downstream:
        out.update(run_gcn(gen, prep.graph, prep.test, seed=seed, epochs=GCN_EPOCHS))
    return out


def variant_lambdas(variant: str, lambda_f: float, lambda_s: float) -> tuple[float, float]:
    return {"vanilla": (0.0, 0.0), "struct_only": (0.0, lambda_s), "feat_only": (lambda_f, 0.0),
            "fdgen": (lambda_f, lambda_s)}[variant]


def fit_and_score(prep: Prepared, p: GeneratorParams, lf: float, ls: float, progress,
                  condition_on_s: bool = True) -> tuple[dict, list[Graph], float, list]:
    """Train ``p.seeds`` generators with (λ_f, λ_s), sample ``p.samples`` graphs from each, score them all.
    ``values[key]`` lists seed-major: generator seed k's samples are ``values[key][k*samples:(k+1)*samples]``."""
    from .generators import FairGenerator

    values: dict[str, list[float]] = {}
    graphs: list[Graph] = []
    fit_s, history = 0.0, []
    for k in range(p.seeds):
        seed = p.seed + 1000 * k
        a, b = k / p.seeds, (k + 1) / p.seeds
        t0 = time.perf_counter()
        gen = FairGenerator(p.backbone, steps=p.steps, condition_on_s=condition_on_s).fit(
            prep.train_graph, lf, ls, p.epochs, seed, p.feat_mode,
            on_progress=lambda f, msg: progress(a + (b - a) * 0.85 * f, msg))
        fit_s += time.perf_counter() - t0
        if k == 0:
            history = gen.history
        for j in range(p.samples):
            g = gen.sample(seed + j, p.match_edges)
            graphs.append(g)
            for key, v in score_graph(prep, g, seed + j).items():
                values.setdefault(key, []).append(v)
            progress(a + (b - a) * (0.85 + 0.15 * (j + 1) / p.samples), f"sample {j + 1}/{p.samples} scored")
    return values, graphs, fit_s / p.seeds, history


def real_row(prep: Prepared, seeds: int, seed: int) -> Row:
    from .gcn import downstream as run_gcn

    bias = score_graph(prep, prep.train_graph, seed, downstream=False)
    values = {k: [v] for k, v in bias.items()}
    for k in range(seeds):
        for key, v in run_gcn(prep.train_graph, prep.graph, prep.test, seed=seed + 1000 * k, epochs=GCN_EPOCHS).items():
            values.setdefault(key, []).append(v)
    return make_row("real", "real graph (training nodes)", 0.0, 0.0, values)


# ------------------------------------------------------------------ inspect (interactive, no torch)


class InspectResult(BaseModel):
    dataset: str
    label: str
    notes: list[str]
    s_name: str
    y_name: str
    bias: dict[str, float]
    n_features: int
    biased_feature: str


def inspect(params: DataParams | dict) -> tuple[InspectResult, Graph]:
    """Bias metrics of the real graph (and the graph itself, for drawing). Well under a second after the
    first load; imports no torch."""
    p = validate(DataParams, params)
    g = load_graph(p)
    b = M.graph_bias(g)
    k = M.most_biased_feature(g.X, g.s)
    res = InspectResult(dataset=p.dataset, label=DATASET_LABELS[p.dataset], notes=g.notes, s_name=g.s_name,
                        y_name=g.y_name, bias=b, n_features=int(g.X.shape[1]), biased_feature=g.feature_names[k])
    return res, g


# ------------------------------------------------------------------ train & sample (job)


class FeatureHistogram(BaseModel):
    feature: str
    bins: list[float]
    density: dict[str, dict[str, list[float]]]  # variant -> {"s=0": [...], "s=1": [...]}


class TrainResult(BaseModel):
    dataset: str
    dataset_label: str
    notes: list[str]
    s_name: str
    y_name: str
    backbone: str
    backbone_label: str
    feat_mode: str
    n_train: int
    n_test: int
    rows: list[Row]  # real first, then the variants
    histogram: FeatureHistogram
    history: dict[str, list[dict[str, float]]]
    drawing: str | None  # artifact ref (PNG): real and generated graphs side by side
    downloads: dict[str, list[str]]  # variant -> artifact refs (edges CSV, nodes CSV, GraphML)
    elapsed_s: float


def _histogram(prep: Prepared, samples: dict[str, Graph]) -> FeatureHistogram:
    real = prep.train_graph
    k = M.most_biased_feature(real.X, real.s)
    lo, hi = np.percentile(real.X[:, k], [0.5, 99.5])
    pad = 0.25 * (hi - lo + 1e-6)
    bins = np.linspace(lo - pad, hi + pad, 31)

    def dens(g: Graph) -> dict[str, list[float]]:
        return {f"s={v}": np.histogram(g.X[g.s == v, k], bins=bins, density=True)[0].round(4).tolist() for v in (0, 1)}

    d = {"real": dens(real)} | {name: dens(g) for name, g in samples.items()}
    return FeatureHistogram(feature=real.feature_names[k], bins=bins.round(4).tolist(), density=d)


def save_downloads(ctx: JobContext, name: str, g: Graph) -> list[str]:
    import networkx as nx

    from .graphio import to_edge_csv, to_node_csv

    refs = [ctx.artifacts.save_bytes(f"{name}_edges.csv", to_edge_csv(g.edges).encode()),
            ctx.artifacts.save_bytes(f"{name}_nodes.csv", to_node_csv(g.s, g.y, g.X, g.feature_names).encode())]
    G = nx.Graph()
    for i in range(g.n):
        G.add_node(i, s=int(g.s[i]), y=int(g.y[i]), **{f"x{k}": float(v) for k, v in enumerate(g.X[i])})
    G.add_edges_from(map(tuple, g.edges.tolist()))
    path = ctx.artifacts.path(f"{name}.graphml")
    nx.write_graphml(G, path)
    refs.append(f"{ctx.artifacts.job_id}/{name}.graphml")
    return refs


def with_epochs(p, epochs_by: dict | None, key):
    """``p`` with ``epochs`` replaced by ``epochs_by[key]`` where the stopping rule chose a length for ``key``."""
    return p.model_copy(update={"epochs": int(epochs_by[key])}) if epochs_by and key in epochs_by else p


def train_and_sample(params: TrainParams | dict, ctx: JobContext | None = None,
                     epochs_by_variant: dict[str, int] | None = None) -> TrainResult:
    """``epochs_by_variant`` (the reproduce script's held-out-pair stopping rule, ``selection``) overrides
    ``params.epochs`` for the variants it names; the tab leaves it out and trains every variant for ``epochs``."""
    p = validate(TrainParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    ctx.progress(0.0, f"loading {DATASET_LABELS[p.dataset]}")
    prep = prepare(p)
    with torch_threads(1):
        rows = [real_row(prep, p.seeds, p.seed)]
        ctx.progress(0.03, "real-graph reference GCN trained")
        firsts: dict[str, Graph] = {}
        history: dict[str, list[dict[str, float]]] = {}
        for i, v in enumerate(p.variants):
            lf, ls = variant_lambdas(v, p.lambda_f, p.lambda_s)
            sub = Subprogress(ctx, 0.03 + 0.9 * i / len(p.variants), 0.03 + 0.9 * (i + 1) / len(p.variants))
            pv = with_epochs(p, epochs_by_variant, v)
            values, graphs, fit_s, hist = fit_and_score(
                prep, pv, lf, ls, lambda f, msg, v=v: sub(f, f"{VARIANT_LABELS[v]}: {msg}"))
            rows.append(make_row(v, VARIANT_LABELS[v], lf, ls, values, fit_s))
            firsts[v] = graphs[0]
            history[v] = hist
            ctx.check_cancelled()
    ctx.progress(0.94, "drawing and saving the generated graphs")
    from .plots import drawings_figure

    drawing = ctx.artifacts.save_figure("drawings.png", drawings_figure(prep.train_graph, firsts))
    downloads = {v: save_downloads(ctx, v, g) for v, g in firsts.items()}
    ctx.progress(1.0, "done")
    g = prep.graph
    return TrainResult(dataset=p.dataset, dataset_label=DATASET_LABELS[p.dataset], notes=g.notes, s_name=g.s_name,
                       y_name=g.y_name, backbone=p.backbone, backbone_label=BACKBONE_LABELS[p.backbone],
                       feat_mode=p.feat_mode, n_train=len(prep.train), n_test=len(prep.test), rows=rows,
                       histogram=_histogram(prep, firsts), history=history, drawing=drawing, downloads=downloads,
                       elapsed_s=time.perf_counter() - t0)


# ------------------------------------------------------------------ λ sweep (job)


class SweepResult(BaseModel):
    dataset: str
    backbone: str
    real: Row
    rows: list[Row]  # one per λ (λ_f = λ_s = λ); λ = 0 is the vanilla generator
    elapsed_s: float


def lambda_sweep(params: SweepParams | dict, ctx: JobContext | None = None,
                 epochs_by_lambda: dict[float, int] | None = None) -> SweepResult:
    """Accuracy against ΔSP/ΔEO for FDGen with λ_f = λ_s = λ over a grid: the fairness–utility Pareto front.
    ``epochs_by_lambda`` overrides ``params.epochs`` for the λ it names (the reproduce script's stopping rule)."""
    p = validate(SweepParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    prep = prepare(p)
    rows = []
    with torch_threads(1):
        real = real_row(prep, p.seeds, p.seed)
        for i, lam in enumerate(p.lambdas):
            sub = Subprogress(ctx, i / len(p.lambdas), (i + 1) / len(p.lambdas))
            pl = with_epochs(p, epochs_by_lambda, lam)
            values, _, fit_s, _ = fit_and_score(prep, pl, lam, lam, lambda f, msg, lam=lam: sub(f, f"λ = {lam:g}: {msg}"))
            variant = "vanilla" if lam == 0 else "fdgen"
            rows.append(make_row(variant, f"λ = {lam:g}", lam, lam, values, fit_s))
            ctx.check_cancelled()
    ctx.progress(1.0, "done")
    return SweepResult(dataset=p.dataset, backbone=p.backbone, real=real, rows=rows, elapsed_s=time.perf_counter() - t0)


__all__ = ["ALL_VARIANTS", "METRICS", "inspect", "lambda_sweep", "train_and_sample", "prepare", "fit_and_score"]

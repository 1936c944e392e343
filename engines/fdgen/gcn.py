"""Downstream check: a 2-layer GCN trained on a (generated) graph, tested on held-out real nodes."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import Graph
from .metrics import delta_eo, delta_sp


def sparse_norm_adj(g: Graph) -> torch.Tensor:
    """Sparse D^{-1/2}(A + I)D^{-1/2}."""
    n = g.n
    e = g.edges
    loops = np.arange(n)
    rows = np.concatenate([e[:, 0], e[:, 1], loops])
    cols = np.concatenate([e[:, 1], e[:, 0], loops])
    deg = np.bincount(rows, minlength=n).astype(np.float32)
    vals = (deg[rows] ** -0.5) * (deg[cols] ** -0.5)
    idx = torch.from_numpy(np.stack([rows, cols])).long()
    vals_t = torch.from_numpy(vals.astype(np.float32))
    return torch.sparse_coo_tensor(idx, vals_t, (n, n), check_invariants=False).coalesce()


class GCN(nn.Module):
    def __init__(self, d: int, hidden: int = 32, dropout: float = 0.5):
        super().__init__()
        self.l1, self.l2 = nn.Linear(d, hidden), nn.Linear(hidden, 1)
        self.dropout = dropout

    def forward(self, X: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        h = F.relu(torch.sparse.mm(A, self.l1(X)))
        h = F.dropout(h, self.dropout, self.training)
        return torch.sparse.mm(A, self.l2(h)).squeeze(1)


def train_gcn(train_graph: Graph, nodes: np.ndarray | None = None, epochs: int = 200, seed: int = 0) -> GCN:
    torch.manual_seed(seed)
    A = sparse_norm_adj(train_graph)
    X = torch.from_numpy(train_graph.X).float()
    y = torch.from_numpy(train_graph.y).float()
    idx = torch.arange(train_graph.n) if nodes is None else torch.from_numpy(nodes).long()
    model = GCN(X.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        loss = F.binary_cross_entropy_with_logits(model(X, A)[idx], y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


@torch.no_grad()
def evaluate(model: GCN, real: Graph, test: np.ndarray) -> dict[str, float]:
    """Accuracy, ΔSP and ΔEO of the model on the real graph's test nodes."""
    logits = model(torch.from_numpy(real.X).float(), sparse_norm_adj(real)).numpy()
    pred = (logits[test] > 0).astype(np.int64)
    y, s = real.y[test], real.s[test]
    from sklearn.metrics import roc_auc_score

    return {
        "accuracy": float((pred == y).mean()),
        "auc": float(roc_auc_score(y, logits[test])) if len(np.unique(y)) == 2 else float("nan"),
        "delta_sp": delta_sp(pred, s),
        "delta_eo": delta_eo(pred, y, s),
    }


def downstream(train_graph: Graph, real: Graph, test: np.ndarray, seed: int = 0, epochs: int = 200) -> dict[str, float]:
    from .generators import torch_threads

    with torch_threads(1):
        return evaluate(train_gcn(train_graph, epochs=epochs, seed=seed), real, test)

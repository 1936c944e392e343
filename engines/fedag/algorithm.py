"""FedAG's steps as engine-agnostic pure functions (spec §1, authors' ``FedAdapter_final.py``).

``client_train`` (C.1), ``prototypes`` + ``score_synthetic`` (C.2-C.3, quality-aware scoring),
``init_adapter`` (step 0), ``server_mutual_learning`` (S.1 adapters as students, S.2 attention-regularised
cross-domain learning, then clients as students), ``momentum_merge`` (step 4). The drivers in
``federation.py`` move only weights, scores and metrics between them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from .model import LOGIT_SCALE, ClientNet, ServerModel, to_tensor


def _batches(n: int, bs: int, gen: torch.Generator, shuffle: bool = True):
    order = torch.randperm(n, generator=gen) if shuffle else torch.arange(n)
    return [order[i:i + bs] for i in range(0, n, bs)]


def kd_loss(student: torch.Tensor, teacher: torch.Tensor, labels: torch.Tensor, alpha: float = 0.5,
            temperature: float = 1.0) -> torch.Tensor:
    """α·KL(softmax(teacher/T) ‖ softmax(student/T))·T² + (1−α)·CE(student, y) (code: ``knowledge_distillation_loss``)."""
    soft = F.kl_div(F.log_softmax(student / temperature, 1), F.softmax(teacher / temperature, 1),
                    reduction="batchmean") * temperature ** 2
    return alpha * soft + (1 - alpha) * F.cross_entropy(student, labels)


def attention_regulariser(alpha: torch.Tensor, own: int) -> torch.Tensor:
    """Σ_b max_j (α_j − α_own): zero iff the sample's own-domain adapter has the largest weight
    (code: ``(att_score - att_score[i]).max(dim=0)[0].sum()``). ``alpha`` is (D, B)."""
    return (alpha - alpha[own]).max(dim=0).values.sum()


# ---- client side (runs inside a silo) ---------------------------------------------------------------------------

def client_train(model: ClientNet, x: np.ndarray, y: np.ndarray, epochs: int, lr: float, bs: int,
                 gen: torch.Generator, cancelled: Callable[[], bool] = lambda: False) -> float:
    """C.1: cross-entropy on the client's real images; returns the last epoch's mean loss."""
    xt, yt = to_tensor(x), torch.as_tensor(y)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    last = 0.0
    for _ in range(epochs):
        tot = 0.0
        for b in _batches(len(yt), bs, gen):
            loss = F.cross_entropy(model(xt[b]), yt[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(b)
        last = tot / len(yt)
        if cancelled():
            break
    return last


@torch.no_grad()
def prototypes(model: ClientNet, x: np.ndarray, y: np.ndarray, n_classes: int) -> torch.Tensor:
    """P_y = mean of the penultimate features h(x) over the client's real samples of class y (C, h)."""
    model.eval()
    h = model.features(to_tensor(x))
    yt = torch.as_tensor(y)
    return torch.stack([h[yt == k].mean(0) if (yt == k).any() else torch.zeros(h.shape[1]) for k in range(n_classes)])


@torch.no_grad()
def score_synthetic(model: ClientNet, protos: torch.Tensor, x_syn: np.ndarray, y_syn: np.ndarray) -> np.ndarray:
    """C.3: q(x̂) = cos(h(x̂), P_ŷ) for each synthetic sample of the client's domain (code: ``cos_sim_tensor``)."""
    model.eval()
    h = model.features(to_tensor(x_syn))
    return F.cosine_similarity(h, protos[torch.as_tensor(y_syn)], dim=1, eps=1e-8).numpy().astype(np.float32)


def momentum_merge(local: dict[str, torch.Tensor], distilled: dict[str, torch.Tensor], m: float) -> dict:
    """Step 4: θ ← m·θ_after local training + (1−m)·θ_after mutual learning (code: ``args.momentum``)."""
    return {k: m * local[k] + (1 - m) * distilled[k] if local[k].is_floating_point() else local[k] for k in local}


# ---- server side ---------------------------------------------------------------------------------------------------

def init_adapter(server: ServerModel, i: int, z: torch.Tensor, y: torch.Tensor, epochs: int, lr: float, bs: int,
                 gen: torch.Generator) -> None:
    """Step 0: symmetric image-text contrastive loss of adapter i on its domain's synthetic features
    (code: ``ClipModelatFed.train``; the batch's own captions are the text side)."""
    opt = torch.optim.Adam(server.adapters[i].parameters(), lr=lr)
    for _ in range(epochs):
        for b in _batches(len(y), bs, gen):
            zt = F.normalize(server.adapters[i](z[b]) * z[b], dim=-1)
            logits = LOGIT_SCALE * zt @ server.text[y[b]].t()
            gt = torch.arange(len(b))
            loss = (F.cross_entropy(logits, gt) + F.cross_entropy(logits.t(), gt)) / 2
            opt.zero_grad()
            loss.backward()
            opt.step()


def server_mutual_learning(server: ServerModel, domain_clients: list[list[ClientNet]], syn: list[dict],
                           lam: float, kd_alpha: float, lr: float, bs: int, epochs: int, gen: torch.Generator,
                           cancelled: Callable[[], bool] = lambda: False) -> dict[str, float]:
    """S.1-S.2 on synthetic data, batches drawn in lock-step from every in-domain.

    ``syn[i]`` holds domain i's synthetic ``x`` (pixels, for the client models), ``z`` (frozen CLIP features),
    ``y`` and ``q`` (quality scores uploaded by the domain's clients). ``domain_clients[i]`` are copies of the
    uploaded client models of domain i; they are updated in place (clients as students).
    Optimisers are created once per call (the code re-creates Adam every batch, resetting its moments).
    """
    server_params = list(server.parameters())
    opt_s = torch.optim.Adam([p for p in server_params if p.requires_grad], lr=lr)
    all_clients = [c for cs in domain_clients for c in cs]
    opt_c = torch.optim.Adam([p for c in all_clients for p in c.parameters()], lr=lr)
    xs = [to_tensor(s["x"]) for s in syn]
    logs = {"kd": 0.0, "il": 0.0, "reg": 0.0, "client_kd": 0.0, "steps": 0}
    for _ in range(epochs):
        groups = list(zip(*[_batches(len(s["y"]), bs, gen) for s in syn]))
        for group in groups:
            # adapters (and g) as students, clients frozen as teachers
            for c in all_clients:
                c.eval()
            loss_kd = loss_il = reg_tot = 0.0
            for i, b in enumerate(group):
                z, y, q = syn[i]["z"][b], syn[i]["y"][b], syn[i]["q"][b]
                with torch.no_grad():
                    teacher = torch.stack([c(xs[i][b]) for c in domain_clients[i]]).mean(0) * q.unsqueeze(1)
                s = server.all_logits(z)
                loss_kd = loss_kd + kd_loss(s[i], teacher, y, kd_alpha)
                comb_alpha = server.attention(s)
                comb = (comb_alpha.unsqueeze(-1) * s).sum(0)
                reg = attention_regulariser(comb_alpha, i)
                loss_il = loss_il + F.cross_entropy(s[i], y) + F.cross_entropy(comb, y) + lam * reg
                reg_tot += float(reg.detach())
            loss = loss_kd + loss_il
            opt_s.zero_grad()
            loss.backward()
            opt_s.step()
            # clients as students of their domain's adapter, logits scaled by q
            for c in all_clients:
                c.train()
            loss_c = 0.0
            for i, b in enumerate(group):
                z, y, q = syn[i]["z"][b], syn[i]["y"][b], syn[i]["q"][b]
                with torch.no_grad():
                    teacher = server.adapter_logits(z, i)
                for c in domain_clients[i]:
                    loss_c = loss_c + kd_loss(c(xs[i][b]) * q.unsqueeze(1), teacher, y, kd_alpha)
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
            logs["kd"] += float(loss_kd.detach())
            logs["il"] += float(loss_il.detach())
            logs["reg"] += reg_tot
            logs["client_kd"] += float(loss_c.detach())
            logs["steps"] += 1
            if cancelled():
                break
    n = max(logs.pop("steps"), 1)
    return {k: v / n for k, v in logs.items()}


# ---- evaluation ------------------------------------------------------------------------------------------------------

@torch.no_grad()
def one2one(server: ServerModel, z: torch.Tensor, y: torch.Tensor, i: int) -> float:
    return float((server.adapter_logits(z, i).argmax(1) == y).float().mean())


@torch.no_grad()
def one2all(server: ServerModel, z: torch.Tensor, y: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    """Accuracy of the attention-combined logits, α (D, B), per-adapter logits (D, B, C)."""
    comb, a, s = server.combined(z)
    return float((comb.argmax(1) == y).float().mean()), a, s


@torch.no_grad()
def client_accuracy(model: ClientNet, x: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    return float((model(to_tensor(x)).argmax(1) == torch.as_tensor(y)).float().mean())

"""In-process drivers: FedAG (Algorithm 1 of the paper, ``FedAdapter_final.py``) and the baselines on the
same silos, rounds and local budget: FedCLIP (one gating adapter, FedAvg + server fine-tuning on the synthetic
data; ``Baseline_FedCLIP.py``), FedAvg of the client classifiers (FedViT analogue) and zero-shot CLIP.

Every driver returns ``{"history": [per-round metrics], ...}`` with accuracies on the server's validation and
test splits: ``in`` (in-domain; one2all for FedAG), ``in_one2one`` (FedAG: adapter i on domain i), ``ood``
(the held-out domain).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from . import algorithm as alg
from .federation import (Channel, ClientNet, GateAdapter, Setup, _reset_clients, auroc, fedavg, state_numpy,
                         state_torch, train_gate)
from .model import ServerModel, zero_shot_logits

Progress = Callable[..., None]  # (fraction, message[, FedAG's metrics of the round])


def _noop(*_a, **_k):
    return None


def evaluate_fedag(s: Setup, server: ServerModel) -> dict[str, float]:
    out = {}
    for split, sets in s.eval_sets.items():
        pre = "" if split == "test" else "val_"
        o2o = [alg.one2one(server, sets[d]["z"], sets[d]["y"], i) for i, d in enumerate(s.in_domains)]
        o2a, own = [], []
        for i, d in enumerate(s.in_domains):
            acc, a, _ = alg.one2all(server, sets[d]["z"], sets[d]["y"])
            o2a.append(acc)
            own.append(float((a.argmax(0) == i).float().mean()))
        out[pre + "in_one2one"] = float(np.mean(o2o))
        out[pre + "in"] = float(np.mean(o2a))
        out[pre + "ood"] = alg.one2all(server, sets[s.held_out]["z"], sets[s.held_out]["y"])[0]
        out[pre + "own_max"] = float(np.mean(own))
    return out


class InProcess:
    """The in-process transport: the clients are objects in this process (``Setup.clients``); every upload passes
    ``Channel.upload`` (the privacy boundary). ``flower.FlowerTransport`` does the same through Flower messages."""

    def __init__(self, s: Setup, cancelled: Callable[[], bool] = lambda: False):
        self.s, self.cancelled = s, cancelled
        self.channel = Channel()
        self.log = self.channel.log
        _reset_clients(s, s.params.seed)

    def fit(self) -> list:
        """Local training, prototypes and quality of each client's domain's synthetic samples; one upload each."""
        p, s = self.s.params, self.s
        return [self.channel.upload(c, c.fit(p.local_epochs, p.lr_local, p.batch_size, s.synthetic[c.domain].x,
                                             s.synthetic[c.domain].y, cancelled=self.cancelled)) for c in s.clients]

    def merge(self, distilled: dict[int, dict[str, np.ndarray]], momentum: float) -> None:
        """Send each client its distilled weights; it applies the momentum merge."""
        by_id = {c.cid: c for c in self.s.clients}
        for cid, w in distilled.items():
            by_id[cid].merge(w, momentum)


def run_fedag(s: Setup, lam: float | None = None, quality: bool | None = None, momentum: float | None = None,
              progress: Progress = _noop, cancelled: Callable[[], bool] = lambda: False, transport=None) -> dict:
    """The server's side of FedAG; ``transport`` reaches the clients (default: ``InProcess``; Flower:
    ``flower.FlowerTransport``, from a ``ServerApp``). Only ``ClientUpdate``s come back from it."""
    p = s.params
    lam = p.lam if lam is None else lam
    quality = p.quality if quality is None else quality
    momentum = p.momentum if momentum is None else momentum
    transport = transport if transport is not None else InProcess(s, cancelled)
    torch.manual_seed(p.seed)
    gen = torch.Generator().manual_seed(p.seed)
    D = len(s.in_domains)
    server = ServerModel(s.text, D)
    ys = [torch.as_tensor(syn.y) for syn in s.synthetic]
    for i in range(D):  # step 0: adapters on their domain's synthetic data
        alg.init_adapter(server, i, s.syn_z[i], ys[i], p.init_epochs, p.lr, p.batch_size, gen)
    history = [{"round": 0, **evaluate_fedag(s, server)}]
    progress(0.0, f"adapters initialised: OOD {history[0]['ood']:.1%}", history[0])
    q_dom: list[np.ndarray] = []
    for r in range(1, p.rounds + 1):
        updates = sorted(transport.fit(), key=lambda u: u.client_id)
        if cancelled():
            break
        q_dom = [np.mean([u.quality for u in updates if u.domain == i], axis=0) for i in range(D)]
        syn = [{"x": s.synthetic[i].x, "z": s.syn_z[i], "y": ys[i],
                "q": torch.as_tensor(q_dom[i]) if quality else torch.ones(len(ys[i]))} for i in range(D)]
        students = []
        for i in range(D):
            ms = []
            for u in updates:
                if u.domain == i:
                    m = s.make_client()
                    m.load_state_dict(state_torch(u.weights))
                    ms.append((u, m))
            students.append(ms)
        logs = alg.server_mutual_learning(server, [[m for _, m in ms] for ms in students], syn, lam, p.kd_alpha,
                                          p.lr, p.batch_size, p.interact_epochs, gen, cancelled)
        transport.merge({u.client_id: state_numpy(m) for ms in students for u, m in ms}, momentum)
        h = {"round": r, **evaluate_fedag(s, server), **{f"loss_{k}": v for k, v in logs.items()}}
        h["q_auroc"] = auroc(np.concatenate([q[~syn_.corrupted] for q, syn_ in zip(q_dom, s.synthetic)]),
                             np.concatenate([q[syn_.corrupted] for q, syn_ in zip(q_dom, s.synthetic)]))
        history.append(h)
        progress(r / p.rounds, f"round {r}/{p.rounds}: in-domain {h['in']:.1%}, out-of-domain {h['ood']:.1%}", h)
        if cancelled():
            break
    return {"history": history, "server": server, "quality": q_dom, "channel": transport.log}


def run_fedclip(s: Setup, progress: Progress = _noop, cancelled: Callable[[], bool] = lambda: False) -> dict:
    p = s.params
    torch.manual_seed(p.seed + 1)
    gen = torch.Generator().manual_seed(p.seed + 1)
    adapter = GateAdapter(s.text.shape[1])
    z_all, y_all = torch.cat(s.syn_z), torch.cat([torch.as_tensor(x.y) for x in s.synthetic])
    channel, history = Channel(), []
    for r in range(1, p.rounds + 1):
        w = state_numpy(adapter)
        ups = [channel.upload(c, c.fit_adapter(w, s.encode, s.text, p.local_epochs, p.lr, p.batch_size))
               for c in s.clients]
        adapter.load_state_dict(state_torch(fedavg(ups)))
        train_gate(adapter, z_all, y_all, s.text, p.interact_epochs, p.lr, p.batch_size, gen)  # server fine-tuning
        history.append({"round": r, **_eval_logits(s, lambda z: _gate_logits(adapter, z, s.text))})
        progress(r / p.rounds, f"FedCLIP round {r}/{p.rounds}")
        if cancelled():
            break
    return {"history": history}


def run_fedavg(s: Setup, progress: Progress = _noop, cancelled: Callable[[], bool] = lambda: False) -> dict:
    p = s.params
    _reset_clients(s, p.seed)
    torch.manual_seed(p.seed + 2)
    glob = s.make_client()
    channel, history = Channel(), []
    for r in range(1, p.rounds + 1):
        w = state_numpy(glob)
        ups = [channel.upload(c, c.fit_global(w, p.local_epochs, p.lr_local, p.batch_size)) for c in s.clients]
        glob.load_state_dict(state_torch(fedavg(ups)))
        history.append({"round": r, **_eval_pixels(s, glob)})
        progress(r / p.rounds, f"FedAvg round {r}/{p.rounds}")
        if cancelled():
            break
    return {"history": history}


def run_zeroshot(s: Setup) -> dict:
    return {"history": [{"round": 0, **_eval_logits(s, lambda z: zero_shot_logits(z, s.text))}]}


@torch.no_grad()
def _gate_logits(adapter: GateAdapter, z: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
    return zero_shot_logits(adapter(z) * z, text)


@torch.no_grad()
def _eval_logits(s: Setup, fn) -> dict[str, float]:
    out = {}
    for split, sets in s.eval_sets.items():
        pre = "" if split == "test" else "val_"
        acc = {d: float((fn(v["z"]).argmax(1) == v["y"]).float().mean()) for d, v in sets.items()}
        out[pre + "in"] = float(np.mean([acc[d] for d in s.in_domains]))
        out[pre + "ood"] = acc[s.held_out]
    return out


@torch.no_grad()
def _eval_pixels(s: Setup, model: ClientNet) -> dict[str, float]:
    out = {}
    for split, sets in s.eval_sets.items():
        pre = "" if split == "test" else "val_"
        acc = {d: alg.client_accuracy(model, v["x"], v["y"].numpy()) for d, v in sets.items()}
        out[pre + "in"] = float(np.mean([acc[d] for d in s.in_domains]))
        out[pre + "ood"] = acc[s.held_out]
    return out

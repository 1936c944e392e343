"""FedAG's rounds on Flower (spec §4 "Running on an engine", acceptance check 6).

``run_fedag_flower`` runs ``flwr.simulation.run_simulation`` with

- a ``ServerApp`` whose ``@app.main()`` is the very server loop of the in-process driver, ``drivers.run_fedag``,
  given a ``FlowerTransport`` instead of ``drivers.InProcess``: it sends ``train`` messages (the run's parameters,
  the client's domain's synthetic images and, from round 2 on, the client's KD-updated weights) through the
  ``Grid`` and turns the replies back into ``ClientUpdate``s. The server-side ``Setup`` it works on has no client
  objects at all (``clients=[]``): it cannot read a silo's images even by mistake.
- a ``ClientApp`` (``client_app``) whose node ``partition-id`` is the client id: it rebuilds its own silo from the
  run's parameters (``federation.silos``), keeps its model, its batch-order generator and its weights after local
  training in the node's ``Context.state`` between rounds, applies the momentum merge to the weights the server
  sent, trains (``Client.fit``: local training, prototypes, quality scores) and replies with weights + one q per
  synthetic sample + scalar metrics, after the same privacy check as the in-process channel
  (``federation.check_private``, run inside the silo before anything is sent).

Seeds, batch orders, model initialisations and the algorithm's functions are those of the in-process driver, so
the two give the same numbers up to floating-point differences (``tests/engines/fedag/test_flower.py``).
``flwr`` (1.32.1, installed ``--no-deps``: see docs/methods/fedag.md) and Ray (its simulation backend) are needed
only here; nothing else in the method imports them.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Callable

import numpy as np
import torch

from engines.common.flower import array_record as _record
from engines.common.flower import wait_for_nodes

from .federation import N_CLASSES, Client, ClientUpdate, PrivacyViolation, Setup, check_private, silos, state_numpy
from .params import FederationParams

#: the payload a client reply may carry (anything else is refused by the server)
REPLY_KEYS = {"weights", "quality", "metrics"}


def _arrays(rec) -> dict[str, np.ndarray]:
    return {k: a.numpy() for k, a in rec.items()}


def _torch(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in arrays.items()}


# ---- the client (runs in a Flower SuperNode: a Ray actor in the simulation) ----------------------------------------

@lru_cache(maxsize=4)
def _silos(params_json: str) -> list:
    """Every silo of the run (id, domain, images, labels); a client takes only its own (``partition-id``). In a
    deployment each site would load its own images here; the simulation derives them from the same split."""
    from .domains import real_domains

    p = FederationParams.model_validate_json(params_json)
    return silos(p, real_domains(list(p.domains), p.images_per_domain, p.split_seed))


def _restore(params_json: str, cid: int, state) -> Client:
    from .paper_scale import PaperScale

    p = FederationParams.model_validate_json(params_json)
    own = _silos(params_json)[cid]
    c = Client(cid, own[1], own[2], own[3], p.seed, PaperScale.from_env().client_factory(N_CLASSES))
    if "model" in state:  # a later round: the node's state, not a fresh model
        c.model.load_state_dict(_torch(_arrays(state["model"])))
        c.gen.set_state(torch.as_tensor(_arrays(state["gen"])["state"]))
    if "after_local" in state:
        c._after_local = _torch(_arrays(state["after_local"]))
    return c


def _save(c: Client, state) -> None:
    state["model"] = _record(state_numpy(c.model))
    state["gen"] = _record({"state": c.gen.get_state().numpy()})
    if c._after_local is not None:
        state["after_local"] = _record({k: v.detach().cpu().numpy() for k, v in c._after_local.items()})


def client_app():
    """The FedAG ``ClientApp``: ``query`` answers who the node is; ``train`` merges, trains, scores and replies."""
    from flwr.app import Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.query()
    def whoami(msg: Message, context) -> Message:
        pj = str(msg.content["config"]["params"])
        cid = int(context.node_config["partition-id"])
        return Message(RecordDict({"metrics": MetricRecord({"cid": cid, "domain": int(_silos(pj)[cid][1])})}),
                       reply_to=msg)

    @app.train()
    def train(msg: Message, context) -> Message:
        cfg = msg.content["config"]
        torch.set_num_threads(int(cfg["threads"]))
        pj = str(cfg["params"])
        p = FederationParams.model_validate_json(pj)
        c = _restore(pj, int(context.node_config["partition-id"]), context.state)
        if "distilled" in msg.content:  # step 4 of the previous round: θ ← m·θ_local + (1−m)·θ_distilled
            c.merge(_arrays(msg.content["distilled"]), float(cfg["momentum"]))
        if bool(cfg["fit"]):
            syn = _arrays(msg.content["synthetic"])
            u = c.fit(p.local_epochs, p.lr_local, p.batch_size, syn["x"], syn["y"], score=bool(cfg["score"]))
            check_private(u, c)  # inside the silo, before anything leaves it
            content = RecordDict({"weights": _record(u.weights),
                                  "quality": _record({"q": u.quality if u.quality is not None else np.zeros(0)}),
                                  "metrics": MetricRecord({"cid": c.cid, "domain": c.domain, **u.metrics})})
        else:
            content = RecordDict({"metrics": MetricRecord({"cid": c.cid, "domain": c.domain})})
        _save(c, context.state)
        return Message(content, reply_to=msg)

    return app


# ---- the server (the ServerApp's main loop) ------------------------------------------------------------------------

class FlowerTransport:
    """``drivers.run_fedag``'s way to the clients through a Flower ``Grid`` (same interface as ``InProcess``)."""

    def __init__(self, grid, s: Setup, threads: int, timeout_s: float = 120.0):
        from flwr.app import ConfigRecord, Message, RecordDict

        self.grid, self.s, self.threads = grid, s, threads
        self.params_json = s.params.model_dump_json()
        self.log: list[dict] = []
        self.pending: dict[int, dict[str, np.ndarray]] = {}
        self.momentum = s.params.momentum
        n = s.params.clients_per_domain * len(s.in_domains)
        wait_for_nodes(grid, n, timeout_s)
        asks = [Message(RecordDict({"config": ConfigRecord({"params": self.params_json})}), dst_node_id=nid,
                        message_type="query") for nid in grid.get_node_ids()]
        self.node_of: dict[int, int] = {}
        self.domain_of: dict[int, int] = {}
        for m in self._send(asks):
            cid = int(m.content["metrics"]["cid"])
            self.node_of[cid], self.domain_of[cid] = m.metadata.src_node_id, int(m.content["metrics"]["domain"])
        if sorted(self.node_of) != list(range(n)):
            raise RuntimeError(f"Flower: client ids {sorted(self.node_of)}, expected 0..{n - 1}")

    def _send(self, messages: list) -> list:
        replies = list(self.grid.send_and_receive(messages))
        for m in replies:
            if m.has_error():
                raise RuntimeError(f"Flower client failed: {m.error.reason}")
        if len(replies) != len(messages):
            raise RuntimeError(f"Flower: {len(replies)} of {len(messages)} clients replied")
        return replies

    def _train_messages(self, fit: bool) -> list:
        from flwr.app import ConfigRecord, Message, RecordDict

        out = []
        for cid, nid in sorted(self.node_of.items()):
            content = {"config": ConfigRecord({"params": self.params_json, "threads": self.threads, "fit": fit,
                                               "score": True, "momentum": float(self.momentum)})}
            if fit:
                syn = self.s.synthetic[self.domain_of[cid]]
                content["synthetic"] = _record({"x": syn.x, "y": syn.y})
            if cid in self.pending:
                content["distilled"] = _record(self.pending[cid])
            out.append(Message(RecordDict(content), dst_node_id=nid, message_type="train"))
        self.pending = {}
        return out

    def _update(self, m) -> ClientUpdate:
        keys = set(m.content.keys())
        if keys != REPLY_KEYS:
            raise PrivacyViolation(f"a client reply carried {sorted(keys)}, not {sorted(REPLY_KEYS)}")
        met = dict(m.content["metrics"])
        cid, dom = int(met.pop("cid")), int(met.pop("domain"))
        if m.metadata.src_node_id != self.node_of.get(cid) or dom != self.domain_of[cid]:
            raise PrivacyViolation(f"node {m.metadata.src_node_id} replied as client {cid}")
        w, q = _arrays(m.content["weights"]), _arrays(m.content["quality"])["q"]
        self.log.append({"client": cid, "kind": "update", "weights": len(w), "quality": len(q),
                         "bytes": int(sum(a.nbytes for a in w.values()) + q.nbytes)})
        return ClientUpdate(cid, dom, w, q if len(q) else None, {k: float(v) for k, v in met.items()})

    def fit(self) -> list[ClientUpdate]:
        replies = sorted(self._send(self._train_messages(fit=True)), key=lambda m: int(m.content["metrics"]["cid"]))
        return [self._update(m) for m in replies]

    def merge(self, distilled: dict[int, dict[str, np.ndarray]], momentum: float) -> None:
        """Kept until the next ``train`` message carries them (the client merges before it trains)."""
        self.pending, self.momentum = dict(distilled), momentum

    def close(self) -> None:
        """After the last round: deliver the last distilled weights (the clients end merged, as in-process)."""
        if self.pending:
            self._send(self._train_messages(fit=False))


def run_fedag_flower(s: Setup, lam: float | None = None, quality: bool | None = None, momentum: float | None = None,
                     progress: Callable = lambda *a, **k: None, backend_config: dict | None = None,
                     verbose: bool = False) -> dict:
    """FedAG through ``flwr.simulation.run_simulation`` (Ray backend): one SuperNode per client. Returns what
    ``drivers.run_fedag`` returns, plus ``wall_s``."""
    from flwr.serverapp import ServerApp

    from engines.common.flower import simulate

    from . import drivers as dr

    server_side = dataclasses.replace(s, clients=[])  # the server holds no silo
    out: dict = {}
    errors: list[BaseException] = []
    app = ServerApp()

    @app.main()
    def main(grid, context) -> None:
        try:
            t = FlowerTransport(grid, server_side, torch.get_num_threads())
            out.update(dr.run_fedag(server_side, lam, quality, momentum, progress, transport=t))
            t.close()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread below
            errors.append(e)

    n = s.params.clients_per_domain * len(s.in_domains)
    wall_s = simulate(app, client_app(), n, errors, verbose, backend_config)
    if "history" not in out:
        raise RuntimeError("the Flower simulation ended without a result (see its log)")
    out["wall_s"] = wall_s
    return out

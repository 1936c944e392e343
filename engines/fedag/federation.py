"""The federation: silos, messages, the privacy boundary, and the in-process driver for FedAG and baselines.

Only three kinds of payload cross a silo's boundary towards the server (``ClientUpdate``): model weights, one
quality score per server-side synthetic sample, and scalar metrics. ``Channel.upload`` checks every payload
against the uploading client's own images (shape and content fingerprints) and raises ``PrivacyViolation``
before the server sees it. The server sends synthetic images, weights and round settings the other way.

The same rounds also run on Flower (``flower.py``: a ``ServerApp`` whose main loop is ``drivers.run_fedag`` with a
``FlowerTransport``, and a ``ClientApp`` wrapping this module's ``Client``); the algorithm lives in
``algorithm.py`` as pure functions.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from . import algorithm as alg
from .domains import DomainData, SyntheticSet, real_domains, synthetic_sets
from .model import LOGIT_SCALE, ClientNet, GateAdapter
from .params import FederationParams

N_CLASSES = 10
IMAGE_SHAPES = {(32, 32, 3), (3, 32, 32)}


class PrivacyViolation(RuntimeError):
    """A client payload carried something other than weights, scores and metrics."""


def _fingerprint(row: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(row, dtype=np.float32).tobytes()).hexdigest()


@dataclass(frozen=True)
class ClientUpdate:
    """Client → server: weights (name → array), quality scores of the domain's synthetic samples, metrics."""

    client_id: int
    domain: int
    weights: dict[str, np.ndarray]
    quality: np.ndarray | None = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class Channel:
    """Every client → server payload goes through ``upload``; ``log`` records what crossed (for the tab/tests)."""

    log: list[dict] = field(default_factory=list)

    def upload(self, client: "Client", update: ClientUpdate) -> ClientUpdate:
        check_private(update, client)
        nbytes = sum(a.nbytes for a in update.weights.values()) + (0 if update.quality is None else update.quality.nbytes)
        self.log.append({"client": client.cid, "kind": "update", "weights": len(update.weights),
                         "quality": 0 if update.quality is None else len(update.quality), "bytes": int(nbytes)})
        return update


def check_private(update, client: "Client") -> None:
    """The privacy contract: only weights, per-synthetic-sample scores and scalar metrics; no raw image."""
    if not isinstance(update, ClientUpdate):
        raise PrivacyViolation(f"client {client.cid} sent a {type(update).__name__}, not a ClientUpdate")
    arrays = list(update.weights.items())
    if update.quality is not None:
        if np.ndim(update.quality) != 1:
            raise PrivacyViolation(f"client {client.cid}: quality must be one score per synthetic sample")
        arrays.append(("quality", np.asarray(update.quality)))
    for k, v in update.metrics.items():
        if not isinstance(v, (int, float)):
            raise PrivacyViolation(f"client {client.cid}: metric {k!r} is a {type(v).__name__}, not a number")
    for name, a in arrays:
        if not isinstance(a, np.ndarray):
            raise PrivacyViolation(f"client {client.cid}: {name!r} is a {type(a).__name__}, not an array")
        if a.ndim >= 3 and tuple(a.shape[-3:]) in IMAGE_SHAPES:
            raise PrivacyViolation(f"client {client.cid}: {name!r} has the shape of images {a.shape}")
        size = client.image_size
        if a.size and a.size % size == 0:
            rows = a.reshape(-1, size)
            if any(_fingerprint(r) in client.fingerprints for r in rows):
                raise PrivacyViolation(f"client {client.cid}: {name!r} contains a raw client image")


def state_numpy(model: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def state_torch(weights: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in weights.items()}


class Client:
    """One silo: its private images stay in ``_x``/``_y``; it answers instructions with ``ClientUpdate``s."""

    def __init__(self, cid: int, domain: int, x: np.ndarray, y: np.ndarray, seed: int,
                 make_model: Callable[[], torch.nn.Module] | None = None):
        self.cid, self.domain = cid, domain
        self.make_model = make_model or (lambda: ClientNet(N_CLASSES))
        self._x, self._y = x, y
        self.image_size = int(np.prod(x.shape[1:]))
        self.fingerprints = {_fingerprint(r) for r in x.reshape(len(x), -1)}
        self.gen = torch.Generator().manual_seed(seed * 1000 + cid)
        torch.manual_seed(seed * 1000 + cid)
        self.model = self.make_model()
        self._after_local: dict[str, torch.Tensor] | None = None
        self._z: torch.Tensor | None = None

    @property
    def n(self) -> int:
        return len(self._y)

    # FedAG ----------------------------------------------------------------------------------------------------------
    def fit(self, epochs: int, lr: float, bs: int, x_syn: np.ndarray, y_syn: np.ndarray, score: bool = True,
            cancelled=lambda: False) -> ClientUpdate:
        """C.1 local training, C.2 prototypes, C.3 quality of the server's synthetic samples; upload weights + q."""
        loss = alg.client_train(self.model, self._x, self._y, epochs, lr, bs, self.gen, cancelled)
        self._after_local = {k: v.clone() for k, v in self.model.state_dict().items()}
        q = None
        if score:
            protos = alg.prototypes(self.model, self._x, self._y, N_CLASSES)
            q = alg.score_synthetic(self.model, protos, x_syn, y_syn)
        return ClientUpdate(self.cid, self.domain, state_numpy(self.model), q,
                            {"loss": float(loss), "n": float(self.n)})

    def merge(self, distilled: dict[str, np.ndarray], momentum: float) -> None:
        """Step 4 on the client: θ ← m·θ_local + (1−m)·θ_distilled."""
        self.model.load_state_dict(alg.momentum_merge(self._after_local, state_torch(distilled), momentum))

    # FedAvg of client classifiers -------------------------------------------------------------------------------------
    def fit_global(self, weights: dict[str, np.ndarray], epochs: int, lr: float, bs: int) -> ClientUpdate:
        self.model.load_state_dict(state_torch(weights))
        loss = alg.client_train(self.model, self._x, self._y, epochs, lr, bs, self.gen)
        return ClientUpdate(self.cid, self.domain, state_numpy(self.model), None, {"loss": float(loss)})

    # FedCLIP: the client runs the frozen CLIP locally and trains one gating adapter ---------------------------------
    def fit_adapter(self, weights: dict[str, np.ndarray], encode: Callable, text: torch.Tensor, epochs: int,
                    lr: float, bs: int) -> ClientUpdate:
        if self._z is None:
            self._z = encode(self._x)
        adapter = GateAdapter(text.shape[1])
        adapter.load_state_dict(state_torch(weights))
        train_gate(adapter, self._z, torch.as_tensor(self._y), text, epochs, lr, bs, self.gen)
        return ClientUpdate(self.cid, self.domain, state_numpy(adapter), None, {"n": float(self.n)})


def train_gate(adapter: GateAdapter, z: torch.Tensor, y: torch.Tensor, text: torch.Tensor, epochs: int, lr: float,
               bs: int, gen: torch.Generator) -> None:
    """The symmetric image-text contrastive loss of one gating adapter (FedCLIP's local and server step)."""
    t = F.normalize(text, dim=-1)
    opt = torch.optim.Adam(adapter.parameters(), lr=lr)
    for _ in range(epochs):
        for b in alg._batches(len(y), bs, gen):
            zt = F.normalize(adapter(z[b]) * z[b], dim=-1)
            logits = LOGIT_SCALE * zt @ t[y[b]].t()
            gt = torch.arange(len(b))
            loss = (F.cross_entropy(logits, gt) + F.cross_entropy(logits.t(), gt)) / 2
            opt.zero_grad()
            loss.backward()
            opt.step()


def fedavg(updates: list[ClientUpdate]) -> dict[str, np.ndarray]:
    """Equal-weight parameter average (code: ``Baseline_FedCLIP.py``)."""
    return {k: np.mean([u.weights[k] for u in updates], axis=0).astype(updates[0].weights[k].dtype)
            for k in updates[0].weights}


@dataclass
class Setup:
    """Everything one leave-one-domain-out run needs: silos (clients), server data and frozen-CLIP features."""

    params: FederationParams
    in_domains: list[str]
    held_out: str
    clients: list[Client]
    synthetic: list[SyntheticSet]
    syn_z: list[torch.Tensor]
    eval_sets: dict[str, dict[str, dict]]  # split ("val"|"test") → domain → {"x", "y", "z"}
    text: torch.Tensor
    encode: Callable
    #: constructor of one client model: the small CNN, or a timm ViT at paper scale (``paper_scale.PaperScale``)
    make_client: Callable[[], torch.nn.Module] = field(default=lambda: ClientNet(N_CLASSES))
    scale: "object" = None  # the PaperScale the setup was built with (None: the tiny defaults)


def silos(p: FederationParams, data: dict[str, DomainData]) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(client id, in-domain index, images, labels) of every client: each in-domain's training images split into
    ``clients_per_domain`` silos. A Flower client rebuilds its own silo with this from the run's parameters."""
    out = []
    for di, d in enumerate(p.in_domains):
        dd = data[d]
        for part in np.array_split(np.arange(len(dd.train_y)), p.clients_per_domain):
            out.append((len(out), di, dd.train_x[part], dd.train_y[part]))
    return out


def build_setup(p: FederationParams, clip=None, data: dict[str, DomainData] | None = None, progress=None,
                scale=None, pipe=None, cancelled: Callable[[], bool] = lambda: False) -> Setup:
    """Silos (disjoint digits per domain, ``clients_per_domain`` clients each), server synthetic data, features.

    ``scale`` (a ``paper_scale.PaperScale``; default: read from the ``PAPERLAB_FEDAG_*`` settings) picks the
    server CLIP (a local ``CLIPModel`` folder or the zoo's tiny CLIP), the client model (the CNN or a timm ViT)
    and the synthetic-data generator (a local ``StableDiffusionPipeline`` or the deformed public-pool digits);
    ``clip`` / ``pipe`` pass already-loaded ones."""
    from engines.common.data.greyscale import digit_caption

    from .paper_scale import PaperScale

    scale = PaperScale.from_env() if scale is None else scale
    clip = clip if clip is not None else scale.load_clip(progress)
    make_client = scale.client_factory(N_CLASSES)
    pipe = pipe if pipe is not None else scale.load_pipeline()

    @torch.no_grad()
    def encode(x: np.ndarray) -> torch.Tensor:
        return torch.cat([clip.encode_images(x[i:i + 256], normalize=False).float().cpu()
                          for i in range(0, len(x), 256)])

    data = data or real_domains(list(p.domains), p.images_per_domain, p.split_seed)
    ins = p.in_domains
    clients = [Client(cid, di, x, y, p.seed, make_client) for cid, di, x, y in silos(p, data)]
    syn = synthetic_sets(p, pipe, scale, int(data[ins[0]].train_x.shape[1]), cancelled)
    evals = {s: {d: {"x": getattr(data[d], f"{s}_x"), "y": torch.as_tensor(getattr(data[d], f"{s}_y"))}
                 for d in p.domains} for s in ("val", "test")}
    for s in evals.values():
        for v in s.values():
            v["z"] = encode(v["x"])
    with torch.no_grad():
        text = clip.encode_texts([digit_caption(k) for k in range(N_CLASSES)], normalize=False).float().cpu()
    return Setup(p, ins, p.held_out, clients, syn, [encode(s.x) for s in syn], evals, text, encode, make_client, scale)


def auroc(clean_scores: np.ndarray, bad_scores: np.ndarray) -> float:
    """P(score of a clean render > score of a corrupted one) (ties count one half)."""
    if len(clean_scores) == 0 or len(bad_scores) == 0:
        return float("nan")
    c, b = np.asarray(clean_scores)[:, None], np.asarray(bad_scores)[None, :]
    return float((c > b).mean() + 0.5 * (c == b).mean())


def _reset_clients(s: Setup, seed: int) -> None:
    for c in s.clients:
        c.gen = torch.Generator().manual_seed(seed * 1000 + c.cid)
        torch.manual_seed(seed * 1000 + c.cid)
        c.model = s.make_client()
        c._after_local = None

"""TailOPT on Flower (spec §5 and acceptance check 7): Bi²Clip as a Flower strategy against built-in FedAdam.

``run_flower`` runs ``flwr.simulation.run_simulation`` (Ray backend, one SuperNode per worker) with

- a ``ClientApp`` (``client_app``) whose node ``partition-id`` is the worker id. Its ``train`` handler
  (``client_round``) rebuilds the deterministic task from the problem parameters sent in the message (as a gloo
  rank does), restores the worker's random stream from the node's ``Context.state``, runs the simulator's own
  ``algorithms.local_round`` for that one worker (z BiClip steps for Bi²Clip, z plain SGD steps for FedAdam) and
  replies with Δ^i = x^i_{t,z} − x_t (Bi²Clip) or x^i_{t,z} (what Flower's FedAdam expects) plus ``num-examples``.
- a ``ServerApp`` whose ``main`` runs two strategies one after the other on the same SuperNodes:
  ``Bi2ClipStrategy``, a subclass of Flower's ``FedAvg`` whose ``aggregate_train`` averages the Δ^i in worker
  order and applies the simulator's ``algorithms.outer_step("biclip", …)``, then Flower's built-in
  ``flwr.serverapp.strategy.FedAdam``. Each run keeps its own per-node random stream (``rng/<run>`` in the node
  state), so both start from the simulator's streams. The global objective F(x_t) is evaluated on the server
  (``evaluate_fn``), as the simulator records it.

Seeds, shards, thresholds (the probe scale is computed once on the server and sent with the config) and the
inner/outer functions are the simulator's, so Bi²Clip on Flower gives the simulator's parameters
(``tests/engines/tailopt/test_flower.py``). Flower's FedAdam is its own: it bias-corrects the server step size
(η·√(1−β₂^{t+1})/(1−β₁^{t+1})) and adds τ to √v, unlike the simulator's FedAdam (Reddi et al., no bias
correction, ε), so it is a peer, not a copy. ``flwr`` 1.32.1 (installed ``--no-deps``) and Ray are needed only
here.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import torch

from engines.common.flower import array_record, wait_for_nodes

from .algorithms import Resolved, local_round, outer_state, outer_step, resolve
from .params import HyperParams, ProblemParams
from .tasks import Task, make_task, probe_scale, worker_rngs

#: inner optimisers a Flower client runs (no per-worker state beyond the random stream)
CLIENT_INNER = ("sgd", "l2clip", "biclip")


@lru_cache(maxsize=4)
def _task(problem_json: str) -> Task:
    """The run's task (every shard; a node uses only its own): built deterministically from the parameters, as
    every gloo rank does. In a deployment each site would load its own shard here."""
    return make_task(ProblemParams.model_validate_json(problem_json), optimum=False)


def _x_record(x: np.ndarray):
    return array_record({"x": x})


# ---- the client ----------------------------------------------------------------------------------------------------

def client_round(content, cid: int, state):
    """One worker's round: z local steps of ``config['inner']`` from the broadcast x_t; returns the reply's
    ``RecordDict`` (``arrays``: Δ^i or x^i, ``metrics``: num-examples, worker id, clip fractions). ``state`` is the
    node's ``Context.state``: the worker's generator between rounds, one per run name."""
    from flwr.app import ConfigRecord, MetricRecord, RecordDict

    cfg = content["config"]
    kind, run, t = str(cfg["inner"]), str(cfg["run"]), int(cfg["server-round"]) - 1
    if kind not in CLIENT_INNER:
        raise ValueError(f"a Flower client runs the inner optimisers {CLIENT_INNER}, not {kind!r}")
    task = _task(str(cfg["problem"]))
    x = content["arrays"]["x"].numpy()
    if x.shape != (task.dim,):
        raise ValueError(f"x has shape {x.shape}, the task has {task.dim} parameters (another profile?)")
    h = resolve([HyperParams.model_validate_json(str(cfg["hyper"]))], float(cfg["scale"]), task.p.local_steps,
                task.dim, task.dtype)
    (rng,) = worker_rngs(int(cfg["seed"]), [cid])
    key = f"rng/{run}"
    if key in state:  # a later round of this run: continue the worker's stream
        rng.bit_generator.state = json.loads(str(state[key]["state"]))
    X = torch.as_tensor(x, dtype=task.dtype).reshape(1, -1)
    W, cf, _ = local_round(task, kind, h, X, [cid], [rng], t, {}, 0)
    state[key] = ConfigRecord({"state": json.dumps(rng.bit_generator.state)})
    out = (W[:, 0] - X) if str(cfg["reply"]) == "delta" else W[:, 0]
    z = task.p.local_steps
    return RecordDict({"arrays": _x_record(out[0].numpy()),
                       "metrics": MetricRecord({"num-examples": int(task.n_samples(cid)), "cid": cid,
                                                "clip-down": float(cf[0, 0]) / z, "clip-up": float(cf[0, 1]) / z})})


def client_app():
    """The TailOPT ``ClientApp``: ``train`` = ``client_round`` for the node's worker (``partition-id``)."""
    from flwr.app import Message
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context) -> Message:
        torch.set_num_threads(1)
        return Message(client_round(msg.content, int(context.node_config["partition-id"]), context.state),
                       reply_to=msg)

    return app


# ---- the server ----------------------------------------------------------------------------------------------------

def mean_delta(contents: list, n: int) -> torch.Tensor:
    """Δ_t = (1/N) Σ Δ^i over the replies' ``arrays``, stacked in worker order ([1, N, d] → mean over N: the
    simulator's ``LocalComm.mean``, so the same floats in the same order)."""
    by_cid = sorted(contents, key=lambda c: int(c["metrics"]["cid"]))
    cids = [int(c["metrics"]["cid"]) for c in by_cid]
    if cids != list(range(n)):
        raise RuntimeError(f"Flower: replies from workers {cids}, expected 0..{n - 1}")
    return torch.stack([torch.as_tensor(c["arrays"]["x"].numpy()) for c in by_cid]).unsqueeze(0).mean(1)


def _make_bi2clip_strategy():
    from flwr.app import MetricRecord
    from flwr.serverapp.strategy import FedAvg

    class Bi2ClipStrategy(FedAvg):
        """Bi²Clip's server: every worker trains each round (no sampling), ``aggregate_train`` averages the Δ^i and
        applies ``outer_step('biclip')``: x_{t+1} = x_t + η·BiClip_{ũ_t, d̃_t}(Δ_t) (with the optional momentum
        state, ``outer_state``). Clients evaluate nothing: F(x_t) is computed on the server."""

        def __init__(self, h: Resolved, n_workers: int, dim: int, dtype=torch.float64):
            super().__init__(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=n_workers,
                             min_available_nodes=n_workers)
            self.h, self.n = h, n_workers
            self.state = outer_state("biclip", h, 1, dim, dtype)
            self.current: torch.Tensor | None = None
            self.clip_out: list[list[float]] = []
            self.floats_received: list[int] = []

        def configure_train(self, server_round, arrays, config, grid):
            self.current = torch.as_tensor(arrays["x"].numpy()).reshape(1, -1)
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round, replies):
            valid, failed = self._check_and_log_replies(replies, is_train=True)
            if failed or len(valid) != self.n:
                reasons = "; ".join(m.error.reason for m in failed)
                raise RuntimeError(f"Flower: {len(valid)} of {self.n} workers replied ({reasons})")
            contents = [m.content for m in valid]
            delta = mean_delta(contents, self.n)
            co = np.zeros((1, 2))  # the [R, 2] slice outer_step fills (R = 1)
            x = outer_step("biclip", self.h, self.current, delta, self.state, server_round - 1, co)
            co = co[0]
            self.clip_out.append(co.tolist())
            self.floats_received.append(sum(int(np.prod(c["arrays"]["x"].shape)) for c in contents))
            inner = np.mean([[float(c["metrics"]["clip-down"]), float(c["metrics"]["clip-up"])] for c in contents], 0)
            return _x_record(x[0].numpy()), MetricRecord({"clip-in-down": float(inner[0]), "clip-in-up": float(inner[1]),
                                                          "clip-out-down": float(co[0]), "clip-out-up": float(co[1])})

    return Bi2ClipStrategy


def bi2clip_strategy(h: Resolved, n_workers: int, dim: int, dtype=torch.float64):
    """A ``Bi2ClipStrategy`` (the class is built on first use: flwr is imported only here)."""
    return _make_bi2clip_strategy()(h, n_workers, dim, dtype)


def train_config(p: ProblemParams, hp: HyperParams, run: str, inner: str, reply: str, scale: float, seed: int):
    from flwr.app import ConfigRecord

    return ConfigRecord({"problem": p.model_dump_json(), "hyper": hp.model_dump_json(), "run": run, "inner": inner,
                         "reply": reply, "scale": float(scale), "seed": int(seed)})


def run_flower(p: ProblemParams, bi2clip: HyperParams, fedadam: HyperParams, seed: int, rounds: int = 2,
               verbose: bool = False, timeout_s: float = 120.0) -> dict:
    """Bi²Clip (``Bi2ClipStrategy``) then Flower's built-in FedAdam, ``rounds`` rounds each, on the same
    ``p.workers`` SuperNodes of one ``run_simulation``. FedAdam's hyper-parameters: η = ``lr_out``, clients' SGD
    step ``lr_in``, β₁, β₂, τ = ``eps``. Returns per strategy the final x, F(x_t) for t = 0..rounds and the
    aggregated train metrics, plus ``wall_s``."""
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAdam

    from engines.common.flower import simulate

    task = make_task(p, optimum=False)  # the server evaluates the global objective, as the simulator does
    scale = probe_scale(task, seed)
    z, dim, n = p.local_steps, task.dim, p.workers
    out: dict = {}
    errors: list[BaseException] = []

    def evaluate(_round: int, arrays):
        from flwr.app import MetricRecord

        return MetricRecord({"loss": float(task.loss(torch.as_tensor(arrays["x"].numpy()).reshape(1, -1))[0])})

    def summary(result) -> dict:
        return {"x": result.arrays["x"].numpy().copy(),
                "loss": [float(result.evaluate_metrics_serverapp[t]["loss"]) for t in range(rounds + 1)],
                "train_metrics": {t: dict(m) for t, m in result.train_metrics_clientapp.items()}}

    app = ServerApp()

    @app.main()
    def main(grid, context) -> None:
        try:
            wait_for_nodes(grid, n, timeout_s)
            x0 = _x_record(task.x0.numpy())
            s = bi2clip_strategy(resolve([bi2clip], scale, z, dim, task.dtype), n, dim, task.dtype)
            r = s.start(grid, x0, num_rounds=rounds, timeout=timeout_s, evaluate_fn=evaluate,
                        train_config=train_config(p, bi2clip, "bi2clip", "biclip", "delta", scale, seed))
            out["bi2clip"] = {**summary(r), "clip_out": s.clip_out, "floats_received": s.floats_received}
            fa = FedAdam(fraction_evaluate=0.0, min_train_nodes=n, min_available_nodes=n, eta=fedadam.lr_out,
                         eta_l=fedadam.lr_in, beta_1=fedadam.beta1, beta_2=fedadam.beta2, tau=fedadam.eps)
            r = fa.start(grid, x0, num_rounds=rounds, timeout=timeout_s, evaluate_fn=evaluate,
                         train_config=train_config(p, fedadam, "fedadam", "sgd", "weights", scale, seed))
            out["fedadam"] = summary(r)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread below
            errors.append(e)

    wall_s = simulate(app, client_app(), n, errors, verbose)
    if "fedadam" not in out:
        raise RuntimeError("the Flower simulation ended without a result (see its log)")
    out["wall_s"] = wall_s
    out["scale"] = scale
    return out


def flower_check(p: ProblemParams, bi2clip: HyperParams, fedadam: HyperParams, seed: int, rounds: int = 2,
                 verbose: bool = False) -> dict:
    """Check 7: ``run_flower`` next to the simulator (``run_method`` with ``LocalComm``) on the same task, seed and
    hyper-parameters: max |x_Flower − x_sim| for Bi²Clip, and both strategies' F(x_t)."""
    from engines.common.threads import torch_threads

    from .algorithms import LocalComm, run_method

    with torch_threads(1):
        task = make_task(p, optimum=False)
        sim = {m: run_method(task, m, [h], rounds, LocalComm(p.workers), seed)
               for m, h in (("bi2clip", bi2clip), ("fedadam", fedadam))}
    fl = run_flower(p, bi2clip, fedadam, seed, rounds, verbose)
    return {"max_abs_diff": float(np.max(np.abs(fl["bi2clip"]["x"] - sim["bi2clip"].x[0].numpy()))),
            "max_abs_param": float(np.max(np.abs(sim["bi2clip"].x[0].numpy()))),
            "loss_diff": float(np.max(np.abs(np.array(fl["bi2clip"]["loss"]) - sim["bi2clip"].loss[0]))),
            "flower": fl, "sim_loss": {m: tr.loss[0].tolist() for m, tr in sim.items()},
            "sim_clip_out": sim["bi2clip"].clip_out[0].tolist()}

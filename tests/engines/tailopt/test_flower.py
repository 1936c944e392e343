"""TailOPT on Flower (spec check 7): Bi²Clip as a Flower strategy reproduces the simulator; built-in FedAdam runs
on the same clients.

The first test drives the strategy and the ClientApp's train handler in-process (no Ray): Flower's own
``configure_train`` / ``aggregate_train`` and the client's ``client_round``, replies shuffled. The second runs the
real ``flwr.simulation.run_simulation`` (Ray start-up, ~1 min): ``make flower``, or PAPERLAB_FLOWER_TESTS=1.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from engines.tailopt.algorithms import LocalComm, resolve, run_method
from engines.tailopt.flower import _x_record, bi2clip_strategy, client_round, flower_check, train_config
from engines.tailopt.params import HyperParams, ProblemParams
from engines.tailopt.tasks import make_task, probe_scale

P = ProblemParams(task="linear", noise="cauchy", workers=3, local_steps=5, rounds=2, batch=8, non_iid=0.5, seed=3)
BI2CLIP = HyperParams(lr_in=0.01, lr_out=1.0, u_in=1.0, d_in=0.01, u_out=1.0, d_out=0.01, server_momentum=0.5)
FEDADAM = HyperParams(lr_in=0.01, lr_out=0.1)
SEED = 3


class _Grid:
    def __init__(self, n: int):
        self.n = n

    def get_node_ids(self):
        return list(range(100, 100 + self.n))


def test_bi2clip_strategy_and_client_round_reproduce_the_simulator_without_ray():
    from flwr.app import Message, RecordDict

    torch.set_num_threads(1)
    task = make_task(P, optimum=False)
    sim = run_method(task, "bi2clip", [BI2CLIP], 2, LocalComm(P.workers), SEED)
    scale = probe_scale(task, SEED)
    s = bi2clip_strategy(resolve([BI2CLIP], scale, P.local_steps, task.dim, task.dtype), P.workers, task.dim)
    assert "m" in s.state  # server momentum: the simulator's outer state, d floats
    arrays, states = _x_record(task.x0.numpy()), {cid: RecordDict() for cid in range(P.workers)}
    cfg = train_config(P, BI2CLIP, "bi2clip", "biclip", "delta", scale, SEED)
    rnd = random.Random(0)
    for t in (1, 2):
        asks = list(s.configure_train(t, arrays, cfg, _Grid(P.workers)))
        assert len(asks) == P.workers
        replies = [Message(client_round(ask.content, cid, states[cid]), reply_to=ask) for cid, ask in enumerate(asks)]
        rnd.shuffle(replies)  # arrival order must not matter
        arrays, metrics = s.aggregate_train(t, replies)
        assert metrics["clip-out-down"] == sim.clip_out[0, t - 1, 0]
        assert abs(metrics["clip-in-down"] - sim.clip_in[0, t - 1, 0]) < 1e-12
    assert np.array_equal(arrays["x"].numpy(), sim.x[0].numpy())  # bit-identical in float64
    assert s.floats_received == [P.workers * task.dim] * 2  # one d-float Δ per worker per round
    assert all("rng/bi2clip" in st for st in states.values())


def test_a_reply_from_an_unknown_worker_is_refused():
    from flwr.app import Message, MetricRecord, RecordDict

    task = make_task(P, optimum=False)
    s = bi2clip_strategy(resolve([BI2CLIP], 1.0, P.local_steps, task.dim, task.dtype), P.workers, task.dim)
    asks = list(s.configure_train(1, _x_record(task.x0.numpy()), train_config(P, BI2CLIP, "b", "biclip", "delta",
                                                                                 1.0, 0), _Grid(P.workers)))
    replies = [Message(RecordDict({"arrays": _x_record(np.zeros(task.dim)),
                                   "metrics": MetricRecord({"num-examples": 1, "cid": cid, "clip-down": 0.0,
                                                            "clip-up": 0.0})}), reply_to=a)
               for cid, a in zip((0, 1, 1), asks)]
    with pytest.raises(RuntimeError, match=r"workers \[0, 1, 1\]"):
        s.aggregate_train(1, replies)


@pytest.mark.flower_extra  # spec check 7 "(optional extra)": `make flower`; make reproduce measures it too
def test_bi2clip_on_flower_matches_the_simulator_and_fedadam_runs_on_the_same_clients():
    torch.set_num_threads(1)
    r = flower_check(P, BI2CLIP, FEDADAM, SEED, rounds=2)
    assert r["max_abs_diff"] <= 1e-12, r["max_abs_diff"]  # float64, same operations in the same order: measured 0
    assert r["loss_diff"] <= 1e-12
    fl = r["flower"]
    assert len(fl["bi2clip"]["loss"]) == len(fl["fedadam"]["loss"]) == 3  # F(x_0), F(x_1), F(x_2)
    assert fl["bi2clip"]["loss"][0] == fl["fedadam"]["loss"][0]  # the same start
    assert all(np.isfinite(fl["fedadam"]["loss"])) and sorted(fl["fedadam"]["train_metrics"]) == [1, 2]
    assert not np.array_equal(fl["fedadam"]["x"], fl["bi2clip"]["x"])
    assert fl["bi2clip"]["floats_received"] == [P.workers * len(fl["bi2clip"]["x"])] * 2

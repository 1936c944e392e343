"""FedAG on Flower (spec check 6): the same rounds through ``flwr.simulation.run_simulation`` (Ray, one SuperNode
per client) give the in-process driver's numbers; a client reply that carries anything but weights, q and metrics
is refused by the server."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.fedag import drivers as dr
from engines.fedag.federation import PrivacyViolation, build_setup
from engines.fedag.flower import FlowerTransport, _record, run_fedag_flower
from engines.fedag.params import FederationParams


@pytest.mark.flower_extra  # spec check 6 "(slow, optional)": `make flower`; make reproduce measures it too
def test_flower_simulation_matches_the_in_process_driver():
    torch.set_num_threads(1)
    p = FederationParams(rounds=2, init_epochs=2, local_epochs=1, interact_epochs=1, images_per_domain=60,
                         synthetic_per_domain=20, clients_per_domain=2, domains=("tint", "rotate", "blur"))
    s = build_setup(p)
    a = dr.run_fedag(s)
    b = run_fedag_flower(s)
    assert len(b["history"]) == len(a["history"]) == 3
    for x, y in zip(a["history"], b["history"]):
        assert x.keys() == y.keys()
        assert all(x[k] == y[k] or (np.isnan(x[k]) and np.isnan(y[k])) for k in x), (x, y)
    assert all(np.array_equal(qa, qb) for qa, qb in zip(a["quality"], b["quality"]))
    assert [e["client"] for e in b["channel"]] == [0, 1, 2, 3] * 2  # 4 SuperNodes, 2 rounds
    assert b["channel"] == a["channel"]  # the same payloads (weights, one q per synthetic sample) crossed
    assert all(torch.equal(u, v) for u, v in zip(a["server"].state_dict().values(), b["server"].state_dict().values()))


def test_the_server_refuses_a_reply_with_anything_but_weights_q_and_metrics():
    from flwr.app import Message, MetricRecord, RecordDict

    t = FlowerTransport.__new__(FlowerTransport)
    t.node_of, t.domain_of, t.log = {0: 7}, {0: 0}, []
    ask = Message(RecordDict({}), dst_node_id=7, message_type="train")
    ok = {"weights": _record({"w": np.ones(3, np.float32)}), "quality": _record({"q": np.full(4, 0.5, np.float32)}),
          "metrics": MetricRecord({"cid": 0, "domain": 0, "loss": 1.0})}
    u = t._update(Message(RecordDict(ok), reply_to=ask))
    assert u.client_id == 0 and u.quality.shape == (4,) and u.metrics == {"loss": 1.0} and len(t.log) == 1
    leak = {**ok, "images": _record({"x": np.zeros((2, 32, 32, 3), np.float32)})}
    with pytest.raises(PrivacyViolation, match="images"):
        t._update(Message(RecordDict(leak), reply_to=ask))
    ok["metrics"] = MetricRecord({"cid": 1, "domain": 0, "loss": 1.0})  # node 7 is client 0, not 1
    with pytest.raises(PrivacyViolation, match="replied as client 1"):
        t._update(Message(RecordDict(ok), reply_to=ask))

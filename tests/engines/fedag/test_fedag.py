"""FedAG invariants: gate and attention simplices, the own-domain regulariser, λ = 0 and q ≡ 1 ablations,
momentum merge, quality scores, the privacy contract, bad input named clearly, and one tiny job (micro CLIP)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.context import LocalContext
from engines.common.params import ParamError, validate
from engines.fedag import algorithm as alg
from engines.fedag import drivers as dr
from engines.fedag.federation import (Channel, Client, ClientUpdate, PrivacyViolation, Setup, auroc, state_numpy)
from engines.fedag.domains import SyntheticSet
from engines.fedag.model import ClientNet, GateAdapter, ServerModel
from engines.fedag.params import FederationParams

torch.set_num_threads(1)


def _server(d=3, c=10, dim=16, seed=0):
    torch.manual_seed(seed)
    return ServerModel(torch.randn(c, dim), d)


def test_gate_sums_to_one_over_features_and_alpha_over_adapters():
    g = GateAdapter(16)(torch.randn(5, 16))
    assert torch.allclose(g.sum(1), torch.ones(5), atol=1e-6) and (g >= 0).all()
    srv = _server()
    with torch.no_grad():
        srv.scorer[0].weight.normal_(0, 0.05)  # a non-trivial g
        comb, a, s = srv.combined(torch.randn(7, 16))
    assert a.shape == (3, 7) and torch.allclose(a.sum(0), torch.ones(7), atol=1e-6)
    assert torch.allclose(comb, (a.unsqueeze(-1) * s).sum(0))


def test_regulariser_is_zero_iff_own_domain_alpha_is_maximal():
    a = torch.tensor([[0.6, 0.2], [0.3, 0.5], [0.1, 0.3]])  # (adapters, batch)
    assert alg.attention_regulariser(a[:, :1], 0) == 0  # sample 0: adapter 0 is maximal
    assert alg.attention_regulariser(a[:, 1:], 1) == 0  # sample 1: adapter 1 is maximal
    assert alg.attention_regulariser(a[:, :1], 2) == pytest.approx(0.5)  # 0.6 - 0.1
    assert alg.attention_regulariser(a, 0) == pytest.approx(0.3)  # 0 + (0.5 - 0.2)
    rnd = torch.softmax(torch.randn(4, 50), 0)
    for own in range(4):
        r = (rnd - rnd[own]).max(0).values
        assert ((r == 0) == (rnd[own] == rnd.max(0).values)).all()


def _toy_syn(d=3, n=16, dim=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [{"x": torch.rand(n, 32, 32, 3, generator=g).numpy(), "z": torch.randn(n, dim, generator=g),
             "y": torch.arange(n) % 10, "q": torch.rand(n, generator=g)} for _ in range(d)]


def _mutual(lam, monkeypatch=None, reg=None, q_ones=False):
    srv = _server()
    torch.manual_seed(1)
    clients = [[ClientNet()] for _ in range(3)]
    syn = _toy_syn()
    if q_ones:
        for s in syn:
            s["q"] = torch.ones_like(s["q"])
    if reg is not None:
        monkeypatch.setattr(alg, "attention_regulariser", reg)
    alg.server_mutual_learning(srv, clients, syn, lam, 0.5, 1e-2, 8, 1, torch.Generator().manual_seed(0))
    return torch.cat([p.detach().flatten() for p in srv.parameters()])


def test_lambda_zero_removes_the_regulariser(monkeypatch):
    base0 = _mutual(0.0)
    huge = lambda a, own: 1e3 * (a - a[own]).abs().sum()  # any regulariser at all
    assert torch.equal(_mutual(0.0, monkeypatch, huge), base0)  # λ = 0: the term has no effect
    assert not torch.allclose(_mutual(0.1, monkeypatch, huge), base0)  # λ > 0: it does


def test_quality_scales_the_teacher():
    assert not torch.allclose(_mutual(0.1), _mutual(0.1, q_ones=True))


def test_momentum_merge():
    a, b = {"w": torch.zeros(3), "n": torch.tensor(5)}, {"w": torch.ones(3), "n": torch.tensor(9)}
    assert torch.equal(alg.momentum_merge(a, b, 1.0)["w"], a["w"])
    assert torch.equal(alg.momentum_merge(a, b, 0.0)["w"], b["w"])
    m = alg.momentum_merge(a, b, 0.9)
    assert torch.allclose(m["w"], torch.full((3,), 0.1)) and m["n"] == 5  # integer buffers stay local


def test_quality_is_one_for_a_prototype_and_auroc():
    torch.manual_seed(0)
    net = ClientNet()
    x = torch.rand(10, 32, 32, 3).numpy()
    y = np.arange(10)
    protos = alg.prototypes(net, x, y, 10)  # one image per class: the prototype is its feature
    q = alg.score_synthetic(net, protos, x, y)
    assert np.allclose(q, 1.0, atol=1e-5)
    assert auroc(np.array([0.9, 0.8]), np.array([0.1, 0.2])) == 1.0
    assert auroc(np.array([0.1]), np.array([0.9])) == 0.0


def _toy_setup(rounds=1, quality=True):
    p = FederationParams(domains=("tint", "rotate", "noise", "blur"), held_out="blur", rounds=rounds,
                         init_epochs=1, local_epochs=1, interact_epochs=1, synthetic_per_domain=20,
                         quality=quality, baselines=())
    g = np.random.default_rng(0)
    clients = [Client(i, i, g.random((12, 32, 32, 3), dtype=np.float32), np.arange(12) % 10, 0) for i in range(3)]
    syn = [SyntheticSet(d, g.random((20, 32, 32, 3), dtype=np.float32), np.arange(20) % 10,
                        np.arange(20) < 4) for d in p.in_domains]
    ev = {s: {d: {"x": g.random((6, 32, 32, 3), dtype=np.float32), "y": torch.arange(6),
                  "z": torch.randn(6, 16)} for d in p.domains} for s in ("val", "test")}
    return Setup(p, p.in_domains, "blur", clients, syn, [torch.randn(20, 16) for _ in syn], ev, torch.randn(10, 16),
                 lambda x: torch.randn(len(x), 16))


@pytest.mark.parametrize("quality", [True, False])
def test_q_identically_one_ablation(monkeypatch, quality):
    seen = []
    real = alg.server_mutual_learning

    def spy(server, clients, syn, *a, **k):
        seen.append([s["q"].clone() for s in syn])
        return real(server, clients, syn, *a, **k)

    monkeypatch.setattr(alg, "server_mutual_learning", spy)
    res = dr.run_fedag(_toy_setup(quality=quality))
    assert len(seen) == 1
    ones = all(torch.equal(q, torch.ones_like(q)) for q in seen[0])
    assert ones == (not quality)
    if quality:  # the server uses exactly the scores its clients uploaded
        assert all(np.allclose(q.numpy(), qd) for q, qd in zip(seen[0], res["quality"]))


def test_privacy_contract_rejects_raw_images():
    s = _toy_setup()
    res = dr.run_fedag(s)
    assert len(res["channel"]) == 3 and all(e["kind"] == "update" for e in res["channel"])
    c = s.clients[0]
    ok = ClientUpdate(c.cid, 0, state_numpy(c.model), np.zeros(20, np.float32), {"loss": 1.0})
    Channel().upload(c, ok)
    img = c._x[3]
    bad = [
        ClientUpdate(c.cid, 0, {"leak": c._x[:2].copy()}),  # image-shaped
        ClientUpdate(c.cid, 0, {"leak": img.reshape(-1).copy()}),  # flattened: caught by its fingerprint
        ClientUpdate(c.cid, 0, {**state_numpy(c.model), "x": img.reshape(96, 32).copy()}),
        ClientUpdate(c.cid, 0, {}, None, {"image": img}),  # not a scalar metric
        {"weights": {}},  # not a ClientUpdate
    ]
    for u in bad:
        with pytest.raises(PrivacyViolation):
            Channel().upload(c, u)


@pytest.mark.parametrize("data, match", [
    ({"domains": ["tint"], "held_out": "tint"}, "at least two in-domains"),
    ({"domains": [], "held_out": "blur"}, "silos are empty"),
    ({"domains": ["tint", "rotate", "noise"], "held_out": "blur"}, "held_out: 'blur' is not one of"),
    ({"domains": ["tint", "tint", "noise"]}, "must not repeat"),
    ({"rounds": 0}, "rounds"),
    ({"rounds": 31}, "rounds"),
    ({"lam": -0.1}, "lam"),
    ({"lam": 11}, "lam"),
    ({"momentum": 1.5}, "momentum"),
    ({"images_per_domain": 440, "domains": ["tint", "rotate", "noise", "blur", "invert"]}, "public pool"),
])
def test_bad_input_is_named(data, match):
    with pytest.raises(ParamError, match=match):
        validate(FederationParams, data)


def test_federate_job_micro_clip():
    from engines.fedag.experiment import federate

    p = FederationParams(rounds=1, init_epochs=1, local_epochs=1, interact_epochs=1, images_per_domain=60,
                         synthetic_per_domain=20, baselines=("fedclip", "zeroshot"))
    events = []
    res = federate(p, LocalContext(on_progress=lambda f, m, pv: events.append((f, pv))))
    assert [r["method"] for r in res["table"]] == ["FedAG", "FedCLIP (one FedAvg adapter)", "zero-shot CLIP"]
    assert all(abs(sum(e["alpha"]) - 1) < 1e-3 for e in res["examples"])
    assert res["privacy"]["uploads"] == 3 and res["privacy"]["raw_images"] == 0
    assert len(res["quality"]["clean"]) + len(res["quality"]["corrupted"]) == 60
    assert any(pv and pv["round"] == 1 for _, pv in events)  # per-round metrics stream as previews

"""Language machinery, the instruction set, the DPMM and the domain specification."""
from __future__ import annotations

import numpy as np

from engines.prototype import dataset
from engines.prototype import language as L
from engines.prototype.specification import dpmm, specify


def test_clauses_split_keep_scopes_and_not_decimals():
    assert L.clauses("make the back 0.4 cm thinner without touching the seat") == \
        ["make the back 0.4 cm thinner", "without touching the seat"]
    assert L.clauses("taller and a bit more reclined, keep the seat as is") == \
        ["taller", "a bit more reclined", "keep the seat as is"]


def test_degrees_numbers_units():
    assert L.magnitude("a touch taller") == ("slight", "a touch")
    assert L.magnitude("way wider")[0] == "large" and L.magnitude("wider")[0] == "moderate"
    q = L.quantity("make the seat 45 mm higher")
    assert q.value == 4.5 and q.unit == "cm" and q.relative
    q = L.quantity("set the tilt to 12 degrees")
    assert q.value == 12 and q.unit == "deg" and not q.relative
    assert L.quantity("give it three legs").value == 3


def test_instruction_set_is_split_labelled_and_held_out():
    dev, test = dataset.load("dev"), dataset.load("test")
    assert len(dev) + len(test) >= 600
    assert not {r["text"].lower() for r in dev} & {r["text"].lower() for r in test}
    assert sum(r["source"] == "hand" for r in dev + test) == 60
    assert {r["split"] for r in dev} == {"dev"} and {r["split"] for r in test} == {"test"}
    vocab = dataset.vocab()
    for name, dv in vocab["domains"].items():  # held-out wordings of a domain never occur in its dev split
        held_out = {f for c in dv["components"].values() for f in c.get("test_only", [])}
        held_out -= {f for c in dv["components"].values() for f in c["forms"]}
        dev_text = " ".join(r["text"].lower() for r in dev if r["domain"] == name and r["source"] == "template")
        assert not [f for f in held_out if f" {f} " in f" {dev_text} "], name
    tags = {t for r in test for t in r["tags"]}
    assert {"lexical", "precision", "abstraction", "multi", "keep", "structure"} <= tags


def test_dpmm_recovers_separated_clusters_deterministically():
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [6, 0], [0, 6]], float)
    x = np.vstack([c + 0.4 * rng.standard_normal((30, 2)) for c in centres])
    truth = np.repeat([0, 1, 2], 30)
    a = dpmm(x, alpha=1.0, regular=0.3, sweeps=5, seed=0)
    assert adjusted_rand_score(truth, a) > 0.9
    assert np.array_equal(a, dpmm(x, alpha=1.0, regular=0.3, sweeps=5, seed=0))
    b = dpmm(x, alpha=1.0, regular=0.3, sweeps=3, seed=0, new_cluster="autodsl")  # the reference weighting runs
    assert b.shape == truth.shape


def test_specification_from_a_small_corpus(encoder):
    rows = dataset.load("dev", "mug")[:40]
    s1 = specify(rows, encoder, ["mug"])["mug"]
    s2 = specify(rows, encoder, ["mug"])["mug"]
    assert s1["components"] == s2["components"] and s1["operations"] == s2["operations"]  # deterministic
    assert any(len(e["synonyms"]) > 1 for e in s1["components"].values())
    kinds = {c["kind"] for c in s1["induction"]["clusters"]}
    assert "component" in kinds and "operation" in kinds

"""The reproduce script's CLIP seeds (issue 17: the spec's claims are means over 3 training seeds)."""
from __future__ import annotations

import pytest

from engines.common import zoo
from engines.slug import reproduce


def test_seed_zero_is_the_released_default_and_other_seeds_override_only_the_seed(monkeypatch):
    monkeypatch.delenv("SLUG_CLIP_CONFIG", raising=False)
    monkeypatch.delenv("SLUG_SEEDS", raising=False)
    assert reproduce._seeds() == [0, 1, 2]
    assert reproduce.clip_config(0) is None
    assert reproduce.clip_config(2) == {"seed": 2}
    monkeypatch.setenv("SLUG_CLIP_CONFIG", '{"steps": 50}')
    monkeypatch.setenv("SLUG_SEEDS", "0,5")
    assert reproduce._seeds() == [0, 5]
    assert reproduce.clip_config(0) == {"steps": 50}
    assert reproduce.clip_config(5) == {"steps": 50, "seed": 5}


def test_seeds_train_different_models_under_different_cache_keys():
    assert zoo.model_dir("clip", reproduce.clip_config(1)) != zoo.model_dir("clip")
    assert zoo.model_dir("clip", reproduce.clip_config(1)) != zoo.model_dir("clip", reproduce.clip_config(2))
    assert zoo.model_dir("clip", {"seed": 0}) == zoo.model_dir("clip")  # seed 0 is the released model


def test_routed_clip_sends_only_unconfigured_clip_loads_to_the_seed_and_restores_load(monkeypatch):
    calls = []
    monkeypatch.setattr(zoo, "load", lambda name, config=None, **kw: calls.append((name, config)))
    orig = zoo.load
    with reproduce.routed_clip({"seed": 1}):
        zoo.load("clip")
        zoo.load("clip", config={"seed": 7})
        zoo.load("t2i")
    assert calls == [("clip", {"seed": 1}), ("clip", {"seed": 7}), ("t2i", None)]
    assert zoo.load is orig
    with pytest.raises(RuntimeError), reproduce.routed_clip({"seed": 2}):
        raise RuntimeError("a failing target")
    assert zoo.load is orig


def test_by_seed_gives_each_seeds_mean_and_the_spread_across_seeds():
    runs = [{"clip_seed": 0}, {"clip_seed": 0}, {"clip_seed": 1}, {"clip_seed": 2}]
    assert reproduce.by_seed(runs, [1.0, 3.0, 4.0, 6.0]) == "2.0 / 4.0 / 6.0 (sd 2.0)"
    assert reproduce.by_seed(runs[:2], [1.0, 3.0]) == "2.0"

"""Sizes per profile (``PAPERLAB_PROFILE=test`` shrinks everything so the suite runs in seconds)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from engines.common.settings import get_settings


@dataclass(frozen=True)
class Sizes:
    n: int  # grid cells per side
    n_train: int  # training trajectories
    train_frames: int  # surrogate steps per training trajectory
    n_test: int  # held-out trajectories for the benchmark
    width: int  # p4m regular fields at level 1 (p1 gets the parameter-matched channel count)
    steps: int  # optimizer steps
    batch: int
    lr: float
    noise: float = 0.0  # training-noise injection: σ × the one-step change's scale (``training.corrupt``); 0 = none

    def key_fields(self) -> dict:
        """The fields that name a trained model. ``noise`` joined the recipe after surrogates were released:
        it is left out while 0, so the models trained without it keep their cache keys (and release entries)."""
        d = asdict(self)
        if not d["noise"]:
            del d["noise"]
        return d


DEFAULT = Sizes(n=32, n_train=96, train_frames=40, n_test=24, width=4, steps=800, batch=16, lr=2e-3)
TEST = Sizes(n=16, n_train=12, train_frames=12, n_test=4, width=2, steps=30, batch=8, lr=3e-3)


DEFAULT_INS = Sizes(n=24, n_train=64, train_frames=30, n_test=16, width=4, steps=600, batch=16, lr=2e-3)
TEST_INS = TEST


def sizes(problem: str = "swe", **override) -> Sizes:
    test = get_settings().profile == "test"
    if problem == "ins":
        base = TEST_INS if test else DEFAULT_INS
    else:
        base = TEST if test else DEFAULT
    return replace(base, **{k: v for k, v in override.items() if v is not None})


def cache_dir() -> Path:
    d = get_settings().data_dir / "pde_staggered"
    d.mkdir(parents=True, exist_ok=True)
    return d


def key(*objs) -> str:
    blob = json.dumps([o.key_fields() if isinstance(o, Sizes) else asdict(o) if hasattr(o, "__dataclass_fields__") else o
                       for o in objs], sort_keys=True,
                      default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]

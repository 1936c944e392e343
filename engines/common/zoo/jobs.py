"""The zoo's job entry: build (train and cache) one model as a job with progress and cancellation."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from .params import ZooBuildParams


class ZooBuildResult(BaseModel):
    name: str
    path: str
    built: bool
    train_seconds: float | None = None
    metrics: dict[str, Any] = {}


def build_entry(params: ZooBuildParams | dict, ctx: JobContext | None = None) -> ZooBuildResult:
    p = validate(ZooBuildParams, params)
    ctx = ctx or LocalContext()
    from . import catalog, store

    d = store.build(p.name, None, ctx=ctx, force=p.force)
    meta = catalog.read_meta(p.name) or {}
    return ZooBuildResult(name=p.name, path=str(d), built=(d / "zoo.json").exists(),
                          train_seconds=meta.get("train_seconds"), metrics=meta.get("metrics", {}))

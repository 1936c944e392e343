"""The zoo's job entry: build (train and cache) one model as a job with progress and cancellation."""
from __future__ import annotations

import json
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
    from . import store

    d = store.build(p.name, None, ctx=ctx, force=p.force)
    record = d / "zoo.json"
    meta = json.loads(record.read_text()) if record.exists() else {}
    return ZooBuildResult(name=p.name, path=str(d), built=bool(meta),
                          train_seconds=meta.get("train_seconds"), metrics=meta.get("metrics", {}))

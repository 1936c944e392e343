"""Entry points: step through constrained decoding of a target text, and the peer benchmark job."""
from __future__ import annotations

import csv
import io
import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from .encoders import load_encoder
from .frontend import InputError, to_kbnf
from .masks import ConstrainedEngine, EngineConfig
from .params import BenchmarkParams, StepParams


class StepRow(BaseModel):
    step: int
    token: str
    token_id: int
    allowed: int
    mask_us: float
    cache_hit: bool
    simulated: int
    eager: bool
    sets_before: int
    items_before: int
    sets_after: int
    items_after: int


class StepResult(BaseModel):
    vocab: str
    vocab_size: int
    kbnf: str
    compile_s: float
    passes: list[list[StepRow]]
    mean_us: list[float]
    hit_rate: list[float]
    accepted_all: bool
    finished: bool
    message: str
    accepting: bool = False  # the target is a complete sentence (EOS allowed), though the grammar may allow more
    elapsed_s: float


def config_of(p) -> EngineConfig:
    return EngineConfig(cache=p.cache, compaction=p.compaction, rejected_prefix_cache=p.rejected_prefix_cache,
                        eager_regex_cache=p.eager_regex_cache, eager_min_tokens=p.eager_min_tokens)


def step_through(params: StepParams | dict, ctx: JobContext | None = None) -> StepResult:
    """Replay ``target`` token by token: per step the mask, its time, cache hit and Earley sets/items."""
    p = validate(StepParams, params)
    t0 = time.perf_counter()
    try:
        kbnf = to_kbnf(p.grammar_kind, p.grammar, p.whitespace, p.max_indent)
    except InputError as e:
        raise ValueError(str(e)) from None
    enc = load_encoder(p.vocab)
    ids = enc.encode(p.target)
    tc = time.perf_counter()
    engine = ConstrainedEngine.build(kbnf, enc.vocab, config_of(p))
    compile_s = time.perf_counter() - tc
    passes, means, hits = [], [], []
    accepted_all, message = True, ""
    for _ in range(p.passes):
        engine.reset()
        rows = []
        for k, tid in enumerate(ids):
            mask = engine.compute_mask()
            s = engine.last
            rows.append(StepRow(step=k, token=enc.vocab.tokens.get(tid, b"").decode("utf-8", "replace"), token_id=tid,
                                allowed=s.allowed, mask_us=s.mask_us, cache_hit=s.cache_hit, simulated=s.simulated,
                                eager=s.eager_used, sets_before=s.sets_before, items_before=s.items_before,
                                sets_after=s.sets_after, items_after=s.items_after))
            if not mask[tid] or not engine.accept_token(tid):
                accepted_all = False
                done = enc.vocab.tokens.get(tid, b"")
                prefix = b"".join(enc.vocab.tokens.get(i, b"") for i in ids[:k]).decode("utf-8", "replace")
                message = (f"The target leaves the grammar at token {k} ({done.decode('utf-8', 'replace')!r}) "
                           f"after {prefix[-40:]!r}: no valid continuation starts with it.")
                break
        passes.append(rows)
        means.append(float(np.mean([r.mask_us for r in rows])) if rows else 0.0)
        hits.append(float(np.mean([r.cache_hit for r in rows])) if rows else 0.0)
    finished, accepting = engine.finished, engine.accepting
    if accepted_all and not message:
        message = ("Complete: the grammar's start symbol is finished." if finished else
                   "Complete: the text is a full sentence of the grammar (EOS is allowed here); the grammar would "
                   "also allow it to go on." if accepting else
                   "Every token was allowed, but the text is not complete yet (the grammar expects more).")
    return StepResult(vocab=p.vocab, vocab_size=enc.vocab.size, kbnf=kbnf, compile_s=compile_s, passes=passes,
                      mean_us=means, hit_rate=hits, accepted_all=accepted_all, finished=finished, message=message,
                      accepting=accepting, elapsed_s=time.perf_counter() - t0)


class BenchmarkResult(BaseModel):
    vocab: str
    rows: list[dict]
    rss_mb: dict[str, float | None]
    csv: str | None
    figure: str | None
    elapsed_s: float


def rows_to_csv(rows: list[dict]) -> str:
    cols = ["engine", "workload", "status", "instances", "steps", "compile_s", "cold_mean_ms", "cold_p50_ms",
            "cold_p99_ms", "cold_max_ms", "warm_mean_ms", "warm_p50_ms", "warm_p99_ms", "warm_max_ms", "rss_mb"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def benchmark(params: BenchmarkParams | dict, ctx: JobContext | None = None) -> BenchmarkResult:
    """The side-by-side replay: each engine in its own process, progress after each engine."""
    from .bench import run_isolated
    from .plots import benchmark_figure

    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    rows, rss = [], {}
    for i, engine in enumerate(p.engines):
        ctx.check_cancelled()
        ctx.progress(i / len(p.engines), f"{engine}: replaying {len(p.workloads)} workloads")
        res = run_isolated(engine, list(p.workloads), p.vocab, p.instances, p.seed, cancelled=ctx.cancelled)
        rss[engine] = res["rss_mb"]
        for r in res["rows"]:
            r["rss_mb"] = res["rss_mb"]
        rows.extend(res["rows"])
        ctx.progress((i + 1) / len(p.engines), f"{engine} done")
    csv_ref = ctx.artifacts.save_bytes("benchmark.csv", rows_to_csv(rows).encode())
    fig_ref = ctx.artifacts.save_figure("benchmark.png", benchmark_figure(rows, p.vocab))
    return BenchmarkResult(vocab=p.vocab, rows=rows, rss_mb=rss, csv=csv_ref, figure=fig_ref,
                           elapsed_s=time.perf_counter() - t0)

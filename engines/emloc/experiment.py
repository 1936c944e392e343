"""Entry points: build one episode's memory and answer its queries with every variant (interactive), and the
benchmark over held-out episodes (background job). ``run_episode`` is shared with ``make reproduce``."""
from __future__ import annotations

import math
import time

import numpy as np

from engines.common.context import JobCancelled, JobContext, LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import task
from .params import BASELINE_LABELS, KVPRESS, BenchmarkParams, MemoryParams


def _ctx(ctx):
    return ctx if ctx is not None else LocalContext()


def pyramid(mean_ratio: float, n_layers: int) -> list[float]:
    """PyramidInfer's cosine-decaying retention 0.4 → 0.01 over depth, rescaled to a mean of ``mean_ratio``."""
    w = np.array([0.01 + 0.39 * (1 + math.cos(math.pi * l / max(1, n_layers - 1))) / 2 for l in range(n_layers)])
    return [float(min(0.999, x)) for x in w * mean_ratio / w.mean()]


def run_episode(model, ep: task.Episode, chunk_size: int, delta: float, ratios, baselines, seed: int = 0,
                latency: bool = False, cancelled=lambda: False) -> dict:
    """EMLoC and the baselines on one episode at EMLoC's own budget: accuracy, retained tokens, JS to full."""
    import torch

    from .memory import Compressor, answer, js_divergence, timed_answer, truncated
    from .peers import press_memory

    t0 = time.perf_counter()
    mem, recs = Compressor(model, ratios, delta, chunk_size).build(ep, cancelled=cancelled)
    compress_s = time.perf_counter() - t0
    budget = float(np.mean(mem.per_layer()))
    r_u = budget / mem.context_tokens
    mems = {"emloc": mem}
    full = None
    if "full" in baselines or latency:
        full, _ = Compressor(model, (), chunk_size=chunk_size).build(ep, cancelled=cancelled)
        mems["full"] = full
    n_layers = len(mem.keys)
    for b in baselines:
        if cancelled():
            raise JobCancelled("cancelled")
        if b in KVPRESS:
            mems[b] = press_memory(model, ep, b, r_u)
            continue
        if b == "truncation":
            mems[b], _ = truncated(model, ep, int(round(budget)), chunk_size, cancelled=cancelled)
            continue
        if b == "uniform":
            c = Compressor(model, chunk_size=chunk_size, fixed=[r_u] * n_layers)
        elif b == "random":
            c = Compressor(model, chunk_size=chunk_size, fixed=[r_u] * n_layers, policy="random", seed=seed)
        elif b == "pyramid":
            c = Compressor(model, chunk_size=chunk_size, fixed=pyramid(r_u, n_layers))
        elif b == "one_shot":
            c = Compressor(model, ratios, delta, chunk_size=ep.n_shots)
        else:
            continue
        mems[b], _ = c.build(ep, cancelled=cancelled)
    inv = np.argsort(ep.perm)
    out = {"compress_s": compress_s, "context_tokens": mem.context_tokens, "variants": {}}
    logits = {}
    for name, m in mems.items():
        lg = answer(model, m, ep.query_patches)
        logits[name] = lg
        pred = inv[lg[:, task.LABEL0:].argmax(-1).numpy()]
        out["variants"][name] = {"correct": int((pred == ep.query_labels).sum()), "n": len(pred),
                                 "pred": pred.tolist(), "per_layer": m.per_layer(),
                                 "retained": float(np.mean(m.per_layer())) / mem.context_tokens,
                                 "kv_bytes": m.kv_bytes()}
    if full is not None:
        pf = torch.softmax(logits["full"].double(), -1)
        for name, lg in logits.items():
            out["variants"][name]["js_to_full"] = float(js_divergence(pf, torch.softmax(lg.double(), -1)).mean())
    out["chunks"] = [{"chunk": r.chunk, "tokens": r.tokens, "kept": r.kept, "ratio": r.ratio, "js": r.js_final,
                      "trace": r.trace} for r in recs]
    out["answers_kept"] = all(np.isin(mem.answer_positions, mem.kept_positions[l][h]).all()
                              for l in range(n_layers) for h in range(len(mem.kept_positions[l])))
    if latency:
        qp = ep.query_patches[:1]
        for name in ("emloc", "full"):
            timed_answer(model, mems[name], qp)  # warm-up
        out["latency_s"] = {name: float(np.median([timed_answer(model, mems[name], qp) for _ in range(15)]))
                            for name in ("emloc", "full")}
    out["memory"] = mem
    return out


def _token_kind(pos: np.ndarray) -> list[str]:
    k = pos % task.DEMO_LEN
    return ["image" if x < task.PATCHES else "query" if x == task.PATCHES else "answer" if x == task.ANSWER_OFFSET
            else "sep" for x in k]


def build_memory(params, ctx: JobContext | None = None) -> dict:
    """One test episode: compress its demonstrations, answer its queries from each memory, side by side."""
    from . import release

    p = validate(MemoryParams, params)
    ctx = _ctx(ctx)
    t0 = time.perf_counter()
    with torch_threads(1):
        ctx.progress(0.05, "loading the model")
        model, rec = release.load()
        ep = task.episodes(1, p.shots, p.queries, "test", p.task, p.seed)[0]
        ctx.progress(0.2, "compressing chunk by chunk")
        res = run_episode(model, ep, p.chunk_size, p.delta, p.ratios, ("full", "truncation", "uniform", "snapkv"), p.seed,
                          latency=True, cancelled=ctx.cancelled)
    mem = res.pop("memory")
    n_layers = len(mem.keys)
    heat = [[c["kept"][l] / c["tokens"] for c in res["chunks"]] for l in range(n_layers)]
    strips = [[{"pos": mem.kept_positions[l][h].tolist()} for h in range(len(mem.kept_positions[l]))]
              for l in range(n_layers)]
    kinds = {}
    for l in range(n_layers):
        ks = _token_kind(mem.kept_positions[l][0])
        kinds[str(l)] = {k: ks.count(k) for k in ("image", "query", "answer", "sep")}
    first = {"truth": int(ep.query_labels[0]), **{v: r["pred"][0] for v, r in res["variants"].items()}}
    ctx.progress(1.0, "done")
    return {**res, "task": p.task, "shots": p.shots, "chunk_size": p.chunk_size, "delta": p.delta,
            "ratios": list(p.ratios), "heatmap": heat, "kept_positions": strips, "kept_kinds_head0": kinds,
            "first_query": first, "labels": {k: BASELINE_LABELS.get(k, "EMLoC") for k in res["variants"]},
            "model_val_accuracy": rec.get("val_accuracy_full_context"), "elapsed_s": time.perf_counter() - t0}


def benchmark(params, ctx: JobContext | None = None) -> dict:
    """Held-out test episodes per shot count: accuracy, retained fraction, JS to full for every variant."""
    from . import release

    p = validate(BenchmarkParams, params)
    ctx = _ctx(ctx)
    sub = Subprogress(ctx, 0.05, 1.0)
    rows = {}
    with torch_threads(1):
        model, _ = release.load()
        total, done = len(p.shots) * p.episodes, 0
        for n in p.shots:
            acc: dict[str, list] = {}
            for ep in task.episodes(p.episodes, n, p.queries, "test", p.task, p.seed):
                r = run_episode(model, ep, p.chunk_size, p.delta, p.ratios, p.baselines, p.seed, cancelled=ctx.cancelled)
                for v, x in r["variants"].items():
                    a = acc.setdefault(v, [])
                    a.append((x["correct"], x["n"], x["retained"], x.get("js_to_full", float("nan"))))
                done += 1
                sub(done / total, f"{n} shots: episode {done}/{total}")
            rows[str(n)] = {v: {"accuracy": sum(c for c, *_ in a) / sum(k for _, k, *_ in a),
                                "retained": float(np.mean([r for *_, r, _ in a])),
                                "js_to_full": float(np.nanmean([j for *_, j in a]))} for v, a in acc.items()}
    return {"rows": rows, "labels": {"emloc": "EMLoC", **BASELINE_LABELS}, "episodes": p.episodes,
            "queries": p.queries, "task": p.task, "delta": p.delta}

"""Teacher-forced replay benchmark (as in JSONSchemaBench's maskbench), one engine per subprocess.

For each workload: compile (grammar + vocabulary -> first mask), then two passes, each over seeded valid
instances tokenized canonically: at every step time the engine's mask call, then advance by the target
token. Pass 1 ("cold") runs the first instances through the fresh engine; pass 2 ("warm") runs *held-out*
instances (new text, other seed) through the same engine, whose caches that survive ``reset()`` are now
hot. Warm is new text through a warm engine, never a replay of the sequences that warmed it.
Single-threaded (RAYON/OMP threads = 1, XGrammar max_threads=1). Peak RSS is the child's maxrss
(VmHWM) minus its RSS after loading the vocabulary.
"""
from __future__ import annotations

import os
import time
import traceback

import numpy as np

from .encoders import load_encoder
from .peers import ADAPTERS, Unsupported, available
from .workloads import WORKLOADS


def _status_mb(field: str) -> float:
    """VmRSS / VmHWM from /proc (ru_maxrss would include the parent's peak: Linux keeps it across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _stats(times_us: list[float]) -> dict:
    if not times_us:
        return {"mean_ms": None, "p50_ms": None, "p99_ms": None, "max_ms": None}
    a = np.asarray(times_us) / 1000.0
    return {"mean_ms": float(a.mean()), "p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max())}


def replay(engine: str, workload: str, encoder, n_instances: int, seed: int, ctx: dict) -> dict:
    w = WORKLOADS[workload]
    texts = w.instances(n_instances, seed)
    held_out = [t for t in w.instances(3 * n_instances, seed + 1_000_003) if t not in set(texts)][:n_instances]
    seqs = [encoder.encode(t) for t in texts]
    passes = {"cold": seqs, "warm": [encoder.encode(t) for t in held_out]}
    row = {"engine": engine, "workload": workload, "instances": len(texts), "status": "ok", "rejected": 0}
    try:
        t0 = time.perf_counter()
        sess = ADAPTERS[engine](w, encoder.vocab, ctx)
        sess.reset()
        sess.mask()
        row["compile_s"] = time.perf_counter() - t0
    except Unsupported as e:
        return {**row, "status": f"unsupported: {e}"[:160]}
    except Exception as e:  # noqa: BLE001 - a peer failing to compile is a result, not a crash
        return {**row, "status": f"error: {type(e).__name__}: {e}"[:160]}
    for name, pass_seqs in passes.items():
        times: list[float] = []
        rejected = 0
        for seq in pass_seqs:
            sess.reset()
            for tok in seq:
                t = time.perf_counter()
                sess.mask()
                times.append((time.perf_counter() - t) * 1e6)
                if not sess.accept(tok):
                    rejected += 1
                    break
        row.update({f"{name}_{k}": v for k, v in _stats(times).items()})
        row["steps"] = len(times)
        row["rejected"] = max(row["rejected"], rejected)
    if row["rejected"]:
        row["status"] = f"rejected {row['rejected']}/{len(seqs)} target sequences"
    return row


def run_engine(engine: str, workloads: list[str], vocab: str, n_instances: int, seed: int) -> dict:
    """Everything one engine does, meant to run in its own process (clean RSS, no shared caches)."""
    reason = available(engine)
    if reason:
        return {"engine": engine, "rows": [{"engine": engine, "workload": w, "status": f"not installed: {reason}"[:160]}
                                           for w in workloads], "rss_mb": None}
    encoder = load_encoder(vocab)
    base = _status_mb("VmRSS")
    ctx: dict = {"encode": encoder.encode}
    rows = []
    for w in workloads:
        try:
            rows.append(replay(engine, w, encoder, n_instances, seed, ctx))
        except Exception:  # noqa: BLE001
            rows.append({"engine": engine, "workload": w, "status": "error: " + traceback.format_exc(limit=1)[-150:]})
    peak = _status_mb("VmHWM")
    return {"engine": engine, "rows": rows, "rss_mb": max(0.0, peak - base)}


def _child(args):
    os.environ.update(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
                      MKL_NUM_THREADS="1")
    return run_engine(*args)


def run_isolated(engine: str, workloads: list[str], vocab: str, n_instances: int, seed: int,
                 timeout_s: float = 900) -> dict:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_child, (engine, workloads, vocab, n_instances, seed)).result(timeout=timeout_s)

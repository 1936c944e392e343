"""``make reproduce METHOD=emloc``: spec §8 checks 1-7 and claims C1-C5 on held-out test episodes.

Everything runs on the shipped model (``release/emloc/``) at the spec's settings: δ = 0.005, ratios
{0.1, 0.2, 0.5}, chunks of 16 demonstrations, average-pool width 5. Nothing is tuned: the test episodes are
drawn from their own seed stream, disjoint from the training and validation episodes.
"""
from __future__ import annotations

import time

import numpy as np

from engines.common.results import Report

SHOTS = (128, 256)
EPISODES = 100  # per shot count (the spec asks for 1,000: the 2-core time budget)
QUERIES = 5  # per episode
DELTAS = (0.001, 0.005, 0.02, 0.05)
SWEEP_EPISODES = 50
BASELINES = ("full", "truncation", "uniform", "random", "pyramid", "one_shot", "snapkv", "streamingllm", "knorm")


GAP_BUCKETS = ("1-4", "5-8", "9-16", "17-32", ">32", "never")


def _gaps(ep) -> list[str]:
    """For each query: how many demonstrations back its class was last shown, as a bucket of GAP_BUCKETS."""
    out = []
    for c in ep.query_labels:
        seen = np.flatnonzero(ep.demo_labels == c)
        d = ep.n_shots - int(seen.max()) if len(seen) else None
        out.append("never" if d is None else "1-4" if d <= 4 else "5-8" if d <= 8 else "9-16" if d <= 16
                   else "17-32" if d <= 32 else ">32")
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main():
    import torch
    from scipy.spatial.distance import jensenshannon

    from . import memory, release, task
    from .experiment import run_episode
    from .params import BASELINE_LABELS, KVPRESS
    from .plots import benchmark_figure

    torch.set_num_threads(1)
    rep = Report("emloc", "Efficient Multi-modal Long Context Learning for Training-free Adaptation (EMLoC)")
    model, rec = release.load()
    # check 1: no pruning reproduces the full context (transformers' own forward) -----------------------------
    worst = 0.0
    for ep in task.episodes(10, 128, 3, "test", seed=99):
        mem, _ = memory.Compressor(model, ratios=(), chunk_size=16).build(ep)
        ids, pats = ep.context()
        for i, qp in enumerate(ep.query_patches):
            qi = np.array([task.IMG] * task.PATCHES + [task.QUERY])
            qpat = np.zeros((len(qi), task.PATCH_DIM), np.float32)
            qpat[:task.PATCHES] = qp
            with torch.no_grad():
                full = model(torch.from_numpy(np.concatenate([ids, qi]))[None],
                             torch.from_numpy(np.concatenate([pats, qpat]))[None])[0, -1]
            worst = max(worst, float((memory.answer(model, mem, qp[None])[0] - full).abs().max()))
    rep.claim("1. No pruning (ratios {1.0}): chunk-wise memory + query reproduces the full-context logits "
              "(transformers forward), fp32, 10 episodes × 3 queries at 128 shots", "≤ 1e-4 (spec check 1)",
              f"max |Δ logit| {worst:.1e}", worst <= 1e-4)
    # check 2: JS against scipy ------------------------------------------------------------------------------
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(task.VOCAB), 1000), rng.dirichlet(np.ones(task.VOCAB), 1000)
    ours = memory.js_divergence(torch.tensor(p), torch.tensor(q)).numpy()
    ref = np.array([jensenshannon(a, b) ** 2 for a, b in zip(p, q)])
    err = float(np.abs(ours - ref).max())
    same = float(memory.js_divergence(torch.tensor(p), torch.tensor(p)).abs().max())
    rep.claim("2. JS divergence vs scipy `jensenshannon`² (float64, 1,000 random pairs); 0 for identical",
              "≤ 1e-6; 0", f"max error {err:.1e}; identical {same:.1e}", err <= 1e-6 and same <= 1e-12)
    # the benchmark ------------------------------------------------------------------------------------------
    rows, per_layer, js_chunks, answers_ok, lat, bytes_err, peak = {}, {}, [], True, {}, 0.0, {}
    gaps: dict[int, dict[str, list]] = {}  # shots -> gap bucket -> full-context hits (how far back the model reads)
    press_budget_err = 0  # tokens between a press's per-layer memory and EMLoC's budget (its int() rounding: ≤ 1)
    for n in SHOTS:
        acc = {}
        t0 = time.perf_counter()
        for k, ep in enumerate(task.episodes(EPISODES, n, QUERIES, "test")):
            r = run_episode(model, ep, 16, memory.DELTA, memory.RATIOS, BASELINES, seed=k, latency=k < 20)
            mem = r.pop("memory")
            for v, x in r["variants"].items():
                acc.setdefault(v, []).append(x)
            per_layer.setdefault(n, []).append(r["variants"]["emloc"]["per_layer"])
            for g, hit in zip(_gaps(ep), np.array(r["variants"]["full"]["pred"]) == ep.query_labels):
                gaps.setdefault(n, {}).setdefault(g, []).append(bool(hit))
            js_chunks += [c["js"] for c in r["chunks"]]
            answers_ok &= r["answers_kept"]
            if "latency_s" in r:
                lat.setdefault(n, []).append(r["latency_s"])
            e, f = r["variants"]["emloc"], r["variants"]["full"]
            budget = np.mean(e["per_layer"])
            press_budget_err = max([press_budget_err] + [abs(k - budget) for v in KVPRESS
                                                         for k in r["variants"][v]["per_layer"]])
            bytes_err = max(bytes_err, abs(e["kv_bytes"] / f["kv_bytes"] - e["retained"]))
            # peak tokens resident while compressing: the memory so far plus one chunk (per layer, max)
            peak.setdefault(n, []).append(max(mem.per_layer()) + 16 * task.DEMO_LEN)
        rows[str(n)] = {v: {"accuracy": sum(x["correct"] for x in a) / sum(x["n"] for x in a),
                            "retained": float(np.mean([x["retained"] for x in a])),
                            "js_to_full": float(np.mean([x["js_to_full"] for x in a]))} for v, a in acc.items()}
        print(f"{n} shots: {time.perf_counter() - t0:.0f} s; " + ", ".join(
            f"{v} {100 * x['accuracy']:.1f}%@{100 * x['retained']:.0f}%" for v, x in rows[str(n)].items()), flush=True)
    where = f"{EPISODES} held-out episodes × {QUERIES} queries"
    rep.claim("3. JS ≤ δ on every chunk's observation set (all chunks of all test episodes)", "≤ δ + 1e-6 (check 3)",
              f"max {max(js_chunks):.5f} over {len(js_chunks):,} chunks (δ = {memory.DELTA})",
              max(js_chunks) <= memory.DELTA + 1e-6)
    rep.claim("4. Every demonstration's answer token is in every layer's (and head's) memory", "always (check 4)",
              "yes" if answers_ok else "no: some answer token dropped", answers_ok)
    for n in SHOTS:
        r = rows[str(n)]
        e, f = r["emloc"], r["full"]
        rep.claim(f"C1 ({n} shots). Accuracy(EMLoC) ≥ accuracy(full context) − 2 points, retaining ≤ 40% of the "
                  f"demonstration KV tokens ({where})", "on par with MLoC at ~23% of the tokens (−77%)",
                  f"EMLoC {_pct(e['accuracy'])} at {_pct(e['retained'])} retained; full {_pct(f['accuracy'])}",
                  e["accuracy"] >= f["accuracy"] - 0.02 and e["retained"] <= 0.40)
    for n in SHOTS:
        r = rows[str(n)]
        e, t, u = r["emloc"], r["truncation"], r["uniform"]
        rep.claim(f"C2 ({n} shots). At EMLoC's budget, EMLoC beats naive truncation and uniform-ratio top-k by ≥ 3 "
                  "points", "adaptive, chunk-wise compression beats fixed budgets",
                  f"EMLoC {_pct(e['accuracy'])}; truncation {_pct(t['accuracy'])} ({_pct(t['retained'])} kept); "
                  f"uniform {_pct(u['accuracy'])} ({_pct(u['retained'])} kept)",
                  e["accuracy"] - t["accuracy"] >= 0.03 and e["accuracy"] - u["accuracy"] >= 0.03)
    for n in SHOTS:
        r = rows[str(n)]
        for v in ("random", "pyramid", "one_shot"):
            rep.reported(f"Baseline ({n} shots): {BASELINE_LABELS[v]}", "—",
                         f"{_pct(r[v]['accuracy'])} at {_pct(r[v]['retained'])} retained (EMLoC {_pct(r['emloc']['accuracy'])})")
    # C3: non-uniform per-layer budgets and monotone in δ ----------------------------------------------------
    mean_layers = np.mean(per_layer[SHOTS[0]], 0)
    sweep = []
    eps = task.episodes(SWEEP_EPISODES, SHOTS[0], QUERIES, "test", seed=1)
    for d in DELTAS:
        res = [run_episode(model, ep, 16, d, memory.RATIOS, ()) for ep in eps]
        sweep.append((d, float(np.mean([x["variants"]["emloc"]["retained"] for x in res])),
                      sum(x["variants"]["emloc"]["correct"] for x in res) / sum(x["variants"]["emloc"]["n"] for x in res)))
    kept = [s[1] for s in sweep]
    rep.claim(f"C3. Per-layer budgets non-uniform (max/min mean layer budget ≥ 2, {SHOTS[0]} shots) and retained "
              f"tokens non-increasing in δ ({', '.join(f'{d:g}' for d in DELTAS)}; {SWEEP_EPISODES} episodes)",
              "layers keep different numbers of tokens",
              f"mean kept per layer {', '.join(f'{x:.0f}' for x in mean_layers)} (ratio "
              f"{mean_layers.max() / mean_layers.min():.2f}); retained by δ: "
              + ", ".join(f"{_pct(k)} (acc {_pct(a)})" for _, k, a in sweep),
              mean_layers.max() / mean_layers.min() >= 2 and all(b <= a + 1e-12 for a, b in zip(kept, kept[1:])))
    # C4: latency and memory ---------------------------------------------------------------------------------
    med = {n: {v: float(np.median([x[v] for x in lat[n]])) for v in ("emloc", "full")} for n in SHOTS}
    speed = med[SHOTS[-1]]["full"] / med[SHOTS[-1]]["emloc"]
    rep.claim(f"C4. Per-query latency at {SHOTS[-1]} shots ≥ 1.5× faster than the full context (median over 20 "
              "episodes × 15 single queries, cached prefix in both); KV bytes ratio = retained-token ratio ± 1%",
              "inference FLOPs −23% (paper); spec: ≥ 1.5×",
              "; ".join(f"{n} shots: {1000 * med[n]['emloc']:.2f} ms vs {1000 * med[n]['full']:.2f} ms "
                        f"({med[n]['full'] / med[n]['emloc']:.2f}×)" for n in SHOTS)
              + f"; bytes-vs-tokens max error {100 * bytes_err:.2f} points", speed >= 1.5 and bytes_err <= 0.01)
    rep.reported("C4. Peak KV tokens resident per layer while compressing (memory so far + one chunk) vs the full "
                 "context", "bounded by one chunk + memory",
                 "; ".join(f"{n} shots: {np.mean(peak[n]):.0f} vs {n * task.DEMO_LEN}" for n in SHOTS))
    js_q = {n: rows[str(n)]["emloc"]["js_to_full"] for n in SHOTS}
    rep.claim("C5. Held-out JS between the compressed memory's and the full context's query outputs ≤ 5 × δ",
              f"≤ {5 * memory.DELTA:g}", ", ".join(f"{n} shots: {js_q[n]:.4f}" for n in SHOTS),
              max(js_q.values()) <= 5 * memory.DELTA)
    rep.claim("7. kvpress presses (SnapKV, StreamingLLM, Knorm) run on the same model and contexts at EMLoC's "
              "ratio (per-layer memory = EMLoC's mean budget, kvpress rounds down)", "peer run (spec check 7)",
              f"all three ran on every episode; max |kept − budget| {press_budget_err:.2f} tokens per layer",
              press_budget_err < 1.0 + 1e-9)
    for n in SHOTS:
        r = rows[str(n)]
        rep.reported(f"Peers ({n} shots): kvpress presses at EMLoC's budget", "—",
                     "; ".join(f"{BASELINE_LABELS[v].split(' (')[0]} {_pct(r[v]['accuracy'])} at "
                               f"{_pct(r[v]['retained'])}" for v in KVPRESS)
                     + f" (EMLoC {_pct(r['emloc']['accuracy'])}, full {_pct(r['full']['accuracy'])})")
    for n in SHOTS:
        rep.reported(f"The shipped model at {n} shots: full-context accuracy by how many demonstrations back the "
                     "query's class was last shown", "many-shot ICL reads the whole context",
                     "; ".join(f"{b}: {_pct(np.mean(gaps[n][b]))} (n={len(gaps[n][b])})" for b in GAP_BUCKETS
                               if b in gaps[n]))
    val = rec.get("val_accuracy_full_context", {})
    rep.reported("The shipped model: full-context accuracy on validation episodes by shot count", "—",
                 ", ".join(f"{k} shots {_pct(v)}" for k, v in val.items()))
    rep.figure(benchmark_figure({"rows": rows, "labels": {"emloc": "EMLoC", **BASELINE_LABELS}}), "benchmark",
               "Accuracy against retained demonstration KV tokens, held-out test episodes")
    rep.section(
        "## Setting\n\n"
        f"Tiny `Qwen2ForCausalLM` ({rec['params']:,} parameters: 4 layers, width 64, 4 query heads, 2 KV heads, RoPE) "
        "with a linear vision projector from 16-d patch features; trained here for many-shot in-context "
        "classification (10 classes, labels permuted per episode, 4 patch tokens per image; demonstration = "
        "`[IMG×4, QUERY, label, SEP]`). EMLoC at the paper's defaults: chunks of 16 demonstrations, observation = "
        "each demonstration of the chunk re-fed after [memory; chunk] (observation tokens: its QUERY and answer "
        "tokens), scores summed over the observation tokens and the query heads of each KV head, average-pooled "
        "(width 5), answer tokens +100, top-down greedy over ratios {0.1, 0.2, 0.5} with JS ≤ δ = 0.005. Every "
        "layer keeps at least one token per demonstration (its answer). Baselines at EMLoC's own budget (its mean "
        "kept tokens per layer, per episode): naive truncation (the last demonstrations that fit, as a fresh "
        "context), uniform top-k by the same scores, random tokens, PyramidInfer's cosine schedule rescaled to the "
        "same mean; EMLoC without chunking as ablation. Peers: kvpress 0.5.5's SnapKV, StreamingLLM and Knorm presses "
        "compress the whole demonstration prefill (transformers' own forward) to the same budget; the queries are "
        "answered from their caches by the same code as EMLoC's memory (`engines/emloc/peers.py`).")
    return rep.write()


if __name__ == "__main__":
    main()

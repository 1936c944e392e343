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
                 timeout_s: float = 900, cancelled=None) -> dict:
    """One engine's replay in a fresh process; ``cancelled()`` (the job's flag) kills it within 0.25 s."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        fut = pool.submit(_child, (engine, workloads, vocab, n_instances, seed))
        t0 = time.monotonic()
        while True:
            try:
                return fut.result(timeout=min(0.25, max(0.0, timeout_s - (time.monotonic() - t0))))
            except TimeoutError:
                if cancelled is not None and cancelled():
                    from engines.common.context import JobCancelled

                    for proc in list((getattr(pool, "_processes", None) or {}).values()):
                        proc.kill()  # one engine's replay can take minutes; the pool then shuts down at once
                    raise JobCancelled(f"{engine} replay cancelled") from None
                if time.monotonic() - t0 >= timeout_s:
                    raise


# ----------------------------------------------------------------------------- external corpora (CLI)

def main(argv=None) -> int:
    """``python -m engines.zapformat.bench --maskbench DIR [--suite DIR]``: see maskbench.py."""
    import argparse
    import json
    from pathlib import Path

    from engines.common.results import RESULTS_DIR

    from . import maskbench as mb

    ap = argparse.ArgumentParser(prog="python -m engines.zapformat.bench", description=mb.__doc__.split("\n")[0])
    ap.add_argument("--maskbench", help="a MaskBench-format folder (e.g. ../shared/corpora/maskbench-sample)")
    ap.add_argument("--suite", help="the JSON Schema Test Suite folder (e.g. ../shared/corpora/json-schema-test-suite)")
    ap.add_argument("--stride", type=int, default=mb.DEFAULT_STRIDE,
                    help=f"take every N-th schema in file-name order (default {mb.DEFAULT_STRIDE})")
    ap.add_argument("--full", action="store_true", help="every schema (same as --stride 1)")
    ap.add_argument("--engines", default=None, help="comma-separated subset of " + ",".join(mb.ENGINES) +
                    " (or zapformat-bytes: our compiler on whole instances, no tokenizer: a fast verdict check); "
                    "default: all four, or with --merge every engine that has shards")
    ap.add_argument("--limit-s", type=float, default=mb.DEFAULT_LIMIT_S, help="wall-clock limit per schema")
    ap.add_argument("--label", default="latest", help="name of this run in the stored results (e.g. before)")
    ap.add_argument("--out", default=str(RESULTS_DIR / "zapformat-maskbench.json"))
    ap.add_argument("--start", type=int, help="run only schemas [start, stop) of the selection, as one shard stored "
                    "under the data dir (see maskbench_shards.py); --merge then scores all shards as one run")
    ap.add_argument("--stop", type=int, help="end (exclusive) of the shard; default: the end of the selection")
    ap.add_argument("--merge", action="store_true", help="score the shards of --label as one run and store it")
    ap.add_argument("--partial", action="store_true", help="--merge: score an engine whose shards leave gaps on "
                    "the schemas they cover (the page says so)")
    ap.add_argument("--shard-dir", help="where shards are kept (default <data dir>/zapformat/maskbench-shards/LABEL)")
    args = ap.parse_args(argv)
    engines = [e for e in (args.engines or ",".join(mb.ENGINES)).split(",") if e]
    bad = [e for e in engines if e not in mb.SESSIONS]
    if bad:
        ap.error(f"unknown engine(s) {bad}; choose from {mb.ENGINES}")
    if not args.maskbench and not args.suite:
        ap.error("give --maskbench DIR and/or --suite DIR")
    if args.start is not None or args.stop is not None or args.merge:
        return _sharded(ap, args, engines)
    run: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "limit_s": args.limit_s}
    for flag, folder in (("--maskbench", args.maskbench), ("--suite", args.suite)):
        if folder and not Path(folder).is_dir():
            print(f"{flag} {folder}: no such folder; skipping it")
    t0 = time.perf_counter()
    if args.maskbench and Path(args.maskbench).is_dir():
        stride = 1 if args.full else args.stride
        units = mb.load_maskbench(args.maskbench, stride)
        total = len(list(Path(args.maskbench).glob("*.json")))
        run["maskbench_schemas"] = len(units)
        run["maskbench_selection"] = ("all files" if stride == 1 else
                                      f"every {stride}th of the {total} files in sorted file-name order, starting "
                                      "with the first (a fixed stride, chosen before any outcome)")
        run["valid_tests"] = sum(t["valid"] for u in units for t in u["tests"])
        run["invalid_tests"] = sum(not t["valid"] for u in units for t in u["tests"])
        run["maskbench"], run["maskbench_rows"] = {}, {}
        for e in engines:
            print(f"MaskBench: {e} on {len(units)} schemas", flush=True)
            res = mb.run_engine(e, units, args.limit_s)
            run["maskbench"][e] = mb.score(units, res)
            run["maskbench_rows"][e] = [{k: v for k, v in r.items() if k != "tbm_us"} for r in res]
            s = run["maskbench"][e]
            print(f"  {e}: passing {s['passing']}/{s['schemas']}, compile errors {s['compile_errors']}, crashes "
                  f"{s['crashes']}, timeouts {s['timeouts']}, wrong accepts {s['wrong_accepts']}, wrong rejects "
                  f"{s['wrong_rejects']} ({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.suite and Path(args.suite).is_dir():
        units = mb.load_suite(args.suite)
        run["suite"] = {}
        for e in engines:
            print(f"Test suite: {e} on {len(units)} groups", flush=True)
            res = mb.run_engine(e, units, args.limit_s, suite=True)
            run["suite"][e] = mb.score_suite(units, res)
    run["elapsed_s"] = time.perf_counter() - t0
    return _store(run, args.label, args.out)


def _store(run: dict, label: str, out) -> int:
    import json
    from pathlib import Path

    out = Path(out)
    stored = json.loads(out.read_text()) if out.exists() else {"runs": {}}
    stored["runs"][label] = run
    out.write_text(json.dumps(stored, indent=1, ensure_ascii=False))
    page = write_page(stored, out.with_suffix(".md"))
    print(f"wrote {out} and {page} ({run['elapsed_s']:.0f} s)")
    return 0


def _sharded(ap, args, engines: list[str]) -> int:
    """``--start/--stop``: run one shard into the shard folder; ``--merge``: store the shards as one run."""
    from pathlib import Path

    from . import maskbench as mb
    from . import maskbench_shards as shards

    if not args.maskbench or not Path(args.maskbench).is_dir():
        ap.error("--start/--stop/--merge need --maskbench DIR (an existing folder)")
    folder = Path(args.shard_dir) if args.shard_dir else shards.shard_dir(args.label)
    if args.merge:
        try:
            run = shards.merge(args.maskbench, folder, args.suite, engines if args.engines else None, args.partial)
        except ValueError as e:
            ap.error(f"cannot merge the shards in {folder}: {e}")
        for e, s in run["maskbench"].items():
            print(f"  {e}: passing {s['passing']}/{s['schemas']}, compile errors {s['compile_errors']}, crashes "
                  f"{s['crashes']}, timeouts {s['timeouts']}, wrong accepts {s['wrong_accepts']}, wrong rejects "
                  f"{s['wrong_rejects']}", flush=True)
        return _store(run, args.label, args.out)
    stride = 1 if args.full else args.stride
    shards.run_shard(args.maskbench, engines, args.limit_s, stride, args.start or 0, args.stop, folder, args.suite)
    return 0


NOTES = (
    "Notes. Run `before` is the schema compiler as it stood before issue 29 (commit f478399, where unknown keywords "
    "were refused and `format`/`additionalProperties` schemas ignored); run `after` is the compiler of issue 29. "
    "kbnf runs the KBNF our compiler emits (its wheel has no JSON Schema front end), so its compile errors are our "
    "compiler's refusals plus grammars KBNF cannot express (our regex intersection). The serialiser changed between "
    "the runs (`after` also orders names that are only `required` after the declared ones and follows the `anyOf` "
    "branch the instance satisfies), which moves the peers' counts by a schema or two. TBM p50 of a Python engine "
    "is a cache hit; its p99 is the simulation of every candidate token. Our engine's test-suite verdicts on "
    "`format` count as wrong rejects where the suite treats formats as annotations (we assert them, as a "
    "constrained decoder should). Run `compiled-core` (the C++ core, regex automata included) is the first with the "
    "stricter TTFM protocol of maskbench.py: our engine warmed up on {\"type\": \"object\"} like the peers, and "
    "nothing our compiler cached for an earlier schema reused (runs `before`/`after` kept those caches). The machine "
    "has 2 cores shared with other jobs: times are noisy. Run `full-sample` is the whole sample (all 1,502 files), "
    "run in shards (`--start/--stop`, then `--merge`; engines/zapformat/maskbench_shards.py) so that no hold of the "
    "heavy-job lock lasts much over 10 minutes, with the same protocol as run `compiled-core` but a 60 s limit per "
    "schema (the CLI default, as in run `after`) and three engines only: ours (compiled core), LLGuidance and "
    "XGrammar. The Python reference core (its compile is two orders of magnitude slower than the compiled "
    "core's; same masks, tested) and kbnf (it runs our own KBNF, so it adds no coverage of its own) would have "
    "multiplied the run's time several times over; they were measured on the 51 schemas of run "
    "`compiled-core`, which is where the memory target against kbnf is checked. Run `full-sample` was redone on "
    "2026-12-06 (afternoon) with every engine on every schema (shards of 100; the morning's run had XGrammar on "
    "861 schemas only) and the compiler of that afternoon (what it gained: docs/methods/zapformat.md, \"JSON "
    "Schema coverage\", and the note under \"Compiled core\" in zapformat.md); the morning's numbers (ours "
    "1,296/1,502 passing) are in the git history of this page. Run `loop-tables` (2026-12-06, 15:07-15:17 UTC) "
    "reran ours and LLGuidance side by side on the whole sample after one change to the C++ core (eager walks "
    "accept the tokens that stay in a free-string state without walking them; masks unchanged, tested against the "
    "Python core), with the same compiler as run `full-sample`; XGrammar was not rerun.")


def write_page(stored: dict, path) -> str:
    """The generated results page of the external benchmark, and its summary block in zapformat.md."""
    from . import maskbench as mb

    parts = ["# ZapFormat on external corpora: MaskBench and the JSON Schema Test Suite", "",
             "Generated by `make bench-zapformat` (`python -m engines.zapformat.bench --maskbench DIR --suite DIR`); "
             "method in `engines/zapformat/maskbench.py`. Do not edit by hand.", "", NOTES, ""]
    for label, run in sorted(stored["runs"].items(), key=lambda kv: kv[1]["date"], reverse=True):
        parts += [f"## Run `{label}` ({run['date']}, {run.get('elapsed_s', 0):.0f} s)", ""]
        parts += [run["note"], ""] if run.get("note") else []
        parts += [mb.render(run, run.get("maskbench"), run.get("suite"))]
    path.write_text("\n".join(parts) + "\n")
    _update_results_page(stored, path)
    return str(path)


BLOCK_BEGIN, BLOCK_END = "<!-- zapformat-maskbench:begin -->", "<!-- zapformat-maskbench:end -->"


def summary_block(stored: dict | None = None, page_name: str = "zapformat-maskbench.md") -> str:
    """The section of docs/results/zapformat.md on the external benchmark (also emitted by reproduce.py)."""
    import json

    from engines.common.results import RESULTS_DIR

    from . import maskbench as mb

    if stored is None:
        path = RESULTS_DIR / "zapformat-maskbench.json"
        if not path.exists():
            return ""
        stored = json.loads(path.read_text())
    lines = [BLOCK_BEGIN, "## External benchmark: MaskBench sample and JSON Schema Test Suite", "",
             f"Generated by `make bench-zapformat`; every run, per-keyword table and refusal reason in "
             f"[{page_name}]({page_name}).", ""]
    for label, run in sorted(stored["runs"].items(), key=lambda kv: kv[1]["date"]):
        if not run.get("maskbench"):
            continue
        lines += [f"**Run `{label}`** ({run['date']}; {run['maskbench_schemas']} schemas, "
                  f"{run['maskbench_selection']}).", "",
                  "| engine | passing | compile errors | crashes + timeouts | wrong accepts | wrong rejects | "
                  "TTFM p50 | TBM p50 / p99 | peak MB | test suite |", "|---|---|---|---|---|---|---|---|---|---|"]
        for e, s in run["maskbench"].items():
            suite = (run.get("suite") or {}).get(e)
            st = "—" if not suite else f"{sum(k['passed'] for k in suite.values())}/" \
                                      f"{sum(k['tests'] for k in suite.values())}"
            lines.append(f"| {mb.LABELS.get(e, e)} | {s['passing']}/{s['schemas']} | {s['compile_errors']} | "
                         f"{s['crashes'] + s['timeouts']} | {s['wrong_accepts']} | {s['wrong_rejects']} | "
                         f"{mb._us(s['ttfm_p50_us'])} | {mb._us(s['tbm_p50_us'])} / {mb._us(s['tbm_p99_us'])} | "
                         f"{s['peak_mb']:.0f} | {st} |")
        lines.append("")
        if run.get("note"):
            lines += [run["note"], ""]
    lines += ["Upstream (JSONSchemaBench `maskbench/README.md`, all 11,306 schemas): LLGuidance passes 8,909 (79%), "
              "TBM p50 46 µs; XGrammar passes 8,122 (72%).", BLOCK_END]
    return "\n".join(lines)


def _update_results_page(stored: dict, page) -> None:
    """Put the summary into docs/results/zapformat.md between its markers (appended the first time)."""
    from pathlib import Path

    main = Path(page).with_name("zapformat.md")
    if not main.exists() or Path(page).name == main.name:
        return
    text = main.read_text()
    block = summary_block(stored, Path(page).name)
    if BLOCK_BEGIN in text and BLOCK_END in text:
        head, rest = text.split(BLOCK_BEGIN, 1)
        text = head + block + rest.split(BLOCK_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    main.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())

"""The MaskBench run in shards: each shard a slice of the schemas, run and stored on its own; a merge scores them.

A whole-sample run (1,502 schemas) takes longer than one hold of the shared heavy-job lock should, so it is cut
into index ranges of the selected schemas (sorted file-name order, as ``maskbench.load_maskbench``)::

    flock ~/.paperlab-heavy.lock python -m engines.zapformat.bench --maskbench DIR --full --label L --start 0 --stop 150
    ...                                                                 (one command per range, each its own lock hold)
    python -m engines.zapformat.bench --maskbench DIR --full --label L --merge

Each shard starts fresh worker processes (``maskbench.run_engine``) and writes each engine's per-schema results, the
raw TBM samples included, to ``<data dir>/zapformat/maskbench-shards/<label>/shard-<start>-<stop>-<engine>.json``
(not docs/) as soon as that engine is done, so one engine's slow ranges (XGrammar's compile on large schemas) can be
cut finer than the others' (``--engines xgrammar --start .. --stop ..``). The merge checks that each engine's shards
cover every selected schema exactly once with one stride and time limit (``--partial``: gaps allowed, reported),
then scores them with ``maskbench.score`` as a single run would and stores the run in the results JSON/page.
Peak memory of a merged run is the largest of the shards' workers (each shard's workers start fresh).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from . import maskbench as mb


def shard_dir(label: str) -> Path:
    from engines.common.settings import get_settings

    return get_settings().data_dir / "zapformat" / "maskbench-shards" / label


def _selection(stride: int, total: int) -> str:
    return ("all files" if stride == 1 else
            f"every {stride}th of the {total} files in sorted file-name order, starting with the first (a fixed "
            "stride, chosen before any outcome)")


def run_shard(folder, engines: list[str], limit_s: float, stride: int, start: int, stop: int | None,
              out_dir: Path, suite_folder=None, run_engine=None) -> list[Path]:
    """Run schemas ``[start, stop)`` of the selection through each engine in turn; each engine's results are written
    as soon as it is done (``shard-<start>-<stop>-<engine>.json``), so a shard stopped midway keeps what finished
    and one engine's slow range can be cut finer than the others'. Returns the files written."""
    run_engine = run_engine or mb.run_engine
    units = mb.load_maskbench(folder, stride)
    stop = len(units) if stop is None else min(stop, len(units))
    if not 0 <= start < stop:
        raise ValueError(f"empty shard [{start}, {stop}) of {len(units)} schemas")
    part = units[start:stop]
    sunits = mb.load_suite(suite_folder) if suite_folder and Path(suite_folder).is_dir() else None
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for e in engines:
        print(f"MaskBench shard [{start}, {stop}): {e} on {len(part)} schemas", flush=True)
        t = time.perf_counter()
        shard = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "start": start, "stop": stop,
                 "total": len(units), "stride": stride, "limit_s": limit_s, "engine": e,
                 "ids": [u["id"] for u in part]}
        res = run_engine(e, part, limit_s)
        for r in res:  # raw TBM samples kept (the merge takes percentiles over all shards), rounded to 10 ns
            if "tbm_us" in r:
                r["tbm_us"] = [round(x, 2) for x in r["tbm_us"]]
        shard["rows"] = res
        s = mb.score(part, res)
        print(f"  {e}: passing {s['passing']}/{s['schemas']}, compile errors {s['compile_errors']}, crashes "
              f"{s['crashes']}, timeouts {s['timeouts']}, wrong accepts {s['wrong_accepts']}, wrong rejects "
              f"{s['wrong_rejects']} ({time.perf_counter() - t:.0f} s)", flush=True)
        if sunits is not None:
            shard["suite"] = run_engine(e, sunits, limit_s, suite=True)
        shard["wall_s"] = time.perf_counter() - t
        path = out_dir / f"shard-{start:05d}-{stop:05d}-{e}.json"
        path.write_text(json.dumps(shard))
        print(f"wrote {path} ({shard['wall_s']:.0f} s)", flush=True)
        paths.append(path)
    return paths


def _pieces(out_dir: Path) -> list[dict]:
    """Every shard file as one piece per engine (files of the first layout hold several engines)."""
    pieces = []
    for p in sorted(Path(out_dir).glob("shard-*.json")):
        d = json.loads(p.read_text())
        if "engine" in d:
            pieces.append(d)
            continue
        for e in d["engines"]:
            pieces.append({**{k: v for k, v in d.items() if k not in ("rows", "engines", "suite", "elapsed_s")},
                           "engine": e, "rows": d["rows"][e], "wall_s": d.get("elapsed_s", {}).get(e, 0.0),
                           **({"suite": d["suite"][e]} if d.get("suite", {}).get(e) else {})})
    return pieces


def _coverage(pieces: list[dict], units: list[dict]) -> tuple[list[dict], str | None]:
    """One engine's pieces in order, and what is wrong with their coverage of the units (None when exact)."""
    pieces = sorted(pieces, key=lambda s: s["start"])
    pos = 0
    for s in pieces:
        if s["start"] != pos:
            what = "overlap" if s["start"] < pos else "gap"
            return pieces, f"shards {what} at schema {min(pos, s['start'])}: next shard starts at {s['start']}"
        if s["ids"] != [u["id"] for u in units[s["start"]:s["stop"]]]:
            raise ValueError(f"shard [{s['start']}, {s['stop']}) holds other schemas than the folder's")
        pos = s["stop"]
    return pieces, None if pos == len(units) else f"shards end at schema {pos} of {len(units)}"


def misses(units: list[dict], results: list[dict]) -> dict:
    """Schemas that compiled but did not pass: id -> wrong accepts / wrong rejects (the per-schema rows of a whole
    sample stay in the shard files; compile errors and crashes are already in the score's ``errors``)."""
    out = {}
    for u, r in zip(units, results):
        if r.get("status") != "ok":
            continue
        wa, wr = mb.wrong_counts(u, r)
        if wa or wr:
            out[u["id"]] = {"wrong_accepts": wa, "wrong_rejects": wr}
    return out


def merge(folder, out_dir: Path, suite_folder=None, engines: list[str] | None = None, partial: bool = False) -> dict:
    """One run (the shape ``bench.main`` stores) from the shard files of ``engines`` (default: every engine found).

    Raises when an engine's shards leave a gap, overlap or differ in stride, time limit or selection; with
    ``partial`` an engine whose shards leave gaps (never overlaps) is scored on the schemas it covers, and the run
    says so (``coverage``, the note)."""
    pieces = _pieces(out_dir)
    if not pieces:
        raise ValueError(f"no shard files in {out_dir}")
    first = pieces[0]
    for s in pieces:
        for key in ("stride", "limit_s", "total"):
            if s[key] != first[key]:
                raise ValueError(f"shard [{s['start']}, {s['stop']}) of {s['engine']} has {key}={s[key]!r}, "
                                 f"shard [{first['start']}, {first['stop']}) of {first['engine']} {first[key]!r}")
    units = mb.load_maskbench(folder, first["stride"])
    if len(units) != first["total"]:
        raise ValueError(f"{folder} now selects {len(units)} schemas, the shards were cut from {first['total']}")
    order = list(mb.SESSIONS)  # ours first, as in a single run
    found = sorted(dict.fromkeys(s["engine"] for s in pieces), key=lambda e: order.index(e) if e in order else 99)
    engines = [e for e in (engines or found)]
    missing = [e for e in engines if e not in found]
    if missing:
        raise ValueError(f"no shards of {missing} in {out_dir}")
    total_files = len(list(Path(folder).glob("*.json")))
    run: dict = {"limit_s": first["limit_s"], "maskbench_schemas": len(units),
                 "maskbench_selection": _selection(first["stride"], total_files),
                 "valid_tests": sum(t["valid"] for u in units for t in u["tests"]),
                 "invalid_tests": sum(not t["valid"] for u in units for t in u["tests"]),
                 "maskbench": {}, "maskbench_misses": {}, "coverage": {}, "shards": []}
    used, covered_ids, failed_ids = [], {}, {}
    for e in engines:
        mine, problem = _coverage([s for s in pieces if s["engine"] == e], units)
        if problem and not (partial and "overlap" not in problem):
            raise ValueError(f"{e}: {problem}")
        used += mine
        covered = [u for s in mine for u in units[s["start"]:s["stop"]]]
        res = [r for s in mine for r in s["rows"]]
        run["maskbench"][e] = mb.score(covered, res)
        run["maskbench_misses"][e] = misses(covered, res)
        run["coverage"][e] = len(covered)
        covered_ids[e] = [u["id"] for u in covered]
        failed_ids[e] = set(run["maskbench"][e]["errors"]) | set(run["maskbench_misses"][e])
        run["shards"] += [{"engine": e, "start": s["start"], "stop": s["stop"], "date": s["date"],
                           "wall_s": round(s.get("wall_s", 0.0), 1)} for s in mine]
    if len(set(run["coverage"].values())) > 1:  # engines cut short: compare them on the schemas all of them ran
        common = set.intersection(*(set(v) for v in covered_ids.values()))
        run["common"] = {"schemas": len(common), "passing": {e: len(common - failed_ids[e]) for e in engines},
                         "wrong_accepts": {e: sum(m["wrong_accepts"] for i, m in run["maskbench_misses"][e].items()
                                                  if i in common) for e in engines}}
    run["date"] = max(s["date"] for s in used)
    run["elapsed_s"] = sum(s.get("wall_s", 0.0) for s in used)
    if suite_folder and Path(suite_folder).is_dir():
        sunits = mb.load_suite(suite_folder)
        suite = {e: next((s["suite"] for s in used if s["engine"] == e and s.get("suite")), None) for e in engines}
        if any(suite.values()):  # the engines whose shards ran the suite (--suite on one of their shards)
            run["suite"] = {e: mb.score_suite(sunits, res) for e, res in suite.items() if res}
    short = [f"{mb.LABELS.get(e, e)} on {n} of the {len(units)} schemas (" + ", ".join(
        f"[{s['start']}, {s['stop']})" for s in run["shards"] if s["engine"] == e) + " in sorted file-name order)"
        for e, n in run["coverage"].items() if n < len(units)]
    run["note"] = (f"Run in shards (`--start/--stop`, each engine's range with fresh worker processes, each shard its "
                   f"own hold of the heavy-job lock), {min(s['date'] for s in used)} to {run['date']}; the time in "
                   "the heading is the shards' sum; peak MB is the largest of the shards' workers; percentiles are "
                   "over all shards' samples together."
                   + (f" **Partial coverage**: {'; '.join(short)} (the shards of the rest were not run); such a row "
                      "counts only the schemas its engine ran." if short else "")
                   + (f" On the {run['common']['schemas']} schemas every engine ran, passing: " + ", ".join(
                       f"{mb.LABELS.get(e, e)} {k} (wrong accepts {run['common']['wrong_accepts'][e]})"
                       for e, k in run["common"]["passing"].items()) + "." if "common" in run else ""))
    return run

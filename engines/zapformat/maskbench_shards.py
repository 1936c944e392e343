"""The MaskBench run in shards: each shard a slice of the schemas, run and stored on its own; a merge scores them.

A whole-sample run (1,502 schemas) takes longer than one hold of the shared heavy-job lock should, so it is cut
into index ranges of the selected schemas (sorted file-name order, as ``maskbench.load_maskbench``)::

    flock ~/.paperlab-heavy.lock python -m engines.zapformat.bench --maskbench DIR --full --label L --start 0 --stop 150
    ...                                                                 (one command per range, each its own lock hold)
    python -m engines.zapformat.bench --maskbench DIR --full --label L --merge

Each shard starts fresh worker processes (``maskbench.run_engine``) and writes every per-schema result, the raw TBM
samples included, to ``<data dir>/zapformat/maskbench-shards/<label>/shard-<start>-<stop>.json`` (not docs/). The
merge checks that the shards cover every selected schema exactly once, with one engine set and one time limit,
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
              out_dir: Path, suite_folder=None, run_engine=None) -> Path:
    """Run schemas ``[start, stop)`` of the selection through every engine; write and return the shard file."""
    run_engine = run_engine or mb.run_engine
    units = mb.load_maskbench(folder, stride)
    stop = len(units) if stop is None else min(stop, len(units))
    if not 0 <= start < stop:
        raise ValueError(f"empty shard [{start}, {stop}) of {len(units)} schemas")
    part = units[start:stop]
    shard = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "start": start, "stop": stop,
             "total": len(units), "stride": stride, "limit_s": limit_s, "engines": engines,
             "ids": [u["id"] for u in part], "rows": {}, "elapsed_s": {}}
    t0 = time.perf_counter()
    for e in engines:
        print(f"MaskBench shard [{start}, {stop}): {e} on {len(part)} schemas", flush=True)
        t = time.perf_counter()
        res = run_engine(e, part, limit_s)
        shard["elapsed_s"][e] = time.perf_counter() - t
        for r in res:  # raw TBM samples kept (the merge takes percentiles over all shards), rounded to 10 ns
            if "tbm_us" in r:
                r["tbm_us"] = [round(x, 2) for x in r["tbm_us"]]
        shard["rows"][e] = res
        s = mb.score(part, res)
        print(f"  {e}: passing {s['passing']}/{s['schemas']}, compile errors {s['compile_errors']}, crashes "
              f"{s['crashes']}, timeouts {s['timeouts']}, wrong accepts {s['wrong_accepts']}, wrong rejects "
              f"{s['wrong_rejects']} ({shard['elapsed_s'][e]:.0f} s)", flush=True)
    if suite_folder and Path(suite_folder).is_dir():
        sunits = mb.load_suite(suite_folder)
        shard["suite"] = {e: run_engine(e, sunits, limit_s, suite=True) for e in engines}
    shard["wall_s"] = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"shard-{start:05d}-{stop:05d}.json"
    path.write_text(json.dumps(shard))
    print(f"wrote {path} ({shard['wall_s']:.0f} s)", flush=True)
    return path


def misses(units: list[dict], results: list[dict]) -> dict:
    """Schemas that compiled but did not pass: id -> wrong accepts / wrong rejects (the per-schema rows of a whole
    sample stay in the shard files; compile errors and crashes are already in the score's ``errors``)."""
    out = {}
    for u, r in zip(units, results):
        if r.get("status") != "ok":
            continue
        wa = sum(1 for t, a in zip(u["tests"], r["tests"]) if a and not t["valid"])
        wr = sum(1 for t, a in zip(u["tests"], r["tests"]) if not a and t["valid"])
        if wa or wr:
            out[u["id"]] = {"wrong_accepts": wa, "wrong_rejects": wr}
    return out


def merge(folder, out_dir: Path, suite_folder=None) -> dict:
    """One run (the shape ``bench.main`` stores) from the shard files; raises when shards are missing or clash."""
    shards = [json.loads(p.read_text()) for p in sorted(Path(out_dir).glob("shard-*.json"))]
    if not shards:
        raise ValueError(f"no shard files in {out_dir}")
    first = shards[0]
    for s in shards:
        for key in ("stride", "limit_s", "engines", "total"):
            if s[key] != first[key]:
                raise ValueError(f"shard [{s['start']}, {s['stop']}) has {key}={s[key]!r}, "
                                 f"shard [{first['start']}, {first['stop']}) {first[key]!r}")
    units = mb.load_maskbench(folder, first["stride"])
    if len(units) != first["total"]:
        raise ValueError(f"{folder} now selects {len(units)} schemas, the shards were cut from {first['total']}")
    shards.sort(key=lambda s: s["start"])
    pos = 0
    for s in shards:
        if s["start"] != pos:
            what = "overlap" if s["start"] < pos else "gap"
            raise ValueError(f"shards {what} at schema {min(pos, s['start'])}: next shard starts at {s['start']}")
        if s["ids"] != [u["id"] for u in units[s["start"]:s["stop"]]]:
            raise ValueError(f"shard [{s['start']}, {s['stop']}) holds other schemas than the folder's")
        pos = s["stop"]
    if pos != len(units):
        raise ValueError(f"shards end at schema {pos} of {len(units)}")
    total_files = len(list(Path(folder).glob("*.json")))
    run: dict = {"date": max(s["date"] for s in shards), "limit_s": first["limit_s"],
                 "maskbench_schemas": len(units), "maskbench_selection": _selection(first["stride"], total_files),
                 "valid_tests": sum(t["valid"] for u in units for t in u["tests"]),
                 "invalid_tests": sum(not t["valid"] for u in units for t in u["tests"]),
                 "maskbench": {}, "maskbench_misses": {},
                 "elapsed_s": sum(s["wall_s"] for s in shards),
                 "shards": [{"start": s["start"], "stop": s["stop"], "date": s["date"], "wall_s": round(s["wall_s"], 1)}
                            for s in shards]}
    for e in first["engines"]:
        res = [r for s in shards for r in s["rows"][e]]
        run["maskbench"][e] = mb.score(units, res)
        run["maskbench_misses"][e] = misses(units, res)
    with_suite = [s for s in shards if s.get("suite")]
    if with_suite and suite_folder and Path(suite_folder).is_dir():
        sunits = mb.load_suite(suite_folder)
        run["suite"] = {e: mb.score_suite(sunits, res) for e, res in with_suite[-1]["suite"].items()}
    run["note"] = (f"Run in {len(shards)} shards (`--start/--stop`, each with fresh worker processes and its own hold of "
                   f"the heavy-job lock), {min(s['date'] for s in shards)} to {run['date']}; the time in the heading "
                   "is the shards' sum; peak MB is the largest of the shards' workers; percentiles are over all "
                   "shards' samples together.")
    return run

"""The sharded MaskBench run: shards written to their own folder, merged into the same scores one run gives."""
from __future__ import annotations

import json

import pytest

from engines.zapformat import bench
from engines.zapformat import maskbench as mb
from engines.zapformat import maskbench_shards as shards

SCHEMAS = [
    ({"type": "integer", "maximum": 3}, [(True, 3), (False, 4)]),
    ({"type": "array", "uniqueItems": True}, [(True, [1])]),
    ({"type": "string"}, [(False, 1), (True, "x")]),
    ({"type": "boolean"}, [(True, False)]),
    ({"enum": ["a", "b"]}, [(True, "a"), (False, "c")]),
]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "maskbench"
    folder.mkdir()
    for i, (schema, tests) in enumerate(SCHEMAS):
        (folder / f"s{i:02d}.json").write_text(json.dumps(
            {"description": "", "meta": {"features": []}, "schema": schema,
             "tests": [{"valid": v, "data": d} for v, d in tests]}))
    return folder


def _fake_engine(engine, units, limit_s, suite=False):
    """Verdicts from jsonschema, one TBM sample per instance: no worker processes."""
    out = []
    for k, u in enumerate(units):
        if "uniqueItems" in u["schema"]:
            out.append({"id": u["id"], "status": "compile_error", "error": "keyword 'uniqueItems' is not supported"})
            continue
        out.append({"id": u["id"], "status": "ok", "ttfm_us": 100.0 + k, "peak_mb": float(len(units)),
                    "tests": [mb._valid(t["data"], u["schema"], u["schema"]) for t in u["tests"]],
                    "tbm_us": [1.0 + k] * len(u["tests"])})
    return out


def test_merged_shards_score_as_one_run(corpus, tmp_path):
    out = tmp_path / "shards"
    for start, stop in ((0, 2), (2, 4), (4, None)):
        shards.run_shard(corpus, ["a", "b"], 5.0, 1, start, stop, out, run_engine=_fake_engine)
    assert sorted(p.name for p in out.iterdir()) == [f"shard-{r}-{e}.json" for r in ("00000-00002", "00002-00004",
                                                                                     "00004-00005") for e in "ab"]
    run = shards.merge(corpus, out)
    units = mb.load_maskbench(corpus, 1)
    whole = mb.score(units, _fake_engine("a", units, 5.0))
    merged = run["maskbench"]["a"]
    for key in ("schemas", "passing", "compile_errors", "wrong_accepts", "wrong_rejects", "ttfm_n", "tbm_n"):
        assert merged[key] == whole[key], key
    assert (merged["passing"], merged["compile_errors"], merged["schemas"]) == (4, 1, 5)
    assert merged["peak_mb"] == 2.0  # the largest shard worker's, not the sum
    assert run["maskbench_schemas"] == 5 and run["maskbench_selection"] == "all files"
    assert [(s["engine"], s["start"], s["stop"]) for s in run["shards"]][:3] == [("a", 0, 2), ("a", 2, 4), ("a", 4, 5)]
    assert run["coverage"] == {"a": 5, "b": 5} and "Partial" not in run["note"]
    assert run["maskbench_misses"]["b"] == {}  # the fake engine's verdicts are jsonschema's


def test_merge_refuses_gaps_overlaps_and_mixed_settings(corpus, tmp_path):
    out = tmp_path / "shards"
    shards.run_shard(corpus, ["a"], 5.0, 1, 0, 2, out, run_engine=_fake_engine)
    shards.run_shard(corpus, ["a"], 5.0, 1, 3, 5, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="gap at schema 2"):
        shards.merge(corpus, out)
    with pytest.raises(ValueError, match="no shards of"):
        shards.merge(corpus, out, engines=["c"])
    shards.run_shard(corpus, ["a"], 5.0, 1, 1, 3, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="overlap"):
        shards.merge(corpus, out)
    (out / "shard-00001-00003-a.json").unlink()
    shards.run_shard(corpus, ["a"], 9.0, 1, 2, 3, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="limit_s"):
        shards.merge(corpus, out)
    with pytest.raises(ValueError, match="no shard files"):
        shards.merge(corpus, tmp_path / "empty")


def test_cli_shards_then_merge_into_the_results_page(corpus, tmp_path):
    """End to end through the real worker (engine zapformat-bytes: no tokenizer, so this stays fast)."""
    sd, out = tmp_path / "shards", tmp_path / "results" / "zapformat-maskbench.json"
    out.parent.mkdir()
    common = ["--maskbench", str(corpus), "--full", "--engines", "zapformat-bytes", "--label", "whole",
              "--shard-dir", str(sd), "--out", str(out), "--limit-s", "60"]
    assert bench.main(common + ["--start", "0", "--stop", "3"]) == 0
    assert not out.exists()  # a shard writes only its shard file
    assert bench.main(common + ["--start", "3"]) == 0
    assert bench.main(common + ["--merge"]) == 0
    run = json.loads(out.read_text())["runs"]["whole"]
    s = run["maskbench"]["zapformat-bytes"]
    assert (s["schemas"], s["passing"], s["compile_errors"], s["wrong_accepts"]) == (5, 4, 1, 0)
    page = out.with_suffix(".md").read_text()
    assert "## Run `whole`" in page and "Run in shards" in page


def test_misses_list_schemas_that_compiled_but_failed():
    units = [{"id": "x", "tests": [{"valid": True}, {"valid": False}]}, {"id": "y", "tests": [{"valid": False}]},
             {"id": "z", "tests": [{"valid": True}]}]
    res = [{"id": "x", "status": "ok", "tests": [False, True]}, {"id": "y", "status": "ok", "tests": [False]},
           {"id": "z", "status": "timeout"}]
    assert shards.misses(units, res) == {"x": {"wrong_accepts": 1, "wrong_rejects": 1}}


def test_engines_cut_differently_and_a_partial_merge(corpus, tmp_path):
    """A slow engine's range may be cut finer; with partial=True an engine with gaps is scored on what it covers."""
    out = tmp_path / "shards"
    shards.run_shard(corpus, ["fast", "slow"], 5.0, 1, 0, 3, out, run_engine=_fake_engine)
    shards.run_shard(corpus, ["fast"], 5.0, 1, 3, 5, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="slow: shards end at schema 3 of 5"):
        shards.merge(corpus, out)
    assert shards.merge(corpus, out, engines=["fast"])["maskbench"]["fast"]["schemas"] == 5
    shards.run_shard(corpus, ["slow"], 5.0, 1, 4, 5, out, run_engine=_fake_engine)
    run = shards.merge(corpus, out, partial=True)
    assert run["coverage"] == {"fast": 5, "slow": 4} and run["maskbench"]["slow"]["schemas"] == 4
    assert "Partial coverage" in run["note"] and "[0, 3), [4, 5)" in run["note"]
    # compared on the schemas both ran: 0-2 and 4 (schema 1 is a compile error for both)
    assert run["common"] == {"schemas": 4, "passing": {"fast": 3, "slow": 3}, "wrong_accepts": {"fast": 0, "slow": 0}}


def test_first_layout_shard_files_still_merge(corpus, tmp_path):
    """Shard files of the first layout (every engine of a range in one file) are read too."""
    out = tmp_path / "shards"
    out.mkdir()
    units = mb.load_maskbench(corpus, 1)
    rows = _fake_engine("a", units, 5.0)
    (out / "shard-00000-00005.json").write_text(json.dumps(
        {"date": "2026-12-06 05:16 UTC", "start": 0, "stop": 5, "total": 5, "stride": 1, "limit_s": 5.0,
         "engines": ["a"], "ids": [u["id"] for u in units], "rows": {"a": rows}, "elapsed_s": {"a": 3.0},
         "wall_s": 3.0}))
    run = shards.merge(corpus, out)
    assert run["maskbench"]["a"]["passing"] == 4 and run["elapsed_s"] == 3.0

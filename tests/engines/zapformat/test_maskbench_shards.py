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
    assert sorted(p.name for p in out.iterdir()) == ["shard-00000-00002.json", "shard-00002-00004.json",
                                                     "shard-00004-00005.json"]
    run = shards.merge(corpus, out)
    units = mb.load_maskbench(corpus, 1)
    whole = mb.score(units, _fake_engine("a", units, 5.0))
    merged = run["maskbench"]["a"]
    for key in ("schemas", "passing", "compile_errors", "wrong_accepts", "wrong_rejects", "ttfm_n", "tbm_n"):
        assert merged[key] == whole[key], key
    assert (merged["passing"], merged["compile_errors"], merged["schemas"]) == (4, 1, 5)
    assert merged["peak_mb"] == 2.0  # the largest shard worker's, not the sum
    assert run["maskbench_schemas"] == 5 and run["maskbench_selection"] == "all files"
    assert [(s["start"], s["stop"]) for s in run["shards"]] == [(0, 2), (2, 4), (4, 5)]
    assert run["maskbench_misses"]["b"] == {}  # the fake engine's verdicts are jsonschema's


def test_merge_refuses_gaps_overlaps_and_mixed_settings(corpus, tmp_path):
    out = tmp_path / "shards"
    shards.run_shard(corpus, ["a"], 5.0, 1, 0, 2, out, run_engine=_fake_engine)
    shards.run_shard(corpus, ["a"], 5.0, 1, 3, 5, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="gap at schema 2"):
        shards.merge(corpus, out)
    shards.run_shard(corpus, ["a"], 5.0, 1, 1, 3, out, run_engine=_fake_engine)
    with pytest.raises(ValueError, match="overlap"):
        shards.merge(corpus, out)
    (out / "shard-00001-00003.json").unlink()
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
    assert "## Run `whole`" in page and "Run in 2 shards" in page


def test_misses_list_schemas_that_compiled_but_failed():
    units = [{"id": "x", "tests": [{"valid": True}, {"valid": False}]}, {"id": "y", "tests": [{"valid": False}]},
             {"id": "z", "tests": [{"valid": True}]}]
    res = [{"id": "x", "status": "ok", "tests": [False, True]}, {"id": "y", "status": "ok", "tests": [False]},
           {"id": "z", "status": "timeout"}]
    assert shards.misses(units, res) == {"x": {"wrong_accepts": 1, "wrong_rejects": 1}}

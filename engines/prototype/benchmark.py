"""Benchmark of mappers on the bundled instruction set: exact match, over/under-specification, per gap.

Every instruction starts from its domain's default model; the mapper's program is compiled (or the flat
patch applied) and the outcome is scored by ``metrics.score``. A background job in the tab.
"""
from __future__ import annotations

import random
import time
from collections import defaultdict

from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from . import dataset
from .domains import get_domain
from .interface import ProgramError, apply_patch, compile_program
from .metrics import aggregate, score
from .params import MAPPER_LABELS, BenchmarkParams

TAGS = ("plain", "lexical", "precision", "abstraction", "multi", "keep", "structure")


class RunResult(BaseModel):
    mapper: str
    spec_source: str
    label: str
    overall: dict[str, float]
    by_tag: dict[str, dict[str, float]]
    by_domain: dict[str, dict[str, float]]
    unseen_wording: dict[str, float]
    validity: float  # share of executed programs whose model is valid (watertight, ranges, relations)
    seconds_per_instruction: float
    failures: list[dict]


class BenchmarkResult(BaseModel):
    split: str
    n: int
    runs: list[RunResult]
    elapsed_s: float


def select(p: BenchmarkParams) -> list[dict]:
    rows = [r for r in dataset.load(p.split) if r["domain"] in p.domains]
    if p.limit:
        rng = random.Random(p.seed)
        out = []
        for d in p.domains:
            dr = [r for r in rows if r["domain"] == d]
            out += rng.sample(dr, min(p.limit, len(dr)))
        rows = out
    return rows


def make_mapper(kind: str, domain: str, spec: dict, encoder):
    from .mappers import FlatMapper, InterfaceMapper

    if kind == "interface":
        return InterfaceMapper(spec, encoder)
    if kind == "flat":
        return FlatMapper(domain, encoder)
    from .llm import LLMMapper

    return LLMMapper(domain, spec, flat=kind == "llm_flat")


def execute(kind: str, mapper, spec: dict, text: str, state: dict[str, float]) -> dict[str, float]:
    """The state after the mapper's edit (unchanged when the program is refused or invalid)."""
    domain = get_domain(spec["domain"])
    if kind in ("flat", "llm_flat"):
        return apply_patch(domain, state, mapper.map(text, state).patch)
    m = mapper.map(text)
    try:
        c = compile_program(spec, state, m.ops)
    except ProgramError:
        return dict(state)
    return c.state if c.ok else dict(state)


def run_benchmark(params: BenchmarkParams | dict, ctx: JobContext | None = None) -> BenchmarkResult:
    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    from .encoder import get_encoder
    from .mappers import units
    from .specs import get_spec

    t0 = time.perf_counter()
    rows = select(p)
    ctx.progress(0.01, f"encoding {len(rows)} instructions with MiniLM")
    enc = get_encoder()
    texts = list(dict.fromkeys(u for r in rows for u in units(r["text"])))
    for i in range(0, len(texts), 64):  # in chunks, so that Stop takes effect within a chunk (~1 s)
        ctx.check_cancelled()
        enc(texts[i:i + 64])
        done_units = min(i + 64, len(texts))
        ctx.progress(0.01 + 0.01 * done_units / len(texts), f"encoded {done_units}/{len(texts)} instruction units")
    combos = [(m, s) for m in p.mappers for s in p.spec_sources if not (m in ("flat",) and s != p.spec_sources[0])]
    total = len(combos) * len(rows)
    runs, done = [], 0
    for kind, src in combos:
        from .studio import realise

        scores, tags, doms, unseen, valid, failures = [], defaultdict(list), defaultdict(list), defaultdict(list), [], []
        t1 = time.perf_counter()
        mappers = {}
        for r in rows:
            ctx.check_cancelled()
            spec = get_spec(r["domain"], src)
            if r["domain"] not in mappers:
                mappers[r["domain"]] = make_mapper(kind, r["domain"], spec, enc)
            dom = get_domain(r["domain"])
            before = dom.defaults()
            after = execute(kind, mappers[r["domain"]], spec, r["text"], before)
            s = score(dom, r["edits"], before, after)
            scores.append(s)
            for t in r["tags"]:
                tags[t].append(s)
            doms[r["domain"]].append(s)
            unseen["unseen" if r.get("unseen_wording") else "seen"].append(s)
            if after != before and len(valid) < 60:  # validity of executed programs (a sample keeps it fast)
                valid.append(realise(dom, after)[0].valid)
            if not s.exact and len(failures) < 25:
                failures.append({"text": r["text"], "gold": r["edits"],
                                 "got": {k: round(v, 3) for k, v in after.items() if abs(v - before[k]) > 1e-9}})
            done += 1
            if done % 10 == 0 or done == total:
                ctx.progress(0.02 + 0.98 * done / total, f"{MAPPER_LABELS[kind]} ({src} spec): {done}/{total}")
        runs.append(RunResult(
            mapper=kind, spec_source=src if kind in ("interface", "llm_interface") else "raw",
            label=MAPPER_LABELS[kind] + (f" — {src} spec" if kind in ("interface", "llm_interface") else ""),
            overall=aggregate(scores), by_tag={t: aggregate(v) for t, v in tags.items()},
            by_domain={d: aggregate(v) for d, v in doms.items()},
            unseen_wording={k: aggregate(v)["exact"] for k, v in unseen.items()},
            validity=sum(valid) / len(valid) if valid else 1.0,
            seconds_per_instruction=(time.perf_counter() - t1) / max(len(rows), 1), failures=failures))
    return BenchmarkResult(split=p.split, n=len(rows), runs=runs, elapsed_s=time.perf_counter() - t0)

"""UnlearnCanvas-style evaluation with the zoo's judges: UA / IRA / CRA (spec §2, §8 checks 4-6).

For a target concept c of kind K (style or object), over test prompts covering every object × style:
UA = 1 − accuracy of K's judge on prompts of c; IRA = accuracy of K's judge on prompts of the other
concepts of kind K; CRA = accuracy of the other judge on all prompts. Denominators are the numbers of
evaluated images (the sign bug of upstream issue #5 / PR #6 cannot happen: every metric is a mean of
0/1 outcomes). The unedited model gives IRA₀ / CRA₀ on the same subsets.
"""
from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import LocalContext, Subprogress
from engines.common.params import validate
from engines.common.threads import torch_threads

from .erase import make_hooks
from .hooks import StepTracker
from .params import COLOURS, OBJECTS, STYLES, BenchmarkParams, ConceptEdit
from .pipeline import GEN_BATCH, Bundle, caption, generate, load_bundle


def eval_prompts(objects, styles, n_colours: int, offset: int = 2) -> tuple[list[str], dict[str, np.ndarray]]:
    caps, so, ss = [], [], []
    for o in objects:
        for s in styles:
            for j in range(n_colours):
                col = COLOURS[(OBJECTS.index(o) + 5 * STYLES.index(s) + j + offset) % len(COLOURS)]
                caps.append(caption(o, s, col))
                so.append(OBJECTS.index(o))
                ss.append(STYLES.index(s))
    return caps, {"object": np.array(so), "style": np.array(ss)}


def predict_all(b: Bundle, prompts: list[str], samples: int, seed: int, steps: int, guidance: float,
                edits: list[ConceptEdit] | None = None, units: str = "sae", top_m_mode: str = "top_m",
                progress=None) -> dict[str, np.ndarray]:
    """Judge predictions for every prompt × sample (sample-major), with the edits applied if any."""
    from engines.common import zoo

    judges = {"style": zoo.load("judge_style", shared=True), "object": zoo.load("judge_object", shared=True)}
    out = {"style": [], "object": []}
    chunks = [(s, c) for s in range(samples) for c in range(0, len(prompts), GEN_BATCH)]
    tracker = StepTracker()  # generate() resets it per call; the edit plan is the same for every chunk
    hooks = make_hooks(b, edits, tracker, selection=top_m_mode, units=units)[0] if edits else {}
    for n, (s, c) in enumerate(chunks):
        imgs = generate(b.pipe, prompts[c:c + GEN_BATCH], seed + 1000 * s + c, steps, guidance, hooks, tracker)
        for k, j in judges.items():
            out[k].append(j.predict(imgs))
        if progress is not None:
            progress((n + 1) / len(chunks), f"{(n + 1) * 100 // len(chunks)}% of images")
    return {k: np.concatenate(v) for k, v in out.items()}


def metrics(preds: dict, truth: dict, kind: str, targets: list[int]) -> dict[str, float]:
    other = "object" if kind == "style" else "style"
    correct = preds[kind] == truth[kind]
    tgt = np.isin(truth[kind], targets)
    return {"UA": float(1 - correct[tgt].mean()) if tgt.any() else float("nan"),
            "IRA": float(correct[~tgt].mean()) if (~tgt).any() else float("nan"),
            "CRA": float((preds[other] == truth[other]).mean()),
            "n_target": int(tgt.sum()), "n_other": int((~tgt).sum())}


def base_metrics(preds: dict, truth: dict, kind: str, targets: list[int]) -> dict[str, float]:
    m = metrics(preds, truth, kind, targets)
    return {"IRA0": m["IRA"], "CRA0": m["CRA"], "acc_target0": 1 - m["UA"]}


class BenchRow(BaseModel):
    target: str
    units: str
    UA: float
    IRA: float
    CRA: float
    IRA0: float
    CRA0: float

    @property
    def avg(self) -> float:
        return (self.UA + self.IRA + self.CRA) / 3


class BenchmarkResult(BaseModel):
    rows: list[BenchRow]
    base_style_acc: float
    base_object_acc: float
    mean: dict[str, dict[str, float]]
    pair: dict | None
    n_images_per_run: int
    plot: str | None
    seconds: float


def summarise(rows: list[BenchRow]) -> dict[str, dict[str, float]]:
    out = {}
    for units in sorted({r.units for r in rows}):
        rs = [r for r in rows if r.units == units]
        m = {k: float(np.mean([getattr(r, k) for r in rs])) for k in ("UA", "IRA", "CRA", "IRA0", "CRA0")}
        m["avg"] = (m["UA"] + m["IRA"] + m["CRA"]) / 3
        out[units] = m
    return out


@torch_threads(1)
def benchmark(params: BenchmarkParams | dict, ctx=None) -> BenchmarkResult:
    """Style erasure for each target (SAeUron and, optionally, the raw-channel baseline at the same budget)."""
    from . import plots

    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    b = load_bundle(p.build, ctx=ctx)
    bp = b.params
    steps = p.steps or bp.steps
    prompts, truth1 = eval_prompts(bp.objects, bp.styles, p.colours)
    truth = {k: np.tile(v, p.samples) for k, v in truth1.items()}
    units_list = ["sae", "raw"] if p.baseline else ["sae"]
    runs = [(t, u) for t in p.targets for u in units_list] + ([("pair", "sae")] if len(p.pair) == 2 else [])
    span = 1.0 / (len(runs) + 1)
    ctx.progress(0.0, "unedited generations")
    base = predict_all(b, prompts, p.samples, p.seed, steps, p.guidance, progress=Subprogress(ctx, 0, span))
    rows = []
    pair = None
    for n, (t, units) in enumerate(runs):
        sub = Subprogress(ctx, span * (n + 1), span * (n + 2))
        if t == "pair":
            edits = [ConceptEdit(concept=s, gamma=p.gamma, top_m=p.top_m) for s in p.pair]
            pr = predict_all(b, prompts, p.samples, p.seed, steps, p.guidance, edits, progress=sub)
            per = {s: metrics(pr, truth, "style", [STYLES.index(s)])["UA"] for s in p.pair}
            rest = metrics(pr, truth, "style", [STYLES.index(s) for s in p.pair])
            base_rest = metrics(base, truth, "style", [STYLES.index(s) for s in p.pair])
            pair = {"styles": list(p.pair), "UA": per, "IRA": rest["IRA"], "IRA0": base_rest["IRA"], "CRA": rest["CRA"]}
            continue
        edits = [ConceptEdit(concept=t, gamma=p.gamma, top_m=p.top_m)]
        pr = predict_all(b, prompts, p.samples, p.seed, steps, p.guidance, edits, units=units, progress=sub)
        m = metrics(pr, truth, "style", [STYLES.index(t)])
        b0 = base_metrics(base, truth, "style", [STYLES.index(t)])
        rows.append(BenchRow(target=t, units=units, UA=m["UA"], IRA=m["IRA"], CRA=m["CRA"], IRA0=b0["IRA0"], CRA0=b0["CRA0"]))
        ctx.progress(span * (n + 2), f"{t} ({units}): UA {m['UA']:.2f}, IRA {m['IRA']:.2f}, CRA {m['CRA']:.2f}")
    plot = None
    sae_rows = [r.model_dump() for r in rows if r.units == "sae"]
    if sae_rows:
        plot = ctx.artifacts.save_figure("benchmark.png", plots.benchmark_bars(sae_rows, "SAeUron style erasure"))
    return BenchmarkResult(rows=rows, base_style_acc=float((base["style"] == truth["style"]).mean()),
                           base_object_acc=float((base["object"] == truth["object"]).mean()), mean=summarise(rows),
                           pair=pair, n_images_per_run=len(prompts) * p.samples, plot=plot,
                           seconds=time.perf_counter() - t0)


def evaluate_target(b: Bundle, prompts: list[str], truth: dict, base: dict, names: list[str], *, gamma: float, top_m: int,
                    samples: int, seed: int, steps: int, guidance: float, units: str = "sae",
                    selection: str = "top_m", percentile: float = 99.5, progress=None) -> dict[str, float]:
    """UA / IRA / CRA (and the unedited IRA₀ / CRA₀) of erasing ``names`` (same kind) together."""
    from .params import KIND

    kind = KIND[names[0]]
    classes = STYLES if kind == "style" else OBJECTS
    edits = [ConceptEdit(concept=c, gamma=gamma, top_m=top_m, percentile=percentile) for c in names]
    pr = predict_all(b, prompts, samples, seed, steps, guidance, edits, units=units, top_m_mode=selection,
                     progress=progress)
    tg = [classes.index(c) for c in names]
    m = metrics(pr, truth, kind, tg)
    m.update(base_metrics(base, truth, kind, tg))
    m["UA_each"] = {c: metrics(pr, truth, kind, [classes.index(c)])["UA"] for c in names}
    m["avg"] = (m["UA"] + m["IRA"] + m["CRA"]) / 3
    return m

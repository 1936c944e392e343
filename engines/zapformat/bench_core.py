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
    print(json.dumps({**totals, "selected": len(units), "stride": stride, "limit_s": limit_s,
                      "elapsed_s": round(time.perf_counter() - t_all, 1)}))
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
    return 0


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
    a = ap.parse_args(argv)
    os.environ.update(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    if a.cmd == "equal":
        return equal(a.maskbench, a.stride, a.limit_s)
    return generation(a.samples, a.max_new_tokens)


if __name__ == "__main__":
    sys.exit(main())

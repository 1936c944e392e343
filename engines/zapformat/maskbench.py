"""External benchmark: MaskBench (JSONSchemaBench) and the JSON Schema Test Suite through four engines.

``python -m engines.zapformat.bench --maskbench DIR [--suite DIR]`` (``make bench-zapformat``).

Scoring follows ../shared/corpora/README.md (JSONSchemaBench's maskbench): compile the schema (an error or an
unsupported feature is *not passing*, recorded with the engine's own message); for every test instance,
serialise it as compact JSON with object members in schema order, tokenise it with SmolLM2's tokenizer (the
engine's offline copy, ``vocab.smollm2_tokenizer``), and walk the tokens: before each token compute the mask
(timed) and check the token is in it, then advance. A valid instance must be accepted to the end (and the
engine must be able to stop there); an invalid one must be rejected somewhere. A schema *passes* when every
valid instance is accepted and every invalid one rejected.

TTFM (time to first mask) = compile + the first mask; TBM (time between masks) = every later mask.
Peak memory = the worker's VmHWM minus its RSS after loading the tokenizer.

Warm-up, before any schema is timed: LLGuidance, XGrammar and our engine compile ``{"type": "object"}`` once
(tokenizer tables; ours also builds the Unicode tables of ``\d \s \w``, its vocabulary in C++ and the first mask).
What our engine cached then (the JSON value pieces every schema shares: their regexes and eager walks) is pinned;
before each schema, everything else our compiler cached for earlier schemas (programs, grammars, regexes, eager
walks) is forgotten (``masks.forget_schema_caches``), so TTFM counts all of a schema's own compile work, as for the
peers, whose grammar caches are off.

Robustness: each engine runs in its own worker process (single-threaded: RAYON/OMP = 1, XGrammar
``max_threads=1``); the parent gives each schema a wall-clock limit. A schema that exceeds it is a
*timeout*; a worker that dies (segfault, abort, out of memory) is a *crash*; either way the worker is
restarted and the run continues with the next schema. A Python exception while walking tokens is a crash too.

Engines get the schema in their native form: ours and kbnf the KBNF our compiler emits (kbnf's wheel has no
JSON Schema front end, so its compile errors are our compiler's refusals), LLGuidance
``grammar_from_json_schema``, XGrammar ``compile_json_schema(any_whitespace=True, strict_mode=False)``
(JSON Schema's default: additional properties allowed unless the schema says otherwise).
"""
from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path

import numpy as np

from .bench import _status_mb

ENGINES = ["zapformat", "kbnf", "llguidance", "xgrammar"]
LABELS = {"zapformat": "ZapFormat (ours)", "zapformat-python": "ZapFormat, Python reference core", "kbnf": "kbnf (our KBNF)", "llguidance": "LLGuidance", "xgrammar": "XGrammar",
          "zapformat-bytes": "ZapFormat compiler, bytes only (no tokenizer, no masks)"}
# Upstream: guide-ai/jsonschemabench maskbench/README.md, on all 11,306 schemas (see ../shared/corpora/README.md).
UPSTREAM = {"llguidance": {"passing": 8909, "of": 11306, "tbm_p50_us": 46}, "xgrammar": {"passing": 8122, "of": 11306}}
DEFAULT_STRIDE = 15
DEFAULT_LIMIT_S = 60.0


# ----------------------------------------------------------------------------- corpora


def load_maskbench(folder: str | Path, stride: int = DEFAULT_STRIDE) -> list[dict]:
    """Every ``stride``-th file of the folder in sorted-name order (stride 1 = all): fixed, outcome-blind."""
    files = sorted(Path(folder).glob("*.json"))
    units = []
    for f in files[::max(1, stride)]:
        d = json.loads(f.read_text())
        units.append({"id": f.stem, "schema": d["schema"], "tests": [{"valid": t["valid"], "data": t["data"]}
                                                                      for t in d.get("tests", [])],
                      "features": d.get("meta", {}).get("features", [])})
    return units


def load_suite(folder: str | Path) -> list[dict]:
    """The JSON Schema Test Suite, draft 2020-12 required tests: one unit per test group."""
    root = Path(folder)
    root = root / "draft2020-12" if (root / "draft2020-12").is_dir() else root
    units = []
    for f in sorted(root.glob("*.json")):
        for gi, group in enumerate(json.loads(f.read_text())):
            units.append({"id": f"{f.stem}/{gi}", "keyword": f.stem, "description": group["description"],
                          "schema": group["schema"],
                          "tests": [{"valid": t["valid"], "data": t["data"], "description": t["description"]}
                                    for t in group["tests"]]})
    return units


def _resolve(schema, root, depth=0):
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and depth < 20:
        node = root
        for part in schema["$ref"][1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return schema
            node = node[part]
        return _resolve(node, root, depth + 1)
    return schema


def _valid(data, schema, root) -> bool:
    try:
        import jsonschema

        defs = {k: v for k, v in root.items() if k in ("$defs", "definitions")} if isinstance(root, dict) else {}
        return jsonschema.validators.validator_for(root if isinstance(root, dict) else {},
                                                   default=jsonschema.Draft202012Validator)(
            {**defs, **schema} if isinstance(schema, dict) else schema).is_valid(data)
    except Exception:  # noqa: BLE001
        return False


def _property_order(schema, root, out: list, named: list, depth=0, data=None):
    """Declared properties in order (this schema, then allOf/anyOf/oneOf parts); names only required or
    named by dependentRequired go after them (the order in which our compiler declares them)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 10:
        return
    for k in schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else ():
        if k not in out:
            out.append(k)
    for key in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(key, []) if isinstance(schema.get(key), list) else []
        if key != "allOf" and data is not None and len(subs) > 1:  # the first branch the instance satisfies
            subs = [next((b for b in subs if _valid(data, b, root)), None)] or subs
            subs = [b for b in subs if b is not None] or schema.get(key)
        for sub in subs:
            _property_order(sub, root, out, named, depth + 1, data)
    for key in ("if", "then", "else"):  # our compiler declares the condition's names before the branch's
        if isinstance(schema.get(key), dict):
            _property_order(schema[key], root, out, named, depth + 1, data)
    req = schema.get("required") if isinstance(schema.get("required"), list) else []
    deps = schema.get("dependentRequired") if isinstance(schema.get("dependentRequired"), dict) else {}
    for k in list(req) + list(deps) + [x for v in deps.values() if isinstance(v, list) for x in v]:
        if isinstance(k, str) and k not in named:
            named.append(k)


def _child_schema(schema, root, key):
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]
    for k in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(k, []) if isinstance(schema.get(k), list) else ():
            c = _child_schema(sub, root, key)
            if c is not None:
                return c
    ap = schema.get("additionalProperties")
    return ap if isinstance(ap, dict) else None


def _items_schema(schema, root, i):
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return None
    pre = schema.get("prefixItems")
    if isinstance(pre, list) and i < len(pre):
        return pre[i]
    it = schema.get("items")
    if isinstance(it, list):
        return it[i] if i < len(it) else None
    return it if isinstance(it, dict) else None


def order_like_schema(data, schema, root=None):
    """Object members in schema order (declared properties first, in order; the others after, as given)."""
    root = schema if root is None else root
    if isinstance(data, dict):
        order: list = []
        named: list = []
        _property_order(schema, root, order, named, data=data)
        order += [k for k in named if k not in order]
        keys = [k for k in order if k in data] + [k for k in data if k not in order]
        return {k: order_like_schema(data[k], _child_schema(schema, root, k), root) for k in keys}
    if isinstance(data, list):
        return [order_like_schema(v, _items_schema(schema, root, i), root) for i, v in enumerate(data)]
    return data


def serialise(data, schema) -> str:
    return json.dumps(order_like_schema(data, schema), separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------------------- engine sessions (in the worker)


class CompileError(Exception):
    pass


def _our_kbnf(schema) -> str:
    """The KBNF our compiler emits for ``schema`` (a refusal becomes the engine's compile error).

    Flexible whitespace (``[ \\t\\n\\r]*``), as the peers here run (LLGuidance ``whitespace_flexible``, XGrammar
    ``any_whitespace=True``): the comparison stays fair and kbnf receives the same grammar as ours."""
    from .frontend import InputError, to_kbnf

    try:
        return to_kbnf("json_schema", json.dumps(schema), whitespace="flexible")
    except InputError as e:
        raise CompileError(str(e)) from None


class _Ours:
    CORE = "auto"  # the compiled core when it is built (engines/zapformat/compiled.py)

    def __init__(self, schema, ctx):
        from .masks import ConstrainedEngine, EngineConfig

        kbnf_text = _our_kbnf(schema)

        # Suite schemas are tiny: skip the eager regex cache (masks are identical with or without it). End policy:
        # the default (a top-level scalar such as 123 may go on after its first digit, as in LLGuidance and XGrammar).
        self.e = ConstrainedEngine.build(kbnf_text, ctx["vocab"], EngineConfig(eager_regex_cache=not ctx.get("suite"),
                                                                                core=self.CORE))
        self.m = None

    def reset(self):
        self.e.reset()

    def mask(self):
        self.m = self.e.compute_mask()

    def step(self, tok: int) -> bool:
        return bool(self.m[tok]) and self.e.accept_token(tok)

    def can_end(self) -> bool:
        return self.e.finished or self.e.rec.accepting


class _OursPython(_Ours):
    """The Python reference core (``--engines zapformat-python``): same masks, for the speed comparison."""

    CORE = "python"


class _Kbnf:
    def __init__(self, schema, ctx):
        import kbnf

        kbnf_text = _our_kbnf(schema)
        if "\\x00&\\x00" in kbnf_text or "\\x00!\\x00" in kbnf_text or "\\x00%" in kbnf_text:
            raise CompileError("kbnf: the grammar intersects or subtracts regexes (several of pattern/format/"
                               "length on a string, or patternProperties keys), a ZapFormat extension KBNF lacks")
        if "kbnf_vocab" not in ctx:
            v = ctx["vocab"]
            ctx["kbnf_vocab"] = kbnf.Vocabulary({i: kbnf.Token(b) for i, b in v.tokens.items()},
                                                {i: repr(b) for i, b in v.tokens.items()})
        try:
            self.e = kbnf.Engine(kbnf_text, ctx["kbnf_vocab"], kbnf.Config())
        except Exception as e:  # noqa: BLE001 - kbnf refusing our grammar is a compile error
            raise CompileError(f"kbnf: {e}"[:300]) from None
        self.done = False

    def reset(self):
        self.e.reset()
        self.done = False

    def mask(self):
        self.e.compute_allowed_token_ids()

    def step(self, tok: int) -> bool:
        import kbnf

        try:
            r = self.e.try_accept_new_token(tok)
        except Exception:  # noqa: BLE001 - AcceptTokenError: the token is not allowed
            return False
        self.done = r == kbnf.AcceptTokenResult.Finished
        return True

    def can_end(self) -> bool:
        return self.done or self.e.is_finished()


class _LLG:
    def __init__(self, schema, ctx):
        import llguidance

        from .peers import _GTok

        if "llg_tok" not in ctx:
            ctx["llg_tok"] = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_GTok(ctx["vocab"], ctx["encode"])))
        try:
            g = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": True})
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{e}"[:300]) from None
        self.m = llguidance.LLMatcher(ctx["llg_tok"], g, log_level=0)
        if self.m.is_error():
            raise CompileError(self.m.get_error()[:300])
        self.bits = None

    def reset(self):
        self.m.reset()

    def mask(self):
        self.bits = np.frombuffer(self.m.compute_bitmask(), dtype=np.uint32)

    def step(self, tok: int) -> bool:
        if not (int(self.bits[tok >> 5]) >> (tok & 31)) & 1:
            return False
        return self.m.consume_token(tok) and not self.m.is_error()

    def can_end(self) -> bool:
        return self.m.is_accepting()


class _XG:
    def __init__(self, schema, ctx):
        import xgrammar as xg

        v = ctx["vocab"]
        if "xg_compiler" not in ctx:
            toks = [v.tokens.get(i, b"") for i in range(v.size)]
            eos = v.eos_token_id if v.eos_token_id is not None else v.size - 1
            info = xg.TokenizerInfo(toks, xg.VocabType.RAW, vocab_size=v.size, stop_token_ids=[eos])
            ctx["xg_compiler"] = xg.GrammarCompiler(info, max_threads=1, cache_enabled=False)
            ctx["xg_eos"] = eos
        try:
            cg = ctx["xg_compiler"].compile_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{e}"[:300]) from None
        self.matcher = xg.GrammarMatcher(cg)
        self.bitmask = xg.allocate_token_bitmask(1, v.size)
        self.eos = ctx["xg_eos"]
        self.np = None

    def reset(self):
        self.matcher.reset()

    def mask(self):
        self.matcher.fill_next_token_bitmask(self.bitmask)

    def step(self, tok: int) -> bool:
        word = int(self.bitmask[0, tok >> 5])
        if not (word >> (tok & 31)) & 1:
            return False
        return self.matcher.accept_token(tok)

    def can_end(self) -> bool:
        return self.matcher.accept_token(self.eos)


class _Bytes:
    """Our compiler and recognizer on the instance's bytes, no tokenizer and no masks: a fast check of
    coverage and verdicts (``--engines zapformat-bytes``); its times are not TTFM/TBM."""

    def __init__(self, schema, ctx):
        from .earley import Recognizer
        from .grammar import compile_grammar

        self.g = compile_grammar(_our_kbnf(schema))
        self.rec = Recognizer(self.g)

    def reset(self):
        self.rec.reset()

    def mask(self):
        pass

    def step(self, tok) -> bool:
        return self.rec.accept_bytes(tok)

    def can_end(self) -> bool:
        return self.rec.cols[-1].finished_here


# Engines whose compile runs our JSON Schema compiler (their process-wide caches are reset between schemas).
OUR_COMPILER = ("zapformat", "zapformat-python", "kbnf", "zapformat-bytes")
SESSIONS = {"zapformat": _Ours, "zapformat-python": _OursPython, "kbnf": _Kbnf, "llguidance": _LLG, "xgrammar": _XG, "zapformat-bytes": _Bytes}


def run_unit(engine: str, unit: dict, ctx: dict) -> dict:
    """Compile one schema and walk every test instance through the engine."""
    out = {"id": unit["id"], "status": "ok", "tests": []}
    t0 = time.perf_counter()
    try:
        sess = SESSIONS[engine](unit["schema"], ctx)
        sess.reset()
        sess.mask()
        out["ttfm_us"] = (time.perf_counter() - t0) * 1e6
    except CompileError as e:
        return {**out, "status": "compile_error", "error": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - anything else while compiling is the engine crashing
        return {**out, "status": "crash", "error": f"{type(e).__name__}: {e}"[:300]}
    tbm: list[float] = []
    first = True
    try:
        for t in unit["tests"]:
            toks = ctx["encode"](serialise(t["data"], unit["schema"]))
            if not first:
                sess.reset()
            ok = True
            for i, tok in enumerate(toks):
                if not (first and i == 0):  # the first mask of the run was taken (and timed) as TTFM
                    s = time.perf_counter()
                    sess.mask()
                    tbm.append((time.perf_counter() - s) * 1e6)
                first = False
                if not sess.step(tok if isinstance(tok, bytes) else int(tok)):
                    ok = False
                    break
            first = False
            accepted = ok and sess.can_end()
            out["tests"].append(accepted)
    except Exception as e:  # noqa: BLE001
        return {**out, "status": "crash", "error": f"{type(e).__name__}: {traceback.format_exc(limit=2)[-250:]}"}
    out["tbm_us"] = tbm
    return out


def _worker(engine: str, conn, suite: bool = False) -> None:
    os.environ.update(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
                      MKL_NUM_THREADS="1")
    from .encoders import load_encoder

    if engine == "zapformat-bytes":  # the whole instance as one "token" of bytes
        ctx = {"vocab": None, "encode": lambda text: [text.encode()], "suite": suite}
    else:
        enc = load_encoder("smollm2")
        ctx = {"vocab": enc.vocab, "encode": enc.encode, "suite": suite}
    ours = engine in OUR_COMPILER
    if engine in ("xgrammar", "llguidance", "zapformat", "zapformat-python"):
        try:  # build the tokenizer tables outside the first schema's time
            if engine in ("zapformat", "zapformat-python"):  # + the Unicode tables of \d \s \w, built once
                from .regex import load_unicode_tables

                load_unicode_tables()
            s = SESSIONS[engine]({"type": "object"}, ctx)
            if engine in ("zapformat", "zapformat-python"):
                s.reset()
                s.mask()
        except Exception:  # noqa: BLE001
            pass
    if ours and ctx["vocab"] is not None:
        from .masks import pin_schema_independent

        pin_schema_independent(ctx["vocab"])  # what {"type": "object"} compiled: kept; the rest is forgotten below
    base = _status_mb("VmRSS")
    conn.send(("ready", None))
    while True:
        unit = conn.recv()
        if unit is None:
            return
        if ours:  # nothing compiled for an earlier schema is reused (the peers run with their grammar caches off)
            from .masks import forget_schema_caches

            forget_schema_caches(ctx["vocab"])
        res = run_unit(engine, unit, ctx)
        res["peak_mb"] = max(0.0, _status_mb("VmHWM") - base)
        conn.send(("result", res))


class _Pool:
    """One worker process for one engine, restarted after a timeout or a crash."""

    def __init__(self, engine: str, suite: bool = False):
        self.engine, self.suite = engine, suite
        self.proc = self.conn = None

    def start(self):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(self.engine, child, self.suite), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not self.conn.poll(600):
            raise RuntimeError(f"{self.engine}: worker did not start")
        self.conn.recv()

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
        self.proc = self.conn = None

    def run(self, unit: dict, limit_s: float) -> dict:
        if self.proc is None:
            self.start()
        self.conn.send(unit)
        try:
            if self.conn.poll(limit_s):
                return self.conn.recv()[1]
            self.kill()
            return {"id": unit["id"], "status": "timeout", "error": f"no result within {limit_s:.0f} s"}
        except (EOFError, OSError, BrokenPipeError):
            code = self.proc.exitcode if self.proc is not None else None
            self.kill()
            return {"id": unit["id"], "status": "crash", "error": f"worker died (exit code {code})"}

    def close(self):
        if self.proc is not None:
            try:
                self.conn.send(None)
                self.proc.join(10)
            except Exception:  # noqa: BLE001
                pass
            self.kill()


def available(engine: str) -> str | None:
    mod = {"zapformat": "numpy", "zapformat-python": "numpy", "kbnf": "kbnf", "llguidance": "llguidance", "xgrammar": "xgrammar",
           "zapformat-bytes": "numpy"}[engine]
    try:
        __import__(mod)
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def run_engine(engine: str, units: list[dict], limit_s: float, log=print, suite: bool = False) -> list[dict]:
    reason = available(engine)
    if reason:
        return [{"id": u["id"], "status": "not_installed", "error": reason} for u in units]
    pool = _Pool(engine, suite)
    out = []
    t0 = time.perf_counter()
    try:
        for k, u in enumerate(units):
            out.append(pool.run(u, limit_s))
            if (k + 1) % 25 == 0:
                log(f"  {engine}: {k + 1}/{len(units)} schemas, {time.perf_counter() - t0:.0f} s")
    finally:
        pool.close()
    return out


# ----------------------------------------------------------------------------- scoring


def wrong_counts(unit: dict, result: dict) -> tuple[int, int]:
    """(wrong accepts, wrong rejects) of one compiled schema's verdicts on its instances."""
    wa = sum(1 for t, a in zip(unit["tests"], result["tests"]) if a and not t["valid"])
    wr = sum(1 for t, a in zip(unit["tests"], result["tests"]) if not a and t["valid"])
    return wa, wr


def score(units: list[dict], results: list[dict]) -> dict:
    by_id = {u["id"]: u for u in units}
    s = {"schemas": len(results), "passing": 0, "compile_errors": 0, "crashes": 0, "timeouts": 0,
         "wrong_accepts": 0, "wrong_rejects": 0, "valid_tests": 0, "invalid_tests": 0, "peak_mb": 0.0}
    ttfm, tbm, errors = [], [], {}
    for r in results:
        u = by_id[r["id"]]
        s["peak_mb"] = max(s["peak_mb"], r.get("peak_mb", 0.0))
        st = r["status"]
        if st == "compile_error":
            s["compile_errors"] += 1
            errors[r["id"]] = r.get("error", "")
            continue
        if st in ("crash", "timeout", "not_installed"):
            s["crashes" if st != "timeout" else "timeouts"] += 1
            errors[r["id"]] = f"{st}: {r.get('error', '')}"
            continue
        wa, wr = wrong_counts(u, r)
        s["wrong_accepts"] += wa
        s["wrong_rejects"] += wr
        s["passing"] += wa == 0 and wr == 0
        ttfm.append(r["ttfm_us"])
        tbm.extend(r.get("tbm_us", []))
    for t in (t for u in units for t in u["tests"]):
        s["valid_tests" if t["valid"] else "invalid_tests"] += 1
    for name, arr in (("ttfm", ttfm), ("tbm", tbm)):
        a = np.asarray(arr, dtype=float)
        for p in (50, 75, 90, 99):
            s[f"{name}_p{p}_us"] = float(np.percentile(a, p)) if a.size else None
        s[f"{name}_n"] = int(a.size)
    s["errors"] = errors
    return s


def score_suite(units: list[dict], results: list[dict]) -> dict:
    """Per keyword file: tests passed / total, and groups refused (compile error) or crashed."""
    by_id = {r["id"]: r for r in results}
    out: dict = {}
    for u in units:
        k = out.setdefault(u["keyword"], {"tests": 0, "passed": 0, "refused": 0, "crashed": 0, "wrong_accepts": 0,
                                          "wrong_rejects": 0, "failing": []})
        r = by_id.get(u["id"], {"status": "missing"})
        k["tests"] += len(u["tests"])
        if r["status"] == "compile_error":
            k["refused"] += len(u["tests"])
            continue
        if r["status"] != "ok":
            k["crashed"] += len(u["tests"])
            continue
        for t, a in zip(u["tests"], r["tests"]):
            if a == t["valid"]:
                k["passed"] += 1
            else:
                k["wrong_accepts" if a else "wrong_rejects"] += 1
                k["failing"].append(f"{u['description']} / {t['description']}")
    return out


# ----------------------------------------------------------------------------- report


def _us(v) -> str:
    if v is None:
        return "—"
    return f"{v / 1000:.1f} ms" if v >= 1000 else f"{v:.0f} µs"


def render(meta: dict, mb: dict | None, suite: dict | None) -> str:
    lines = []
    if mb is not None:
        n = meta["maskbench_schemas"]
        lines += [f"### MaskBench sample ({n} schemas; {meta['maskbench_selection']})", "",
                  f"Tokenizer: SmolLM2 (49,152 tokens, offline copy). Single-threaded, each engine in its own worker "
                  f"process, {meta['limit_s']:.0f} s wall-clock limit per schema. {meta['valid_tests']} valid and "
                  f"{meta['invalid_tests']} invalid instances.", "",
                  "| engine | passing | compile errors | crashes | timeouts | wrong accepts | wrong rejects | "
                  "TTFM p50 / p75 / p90 / p99 | TBM p50 / p75 / p90 / p99 | peak MB |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for e, s in mb.items():
            ttfm = " / ".join(_us(s[f"ttfm_p{p}_us"]) for p in (50, 75, 90, 99))
            tbm = " / ".join(_us(s[f"tbm_p{p}_us"]) for p in (50, 75, 90, 99))
            lines.append(f"| {LABELS.get(e, e)} | {s['passing']}/{s['schemas']} ({100 * s['passing'] / max(s['schemas'], 1):.0f}%)"
                         f" | {s['compile_errors']} | {s['crashes']} | {s['timeouts']} | {s['wrong_accepts']} | "
                         f"{s['wrong_rejects']} | {ttfm} | {tbm} | {s['peak_mb']:.0f} |")
        lines += ["", "Upstream (JSONSchemaBench `maskbench/README.md`, all 11,306 schemas, their machine and "
                  "tokenizer): LLGuidance passes 8,909 (79%), TBM p50 46 µs; XGrammar passes 8,122 (72%). "
                  "Percentages are comparable in kind only: our sample is a stratified subsample and our "
                  "serialisation, tokenizer and hardware differ.", ""]
        from collections import Counter

        for e, s in mb.items():
            if not s["errors"] or e == "kbnf":
                continue
            c = Counter(_reason(v) for v in s["errors"].values())
            lines += [f"{LABELS.get(e, e)}: compile errors, crashes and timeouts, grouped by the engine's message:", "",
                      "| reason | schemas |", "|---|---|"]
            lines += [f"| {r} | {k} |" for r, k in c.most_common(25)]
            lines.append("")
    if suite is not None:
        engines = list(suite)
        lines += ["### JSON Schema Test Suite, draft 2020-12 (required tests)", "",
                  "Per keyword file: tests whose verdict is right (valid accepted, invalid rejected) / tests. "
                  "A refused schema (compile error) counts all its tests as not passing (R = tests refused, "
                  "WA = wrong accepts).", "",
                  "| keyword | " + " | ".join(LABELS.get(e, e) for e in engines) + " |",
                  "|---" * (len(engines) + 1) + "|"]
        keywords = sorted(next(iter(suite.values())))
        for k in keywords:
            cells = []
            for e in engines:
                s = suite[e][k]
                extra = []
                if s["refused"]:
                    extra.append(f"R {s['refused']}")
                if s["wrong_accepts"]:
                    extra.append(f"WA {s['wrong_accepts']}")
                if s["crashed"]:
                    extra.append(f"crash {s['crashed']}")
                cells.append(f"{s['passed']}/{s['tests']}" + (f" ({', '.join(extra)})" if extra else ""))
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        tot = []
        for e in engines:
            p = sum(s["passed"] for s in suite[e].values())
            t = sum(s["tests"] for s in suite[e].values())
            wa = sum(s["wrong_accepts"] for s in suite[e].values())
            tot.append(f"**{p}/{t}** (WA {wa})")
        lines.append("| **all** | " + " | ".join(tot) + " |")
        lines.append("")
    return "\n".join(lines)


def _reason(msg: str) -> str:
    """A refusal message without its JSON pointer, so that equal reasons group together."""
    import re

    text = re.sub(r"^(?:grammar error: )?JSON Schema error at \S*: ", "", msg)
    text = re.sub(r"'[^']*'", "'…'", text) if text.startswith("$ref") else text
    return text[:90].replace("|", "\\|").replace("\n", " ")

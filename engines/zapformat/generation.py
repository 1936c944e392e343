"""Constrained generation with SmolLM2-135M-Instruct: a transformers ``LogitsProcessor``.

Each batch row has its own recognizer; all rows share one compiled program and one state cache (the
paper's cache serving many queries). EOS is allowed exactly when the row's text is a complete sentence of
the grammar (``ConstrainedEngine.accepting``), next to whatever tokens may still extend it: a top-level
``[0-9]+`` may write "123" token by token and stop after any digit, never before the first. A finished row
(nothing can follow) may only emit EOS. A row whose mask is empty before the grammar accepts is reported as
a dead end (and given EOS so the batch can stop) instead of emitting garbage.
"""
from __future__ import annotations

import json
import random
import re
import time

from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, stop_generation_when
from engines.common.params import validate

from .frontend import InputError, to_kbnf
from .masks import ConstrainedEngine, EngineConfig
from .params import GenerateParams
from .vocab import from_hf_tokenizer

SUBJECTS = ["a chef", "a pilot", "a painter", "a nurse", "a farmer", "a student", "an astronaut", "a baker", "a judge",
            "a sailor", "a poet", "a teacher", "a mechanic", "a dancer", "a doctor", "a gardener", "a librarian",
            "a musician", "a photographer", "a plumber", "a scientist", "a tailor", "a waiter", "a writer", "an actor"]


class GrammarLogitsProcessor:
    """transformers LogitsProcessor: disallowed logits -> -inf, using one ConstrainedEngine per row."""

    def __init__(self, program, vocab, batch: int, prompt_len: int, config: EngineConfig | None = None):
        cache: dict = {}
        self.engines = [ConstrainedEngine(program, config or EngineConfig()) for _ in range(batch)]
        for e in self.engines:
            e.cache = cache  # shared state cache
        self.vocab, self.prompt_len = vocab, prompt_len
        self.dead_end = [False] * batch
        self.stopped = [False] * batch  # the row emitted EOS (what follows is padding, never fed to the grammar)
        self.mask_s = 0.0
        self.calls = 0

    def allowed(self, row: int, width: int | None = None):
        """Bool tensor over ``width`` ids: the grammar's mask for this row, plus EOS iff the text is complete."""
        import torch

        e, eos = self.engines[row], self.vocab.eos_token_id
        width = width or self.vocab.size
        allowed = torch.zeros(width, dtype=torch.bool)
        if not (e.finished or self.dead_end[row] or self.stopped[row]):
            m = e.compute_mask()
            n = min(len(m), width)
            allowed[:n] = torch.from_numpy(m[:n])  # a copy: the cached mask is never written
        if eos is not None and eos < width:
            allowed[eos] = bool(e.accepting or self.dead_end[row] or self.stopped[row])
            if not allowed.any():  # nothing extends the text and it is not complete: stop, reported as a dead end
                self.dead_end[row] = True
                allowed[eos] = True
        return allowed

    def __call__(self, input_ids, scores):
        t0 = time.perf_counter()
        eos = self.vocab.eos_token_id
        for row, e in enumerate(self.engines):
            if input_ids.shape[1] > self.prompt_len:
                last = int(input_ids[row, -1])
                if last == eos:
                    self.stopped[row] = True
                elif not (e.finished or self.dead_end[row] or self.stopped[row]):
                    e.accept_token(last)
            scores[row, ~self.allowed(row, scores.shape[1])] = float("-inf")
        self.mask_s += time.perf_counter() - t0
        self.calls += 1
        return scores


class Sample(BaseModel):
    prompt: str
    constrained: str
    constrained_valid: bool
    unconstrained: str
    unconstrained_valid: bool
    dead_end: bool
    stop: str = "eos"  # constrained sample: "eos", "max_new_tokens" (cut at the length cap) or "dead_end"


class GenerateResult(BaseModel):
    samples: list[Sample]
    constrained_valid_rate: float
    unconstrained_valid_rate: float
    mask_ms_per_token: float
    constrained_s: float
    unconstrained_s: float
    tokens: int
    elapsed_s: float
    # What the samples were constrained by, shown beside them in the tab.
    grammar_kind: str = "json_schema"
    grammar: str = ""
    kbnf: str = ""
    whitespace: str = "bounded"
    max_indent: int = 16
    max_new_tokens: int = 96


def stop_reasons(ids, prompt_len: int, eos: int | None, dead_end: list[bool]) -> list[str]:
    """Why each generated row ended: a dead end, EOS, or the ``max_new_tokens`` cap (no EOS in the new tokens)."""
    out = []
    for row, d in zip(ids, dead_end):
        new = [int(t) for t in row[prompt_len:]]
        out.append("dead_end" if d else "eos" if eos is not None and eos in new else "max_new_tokens")
    return out


def validity_checker(kind: str, text: str, kbnf: str):
    if kind == "json_schema":
        import jsonschema

        schema = json.loads(text)

        def ok(out: str) -> bool:
            try:
                jsonschema.validate(json.loads(out), schema)
                return True
            except Exception:  # noqa: BLE001
                return False

        return ok
    if kind == "regex":
        pat = re.compile(text)
        return lambda out: pat.fullmatch(out) is not None
    from .earley import Recognizer
    from .grammar import compile_grammar

    g = compile_grammar(kbnf)

    def ok_cfg(out: str) -> bool:
        r = Recognizer(g)
        return r.accept_bytes(out.encode()) and r.accepting

    return ok_cfg


def generate(params: GenerateParams | dict, ctx: JobContext | None = None) -> GenerateResult:
    p = validate(GenerateParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    try:
        kbnf = to_kbnf(p.grammar_kind, p.grammar, p.whitespace, p.max_indent)
    except InputError as e:
        raise ValueError(str(e)) from None
    import torch

    from engines.common.zoo.smollm2 import load_smollm2

    ctx.progress(0.02, "loading SmolLM2-135M-Instruct (first time: about 25 s)")
    model, tok = load_smollm2("cpu")
    vocab = _vocab_for(tok)
    program = ConstrainedEngine.build(kbnf, vocab).program
    valid = validity_checker(p.grammar_kind, p.grammar, kbnf)
    rng = random.Random(p.seed)
    prompts = [f"{p.prompt} The subject is {rng.choice(SUBJECTS)}." if p.vary_prompt else p.prompt
               for _ in range(p.samples)]
    chats = [tok.apply_chat_template([{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True)
             for q in prompts]
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    enc = tok(chats, return_tensors="pt", padding=True)
    outs, times, proc = {}, {}, None
    for i, mode in enumerate(("constrained", "unconstrained")):
        ctx.check_cancelled()
        ctx.progress(0.1 + 0.45 * i, f"generating {p.samples} samples ({mode})")
        torch.manual_seed(p.seed)
        kw = dict(max_new_tokens=p.max_new_tokens, do_sample=p.temperature > 0, pad_token_id=tok.pad_token_id,
                  eos_token_id=tok.eos_token_id)
        if p.temperature > 0:
            kw.update(temperature=p.temperature, top_k=0, top_p=1.0)
        if mode == "constrained":
            proc = GrammarLogitsProcessor(program, vocab, len(prompts), enc["input_ids"].shape[1])
            kw["logits_processor"] = [proc]
        kw["stopping_criteria"] = stop_generation_when(ctx.cancelled)
        t = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**enc, **kw)
        ctx.check_cancelled()
        times[mode] = time.perf_counter() - t
        outs[mode] = [tok.decode(o[enc["input_ids"].shape[1]:], skip_special_tokens=True) for o in out]
        if mode == "constrained":
            stops = stop_reasons(out, enc["input_ids"].shape[1], tok.eos_token_id, proc.dead_end)
    samples = [Sample(prompt=q, constrained=c, constrained_valid=valid(c), unconstrained=u,
                      unconstrained_valid=valid(u.strip()), dead_end=d, stop=st)
               for q, c, u, d, st in zip(prompts, outs["constrained"], outs["unconstrained"], proc.dead_end, stops)]
    n = len(samples)
    per_token = 1000 * proc.mask_s / max(proc.calls * n, 1)
    ctx.progress(1.0, "done")
    return GenerateResult(samples=samples, constrained_valid_rate=sum(s.constrained_valid for s in samples) / n,
                          unconstrained_valid_rate=sum(s.unconstrained_valid for s in samples) / n,
                          mask_ms_per_token=per_token, constrained_s=times["constrained"],
                          unconstrained_s=times["unconstrained"], tokens=proc.calls, elapsed_s=time.perf_counter() - t0,
                          grammar_kind=p.grammar_kind, grammar=p.grammar, kbnf=kbnf, whitespace=p.whitespace,
                          max_indent=p.max_indent, max_new_tokens=p.max_new_tokens)


_VOCABS: dict = {}


def _vocab_for(tok):
    key = id(tok)
    if key not in _VOCABS:
        _VOCABS[key] = from_hf_tokenizer(tok, "smollm2")
    return _VOCABS[key]

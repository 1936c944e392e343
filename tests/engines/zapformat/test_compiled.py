"""The compiled core (C++ ``_zfcore``) against the Python reference: identical masks at every step.

Both engines walk the same token sequences in lockstep: every workload's valid and corrupted instances and every
JSON Schema keyword case of the coverage tests (valid and invalid instances), under the ablation's configurations.
At each step the masks must be equal, and so must everything the step reports (cache hit, allowed, candidates,
simulated, eager use, Earley sets/items before and after), acceptance of the token, ``finished`` and ``accepting``.
Invalid instances are walked past the first disallowed token through ``accept_token`` (the rejected path, which
restores the state) while the two agree. Skipped (with the reason) when the extension is not built.
"""
from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest

from engines.zapformat import compiled
from engines.zapformat.encoders import load_encoder
from engines.zapformat.frontend import to_kbnf
from engines.zapformat.masks import ConstrainedEngine, EngineConfig, compile_program
from engines.zapformat.workloads import WORKLOADS

from .test_json_schema_coverage import CASES

VOCAB = "qwen2.5-mini"
needs_core = pytest.mark.skipif(not compiled.available(), reason=f"compiled core not built: {compiled.IMPORT_ERROR}")

CONFIGS = {
    "default": EngineConfig(),
    "kbnf-end": EngineConfig(stop_at_first_accept=True),
    "nothing": EngineConfig(cache=False, compaction=False, rejected_prefix_cache=False, eager_regex_cache=False),
    "eager-all": EngineConfig(eager_min_tokens=1),
    "no-compaction": EngineConfig(compaction=False),
}


@pytest.fixture(scope="module")
def enc():
    return load_encoder(VOCAB)


def _pair(kbnf: str, vocab, cfg: EngineConfig):
    prog = compile_program(kbnf, vocab, cfg.eager_min_tokens, cfg.eager_regex_cache)
    py = ConstrainedEngine(prog, dataclasses.replace(cfg, core="python"))
    cc = ConstrainedEngine(prog, dataclasses.replace(cfg, core="compiled"))
    assert py.core == "python" and cc.core == "compiled"
    return py, cc


def _stats(e):
    d = dataclasses.asdict(e.last)
    d.pop("mask_us")
    return d


def lockstep(py, cc, texts: list[str], encode, max_rejects: int = 3) -> int:
    """Walk both engines through every text; return the number of compared masks."""
    steps = 0
    for text in texts:
        py.reset()
        cc.reset()
        rejects = 0
        for k, tok in enumerate(encode(text)):
            a, b = py.compute_mask(), cc.compute_mask()
            where = f"{text[:60]!r} token {k}"
            np.testing.assert_array_equal(a, b, err_msg=where)
            assert _stats(py) == _stats(cc), where
            assert (py.hits, py.misses) == (cc.hits, cc.misses), where
            steps += 1
            ok_py, ok_cc = py.accept_token(tok), cc.accept_token(tok)
            assert ok_py == ok_cc == bool(a[tok]), where
            assert (py.finished, py.accepting) == (cc.finished, cc.accepting), where
            if not ok_py:
                rejects += 1
                if rejects >= max_rejects:
                    break
        a, b = py.compute_mask(), cc.compute_mask()
        np.testing.assert_array_equal(a, b, err_msg=f"{text[:60]!r} end")
    return steps


@needs_core
@pytest.mark.parametrize("cfg", sorted(CONFIGS))
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workloads_identical_masks(enc, name, cfg):
    w = WORKLOADS[name]
    py, cc = _pair(w.grammar, enc.vocab, CONFIGS[cfg])
    n = 2 if cfg in ("default", "kbnf-end") else 1
    texts = w.instances(n, seed=5) + w.invalid_instances(n, seed=5)
    # twice: the second walk of the same engines runs on warm caches (hits must coincide too)
    assert lockstep(py, cc, texts + texts[:1], enc.encode) > 10


@needs_core
@pytest.mark.parametrize("keyword, schema, valid, invalid", CASES, ids=[c[0] for c in CASES])
def test_schema_keywords_identical_masks(enc, keyword, schema, valid, invalid):
    kbnf = to_kbnf("json_schema", json.dumps(schema))
    py, cc = _pair(kbnf, enc.vocab, EngineConfig())
    assert lockstep(py, cc, valid + invalid, enc.encode) > 0


@needs_core
def test_shared_cache_across_rows_and_text_accept(enc):
    """Rows sharing one state cache (the logits processor) and multi-token text: same masks, same hits."""
    w = WORKLOADS["orders"]
    prog = compile_program(w.grammar, enc.vocab)
    for core in ("python", "compiled"):
        rows = [ConstrainedEngine(prog, EngineConfig(core=core)) for _ in range(2)]
        rows[1].cache = rows[0].cache
        text = w.instances(1, seed=9)[0].encode()
        for e in rows:
            assert e.accept_text(text[:7]) and not e.accept_text(b"\x00")
        masks = [e.compute_mask() for e in rows]
        assert rows[1].last.cache_hit and np.array_equal(masks[0], masks[1])
        if core == "python":
            ref = masks[0]
        else:
            np.testing.assert_array_equal(ref, masks[0])


REGEX_EXTRA = [
    r"[0-9]{0,300}", r"(a|b)*abb(a|b){0,6}", r"\w+@\w+\.(com|org)", r"[^\x00-\x7f]{2,5}", r".{0,40}", r"",
    "[a-z]+\x00&\x00[a-m]{2,7}", "[a-z]+\x00!\x00(ab|cd)", "\x00%7", "\x00%12", r"(x|xy|xyz)*(yz|z){1,3}",
]


def _patterns() -> list[str]:
    """Every regex terminal of the workloads and of the JSON Schema keyword cases, plus a few hard ones."""
    from engines.zapformat.grammar import compile_grammar

    pats: dict[str, None] = dict.fromkeys(REGEX_EXTRA)
    kbnfs = [w.grammar for w in WORKLOADS.values()] + [to_kbnf("json_schema", json.dumps(c[1])) for c in CASES]
    for k in kbnfs:
        pats.update(dict.fromkeys(d.pattern for d in compile_grammar(k).regexes))
    return list(pats)


@needs_core
def test_regex_automata_identical(monkeypatch):
    """Subset construction, trimming, minimisation and product automata in C++ give the Python reference's
    arrays (same state numbering), and the same errors."""
    from engines.zapformat import regex

    pats = _patterns() + ["[a-c]+\x00&\x00[d-f]+", "(a|b)*a(a|b){15}"]
    out = {}
    for mode in ("compiled", "python"):
        monkeypatch.setenv("ZAPFORMAT_CORE", mode)
        regex.compile_regex.cache_clear()
        res = []
        for p in pats:
            try:
                d = regex.compile_regex(p)
                res.append((d.trans.tolist(), d.accept.tolist()))
            except regex.RegexError as e:
                res.append(str(e))
        out[mode] = res
    regex.compile_regex.cache_clear()
    assert len(pats) > 50
    assert isinstance(out["python"][-2], str) and "matches nothing" in out["python"][-2]
    assert isinstance(out["python"][-1], str) and "DFA larger" in out["python"][-1]
    for p, a, b in zip(pats, out["compiled"], out["python"]):
        assert a == b, p


def test_core_setting_and_fallback(monkeypatch, caplog):
    with pytest.raises(ValueError, match="unknown ZapFormat core"):
        compiled.resolve("fast")
    assert compiled.resolve("python") == "python"
    monkeypatch.setenv("ZAPFORMAT_CORE", "python")
    assert compiled.resolve("auto") == "python"
    monkeypatch.delenv("ZAPFORMAT_CORE")
    assert compiled.resolve("auto") == ("compiled" if compiled.available() else "python")
    # Without the extension: "auto" falls back to Python with a logged warning; "compiled" is a clear error.
    monkeypatch.setattr(compiled, "_zfcore", None)
    monkeypatch.setattr(compiled, "IMPORT_ERROR", "ImportError: test")
    monkeypatch.setattr(compiled, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="engines.zapformat.compiled"):
        assert compiled.resolve("auto") == "python"
    assert "compiled core" in caplog.text and "Python" in caplog.text
    with pytest.raises(RuntimeError, match="not built"):
        compiled.resolve("compiled")


@pytest.mark.parametrize("config", ["default", "nothing"])
def test_unusual_byte_tokens_follow_utf8_in_both_cores(config):
    """Issue 29: a vocabulary whose tokens split multi-byte characters, hold a byte that is never UTF-8 (0xff),
    a raw NUL, or a lone continuation byte. Inside a JSON string the mask allows exactly the tokens that keep the
    bytes a valid UTF-8 prefix of a JSON string, identically in the Python and the compiled core."""
    from engines.zapformat.vocab import Vocabulary

    pieces = [b'"', b"a", b"\xc3", b"\xa9", b"\xc3\xa9", b"\xff", b"\x00", b'"\xc3', b'\xa9"', b"\xe2\x82", b"\xac",
              b"\xac\xc3"]
    vocab = Vocabulary("unusual-bytes", dict(enumerate(pieces)), size=len(pieces) + 1)
    py, cc = _pair(to_kbnf("json_schema", json.dumps({"type": "string"})), vocab, CONFIGS[config])
    ids = {b: i for i, b in enumerate(pieces)}

    def allowed(engine) -> set[bytes]:
        return {pieces[i] for i in np.flatnonzero(engine.compute_mask()) if i < len(pieces)}

    expected = [  # (token just accepted, the tokens allowed next)
        (None, {b'"', b'"\xc3'}),
        (b'"', {b'"', b"a", b"\xc3", b"\xc3\xa9", b"\xe2\x82"}),  # not '"\xc3': the string would end before é
        (b"\xe2\x82", {b"\xac", b"\xac\xc3", b"\xa9", b'\xa9"'}),  # E2 82 + any continuation: € (AC), ₩ (A9)
        (b"\xac\xc3", {b"\xa9", b'\xa9"', b"\xac", b"\xac\xc3"}),  # C3 + any continuation: é (A9), ì (AC)
        (b'\xa9"', set()),  # the string is closed: nothing may follow
    ]
    for engine in (py, cc):
        engine.reset()
        for tok, allowed_next in expected:
            if tok is not None:
                assert engine.accept_token(ids[tok]), (engine.core, tok)
            got = allowed(engine)
            assert got == allowed_next, (engine.core, tok, got)
        assert engine.accepting
        engine.reset()
        assert not engine.accept_token(ids[b"\xa9"])  # a lone continuation byte cannot start anything
    for bad in (b"\xff", b"\x00", b"\xa9"):
        for engine in (py, cc):
            engine.reset()
            assert engine.accept_token(ids[b'"'])
            assert not engine.accept_token(ids[bad]), (engine.core, bad)


@needs_core
@pytest.mark.parametrize("cfg", ["default", "eager-all"])
def test_free_string_shortcut_in_eager_walks_keeps_masks_identical(enc, cfg):
    """The C++ eager walk accepts the tokens whose bytes after the first loop on a free-string state without
    walking them (a table per set of looping bytes, shared by every grammar): masks and step statistics stay the
    Python reference's at every position of keys that share prefixes with many declared names, next to
    undeclared keys, escapes and non-ASCII text."""
    names = ["forbid", "forbid-implicit-octal", "forbid-explicit-octal", "forbid-flow-mappings", "level",
             "level-of-detail", "max-spaces-inside", "min-spaces-inside", "max-spaces-after", "quote-type",
             "required", "extra-required", "extra-allowed"]
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in names},
              "additionalProperties": {"type": "string", "maxLength": 12}}
    kbnf = to_kbnf("json_schema", json.dumps(schema))
    nv = compiled.native_vocab(enc.vocab)
    py, cc = _pair(kbnf, enc.vocab, CONFIGS[cfg])
    texts = ['{"forbid-implicit-octal": "yes", "forbid-implicit": "no", "level": "warn\\u00e9 \\"x\\""}',
             '{"forbidden": "Grüße 漢字", "extra-required-too": "a", "max-spaces-inside": "1"}',
             '{"level-of": "toolongvaluehere!!", "quote-type": "any"}']
    assert lockstep(py, cc, texts + texts[:1], enc.encode) > 30
    assert nv.n_loop_tables() >= 1  # the shortcut ran (the free string's printable bytes loop)

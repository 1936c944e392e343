"""ZapFormat decoding controls (issue 29, deliverable 4): JSON whitespace modes, grammars that may go on after
they accept (EOS only when accepting), the max-new-tokens cap and bounds that name the parameter."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.zapformat.earley import Recognizer
from engines.zapformat.encoders import load_encoder
from engines.zapformat.frontend import to_kbnf
from engines.zapformat.generation import GrammarLogitsProcessor, stop_reasons
from engines.zapformat.grammar import compile_grammar
from engines.zapformat.json_schema import FLEXIBLE_WS, schema_to_kbnf, whitespace_regex
from engines.zapformat.masks import ConstrainedEngine, EngineConfig
from engines.zapformat.params import GenerateParams, StepParams

VOCAB = "qwen2.5-mini"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}},
                                           "c": {"enum": ["x", 2]}}, "required": ["a"]}
VALUE = {"a": 1, "b": ["x", "y"], "c": 2}
COMPACT = json.dumps(VALUE, separators=(",", ":"))
SPACED = json.dumps(VALUE)  # ", " and ": "
PRETTY = json.dumps(VALUE, indent=2)
TWO_NEWLINES = '{\n\n  "a": 1}'
DEEP_INDENT = '{\n' + " " * 17 + '"a": 1}'
TRAILING_THEN_NEWLINE = '{"a": 1,\n\n"c": 2}'


@pytest.fixture(scope="module")
def enc():
    return load_encoder(VOCAB)


def _accepts(grammar: str, text: str) -> bool:
    r = Recognizer(compile_grammar(grammar))
    return r.accept_bytes(text.encode()) and r.accepting


def _tok(enc, data: bytes) -> int:
    return next(i for i, b in enc.vocab.tokens.items() if b == data)


def _ws_tokens(enc) -> list[int]:
    return [i for i, b in enc.vocab.tokens.items() if b and b[:1] in (b" ", b"\t", b"\n", b"\r")]


# ----------------------------------------------------------------------------- whitespace


def test_whitespace_regexes_are_what_the_docs_say():
    assert whitespace_regex("flexible") == FLEXIBLE_WS == r"[ \t\n\r]*"
    assert whitespace_regex("compact") == ""
    assert whitespace_regex("bounded") == r"(?:\r?\n)?[ \t]{0,16}"
    assert whitespace_regex("bounded", 4) == r"(?:\r?\n)?[ \t]{0,4}"
    assert whitespace_regex("bounded", 0) == r"(?:\r?\n)?"


def test_bounded_is_the_default_and_accepts_compact_spaced_and_pretty_json():
    g = schema_to_kbnf(SCHEMA)
    assert g == schema_to_kbnf(SCHEMA, whitespace="bounded", max_indent=16) == to_kbnf("json_schema", json.dumps(SCHEMA))
    for text in (COMPACT, SPACED, PRETTY, '{"a":1}', '{\r\n  "a": 1\r\n}'):
        assert _accepts(g, text), text
    for text in (TWO_NEWLINES, DEEP_INDENT, TRAILING_THEN_NEWLINE, '{"a": 1}\n', '{"a":\n\n1}'):
        assert not _accepts(g, text), text
    assert _accepts(schema_to_kbnf(SCHEMA, max_indent=32), DEEP_INDENT)  # the cap is a setting
    assert not _accepts(schema_to_kbnf(SCHEMA, max_indent=0), PRETTY)


def test_bounded_mask_refuses_a_second_newline(enc):
    """After '{' and one newline, no token may add another newline; flexible still allows it."""
    nl, nlnl, sp = _tok(enc, b"\n"), _tok(enc, b"\n\n"), _tok(enc, b"  ")
    masks = {}
    for mode in ("bounded", "flexible"):
        e = ConstrainedEngine.build(schema_to_kbnf(SCHEMA, whitespace=mode), enc.vocab)
        assert e.compute_mask()[_tok(enc, b"{")] and e.accept_token(_tok(enc, b"{"))
        first = e.compute_mask()
        assert first[nl] and first[sp]
        assert first[nlnl] == (mode == "flexible")  # two newlines in one token
        assert e.accept_token(nl)
        masks[mode] = e.compute_mask()
    b, f = masks["bounded"], masks["flexible"]
    assert not b[nl] and not b[nlnl] and not b[_tok(enc, b"\r\n")]
    assert b[sp] and b[_tok(enc, b'"')]  # indentation and the key still allowed
    assert f[nl] and f[nlnl]
    allowed_newline = [i for i in np.flatnonzero(b) if b"\n" in enc.vocab.tokens[int(i)]]
    assert allowed_newline == []


def test_bounded_accepts_valid_compact_json_token_by_token(enc):
    e = ConstrainedEngine.build(schema_to_kbnf(SCHEMA), enc.vocab)
    for tok in enc.encode(COMPACT):
        assert e.compute_mask()[tok]
        assert e.accept_token(tok)
    assert e.finished and e.accepting


def test_compact_rejects_any_whitespace(enc):
    g = schema_to_kbnf(SCHEMA, whitespace="compact")
    assert _accepts(g, COMPACT)
    for text in (SPACED, PRETTY, ' {"a":1}', '{ "a":1}', '{"a" :1}', '{"a":1 }', '{"a":\t1}', '{"a":1,"b":[ "x"]}'):
        assert not _accepts(g, text), text
    e = ConstrainedEngine.build(g, enc.vocab)
    assert e.accept_token(_tok(enc, b"{"))
    m = e.compute_mask()
    assert not m[_ws_tokens(enc)].any() and m[_tok(enc, b'"')]
    e.reset()
    prefix, checked = b"", 0
    for tok in enc.encode(COMPACT):  # the compact text, token by token: no whitespace token outside strings
        m = e.compute_mask()
        assert m[tok]
        if prefix.count(b'"') % 2 == 0:  # between JSON tokens (inside a string a space is content)
            assert not m[_ws_tokens(enc)].any(), prefix
            checked += 1
        assert e.accept_token(tok)
        prefix += enc.vocab.tokens[tok]
    assert e.accepting and checked >= 6


def test_flexible_is_unchanged_and_used_where_masks_are_compared_with_kbnf_and_peers():
    g = schema_to_kbnf(SCHEMA, whitespace="flexible")
    for text in (COMPACT, SPACED, PRETTY, TWO_NEWLINES, DEEP_INDENT, TRAILING_THEN_NEWLINE, '{\n\n\n\t \r\n"a":1}'):
        assert _accepts(g, text), text
    # Every terminal of a flexible grammar carries formatron's prefix and nothing else.
    prefixes = re.findall(r"#['\"](\(\?:\\r\?\\n\)\?|\[ \\t\\n\\r\]\*)?", g)
    assert prefixes and all(p == FLEXIBLE_WS for p in prefixes)
    assert "(?:\\r?\\n)?" not in g
    # The benchmark workloads (the kbnf mask-equality claim, bench_peers) and the MaskBench run stay flexible.
    from engines.zapformat.maskbench import _our_kbnf
    from engines.zapformat.workloads import ADDRESS, WORKLOADS

    assert WORKLOADS["address"].grammar == schema_to_kbnf(ADDRESS, whitespace="flexible")
    for w in WORKLOADS.values():
        if w.kind == "json_schema":
            assert FLEXIBLE_WS in w.grammar and "(?:\\r?\\n)?" not in w.grammar, w.name
    assert _our_kbnf(SCHEMA) == schema_to_kbnf(SCHEMA, whitespace="flexible")


def test_kbnf_comparison_runs_with_kbnfs_end_policy(enc):
    """The peer adapter used by test_mask_equivalence_kbnf finishes like kbnf (at the first acceptance)."""
    from engines.zapformat.peers import ADAPTERS
    from engines.zapformat.workloads import WORKLOADS

    ours = ADAPTERS["zapformat"](WORKLOADS["address"], enc.vocab, {})
    assert ours.e.config.stop_at_first_accept and not EngineConfig().stop_at_first_accept


def test_regex_and_cfg_inputs_ignore_the_json_whitespace_setting():
    for mode in ("bounded", "compact", "flexible"):
        assert to_kbnf("regex", "[0-9]+", whitespace=mode) == to_kbnf("regex", "[0-9]+")
        assert to_kbnf("cfg", 'start ::= "a";', whitespace=mode) == 'start ::= "a";'


# ----------------------------------------------------------------------------- continuing after acceptance


def _processor(enc, pattern_or_grammar: str, kind: str = "regex", config: EngineConfig | None = None):
    prog = ConstrainedEngine.build(to_kbnf(kind, pattern_or_grammar), enc.vocab).program
    return GrammarLogitsProcessor(prog, enc.vocab, 1, 0, config)


def _step(proc, ids: list[int]) -> torch.Tensor:
    """Call the processor as transformers does after ``ids`` were generated; returns the finite-logit mask."""
    scores = torch.zeros(1, proc.vocab.size)
    out = proc(torch.tensor([ids], dtype=torch.long), scores)
    return torch.isfinite(out[0])


def test_top_level_digits_continue_token_by_token_and_eos_only_after_a_digit(enc):
    eos = enc.vocab.eos_token_id
    digits = [_tok(enc, d) for d in (b"1", b"2", b"3")]
    proc = _processor(enc, "[0-9]+")
    allowed = _step(proc, [])
    assert not allowed[eos] and all(allowed[d] for d in digits)  # no EOS before the first digit
    ids = []
    for d in digits:
        assert allowed[d]
        ids.append(d)
        allowed = _step(proc, ids)
        assert allowed[eos], ids  # complete after any digit
        assert all(allowed[x] for x in digits)  # ... and may go on
        assert not allowed[_tok(enc, b" ")] and not allowed[_tok(enc, b"a")]
    e = proc.engines[0]
    assert e.accepting and not e.finished
    assert e.rec.accepting
    # kbnf's policy (kept for the kbnf comparisons) stops after the first digit.
    k = ConstrainedEngine.build(to_kbnf("regex", "[0-9]+"), enc.vocab, EngineConfig(stop_at_first_accept=True))
    assert k.accept_token(digits[0]) and k.finished and not k.compute_mask().any()
    assert not k.accept_token(digits[1])


def test_eos_is_allowed_only_where_the_grammar_accepts(enc):
    """start ::= "a" | "a" "b" "c": EOS after "a" and after "abc", never after "ab"."""
    eos = enc.vocab.eos_token_id
    a, b, c = (_tok(enc, x) for x in (b"a", b"b", b"c"))
    proc = _processor(enc, 'start ::= "a" | "a" "b" "c";', "cfg")
    assert not _step(proc, [])[eos]
    m = _step(proc, [a])
    assert m[eos] and m[b] and not m[c]
    m = _step(proc, [a, b])
    assert not m[eos] and m[c] and m.sum() == 1
    m = _step(proc, [a, b, c])
    assert m[eos] and m.sum() == 1  # finished: only EOS
    assert proc.engines[0].finished and not proc.dead_end[0]
    # The cached masks are not written by the EOS bit.
    assert not any(mask[eos] for mask, _ in proc.engines[0].cache.values())


def test_an_emitted_eos_stops_feeding_the_grammar(enc):
    eos, one = enc.vocab.eos_token_id, _tok(enc, b"1")
    proc = _processor(enc, "[0-9]+")
    _step(proc, [])
    _step(proc, [one])
    m = _step(proc, [one, eos])  # the row ended; transformers pads it from now on
    assert proc.stopped[0] and m[eos] and m.sum() == 1
    m = _step(proc, [one, eos, one])  # padding is never fed to the recognizer
    assert m.sum() == 1 and proc.engines[0].rec.n_sets == 2


def test_validity_checker_uses_acceptance_at_the_end():
    from engines.zapformat.generation import validity_checker

    g = 'start ::= "a" | "a" "b" "c";'
    ok = validity_checker("cfg", g, g)
    assert ok("a") and ok("abc") and not ok("ab") and not ok("abcd")


def test_tiny_lm_writes_more_than_one_digit_under_a_top_level_regex(enc):
    """Generation is no longer cut after the first match: a random tiny Llama writes several digits."""
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab = enc.vocab
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab.size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                      eos_token_id=vocab.eos_token_id, pad_token_id=vocab.eos_token_id)
    model = LlamaForCausalLM(cfg).eval()
    prompt = torch.tensor([enc.encode("Number:")] * 4)
    prog = ConstrainedEngine.build(to_kbnf("regex", "[0-9]+"), vocab).program
    proc = GrammarLogitsProcessor(prog, vocab, 4, prompt.shape[1])
    with torch.no_grad():
        gen = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=8, do_sample=True,
                             logits_processor=[proc], pad_token_id=vocab.eos_token_id, eos_token_id=vocab.eos_token_id)
    texts = [b"".join(vocab.tokens.get(int(t), b"") for t in row[prompt.shape[1]:]).decode() for row in gen]
    assert all(re.fullmatch("[0-9]+", t) for t in texts), texts
    assert max(len(t) for t in texts) > 1, texts
    reasons = stop_reasons(gen, prompt.shape[1], vocab.eos_token_id, proc.dead_end)
    assert set(reasons) <= {"eos", "max_new_tokens"} and "max_new_tokens" in reasons


def test_stop_reasons():
    ids = [[5, 5, 1, 2, 0], [5, 5, 1, 2, 3], [5, 5, 1, 0, 0]]
    assert stop_reasons(ids, 2, 0, [False, False, True]) == ["eos", "max_new_tokens", "dead_end"]


# ----------------------------------------------------------------------------- bounds name the parameter


@pytest.mark.parametrize("model, extra, field", [
    (GenerateParams, {"max_new_tokens": 1000}, "max_new_tokens"),
    (GenerateParams, {"max_new_tokens": 2}, "max_new_tokens"),
    (GenerateParams, {"max_indent": 65}, "max_indent"),
    (GenerateParams, {"max_indent": -1}, "max_indent"),
    (GenerateParams, {"whitespace": "tight"}, "whitespace"),
    (StepParams, {"target": "x", "max_indent": 100}, "max_indent"),
    (StepParams, {"target": "x", "whitespace": "none"}, "whitespace"),
])
def test_out_of_range_settings_name_the_parameter(model, extra, field):
    with pytest.raises(ParamError) as e:
        validate(model, {"grammar": "{}", **extra})
    assert field in str(e.value)


def test_compiler_settings_name_the_parameter():
    with pytest.raises(ValueError, match="max_indent must be a whole number from 0 to 64"):
        schema_to_kbnf(SCHEMA, max_indent=65)
    with pytest.raises(ValueError, match="whitespace must be one of bounded, compact, flexible"):
        schema_to_kbnf(SCHEMA, whitespace="tight")


def test_step_through_uses_the_whitespace_setting():
    from engines.zapformat.experiment import step_through

    schema = json.dumps(SCHEMA)
    base = {"grammar_kind": "json_schema", "grammar": schema, "vocab": VOCAB, "passes": 1}
    assert step_through({**base, "target": PRETTY}).finished
    bad = step_through({**base, "target": PRETTY, "whitespace": "compact"})
    assert not bad.accepted_all and "leaves the grammar at token" in bad.message
    assert step_through({**base, "target": TWO_NEWLINES, "whitespace": "flexible"}).finished
    assert not step_through({**base, "target": TWO_NEWLINES}).accepted_all
    digits = step_through({"grammar_kind": "regex", "grammar": "[0-9]+", "vocab": VOCAB, "passes": 1, "target": "123"})
    assert digits.accepted_all and digits.accepting and not digits.finished and "EOS is allowed" in digits.message

"""ZapFormat: regex DFAs, grammar errors, mask equivalence with kbnf, soundness, caches, pruning, params."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from engines.common.params import ParamError
from engines.zapformat.earley import Recognizer
from engines.zapformat.encoders import load_encoder
from engines.zapformat.experiment import step_through
from engines.zapformat.frontend import InputError, to_kbnf
from engines.zapformat.grammar import GrammarError, compile_grammar
from engines.zapformat.masks import ConstrainedEngine, EngineConfig
from engines.zapformat.peers import ADAPTERS
from engines.zapformat.pruning import byte_trace, closing_checks
from engines.zapformat.regex import RegexError, compile_regex
from engines.zapformat.workloads import WORKLOADS, nested_json
from tests.helpers import record_measure

VOCAB = "qwen2.5-mini"  # the real Qwen2.5 BPE truncated to its first 2,048 merges


@pytest.fixture(scope="module")
def enc():
    return load_encoder(VOCAB)


def test_regex_dfa_utf8_and_errors():
    d = compile_regex(r'"([^"\\]|\\.)*"')
    assert d.matches('"é中"'.encode()) and d.matches(b'"a\\"b"')
    assert not d.matches(b'"\xff"') and not d.matches(b'"abc')
    # A token ending inside a multi-byte character keeps the DFA alive (byte-level semantics).
    s = 0
    for b in '"中'.encode()[:-1]:
        s = d.table[s][b]
    assert s >= 0 and not d.accepting[s]
    assert compile_regex("a|ab").matches(b"ab") and compile_regex("[0-9]{2,3}").matches(b"123")
    assert not compile_regex("[0-9]{2,3}").matches(b"1234")
    with pytest.raises(RegexError, match="offset 0"):
        compile_regex("[a")
    with pytest.raises(RegexError, match="anchor"):
        compile_regex("^a")


@pytest.mark.parametrize("text, message", [
    ('start ::= a;', "line 1, column 11: nonterminal 'a' is used but never defined"),
    ('start ::= "a"\nb ::= "c";', "line 2, column 1: missing ';' before the rule 'b'"),
    ('start ::= start "a";', "accepts nothing"),
    ('begin ::= "a";', "no rule for the start symbol"),
    ('start ::= #"[a";', "line 1, column 11: regex '[a': unclosed character class"),
])
def test_grammar_errors_point_at_the_problem(text, message):
    with pytest.raises(GrammarError) as e:
        compile_grammar(text)
    assert message in str(e.value)


def test_schema_and_regex_errors():
    with pytest.raises(InputError, match="line 1, column 10"):
        to_kbnf("json_schema", '{"type": }')
    with pytest.raises(InputError, match="/properties/a"):
        to_kbnf("json_schema", json.dumps({"type": "object", "properties": {"a": {"type": "strnig"}}}))
    with pytest.raises(InputError, match="does not resolve"):
        to_kbnf("json_schema", json.dumps({"$ref": "#/$defs/missing"}))
    with pytest.raises(InputError, match="offset"):
        to_kbnf("regex", "(ab")


@pytest.mark.parametrize("name", ["address", "arith", "json"])
def test_mask_equivalence_kbnf(enc, name):
    """Same KBNF grammar and vocabulary: our mask equals kbnf's at every step (acceptance check 1)."""
    w = WORKLOADS[name]
    ctx = {"encode": enc.encode}
    ours, ref = ADAPTERS["zapformat"](w, enc.vocab, ctx), ADAPTERS["kbnf"](w, enc.vocab, ctx)
    steps = 0
    for text in w.instances(4, seed=3):
        ours.reset()
        ref.reset()
        for tok in enc.encode(text):
            m = ours.mask()
            ref.mask()
            np.testing.assert_array_equal(m, ref.allowed(None))
            assert ours.accept(tok) and ref.accept(tok)
            steps += 1
        assert ours.e.finished and ref.e.is_finished()
    assert steps > 50


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_soundness(name):
    """Valid instances are accepted and finish; corrupted (independently invalid) ones are rejected."""
    w = WORKLOADS[name]
    g = compile_grammar(w.grammar)
    for text in w.instances(6):
        r = Recognizer(g)
        assert r.accept_bytes(text.encode()) and r.finished, text
    bad = w.invalid_instances(6)
    assert len(bad) == 6
    for text in bad:
        r = Recognizer(g)
        assert not (r.accept_bytes(text.encode()) and r.finished), text


def test_target_tokens_allowed_and_masks_viable(enc):
    w = WORKLOADS["function_call"]
    e = ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(core="python"))  # probes read its Earley sets
    for text in w.instances(3):
        e.reset()
        for tok in enc.encode(text):
            mask = e.compute_mask()
            assert mask[tok]
            # Every allowed token really keeps the prefix viable: spot-check a few.
            for t in np.flatnonzero(mask)[:5]:
                probe = Recognizer(e.program.grammar)
                probe.cols = list(e.rec.cols)
                assert probe.accept_bytes(enc.vocab.tokens[int(t)])
            assert e.accept_token(tok)
        assert e.finished and not e.compute_mask().any()


def test_state_cache_warm_pass(enc):
    """Acceptance check 3 (micro): the 2nd pass hits the cache on every step; how much faster it is than the same
    pass without the cache is recorded for ``make bench`` (budget ≥ 3×), not asserted."""
    w = WORKLOADS["arith"]
    texts = w.instances(3, seed=1)
    seqs = [enc.encode(t) for t in texts]
    on = ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(cache=True))
    off = ConstrainedEngine.build(w.grammar, enc.vocab, EngineConfig(cache=False))
    times = {}
    for label, e in (("on", on), ("off", off)):
        for p in range(2):
            e.hits = e.misses = 0
            t0 = time.perf_counter()
            for seq in seqs:
                e.reset()
                for tok in seq:
                    e.compute_mask()
                    e.accept_token(tok)
            times[(label, p)] = time.perf_counter() - t0
            if label == "on" and p == 1:
                assert e.hits / (e.hits + e.misses) == 1.0
    record_measure("zapformat: warm pass without / with the state cache (×)", times[("off", 1)] / times[("on", 1)])


def test_pruning_on_nested_json():
    """Acceptance check 4: peak live items ≤ 1/3 of unpruned; closed structures leave no trace."""
    text = nested_json(6)
    on, off = byte_trace(text, True), byte_trace(text, False)
    assert max(x[1] for x in on) * 3 <= max(x[1] for x in off)
    checks = closing_checks(text, on)
    assert len(checks) == 10
    assert all(c["same_state"] and c["items_closed"] == c["items_scalar"] for c in checks)
    assert on[-1][0] < 5 and off[-1][0] == len(text.encode()) + 1


def test_compaction_and_caches_do_not_change_masks(enc):
    w = WORKLOADS["orders"]
    text = w.instances(1, seed=2)[0]
    masks = []
    for cfg in (EngineConfig(), EngineConfig(cache=False, compaction=False, rejected_prefix_cache=False,
                                             eager_regex_cache=False), EngineConfig(eager_min_tokens=1)):
        e = ConstrainedEngine.build(w.grammar, enc.vocab, cfg)
        ms = []
        for tok in enc.encode(text):
            ms.append(np.flatnonzero(e.compute_mask()))
            e.accept_token(tok)
        masks.append(ms)
    for other in masks[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(masks[0], other))


def test_step_through_reports_where_the_target_leaves_the_grammar():
    w = WORKLOADS["address"]
    ok = step_through({"grammar_kind": "json_schema", "grammar": w.source, "target": w.instances(1)[0], "vocab": VOCAB})
    assert ok.accepted_all and ok.finished and ok.hit_rate[1] == 1.0 and ok.mean_us[1] < ok.mean_us[0]
    bad = step_through({"grammar_kind": "json_schema", "grammar": w.source, "target": '{"street": 5}', "vocab": VOCAB})
    assert not bad.accepted_all and "leaves the grammar at token" in bad.message


@pytest.mark.parametrize("params, field", [
    ({"grammar": "", "target": "x"}, "grammar"), ({"grammar": "a", "target": "x", "vocab": "gpt9"}, "vocab"),
    ({"grammar": "a", "target": "x", "passes": 9}, "passes"), ({"grammar": "a", "target": "x", "eager_min_tokens": 0},
                                                               "eager_min_tokens"),
    ({"grammar": "a", "target": "x" * 5000}, "target"),
])
def test_bad_params_name_the_field(params, field):
    with pytest.raises(ParamError) as e:
        step_through(params)
    assert field in str(e.value)


def test_logits_processor_forces_valid_output(enc):
    """The transformers LogitsProcessor: every constrained sample matches; free sampling does not.

    The language model is a tiny randomly initialised Llama over the real 2,048-merge vocabulary: the
    test exercises the masking mechanics, not the model (SmolLM2 is measured by reproduce.py)."""
    import re

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from engines.zapformat.frontend import to_kbnf
    from engines.zapformat.generation import GrammarLogitsProcessor

    pattern = '"(yes|no)-[0-9]{2}"'
    vocab = enc.vocab
    prog = ConstrainedEngine.build(to_kbnf("regex", pattern), vocab).program
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab.size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                      eos_token_id=vocab.eos_token_id, pad_token_id=vocab.eos_token_id)
    model = LlamaForCausalLM(cfg).eval()
    prompt = torch.tensor([enc.encode("Answer:")] * 6)
    outs = {}
    for constrained in (True, False):
        proc = GrammarLogitsProcessor(prog, vocab, 6, prompt.shape[1]) if constrained else None
        with torch.no_grad():
            gen = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=16, do_sample=True,
                                 logits_processor=[proc] if proc else None, pad_token_id=vocab.eos_token_id)
        texts = [b"".join(vocab.tokens.get(int(t), b"") for t in row[prompt.shape[1]:]).decode("utf-8", "replace")
                 for row in gen]
        outs[constrained] = [re.fullmatch(pattern, t) is not None for t in texts]
        if constrained:
            assert not any(proc.dead_end) and proc.engines[0].cache is proc.engines[1].cache
    assert all(outs[True]) and not all(outs[False])

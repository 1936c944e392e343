"""Adapters that run the real peer engines on the same grammar and vocabulary.

Every adapter builds a session with ``reset()``, ``mask()`` (the per-step token mask in the engine's
own representation: that call is what is timed) and ``accept(token_id) -> bool``. Each peer gets the
workload in its own native form (kbnf: the same KBNF text; llguidance/xgrammar/outlines-core/
lm-format-enforcer: the JSON Schema, regex, or a Lark/GBNF version of the CFG); whitespace and
field-order policies differ, so masks are compared only between our engine and kbnf.
"""
from __future__ import annotations

import json

import numpy as np

from .masks import ConstrainedEngine, EngineConfig
from .vocab import Vocabulary
from .workloads import Workload

LARK_ARITH = r'''start: expr ";"
expr: term (/[+-]/ term)*
term: factor (/[*\/]/ factor)*
factor: /[0-9]+(\.[0-9]+)?/ | "(" expr ")" | "-" factor
'''
GBNF_ARITH = r'''root ::= expr ";"
expr ::= term ([+-] term)*
term ::= factor ([*/] factor)*
factor ::= [0-9]+ ("." [0-9]+)? | "(" expr ")" | "-" factor
'''
GENERIC_OBJECT = {"type": "object"}
ENGINES = ["zapformat", "kbnf", "llguidance", "outlines-core", "lm-format-enforcer", "xgrammar"]
LABELS = {"zapformat": "ZapFormat (ours, Python)", "kbnf": "kbnf / Formatron (Rust)", "llguidance": "llguidance",
          "outlines-core": "outlines-core", "lm-format-enforcer": "lm-format-enforcer", "xgrammar": "XGrammar"}


class Unsupported(Exception):
    """The peer cannot express this workload (e.g. a recursive CFG in a regex-only engine)."""


def _schema(w: Workload):
    return w.schema if w.schema is not None else GENERIC_OBJECT


class _Ours:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        # kbnf's end policy (finished when the start symbol first completes): the replay compares masks with kbnf
        self.e = ConstrainedEngine.build(w.grammar, vocab, ctx.get("config") or EngineConfig(stop_at_first_accept=True))

    def reset(self):
        self.e.reset()

    def mask(self):
        return self.e.compute_mask()

    def accept(self, t: int) -> bool:
        return self.e.accept_token(t)

    def allowed(self, m) -> np.ndarray:
        return m


class _Kbnf:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        import kbnf

        if "kbnf_vocab" not in ctx:
            ctx["kbnf_vocab"] = kbnf.Vocabulary({i: kbnf.Token(b) for i, b in vocab.tokens.items()},
                                                {i: repr(b) for i, b in vocab.tokens.items()})
        cfg = kbnf.Config()
        ec = cfg.engine_config  # the pyo3 getter returns a copy: write it back (spec pitfall)
        ec.cache_enabled = ctx.get("kbnf_cache", True)
        cfg.engine_config = ec
        self.e = kbnf.Engine(w.grammar, ctx["kbnf_vocab"], cfg)
        self.size = vocab.size

    def reset(self):
        self.e.reset()

    def mask(self):
        self.e.compute_allowed_token_ids()

    def accept(self, t: int) -> bool:
        try:
            self.e.try_accept_new_token(t)
            return True
        except Exception:
            return False

    def allowed(self, _m) -> np.ndarray:
        out = np.zeros(self.size, dtype=bool)
        out[self.e.get_allowed_token_ids_from_last_computation()] = True
        return out


class _LLG:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        import llguidance

        if "llg_tok" not in ctx:
            ctx["llg_tok"] = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_GTok(vocab, ctx["encode"])))
        if w.kind == "json_schema" or w.is_json:
            g = llguidance.LLMatcher.grammar_from_json_schema(_schema(w), defaults={"whitespace_flexible": True})
        elif w.kind == "regex":
            g = llguidance.LLMatcher.grammar_from_regex(w.source)
        else:
            g = llguidance.LLMatcher.grammar_from_lark(LARK_ARITH)
        self.m = llguidance.LLMatcher(ctx["llg_tok"], g, log_level=0)
        if self.m.is_error():
            raise Unsupported(self.m.get_error())

    def reset(self):
        self.m.reset()

    def mask(self):
        return self.m.compute_bitmask()

    def accept(self, t: int) -> bool:
        return self.m.consume_token(t)


class _GTok:
    """The minimal 'gtokenizer' llguidance.TokenizerWrapper expects, built from our vocabulary."""

    def __init__(self, vocab: Vocabulary, encode):
        self.eos_token_id = vocab.eos_token_id if vocab.eos_token_id is not None else vocab.size - 1
        self.bos_token_id = None
        toks = [vocab.tokens.get(i, b"") for i in range(vocab.size)]
        self.special_token_ids = [i for i, b in enumerate(toks) if not b]
        self.tokens = [b if b else f"<|special_{i}|>".encode() for i, b in enumerate(toks)]
        self._encode = encode

    def __call__(self, s):
        return self._encode(s.decode("utf-8", "replace") if isinstance(s, bytes) else s)


class _Outlines:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        import outlines_core as oc

        if w.kind == "cfg" and not w.is_json:
            raise Unsupported("outlines-core compiles regular languages only")
        if "oc_vocab" not in ctx:
            eos = vocab.eos_token_id if vocab.eos_token_id is not None else vocab.size - 1
            mapping: dict = {}
            for i, b in vocab.tokens.items():
                if i != eos:
                    mapping.setdefault(b, []).append(i)
            ctx["oc_vocab"] = oc.Vocabulary(eos, mapping)
        if w.kind == "regex":
            regex = w.source
        else:
            try:
                regex = oc.json_schema.build_regex_from_schema(json.dumps(_schema(w)))
            except Exception as e:
                raise Unsupported(f"outlines-core: {e}") from None
        self.index = oc.Index(regex, ctx["oc_vocab"])
        self.g = oc.Guide(self.index)

    def reset(self):
        import outlines_core as oc

        self.g = oc.Guide(self.index)

    def mask(self):
        return self.g.get_tokens()

    def accept(self, t: int) -> bool:
        try:
            self.g.advance(t)
            return True
        except Exception:
            return False


class _LMFE:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        from lmformatenforcer import JsonSchemaParser, RegexParser, TokenEnforcer, TokenEnforcerTokenizerData

        if w.kind == "cfg" and not w.is_json:
            raise Unsupported("lm-format-enforcer has no context-free grammars")
        if "lmfe_data" not in ctx:  # built without lmformatenforcer.integrations (fails under transformers 5)
            regular = []
            for i, b in vocab.tokens.items():
                s = b.decode("utf-8", "replace")
                if "\ufffd" not in s:
                    regular.append((i, s, s.startswith(" ")))
            eos = vocab.eos_token_id if vocab.eos_token_id is not None else vocab.size - 1

            def decode(ids):
                return b"".join(vocab.tokens.get(i, b"") for i in ids).decode("utf-8", "replace")

            ctx["lmfe_data"] = TokenEnforcerTokenizerData(regular, decode, eos, False, vocab.size)
        parser = RegexParser(w.source) if w.kind == "regex" else JsonSchemaParser(_schema(w))
        self.make = lambda: TokenEnforcer(ctx["lmfe_data"], parser)
        self.te = self.make()
        self.seq: list[int] = []

    def reset(self):
        self.te = self.make()
        self.seq = []

    def mask(self):
        return self.te.get_allowed_tokens(self.seq)

    def accept(self, t: int) -> bool:
        self.seq.append(t)
        return True


class _XGrammar:
    def __init__(self, w: Workload, vocab: Vocabulary, ctx):
        import xgrammar as xg

        if "xg_compiler" not in ctx:
            toks = [vocab.tokens.get(i, b"") for i in range(vocab.size)]
            eos = vocab.eos_token_id if vocab.eos_token_id is not None else vocab.size - 1
            info = xg.TokenizerInfo(toks, xg.VocabType.RAW, vocab_size=vocab.size, stop_token_ids=[eos])
            ctx["xg_compiler"] = xg.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        c = ctx["xg_compiler"]
        if w.kind == "regex":
            self.cg = c.compile_regex(w.source)
        elif w.is_json and w.schema is None:
            self.cg = c.compile_builtin_json_grammar()
        elif w.is_json:
            self.cg = c.compile_json_schema(json.dumps(w.schema), any_whitespace=True)
        else:
            self.cg = c.compile_grammar(GBNF_ARITH)
        self.matcher = xg.GrammarMatcher(self.cg)
        self.bitmask = xg.allocate_token_bitmask(1, vocab.size)

    def reset(self):
        self.matcher.reset()

    def mask(self):
        self.matcher.fill_next_token_bitmask(self.bitmask)

    def accept(self, t: int) -> bool:
        return self.matcher.accept_token(t)


ADAPTERS = {"zapformat": _Ours, "kbnf": _Kbnf, "llguidance": _LLG, "outlines-core": _Outlines,
            "lm-format-enforcer": _LMFE, "xgrammar": _XGrammar}


def available(name: str) -> str | None:
    """None if the peer's package imports, else the reason it does not."""
    mod = {"zapformat": "numpy", "kbnf": "kbnf", "llguidance": "llguidance", "outlines-core": "outlines_core",
           "lm-format-enforcer": "lmformatenforcer", "xgrammar": "xgrammar"}[name]
    try:
        __import__(mod)
        return None
    except Exception as e:  # noqa: BLE001 - any import failure means "not available here"
        return f"{type(e).__name__}: {e}"

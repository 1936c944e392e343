"""Per-step token masks (``compute_allowed_token_ids``) with ZapFormat's caches.

1. **State cache**: key = the compacted Earley sets (every item of every retained column); value =
   the allowed-token mask. Kept across ``reset()``, so it serves every generation with one grammar.
2. **Eager regex cache**: built with the grammar, for every DFA state of every regex terminal: the
   tokens the regex surely accepts from that state (the DFA stays alive over all their bytes) and the
   tokens it surely rejects (it dies before it could end). Stored only when a set has at least
   ``eager_min_tokens`` tokens. When every scanning item of the last set is inside a cached regex, the
   mask is a union/intersection of precomputed bitsets and only the remaining tokens are simulated.
3. **First-byte filter**: candidates are the tokens whose first byte some post-dot terminal accepts
   (a 256-way bucket; tokens are ranked by their bytes so each bucket is one range of ranks).
4. **Per-token simulation with rollback** and a **rejected-prefix cache**. Deviation, stated: tokens
   are visited in byte order and the Earley stack is rolled back only to the common prefix with the
   previous token (kbnf rolls back to the start for every token); masks are identical.

Bitsets are Python integers over token *ranks* (position in byte order); masks returned to callers
are boolean arrays over token ids.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .earley import Recognizer
from .grammar import RE, Grammar, compile_grammar
from .vocab import Vocabulary, bits_from_bool, bits_from_ranks


@dataclass(frozen=True)
class EngineConfig:
    """The switches of the ablation; defaults are kbnf's (``kbnf::Config::default``) except the end policy.

    ``stop_at_first_accept``: kbnf finishes as soon as the start symbol completes, so a top-level ``[0-9]+``
    stops after its first digit. The default (False) finishes only when the text is accepted and nothing can
    follow; while it is accepted but may go on, the mask keeps the continuations and the logits processor also
    allows EOS (``ConstrainedEngine.accepting``). The kbnf comparisons (``peers``, ``maskbench``) set it True.
    On grammars whose sentences cannot be extended (JSON objects, the gallery's quoted regexes, ``;``-ended
    arithmetic) both policies give the same masks."""

    cache: bool = True
    compaction: bool = True
    rejected_prefix_cache: bool = True
    eager_regex_cache: bool = True
    eager_min_tokens: int = 1000
    stop_at_first_accept: bool = False
    # "auto" (compiled when the C++ extension is built, else Python), "compiled" or "python": see compiled.py
    core: str = "auto"


@dataclass
class EagerEntry:
    allowed: int  # rank bitset: the regex keeps these tokens alive from this state
    disallowed: int  # rank bitset: the regex dies on these before it could end


EAGER_MAX_STATES = 4096  # deviation, stated: kbnf caches every regex; bigger DFAs are simulated (was 1024 until 12-06)
EAGER_CHUNK = 128
EAGER_MAX_TOTAL_STATES = 16384  # per grammar: regexes past this many cached states are simulated (compile time)


def eager_regex_cache(grammar: Grammar, vocab: Vocabulary, min_tokens: int,
                      max_states: int = EAGER_MAX_STATES) -> dict[tuple[int, int], EagerEntry]:
    """Walk every token through every regex DFA from every state (vectorised over tokens).

    Regexes with more than ``max_states`` DFA states, and those past ``EAGER_MAX_TOTAL_STATES`` cached states
    in all, are left out (their tokens are simulated, the masks are the same): the table costs states ×
    vocabulary (a 255-character string bound on a 49k vocabulary would be gigabytes) and its build time
    dominates the compile of schemas with hundreds of regex terminals."""
    out: dict[tuple[int, int], EagerEntry] = {}
    if vocab.n == 0:
        return out
    mat, lens, order = vocab.padded()
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    counts = [(lens > i).sum() for i in range(mat.shape[1])]
    total = 0
    for rid, dfa in enumerate(grammar.regexes):
        if dfa.n_states > max_states or total + dfa.n_states > EAGER_MAX_TOTAL_STATES:
            continue
        total += dfa.n_states
        trans, acc = dfa.trans, dfa.accept
        for s0 in range(0, dfa.n_states, EAGER_CHUNK):  # states in chunks: memory = chunk × vocabulary
            states = np.arange(s0, min(s0 + EAGER_CHUNK, dfa.n_states), dtype=np.int32)
            S = len(states)
            cur = np.repeat(states[:, None], vocab.n, axis=1)
            alive = np.ones((S, vocab.n), dtype=bool)
            seen_acc = np.zeros((S, vocab.n), dtype=bool)
            dis = np.zeros((S, vocab.n), dtype=bool)
            for i, m in enumerate(counts):
                if m == 0:
                    break
                c, al = cur[:, :m], alive[:, :m]
                nxt = trans[c, mat[:m, i][None, :]]
                died = al & (nxt < 0)
                dis[:, :m] |= died & ~seen_acc[:, :m]
                ok = al & ~died
                alive[:, :m] = ok
                seen_acc[:, :m] |= ok & acc[np.maximum(nxt, 0)]
                cur[:, :m] = np.where(ok, nxt, c)
            for k, s in enumerate(states.tolist()):
                a, d = alive[k][inverse], dis[k][inverse]
                if a.sum() >= min_tokens or d.sum() >= min_tokens:
                    out[(rid, s)] = EagerEntry(bits_from_bool(a), bits_from_bool(d))
    return out


@dataclass(eq=False)
class Program:
    """A grammar compiled against one vocabulary (what ``kbnf.Engine(grammar, vocab)`` builds).

    The eager regex cache is built on first use, by the core that needs it: ``eager`` (Python bitsets, for the
    reference engine) or ``native`` (the C++ ``_zfcore.Core``, which builds its own); ``compile_s`` adds both."""

    grammar: Grammar
    vocab: Vocabulary
    eager_min_tokens: int = 1000
    eager_enabled: bool = True
    compile_s: float = 0.0
    _eager: dict | None = field(default=None, repr=False)
    _native: object = field(default=None, repr=False)

    @property
    def eager(self) -> dict[tuple[int, int], EagerEntry]:
        if self._eager is None:
            t0 = time.perf_counter()
            self._eager = eager_regex_cache(self.grammar, self.vocab, self.eager_min_tokens) if self.eager_enabled else {}
            self.compile_s += time.perf_counter() - t0
        return self._eager

    @property
    def native(self):
        if self._native is None:
            from . import compiled

            t0 = time.perf_counter()
            self._native = compiled.build_core(self.grammar, self.vocab, self.eager_enabled, self.eager_min_tokens)
            self.compile_s += time.perf_counter() - t0
        return self._native


@lru_cache(maxsize=16)
def compile_program(grammar_text: str, vocab: Vocabulary, eager_min_tokens: int = 1000,
                    eager: bool = True) -> Program:
    t0 = time.perf_counter()
    g = compile_grammar(grammar_text)
    return Program(g, vocab, eager_min_tokens, eager, time.perf_counter() - t0)


def pin_schema_independent(vocab: Vocabulary) -> None:
    """Keep what is cached now across ``forget_schema_caches``: call it after compiling only schema-independent
    grammars (a warm-up such as ``{"type": "object"}``: the JSON value pieces every schema shares, their eager
    walks over this vocabulary)."""
    from . import compiled
    from .regex import pin_regex_cache

    pin_regex_cache()
    if compiled.available():
        compiled.native_vocab(vocab).pin_walks()


def forget_schema_caches(vocab: Vocabulary | None = None) -> None:
    """Forget what earlier grammars left in the process-wide caches (compiled programs and grammars, regexes and
    the compiled core's shared eager walks), except what ``pin_schema_independent`` kept: the external benchmark
    calls it before every schema, so a schema's time to first mask includes all of its own compile work, as for
    the peers (whose grammar caches are off)."""
    from .grammar import forget_grammars
    from .regex import forget_regexes

    compile_program.cache_clear()
    forget_grammars()
    forget_regexes()
    native = getattr(vocab, "_native", None) if vocab is not None else None
    if native is not None:
        native.forget_walks()


@dataclass
class StepStats:
    """What one mask computation did (shown per step in the tab)."""

    mask_us: float = 0.0
    cache_hit: bool = False
    allowed: int = 0
    candidates: int = 0
    simulated: int = 0
    eager_used: bool = False
    sets_before: int = 0
    items_before: int = 0
    sets_after: int = 0
    items_after: int = 0


@dataclass
class ConstrainedEngine:
    """One grammar + vocabulary: ``compute_mask()``, ``accept_token()``, ``reset()`` (cache survives)."""

    program: Program
    config: EngineConfig = field(default_factory=EngineConfig)

    def __post_init__(self):
        from . import compiled

        self.core = compiled.resolve(self.config.core)  # "compiled" (C++ _zfcore) or "python" (the reference)
        if self.core == "compiled":
            self.rec = compiled.recognizer(self.program, self.config)
        else:
            self.program.eager  # noqa: B018 - build the Python eager table now (compile time, not the first mask)
            self.rec = Recognizer(self.program.grammar, compaction=self.config.compaction,
                                  stop_at_first_accept=self.config.stop_at_first_accept)
        self.cache: dict[tuple, tuple[np.ndarray, int]] = {}
        self.hits = self.misses = 0
        self.last = StepStats()

    @classmethod
    def build(cls, grammar_text: str, vocab: Vocabulary, config: EngineConfig | None = None) -> "ConstrainedEngine":
        config = config or EngineConfig()
        prog = compile_program(grammar_text, vocab, config.eager_min_tokens, config.eager_regex_cache)
        return cls(prog, config)

    @property
    def vocab(self) -> Vocabulary:
        return self.program.vocab

    def reset(self) -> None:
        self.rec.reset()

    @property
    def finished(self) -> bool:
        """No token can follow (the mask is empty): only EOS remains."""
        return self.rec.finished

    @property
    def accepting(self) -> bool:
        """The output so far is complete: EOS is allowed (with kbnf's policy this is ``finished``)."""
        return self.rec.finished or self.rec.accepting

    def accept_token(self, token_id: int) -> bool:
        data = self.vocab.tokens.get(int(token_id))
        if data is None:
            return False
        return self.rec.accept_bytes(data)

    def accept_text(self, data: bytes) -> bool:
        return self.rec.accept_bytes(data)

    # ------------------------------------------------------------------ the mask
    def compute_mask(self) -> np.ndarray:
        """Bool mask over token ids: the tokens whose bytes keep the prefix viable."""
        t0 = time.perf_counter()
        rec, vocab, cfg = self.rec, self.vocab, self.config
        if cfg.cache and not rec.finished:  # fast path: a hit costs one hash of the column keys
            hit = self.cache.get(rec.state_key())
            if hit is not None:
                self.hits += 1
                self.last = StepStats((time.perf_counter() - t0) * 1e6, True, hit[1], 0, 0, False,
                                      *rec.stats_before, *rec.stats_after)
                return hit[0]
        st = StepStats(sets_before=rec.stats_before[0], items_before=rec.stats_before[1],
                       sets_after=rec.stats_after[0], items_after=rec.stats_after[1])
        if rec.finished:
            mask = np.zeros(vocab.size, dtype=bool)
        else:
            key = rec.state_key() if cfg.cache else None
            hit = self.cache.get(key) if cfg.cache else None
            if hit is not None:
                mask, st.allowed = hit
                st.cache_hit = True
                self.hits += 1
            else:
                self.misses += 1
                if self.core == "compiled":
                    mask = np.zeros(vocab.size, dtype=bool)
                    st.allowed, st.candidates, st.simulated, st.eager_used = rec.compute_mask(
                        mask, cfg.eager_regex_cache, cfg.rejected_prefix_cache)
                else:
                    mask = vocab.ranks_to_ids(self._allowed_ranks(st))
                    st.allowed = int(mask.sum())
                if cfg.cache:
                    self.cache[key] = (mask, st.allowed)
        st.mask_us = (time.perf_counter() - t0) * 1e6
        self.last = st
        return mask

    def _allowed_ranks(self, st: StepStats) -> int:
        rec, vocab, g, cfg = self.rec, self.vocab, self.program.grammar, self.config
        last = rec.cols[-1]
        cands = 0
        for b in rec.first_bytes():
            cands |= vocab.first_byte_masks[b]
        allowed = 0
        undetermined = cands
        if cfg.eager_regex_cache and self.program.eager:
            all_regex, used, dis = True, False, -1
            for dp, s, _, _ in last.scan:
                entry = self.program.eager.get((g.value[dp], s)) if g.kind[dp] == RE else None
                if entry is None:
                    all_regex = False
                    continue
                used = True
                allowed |= entry.allowed
                dis &= entry.disallowed
            if used:
                st.eager_used = True
                undetermined &= ~allowed
                if all_regex:
                    undetermined &= ~dis
        st.candidates = cands.bit_count()
        ranks = _set_bits(undetermined, vocab.n)
        st.simulated = len(ranks)
        accepted = self._simulate(ranks)
        return allowed | bits_from_ranks(accepted)

    def _simulate(self, ranks) -> list[int]:
        """Feed each candidate token's bytes; roll back to the common prefix with the previous one."""
        rec, toks = self.rec, self.vocab.sorted_bytes
        use_rpc = self.config.rejected_prefix_cache
        cols = rec.cols
        base = len(cols)
        step = rec._step
        accepted: list[int] = []
        prev, depth, rejected = b"", 0, None
        for r in ranks:
            tok = toks[r]
            if use_rpc and rejected is not None and tok.startswith(rejected):
                continue
            k, lim = 0, min(depth, len(tok))
            while k < lim and prev[k] == tok[k]:
                k += 1
            if k < depth:
                del cols[base + k :]
                depth = k
            ok = True
            for i in range(k, len(tok)):
                if step(tok[i], False) is None:
                    ok = False
                    rejected = tok[: i + 1]
                    break
                depth += 1
            prev = tok
            if ok:
                accepted.append(r)
        del cols[base:]
        return accepted


def _set_bits(bits: int, n: int) -> np.ndarray:
    if not bits:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((n + 7) // 8 + 1, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little")[:n])

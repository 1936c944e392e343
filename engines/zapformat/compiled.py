"""The compiled core (``_zfcore``, C++): which core an engine uses, and the tables handed to it.

``EngineConfig.core`` picks the implementation of the Earley recogniser and the mask computation:

* ``"python"``: ``earley.Recognizer`` + ``masks.ConstrainedEngine._allowed_ranks`` (the reference);
* ``"compiled"``: ``_zfcore.Recognizer`` (a literal C++ port: same items, Leo memo, compaction, candidate
  order, state keys, so masks, cache hits and statistics are identical; tests/engines/zapformat/test_compiled.py);
* ``"auto"`` (default): compiled when the extension imports, else Python with one logged warning.

``ZAPFORMAT_CORE=python|compiled|auto`` overrides what ``"auto"`` means (e.g. to run the app on the reference).
The grammar is still compiled in Python (grammar.py, regex.py); the C++ side builds its own eager regex cache.
"""
from __future__ import annotations

import logging
import os
from array import array

from .grammar import LIT, NT, RE, Grammar

log = logging.getLogger(__name__)

try:  # built by setup.py (``pip install -e .``); optional: without a compiler the Python engine is used
    from . import _zfcore  # type: ignore[attr-defined]

    IMPORT_ERROR: str | None = None
except ImportError as e:  # pragma: no cover - depends on the build
    _zfcore = None
    IMPORT_ERROR = f"{type(e).__name__}: {e}"

CORES = ("auto", "compiled", "python")
_warned = False


def available() -> bool:
    return _zfcore is not None


def resolve(core: str = "auto") -> str:
    """``"compiled"`` or ``"python"`` for a requested core (``"auto"`` follows ZAPFORMAT_CORE, then availability)."""
    global _warned
    if core not in CORES:
        raise ValueError(f"unknown ZapFormat core {core!r}; choose one of {CORES}")
    if core == "auto":
        env = os.environ.get("ZAPFORMAT_CORE", "auto").strip().lower() or "auto"
        if env not in CORES:
            raise ValueError(f"ZAPFORMAT_CORE={env!r}: choose one of {CORES}")
        core = env
    if core == "python":
        return "python"
    if _zfcore is not None:
        return "compiled"
    if core == "compiled":
        raise RuntimeError(f"the ZapFormat compiled core is not built ({IMPORT_ERROR}); run `pip install -e .` with a "
                           "C++ compiler, or use core='python'")
    if not _warned:
        _warned = True
        log.warning("ZapFormat: the compiled core (engines/zapformat/_zfcore) is not built (%s); using the Python "
                    "engine (same masks, slower). Rebuild with `pip install -e .` and a C++ compiler.", IMPORT_ERROR)
    return "python"


def native_vocab(vocab):
    """The vocabulary's bytes in rank order, handed to C++ once per Vocabulary object."""
    nv = getattr(vocab, "_native", None)
    if nv is None:
        toks = vocab.sorted_bytes
        offs = array("q", [0])
        total = 0
        for b in toks:
            total += len(b)
            offs.append(total)
        ids = array("q", (int(i) for i in vocab.sorted_ids))
        nv = _zfcore.Vocab(b"".join(toks), offs, ids, int(vocab.size))
        vocab._native = nv
    return nv


def build_core(grammar: Grammar, vocab, eager: bool, min_tokens: int):
    """``_zfcore.Core``: the grammar's flat tables (see grammar.Grammar) plus the eager regex cache, built in C++."""
    from .masks import EAGER_MAX_STATES, EAGER_MAX_TOTAL_STATES

    g = grammar
    n = g.n_positions
    value = array("i", [0] * n)
    lit_off, lit_len = array("i", [0] * n), array("i", [0] * n)
    pool = bytearray()
    for dp in range(n):
        if g.kind[dp] == LIT:
            lit = g.value[dp]
            lit_off[dp], lit_len[dp] = len(pool), len(lit)
            pool += lit
        else:
            value[dp] = g.value[dp]
    adv_off, adv = array("i", [0]), array("i")
    for dps in g.advance:
        adv.extend(dps)
        adv_off.append(len(adv))
    pred_off, pred_dp, pred_st = array("i", [0]), array("i"), array("i")
    for entries in g.predict:
        for dp, st in entries:
            pred_dp.append(dp)
            pred_st.append(st)
        pred_off.append(len(pred_dp))
    regexes = [(d.trans.astype("<i4", copy=False).tobytes(), d.accept.astype("u1").tobytes()) for d in g.regexes]
    assert all(k in (NT, LIT, RE) for k in g.kind)
    return _zfcore.Core(native_vocab(vocab), bytes(g.kind), value, array("i", g.lhs), bytes(map(int, g.is_last)),
                        adv_off, adv, bytes(map(int, g.advance_completes)), pred_off, pred_dp, pred_st, lit_off,
                        lit_len, bytes(pool), g.start, len(g.names), regexes, bool(eager), int(min_tokens),
                        EAGER_MAX_STATES, EAGER_MAX_TOTAL_STATES)


def recognizer(program, config):
    """A C++ recogniser over ``program`` (its Core is built on first use and shared)."""
    return _zfcore.Recognizer(program.native, bool(config.compaction), bool(config.stop_at_first_accept))

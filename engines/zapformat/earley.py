"""Byte-level Earley recognizer with Leo items and Earley-set compaction (ZapFormat's dynamic pruning).

An Earley item is ``(dp, state, ret_nt, ret_col)``: the dotted position ``dp`` (production + dot), the
terminal state (offset inside a literal or DFA state of a regex), and the (nonterminal, column) to
complete when the item is finished. ``ret`` starts as the item's own (lhs, start column); Leo folding
may redirect it to the topmost item of a right-recursive chain, so that the chain's intermediate
columns are no longer referenced.

One column (Earley set) is created per accepted byte: *scan* the previous column with the byte,
*complete* finished items (through Leo chains), *compact* (drop every column strictly between the
highest column still referenced and the new one), then *predict* (static closures per nonterminal).
"""
from __future__ import annotations

from .grammar import LIT, NT, RE, Grammar

_INTERNED: dict[frozenset, frozenset] = {}


class Column:
    """One Earley set plus its indices. ``key`` (frozen item set) is what the state cache hashes."""

    __slots__ = ("items", "scan", "postdot", "leo", "key", "predicted", "finished_here")

    def __init__(self, items: list):
        self.items = items
        self.scan: list = []
        self.postdot: dict[int, list] = {}
        self.leo: dict[int, tuple[int, int, bool]] = {}
        self.key: frozenset | None = None
        self.predicted = False
        self.finished_here = False


class Recognizer:
    """The Earley-set stack of one constrained generation; ``compaction`` switches dynamic pruning."""

    def __init__(self, grammar: Grammar, compaction: bool = True, stop_at_first_accept: bool = True):
        self.g = grammar
        self.compaction = compaction
        # True: kbnf's semantics (finished as soon as the start symbol completes at any byte of a token).
        # False: finished only when the text is accepted *and* no byte can follow (``[0-9]+`` goes on after "1").
        self.stop_at_first_accept = stop_at_first_accept
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        first = Column([])
        self.cols: list[Column] = [first]
        self._predict(first, 0, [])
        self.finished = False
        self.stats_before = self.stats_after = (1, len(first.items))

    def state_key(self) -> tuple:
        """Canonical hashable form of the (compacted) Earley sets: the state cache's key."""
        return tuple(c.key for c in self.cols)

    def n_items(self) -> int:
        return sum(len(c.items) for c in self.cols)

    @property
    def n_sets(self) -> int:
        """Retained Earley sets (also on the compiled recogniser, which has no ``cols``)."""
        return len(self.cols)

    # ------------------------------------------------------------------ Earley operations
    def _predict(self, col: Column, index: int, items: list) -> None:
        """Add the static prediction closure of every post-dot nonterminal, then index the column."""
        g = self.g
        kind, value = g.kind, g.value
        seen = set(items)
        out = list(items)
        done = set()
        for it in items:
            dp = it[0]
            if kind[dp] == NT:
                nt = value[dp]
                if nt not in done:
                    done.add(nt)
                    lhs = g.lhs
                    for pdp, st in g.predict[nt]:
                        new = (pdp, st, lhs[pdp], index)
                        if new not in seen:
                            seen.add(new)
                            out.append(new)
        if index == 0 and not items:  # the first column: predict the start symbol
            for pdp, st in g.predict[g.start]:
                new = (pdp, st, g.lhs[pdp], 0)
                if new not in seen:
                    seen.add(new)
                    out.append(new)
        col.items = out
        scan, postdot = col.scan, col.postdot
        for it in out:
            k = kind[it[0]]
            if k == NT:
                postdot.setdefault(value[it[0]], []).append(it)
            else:
                scan.append(it)
        key = frozenset(out)
        if len(_INTERNED) > 500_000:
            _INTERNED.clear()
        col.key = _INTERNED.setdefault(key, key)  # equal columns share one object: cache lookups compare by identity
        col.predicted = True

    def _leo(self, nt: int, j: int) -> tuple[int, int, bool]:
        """Follow the Leo chain from 'nt completed at column j' to its topmost item (memoized per column).

        (nt, j) is Leo-eligible when column j holds exactly one item with nt after the dot and nt is
        that item's last symbol: completing nt then deterministically completes that item's target.
        Returns (top_nt, top_col, passed_start) where passed_start says the chain completes start@0.
        """
        cols, is_last = self.cols, self.g.is_last
        start = self.g.start
        path = []
        passed = False
        while True:
            col = cols[j]
            memo = col.leo.get(nt)
            if memo is not None:
                top = (memo[0], memo[1], memo[2] or passed)
                break
            lst = col.postdot.get(nt)
            if lst is not None and len(lst) == 1 and is_last[lst[0][0]]:
                path.append((col, nt))
                if nt == start and j == 0:
                    passed = True
                it = lst[0]
                nt, j = it[2], it[3]
                continue
            top = (nt, j, passed)
            break
        for col, n in path:
            col.leo[n] = top
        return top

    def _step(self, byte: int, compact: bool) -> Column | None:
        """Accept one byte: scan, complete, (compact,) leave prediction for later. None if rejected."""
        g = self.g
        cols = self.cols
        last = cols[-1]
        if not last.predicted:
            self._predict(last, len(cols) - 1, last.items)
        kind, value, tables = g.kind, g.value, g.dfa_tables
        advance, adv_done = g.advance, g.advance_completes
        new: list = []
        seen: set = set()
        todo: list = []
        for it in last.scan:
            dp, st, rn, rc = it
            if kind[dp] == LIT:
                lit = value[dp]
                if lit[st] != byte:
                    continue
                if st + 1 < len(lit):
                    nxt = (dp, st + 1, rn, rc)
                    if nxt not in seen:
                        seen.add(nxt)
                        new.append(nxt)
                    continue
            else:  # RE
                ns = tables[dp][st][byte]
                if ns < 0:
                    continue
                if g.regexes[value[dp]].live_out[ns]:
                    nxt = (dp, ns, rn, rc)
                    if nxt not in seen:
                        seen.add(nxt)
                        new.append(nxt)
                if not g.regexes[value[dp]].accepting[ns]:
                    continue
            for ndp in advance[dp]:
                nxt = (ndp, 0, rn, rc)
                if nxt not in seen:
                    seen.add(nxt)
                    new.append(nxt)
            if adv_done[dp]:
                todo.append((rn, rc))
        if not new and not todo:
            return None
        # Complete (Leo chains first, then ordinary Earley completion).
        start = g.start
        finished = False
        completed = set()
        while todo:
            key = todo.pop()
            if key in completed:
                continue
            completed.add(key)
            nt, j, passed = self._leo(*key)
            if passed or (nt == start and j == 0):
                finished = True
            for it in cols[j].postdot.get(nt, ()):
                dp, _, rn, rc = it
                for ndp in advance[dp]:
                    nxt = (ndp, 0, rn, rc)
                    if nxt not in seen:
                        seen.add(nxt)
                        new.append(nxt)
                if adv_done[dp]:
                    todo.append((rn, rc))
        col = Column(new)
        col.finished_here = finished
        if compact and self.compaction:
            self._compact(col)
        cols.append(col)
        return col

    def _compact(self, col: Column) -> None:
        """ZapFormat: fold ret columns through Leo chains, then drop columns nobody references."""
        before_sets, before_items = len(self.cols) + 1, self.n_items() + len(col.items)
        folded, seen, m = [], set(), 0
        for it in col.items:
            top_nt, top_col, passed = self._leo(it[2], it[3])
            if not passed and (top_nt, top_col) != (it[2], it[3]):
                it = (it[0], it[1], top_nt, top_col)
            if it not in seen:
                seen.add(it)
                folded.append(it)
            if it[3] > m:
                m = it[3]
        col.items = folded
        del self.cols[m + 1 :]
        self.stats_before = (before_sets, before_items)

    # ------------------------------------------------------------------ public
    def accept_bytes(self, data: bytes) -> bool:
        """Advance by ``data`` (one token). False (state unchanged) if rejected or already finished."""
        if self.finished:
            return False
        saved = list(self.cols)
        finished = False
        for b in data:
            col = self._step(b, compact=True)
            if col is None:
                self.cols = saved
                return False
            finished = finished or col.finished_here
        last = self.cols[-1]
        self._predict(last, len(self.cols) - 1, last.items)
        self.stats_after = (len(self.cols), self.n_items())
        if not self.compaction:
            self.stats_before = self.stats_after
        self.finished = finished if self.stop_at_first_accept else (last.finished_here and not last.scan)
        return True

    @property
    def accepting(self) -> bool:
        """The text so far is a complete sentence (the start symbol completes at the last byte): EOS may follow."""
        return self.cols[-1].finished_here

    def can_accept_more(self) -> bool:
        return bool(self.cols[-1].scan)

    def first_bytes(self) -> set[int]:
        """Bytes some post-dot terminal of the last column accepts next."""
        g = self.g
        out: set[int] = set()
        for dp, st, _, _ in self.cols[-1].scan:
            if g.kind[dp] == LIT:
                out.add(g.value[dp][st])
            else:
                out |= g.regexes[g.value[dp]].first_bytes[st]
        return out

"""Agents: gold replay and no-op (sanity bounds) and a deterministic heuristic agent (spec §4).

An agent sees the initial observation (error log, budget, costs, mode) and acts one turn at a time;
it never sees the instance's ground truth (except the gold-replay bound, by definition).

``HeuristicAgent``: run the failing test, index the repository's functions, parse the traceback,
localise (innermost repository frame, or the function named by a call-signature error, voted by HEAD
call sites), apply error-guided repairs (keyword / parameter alignment, nearest-name renames of
undefined names and missing attributes), propose, and move to the next candidate on failure. In
collaborative mode it asks when its localisation confidence is low (no repair for its top candidate)
or after a failed proposal.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import re
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Generator

from . import code as pycode
from .env import (WORKSPACE, Action, AskAction, EnvAction, GiveUpAction, Observation, ProposeAction)
from .instances import Instance

FRAME = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+): in (?P<func>\S+)\s*$")
ERR = re.compile(r"^E\s+(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Warning)?)(?::\s?(?P<msg>.*))?$")
BUDGET = re.compile(r"\[Budget: \$(-?[\d.]+)\]")


class Agent:
    name = "agent"

    def reset(self, info: dict) -> None:
        self.info = info

    def act(self, obs: Observation) -> Action:
        raise NotImplementedError


class GoldReplayAgent(Agent):
    """Upper bound: writes the gold code back and names the right (file, function)."""

    name = "gold"

    def __init__(self, inst: Instance):
        self.inst = inst

    def act(self, obs: Observation) -> Action:
        return ProposeAction(edits={self.inst.pyfile_path: self.inst.new_complete_context},
                             answer=[(f"{WORKSPACE}/{self.inst.pyfile_path}", self.inst.fm_name)],
                             thought="replay the gold code")


class NoOpAgent(Agent):
    """Lower bound: proposes the repository unchanged once, then gives up."""

    name = "noop"

    def reset(self, info: dict) -> None:
        super().reset(info)
        self.proposed = False

    def act(self, obs: Observation) -> Action:
        if self.proposed:
            return GiveUpAction(reason="no-op")
        self.proposed = True
        return ProposeAction(thought="propose without any change")


# ------------------------------------------------------------------ traceback parsing
@dataclass
class Failure:
    frames: list[tuple[str, int, str]]  # (path, line, function) inside the repository, outermost first
    etype: str = ""
    message: str = ""


def parse_failure(log: str) -> Failure:
    """The first failure block of a ``pytest --tb=short`` log."""
    frames, etype, msg = [], "", ""
    started = False
    for line in log.splitlines():
        if re.match(r"^=+ (FAILURES|ERRORS) =+$", line):
            started = True
            continue
        if not started:
            continue
        m = FRAME.match(line)
        if m and not line.startswith(("..", "/")):
            frames.append((m["path"], int(m["line"]), m["func"]))
            continue
        e = ERR.match(line)
        if e and frames:
            etype, msg = e["type"], (e["msg"] or "").strip()
            break
    return Failure(frames, etype, msg)


def best_matches(name: str, pool: set[str] | list[str], cutoff: float = 0.3) -> list[str]:
    """Names of ``pool`` most similar to ``name`` (best first; shared prefixes count extra)."""
    scored = []
    for cand in sorted(set(pool)):
        if cand == name:
            continue
        s = difflib.SequenceMatcher(None, name, cand).ratio()
        if cand.startswith(name) or name.startswith(cand) or cand[:1] == name[:1]:
            s += 0.25
        if s > cutoff:
            scored.append((-s, cand))
    return [c for _, c in sorted(scored)]


def best_match(name: str, pool: set[str] | list[str], cutoff: float = 0.3) -> str | None:
    m = best_matches(name, pool, cutoff)
    return m[0] if m else None


def pair_names(old: list[str], new: list[str]) -> dict[str, str]:
    """Greedy one-to-one renaming of ``old`` names onto the most similar ``new`` names."""
    mapping, free = {}, list(new)
    for o in old:
        m = best_match(o, free, cutoff=0.0)
        if m is not None:
            mapping[o] = m
            free.remove(m)
    return mapping


def _calls_to(fn_code: str, callee: str) -> list[ast.Call]:
    tree = pycode.parse(textwrap.dedent(fn_code))
    if tree is None:
        return []
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == callee:
                out.append(n)
    return out


@dataclass
class Candidate:
    path: str
    qualname: str
    rule: str
    repairs: list[Callable[[str], str | None]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.qualname.split(".")[-1]


class HeuristicAgent(Agent):
    name = "heuristic"

    def __init__(self, ask_when_unsure: bool = True, max_candidates: int = 6):
        self.ask_when_unsure = ask_when_unsure
        self.max_candidates = max_candidates

    def reset(self, info: dict) -> None:
        super().reset(info)
        self.files: dict[str, str] = {}
        self.defs: dict[str, list[tuple[str, int]]] = {}
        self.balance = float(info["total_budget"])
        self.asked: set[str] = set()
        self._gen = self._policy()
        self._started = False

    def act(self, obs: Observation) -> Action:
        m = BUDGET.search(obs.text)
        if m:
            self.balance = float(m.group(1))
        obs = dataclasses.replace(obs, text=re.sub(r"^\[Budget: \$[-\d.]+\] ", "", obs.text, count=1))
        try:
            if not self._started:
                self._started = True
                return next(self._gen)
            return self._gen.send(obs)
        except StopIteration:
            return GiveUpAction(reason="no further repair to try")

    # ---------------------------------------------------------------- helpers (each read is one turn)
    def _read(self, path: str) -> Generator[Action, Observation, str]:
        if path not in self.files:
            obs = yield EnvAction(kind="read", arg=f"{WORKSPACE}/{path}", thought=f"read {path}")
            self.files[path] = obs.text
        return self.files[path]

    def _qualname_at(self, src: str, line: int, name: str) -> str | None:
        for f in pycode.functions(src):
            if f.start <= line <= f.end:
                return f.qualname
        return None

    def _can_ask(self) -> bool:
        i = self.info
        return (i["mode"] == "collaborative" and self.ask_when_unsure
                and self.balance >= i["asking_cost"] + i["coding_cost"])

    # ---------------------------------------------------------------- the policy
    def _policy(self) -> Generator[Action, Observation, None]:
        ut = self.info["unittest_path"]
        obs = yield EnvAction(kind="run_test", arg=ut, thought="reproduce the failure")
        failure = parse_failure(obs.text) if parse_failure(obs.text).frames else parse_failure(self.info["error_log"])
        obs = yield EnvAction(kind="grep", arg=r"^\s*(async\s+)?def \w+|^class \w+", thought="index the functions")
        for line in obs.text.splitlines():
            m = re.match(r"^(.+?\.py):(\d+):\s*(?:async\s+)?(?:def|class) (\w+)", line)
            if m:
                self.defs.setdefault(m.group(3), []).append((m.group(1), int(m.group(2))))
        cands: list[Candidate] = yield from self._plan(failure)
        tried_report = False
        edited: str | None = None
        queue = list(cands)[: self.max_candidates]
        if queue and not queue[0].repairs and self._can_ask():
            queue = (yield from self._ask_location(queue)) or queue
        best: tuple[Candidate, str] | None = None  # the most confident localisation and its first attempt
        last: Candidate | None = None
        while queue:
            cand = queue.pop(0)
            src = yield from self._read(cand.path)
            orig = pycode.extract(src, cand.qualname)
            if orig is None:
                continue
            attempts = [r(orig) for r in cand.repairs]
            attempts = [a for a in attempts if a and pycode.normalise(a) != pycode.normalise(orig)]
            if not attempts and (not tried_report or cand.rule == "collaborator"):
                attempts, tried_report = [orig], True  # report the localisation with the code unchanged
            if best is None and attempts:
                best = (cand, attempts[0])
            for new in dict.fromkeys(attempts):
                if self.balance < self.info["coding_cost"]:
                    return
                edits = {cand.path: pycode.splice(src, cand.qualname, new)}
                if edited and edited != cand.path:
                    edits[edited] = self.files[edited]  # undo the previous (wrong) edit
                edited, last = cand.path, cand
                obs = yield ProposeAction(edits=edits, answer=[(f"{WORKSPACE}/{cand.path}", cand.name)],
                                          thought=f"{cand.rule}: repair {cand.qualname} in {cand.path}")
                if obs.success:
                    return
                if self._can_ask() and "where" not in self.asked:
                    asked = yield from self._ask_location([c for c in queue if c is not cand])
                    if asked:
                        queue, best = asked, None
                    break
        # out of ideas: leave the most confident localisation as the final answer
        if best and last is not best[0] and self.balance >= self.info["coding_cost"]:
            cand, new = best
            src = self.files[cand.path]
            edits = {cand.path: pycode.splice(src, cand.qualname, new)}
            if edited and edited != cand.path:
                edits[edited] = self.files[edited]
            yield ProposeAction(edits=edits, answer=[(f"{WORKSPACE}/{cand.path}", cand.name)],
                                thought=f"final answer: the most confident localisation, {cand.qualname}")

    def _ask_location(self, queue: list[Candidate]) -> Generator[Action, Observation, list[Candidate] | None]:
        self.asked.add("where")
        obs = yield AskAction(question="[QUESTION] Which file and which function or method is out of sync?")
        path = re.search(r"([\w./-]+\.py)", obs.text)
        func = re.search(r"(?:Function|Method|function|method)\W+`?(\w+)`?", obs.text)
        if not path or not func:
            return None
        rel = path.group(1).split(WORKSPACE + "/", 1)[-1].lstrip("/")
        src = yield from self._read(rel)
        quals = [f.qualname for f in pycode.functions(src) if f.name == func.group(1)]
        if not quals:
            return None
        cand = Candidate(rel, quals[0], "collaborator")
        known = [c for c in queue if c.path == rel and c.name == func.group(1)]
        cand.repairs = known[0].repairs if known else []
        if not cand.repairs and self._can_ask():
            self.asked.add("what")
            obs = yield AskAction(question=f"[QUESTION] Which identifiers changed in `{cand.name}`: which does the "
                                           "current version use, and which of mine are outdated?")
            m_new = re.search(r"uses:\s*([^;\n]*)", obs.text)
            m_old = re.search(r"outdated identifiers:\s*([^\n]*)", obs.text)
            new = [x.strip() for x in (m_new.group(1) if m_new else "").split(",") if re.fullmatch(r"\w+", x.strip())]
            old = [x.strip() for x in (m_old.group(1) if m_old else "").split(",") if re.fullmatch(r"\w+", x.strip())]
            mapping = pair_names(old, new)
            if mapping:
                cand.repairs = [lambda code, m=mapping: pycode.rename(code, m)]
        return [cand]  # the collaborator never misleads: stay with its localisation

    def _plan(self, f: Failure) -> Generator[Action, Observation, list[Candidate]]:
        if not f.frames:
            return []
        path, line, _ = f.frames[-1]
        src = yield from self._read(path)
        inner_q = self._qualname_at(src, line, f.frames[-1][2])
        out: list[Candidate] = []
        m_kw = re.search(r"(\w[\w.]*)\(\) got an unexpected keyword argument '(\w+)'", f.message)
        m_name = re.search(r"name '(\w+)' is not defined", f.message)
        m_attr = re.search(r"has no attribute '(\w+)'", f.message)
        if f.etype == "TypeError" and m_kw and inner_q:
            fname = m_kw.group(1)
            bare = fname.split(".")[-1]
            owner = fname.split(".")[0] if "." in fname else bare
            locs = self.defs.get(owner if bare == "__init__" else bare, [])
            def_cand = None
            if locs:
                dpath = locs[0][0]
                dsrc = yield from self._read(dpath)
                dq = [q.qualname for q in pycode.functions(dsrc) if q.name == bare
                      and (bare != "__init__" or q.qualname.startswith(owner + "."))]
                if dq:
                    params = pycode.params_of(pycode.extract(dsrc, dq[0]) or "")
                    caller_code = pycode.extract(src, inner_q) or ""
                    kws = [k.arg for c in _calls_to(caller_code, owner if bare == "__init__" else bare)
                           for k in c.keywords if k.arg]

                    def align_call(code, params=params, kws=kws):
                        return pycode.rename(code, pair_names([k for k in kws if k not in params],
                                                              [p for p in params if p not in kws and p not in ("self", "cls")]))

                    def align_def(code, params=params, kws=kws):
                        return pycode.rename(code, pair_names([p for p in params if p not in kws and p not in ("self", "cls")],
                                                              [k for k in kws if k not in params]))

                    def_cand = Candidate(dpath, dq[0], "signature (callee)", [align_def])
                    call_cand = Candidate(path, inner_q, "signature (call site)", [align_call])
                    # vote with the other HEAD call sites: does anyone else pass this keyword?
                    kw = m_kw.group(2)
                    obs = yield EnvAction(kind="grep", arg=rf"\b{re.escape(kw)}\s*=", thought=f"who else passes {kw}=")
                    others = [h for h in obs.text.splitlines() if re.match(r".+\.py:\d+:", h)
                              and not h.startswith(f"{path}:") and not h.startswith(f"{dpath}:")]
                    out += [def_cand, call_cand] if others else [call_cand, def_cand]
        elif (m_name or m_attr) and inner_q:
            old = (m_name or m_attr).group(1)
            # names visible in the file first (imports, module-level defs; attributes for AttributeError),
            # then any function of the repository
            local = pycode.module_symbols(src) | (pycode.attributes(src) if m_attr else set())
            news = best_matches(old, local)[:2] + [n for n in best_matches(old, set(self.defs))[:2]
                                                   if n not in local]
            reps = [lambda code, a=old, b=new: pycode.rename(code, {a: b}) for new in news[:3]]
            out.append(Candidate(path, inner_q, "undefined name" if m_name else "missing attribute", reps))
        if inner_q and not any(c.path == path and c.qualname == inner_q for c in out):
            out.append(Candidate(path, inner_q, "innermost frame"))
        # functions the failing function calls, then the outer frames
        body = pycode.extract(src, inner_q) if inner_q else ""
        for name in pycode.identifiers(body or ""):
            for dpath, _ in self.defs.get(name, [])[:1]:
                if name != (inner_q or "").split(".")[-1] and not any(c.name == name for c in out):
                    dsrc = yield from self._read(dpath)
                    q = [x.qualname for x in pycode.functions(dsrc) if x.name == name]
                    if q:
                        out.append(Candidate(dpath, q[0], "called by the failing function"))
        for fpath, fline, fname in reversed(f.frames[:-1]):
            fsrc = yield from self._read(fpath)
            q = self._qualname_at(fsrc, fline, fname)
            if q and not any(c.path == fpath and c.qualname == q for c in out):
                out.append(Candidate(fpath, q, "outer frame"))
        return out

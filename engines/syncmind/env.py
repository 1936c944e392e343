"""The SyncMind environment (spec §1): action space, costs and budget, turn limit, exact verification.

One turn = one agent action:

- ``EnvAction``  (a) environment interaction (bash, python, read, grep, ls, run_test): free, costs a turn;
- ``ProposeAction`` (b) edit the repository and name the changed (file, function): costs ``coding_cost``.
  The harness extracts the target function from the edited file, splices it into a fresh HEAD copy and
  runs the unit-test file; success iff the run passes and every pytest count equals the gold summary;
- ``AskAction`` (c) ask the collaborator (collaborative mode only): costs ``asking_cost``.

The episode ends on success, at ``max_turns``, when the balance drops below the coding cost
(independent) or below min(coding cost, asking cost) (collaborative), or when the agent gives up.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, Field

from . import code as pycode
from .instances import Instance
from .sandbox import Limits, run_shell, run_tests

WORKSPACE = "/workspace/test_repo"  # how paths are shown to agents
MAX_OBS = 6000


class EnvAction(BaseModel):
    kind: Literal["bash", "python", "read", "grep", "ls", "run_test"]
    arg: str = ""
    thought: str = ""


class ProposeAction(BaseModel):
    edits: dict[str, str] = Field(default_factory=dict)  # relpath -> new full file content
    answer: list[tuple[str, str]] = Field(default_factory=list)  # [(file path, function name)]
    thought: str = ""


class AskAction(BaseModel):
    question: str
    thought: str = ""


class GiveUpAction(BaseModel):
    reason: str = ""


class MalformedAction(BaseModel):
    raw: str
    reason: str


Action = Union[EnvAction, ProposeAction, AskAction, GiveUpAction, MalformedAction]


class EnvConfig(BaseModel):
    mode: Literal["independent", "collaborative"] = "independent"
    total_budget: float = 1000.0
    coding_cost: float = 100.0
    asking_cost: float = 100.0
    max_turns: int = 30
    test_timeout_s: float = 60.0
    shell_timeout_s: float = 20.0
    memory_mb: int = 2048


@dataclass
class Observation:
    text: str
    balance: float
    turn: int
    done: bool = False
    success: bool = False
    kind: str = "start"


@dataclass
class TurnRecord:
    turn: int
    kind: str  # env | ask | propose | giveup | malformed | refused
    action: str
    response: str
    cost: float
    balance: float
    summary: dict | None = None
    success: bool = False


def kind_of(action: Action) -> str:
    return {EnvAction: "env", ProposeAction: "propose", AskAction: "ask", GiveUpAction: "giveup",
            MalformedAction: "malformed"}[type(action)]


def norm_path(path: str) -> str:
    p = path.strip().strip("`'\"")
    if WORKSPACE in p:
        p = p.split(WORKSPACE, 1)[1]
    return p.lstrip("./").lstrip("/")


def clip(text: str, n: int = MAX_OBS) -> str:
    return text if len(text) <= n else text[: n // 3] + "\n[... output truncated ...]\n" + text[-2 * n // 3:]


class Episode:
    """One instance: a workspace copy of HEAD with the out-of-sync function spliced in."""

    def __init__(self, inst: Instance, head_dir: Path, cfg: EnvConfig | None = None, collaborator=None,
                 cache: dict | None = None):
        self.inst, self.head_dir, self.cfg = inst, Path(head_dir), cfg or EnvConfig()
        self.collaborator = collaborator
        self.cache = cache
        self.balance = float(self.cfg.total_budget)
        self.turn = 0
        self.done = False
        self.success = False
        self.end_reason = ""
        self.answers: list[list[tuple[str, str]]] = []
        self.records: list[TurnRecord] = []
        self.t0 = time.perf_counter()
        self._tmp = Path(tempfile.mkdtemp(prefix="syncmind-ws-"))
        self.workspace = self._tmp / "test_repo"
        shutil.copytree(self.head_dir, self.workspace, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        (self.workspace / inst.pyfile_path).write_text(self._stale_file(), encoding="utf-8")
        self.test_limits = Limits(timeout_s=self.cfg.test_timeout_s, cpu_s=int(self.cfg.test_timeout_s),
                                  memory_mb=self.cfg.memory_mb)
        self.shell_limits = Limits(timeout_s=self.cfg.shell_timeout_s, cpu_s=int(self.cfg.shell_timeout_s),
                                   memory_mb=self.cfg.memory_mb)

    # ------------------------------------------------------------------ helpers
    def _head_file(self) -> str:
        return (self.head_dir / self.inst.pyfile_path).read_text(encoding="utf-8")

    def _stale_file(self) -> str:
        return pycode.splice(self._head_file(), self.inst.fm_qualname, self.inst.original_code)

    def initial_observation(self) -> Observation:
        return Observation(self.initial_text(), self.balance, 0)

    def initial_text(self) -> str:
        return (f"[Budget: ${self.balance:g}] Your revised `test_repo` at {WORKSPACE} failed the execution test "
                f"`python -m pytest {WORKSPACE}/{self.inst.unittest_path}`:\n[initial execution error]\n"
                + clip(self.inst.initial_error_log))

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0

    def _out_of_money(self) -> bool:
        if self.cfg.mode == "independent":
            return self.balance < self.cfg.coding_cost
        return self.balance < min(self.cfg.coding_cost, self.cfg.asking_cost)

    # ------------------------------------------------------------------ the step function
    def step(self, action: Action) -> Observation:
        if self.done:
            raise RuntimeError("the episode is over")
        self.turn += 1
        kind = kind_of(action)
        cost, summary, text, ok = 0.0, None, "", False
        desc = ""
        if isinstance(action, EnvAction):
            desc = f"{action.kind}: {action.arg}"
            text = self._env(action)
        elif isinstance(action, AskAction):
            desc = action.question
            if self.cfg.mode != "collaborative" or self.collaborator is None:
                kind, text = "refused", "Asking the collaborator is not available in independent mode."
            elif self.balance < self.cfg.asking_cost:
                kind, text = "refused", f"Not enough balance to ask (${self.balance:g} < ${self.cfg.asking_cost:g})."
            else:
                cost = self.cfg.asking_cost
                self.balance -= cost
                text = self.collaborator.answer(action.question)
        elif isinstance(action, ProposeAction):
            desc = "; ".join(f"{p} :: {f}" for p, f in action.answer) or "(no answer given)"
            if self.balance < self.cfg.coding_cost:
                kind, text = "refused", f"Not enough balance to propose (${self.balance:g} < ${self.cfg.coding_cost:g})."
            else:
                cost = self.cfg.coding_cost
                self.balance -= cost
                self.answers.append([(norm_path(p), f.strip()) for p, f in action.answer])
                ok, text, summary = self._evaluate(action)
                self.success = ok
        elif isinstance(action, GiveUpAction):
            desc, text = action.reason or "give up", "The agent gave up."
            self.done, self.end_reason = True, "gave up"
        else:
            desc, text = action.raw[:300], f"Could not parse your response: {action.reason}"
        if ok:
            self.done, self.end_reason = True, "success"
        elif not self.done and self.turn >= self.cfg.max_turns:
            self.done, self.end_reason = True, "max turns"
        elif not self.done and self._out_of_money():
            self.done, self.end_reason = True, "budget exhausted"
        self.records.append(TurnRecord(self.turn, kind, desc, clip(text, 3000), cost, self.balance, summary, ok))
        return Observation(f"[Budget: ${self.balance:g}] " + text, self.balance, self.turn, self.done, ok, kind)

    def _env(self, a: EnvAction) -> str:
        ws = self.workspace
        if a.kind in ("bash", "python"):
            cmd = a.arg.replace(WORKSPACE, str(ws))
            r = run_shell(cmd, ws, self.shell_limits, python=a.kind == "python")
            note = f"\n[killed: {r.killed}]" if r.killed else ""
            return clip(r.log.replace(str(ws), WORKSPACE)) + note + f"\n[exit code {r.returncode}]"
        if a.kind == "run_test":
            target = norm_path(a.arg) or self.inst.unittest_path
            r = run_tests(ws, target, limits=self.test_limits)
            return clip(r.log) + (f"\n[killed: {r.killed}]" if r.killed else "")
        if a.kind == "ls":
            return "\n".join(sorted(str(p.relative_to(ws)) for p in ws.rglob("*.py")))[:MAX_OBS]
        if a.kind == "read":
            f = self._inside(norm_path(a.arg))
            if f is None or not f.is_file():
                return f"No such file: {a.arg}"
            return f.read_text(encoding="utf-8", errors="replace")[:400_000]
        # grep: a regular expression over the workspace's Python files
        try:
            rx = re.compile(a.arg, re.M)
        except re.error as e:
            return f"Invalid regular expression: {e}"
        hits = []
        for p in sorted(ws.rglob("*.py")):
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{p.relative_to(ws)}:{i}:{line}")
        return "\n".join(hits)[:20_000] or "(no match)"

    def _inside(self, rel: str) -> Path | None:
        f = (self.workspace / rel).resolve()
        return f if self.workspace.resolve() in f.parents else None

    def _evaluate(self, a: ProposeAction) -> tuple[bool, str, dict | None]:
        for rel, content in a.edits.items():
            f = self._inside(norm_path(rel))
            if f is None:
                return False, f"Refused an edit outside the repository: {rel}", None
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(content, encoding="utf-8")
        edited = (self.workspace / self.inst.pyfile_path)
        src = edited.read_text(encoding="utf-8", errors="replace") if edited.exists() else ""
        fm = pycode.extract(src, self.inst.fm_qualname)
        if fm is None:
            return False, "still failed: the responsible code could not be parsed from your repository.", None
        spliced = pycode.splice(self._head_file(), self.inst.fm_qualname, fm)
        r = run_tests(self.head_dir, self.inst.unittest_path, {self.inst.pyfile_path: spliced},
                      limits=self.test_limits, cache=self.cache)
        ok = r.passed and r.summary == self.inst.gold_summary
        if ok:
            return True, "passed: your solution is correct.", r.summary
        why = f"[killed: {r.killed}]\n" if r.killed else ""
        if r.passed and r.summary != self.inst.gold_summary:
            why += f"the test counts {r.summary} differ from the expected {self.inst.gold_summary}\n"
        return False, "still failed:\n" + why + clip(r.log, 4000), r.summary

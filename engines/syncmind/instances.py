"""SyncBench instances: the row schema, the builder (spec §1 steps 1-6) and the official CSV loader.

The builder walks the test files of a git repository, takes *caller* candidates (functions and methods
of the test file itself) and *callee* candidates (functions and methods of the repository modules the
test file imports), traces every commit that touched their file, and keeps the historical version of a
function as an instance when the test file passes at HEAD (≥ 1 test) and fails once that version is
spliced into HEAD (``TEST_MODE=fp``).
"""
from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, Field

from . import code as pycode
from .gitrepo import commits_touching, export_head, head, show, tracked_files
from .sandbox import Limits, run_tests

InstanceType = Literal["caller", "callee"]


class Instance(BaseModel):
    """One out-of-sync instance (the official columns, plus ``repo``, ``fm_qualname`` and ``repo_id``)."""

    instance_id: str
    instance_type: InstanceType
    task_type: str = "fp"
    repo: str  # source key ("minilib", "toolz", or a SyncBench repo name)
    repo_id: int = 1
    repo_url: str = ""
    commit: str  # the historical commit the out-of-sync code comes from
    fm_type: Literal["function", "method"]
    fm_name: str
    fm_qualname: str
    pyfile_name: str
    pyfile_path: str  # path of the file holding the function, relative to the repository root
    unittest_path: str  # the test file that fails
    original_code: str  # out-of-sync (historical) version
    gold_code: str  # HEAD version
    old_filtered_context: str = ""
    new_filtered_context: str = ""
    old_complete_context: str = ""
    new_complete_context: str = ""
    initial_error_log: str
    original_summary: dict = Field(default_factory=dict)
    gold_summary: dict


class InstanceSet(BaseModel):
    repo: str
    repo_url: str = ""
    head_commit: str
    trace_mode: str = "all"
    strict: bool = False
    instances: list[Instance]
    rejected: dict[str, int] = Field(default_factory=dict)  # reason -> count (build log)

    def ids(self) -> list[str]:
        return [i.instance_id for i in self.instances]


def make_instance_id(repo_id: int, repo: str, kind: str, path: str, fm: str, commit: str) -> str:
    return f"{repo_id}_{repo}_{kind}__{path.replace('/', '.')}__{fm}__{commit[:10]}"


def parse_repo_id(instance_id: str) -> int:
    """Repository id of an instance id: the digits before the first '_' (the official code reads only the
    first character, ``int(instance_id[0])``, which is wrong for repositories 10-21)."""
    m = re.match(r"(\d+)_", instance_id)
    if not m:
        raise ValueError(f"instance id {instance_id!r} does not start with '<repo_id>_'")
    return int(m.group(1))


def is_test_file(path: str, source: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".py"):
        return False
    return any(f.name.startswith("test") for f in pycode.functions(source))


def resolve_imports(test_path: str, source: str, files: set[str]) -> list[str]:
    """Repository modules a test file imports (dependency tracing for callee instances)."""
    out: list[str] = []
    pkg = test_path.rsplit("/", 1)[0].split("/") if "/" in test_path else []
    for module, name, level in pycode.imports(source):
        base = pkg[: len(pkg) - (level - 1)] if level else []
        parts = base + [p for p in module.split(".") if p]
        stems = ["/".join(parts)]
        if name and name != "*":
            stems.append("/".join(parts + [name]))
        for stem in stems:
            for cand in (stem + ".py", stem + "/__init__.py"):
                if cand in files and cand != test_path and cand not in out:
                    out.append(cand)
    return out


def _follow_star_imports(path: str, source_of: Callable[[str], str], files: set[str]) -> list[str]:
    """A package ``__init__`` that re-exports submodules (``from .itertoolz import *``): those submodules."""
    if not path.endswith("__init__.py"):
        return []
    pkgdir = path[: -len("__init__.py")].rstrip("/")
    out = []
    for module, name, level in pycode.imports(source_of(path)):
        if level == 1 and module:
            cand = f"{pkgdir}/{module.replace('.', '/')}.py"
            if cand in files:
                out.append(cand)
    return out


def strict_ok(code: str, fd: pycode.FuncDef) -> bool:
    """The optional strict filter: ≥ 1 arg, docstring, > 5 lines, no dunder, no test/temp/sample names."""
    import ast
    import textwrap

    if fd.name.startswith("__") or any(w in fd.name.lower() for w in ("test", "temp", "sample")):
        return False
    tree = pycode.parse(textwrap.dedent(code))
    if tree is None:
        return False
    fn = tree.body[0]
    args = [a for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg not in ("self", "cls")]
    rets = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    literal = all(isinstance(r.value, ast.Constant) for r in rets) if rets else True
    return bool(args) and ast.get_docstring(fn) is not None and len(code.splitlines()) > 5 and not literal


def build_instances(repo: Path, repo_name: str, head_dir: Path, *, repo_id: int = 1, repo_url: str = "",
                    trace_mode: Literal["all", "oldest"] = "all", strict: bool = False,
                    limits: Limits | None = None, test_files: list[str] | None = None,
                    max_instances: int = 10_000, cache: dict | None = None,
                    progress: Callable[[float, str], None] | None = None) -> InstanceSet:
    """Build the fail-to-pass instances of ``repo`` (git) whose HEAD tree is exported at ``head_dir``."""
    limits = limits or Limits()
    files = set(tracked_files(repo))
    head_src = {p: (head_dir / p).read_text(encoding="utf-8", errors="replace") for p in files if p.endswith(".py")}
    tests = test_files or sorted(p for p, s in head_src.items() if is_test_file(p, s))
    rejected: dict[str, int] = {}
    out: list[Instance] = []

    def reject(reason: str) -> None:
        rejected[reason] = rejected.get(reason, 0) + 1

    history: dict[str, list[tuple[str, str]]] = {}  # path -> [(commit, source)], newest first

    def versions(path: str) -> list[tuple[str, str]]:
        if path not in history:
            hs = []
            for c in commits_touching(repo, path):
                s = show(repo, c, path)
                if s is not None:
                    hs.append((c, s))
            history[path] = hs
        return history[path]

    for ti, tf in enumerate(tests):
        if progress:
            progress(ti / max(1, len(tests)), f"test file {tf} ({len(out)} instances so far)")
        gold = run_tests(head_dir, tf, limits=limits, cache=cache)
        if not gold.passed or not gold.summary or gold.summary["passed"] < 1:
            reject("test file fails or runs 0 tests at HEAD")
            continue
        modules = resolve_imports(tf, head_src[tf], files)
        for m in list(modules):
            modules += [x for x in _follow_star_imports(m, head_src.__getitem__, files) if x not in modules]
        targets = [(tf, "caller")] + [(m, "callee") for m in modules if m in head_src]
        for path, kind in targets:
            for fd in pycode.functions(head_src[path]):
                gold_code = pycode.extract(head_src[path], fd.qualname)
                if gold_code is None or (strict and not strict_ok(gold_code, fd)):
                    continue
                seen = {pycode.normalise(gold_code)}
                olds: list[tuple[str, str]] = []
                for commit, src in versions(path):
                    old = pycode.extract(src, fd.qualname)  # the historical function, not the whole file
                    key = pycode.normalise(old)
                    if old is None or key in seen:
                        continue
                    seen.add(key)
                    olds.append((commit, old))
                if trace_mode == "oldest":
                    olds = olds[-1:]
                for commit, old in olds:
                    if len(out) >= max_instances:
                        break
                    stale_file = pycode.splice(head_src[path], fd.qualname, old)
                    res = run_tests(head_dir, tf, {path: stale_file}, limits=limits, cache=cache)
                    if res.passed:
                        reject("passes with the old version (pass-to-pass)")
                        continue
                    if res.timed_out:
                        reject("old version times out")
                        continue
                    filtered = pycode.splice(head_src[path], fd.qualname, f"def {fd.name}(...): ...\n")
                    out.append(Instance(
                        instance_id=make_instance_id(repo_id, repo_name, kind, path, fd.name, commit),
                        instance_type=kind, repo=repo_name, repo_id=repo_id, repo_url=repo_url, commit=commit,
                        fm_type=fd.kind, fm_name=fd.name, fm_qualname=fd.qualname,
                        pyfile_name=path.rsplit("/", 1)[-1], pyfile_path=path, unittest_path=tf,
                        original_code=old, gold_code=gold_code, old_filtered_context=filtered,
                        new_filtered_context=filtered, old_complete_context=stale_file,
                        new_complete_context=head_src[path], initial_error_log=res.log,
                        original_summary=res.summary or {}, gold_summary=gold.summary))
    if progress:
        progress(1.0, f"{len(out)} instances")
    return InstanceSet(repo=repo_name, repo_url=repo_url, head_commit=head(repo), trace_mode=trace_mode,
                       strict=strict, instances=out, rejected=rejected)


def save(iset: InstanceSet, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(iset.model_dump_json(indent=1), encoding="utf-8")
    return path


def load(path: Path) -> InstanceSet:
    return InstanceSet.model_validate_json(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------ the official SyncBench CSV (paper scale)
OFFICIAL_COLUMNS = ["instance_id", "instance_type", "task_type", "repo_url", "commit", "fm_type", "fm_name",
                    "original_code", "gold_code", "old_filtered_context", "old_complete_context",
                    "new_filtered_context", "new_complete_context", "initial_error_log", "original_summary",
                    "gold_summary", "pyfile_name", "pyfile_path", "unittest_path"]


def _summary(cell: str) -> dict:
    import ast

    try:
        v = ast.literal_eval(cell) if cell else {}
    except (ValueError, SyntaxError):
        return {}
    return v if isinstance(v, dict) else {}


def _rel(path: str) -> str:
    return path.split("test_repo/", 1)[1] if "test_repo/" in path else path.lstrip("/")


def from_official_row(row: dict) -> Instance:
    missing = [c for c in ("instance_id", "instance_type", "fm_name", "original_code", "gold_code", "pyfile_path")
               if not row.get(c)]
    if missing:
        raise ValueError(f"SyncBench row lacks {missing}")
    iid = row["instance_id"]
    repo_part = iid.split("__")[0]
    repo = repo_part.split("_", 1)[1].rsplit("_", 1)[0] if "_" in repo_part else repo_part
    kind = "callee" if "callee" in row["instance_type"] else "caller"
    return Instance(
        instance_id=iid, instance_type=kind, task_type=row.get("task_type") or "fp", repo=repo,
        repo_id=parse_repo_id(iid), repo_url=row.get("repo_url", ""), commit=row.get("commit", ""),
        fm_type="method" if row.get("fm_type") == "method" else "function", fm_name=row["fm_name"],
        fm_qualname=row["fm_name"], pyfile_name=row.get("pyfile_name") or _rel(row["pyfile_path"]).rsplit("/", 1)[-1],
        pyfile_path=_rel(row["pyfile_path"]), unittest_path=_rel(row.get("unittest_path", "")),
        original_code=row["original_code"], gold_code=row["gold_code"],
        old_filtered_context=row.get("old_filtered_context", ""), new_filtered_context=row.get("new_filtered_context", ""),
        old_complete_context=row.get("old_complete_context", ""), new_complete_context=row.get("new_complete_context", ""),
        initial_error_log=row.get("initial_error_log", ""), original_summary=_summary(row.get("original_summary", "")),
        gold_summary=_summary(row.get("gold_summary", "")))


def load_syncbench_csv(path: Path, limit: int = 100_000) -> list[Instance]:
    """Rows of ``syncbench_*.csv`` (Hugging Face ``xuehang/SyncBench``) as instances."""
    csv.field_size_limit(sys.maxsize)
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.DictReader(f)):
            if i >= limit:
                break
            out.append(from_official_row(row))
    return out


def to_official_row(inst: Instance) -> dict:
    row = {c: getattr(inst, c) for c in OFFICIAL_COLUMNS if hasattr(inst, c)}
    row["instance_type"] = inst.instance_type
    row["original_summary"] = repr(inst.original_summary)
    row["gold_summary"] = repr(inst.gold_summary)
    row["pyfile_path"] = "/workspace/test_repo/" + inst.pyfile_path
    row["unittest_path"] = "/workspace/test_repo/" + inst.unittest_path
    return row


def write_syncbench_csv(instances: list[Instance], path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=OFFICIAL_COLUMNS)
        w.writeheader()
        for inst in instances:
            w.writerow(to_official_row(inst))
    return path

"""The sandbox: every test run and every shell action happens in a throwaway copy under resource limits.

- a temporary copy of the repository (``.git`` left out); the host copy is never written;
- resource limits on CPU seconds, address space, file size and process count (util-linux ``prlimit``);
- a wall-clock timeout after which the whole process group is killed;
- no network: a new network namespace (``unshare -rn``) where the kernel allows it, and always a
  ``sitecustomize`` that makes Python's socket connects raise, plus dead proxy settings;
- exact counts from pytest's JUnit XML (spec §1 "Verification").
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

MAX_LOG = 12_000
BLOCK_NET = '''\
"""Installed by the SyncMind sandbox: network access raises."""
import socket as _s


def _blocked(*a, **k):
    raise PermissionError("network access is disabled in the SyncMind sandbox")


for _name in ("connect", "connect_ex", "sendto"):
    setattr(_s.socket, _name, _blocked)
_s.create_connection = _blocked
_s.getaddrinfo = _blocked
'''


@dataclass
class Limits:
    timeout_s: float = 60.0  # wall clock
    cpu_s: int = 60
    memory_mb: int = 2048
    max_procs: int = 64  # processes beyond the user's current count
    file_mb: int = 64


@dataclass
class RunResult:
    returncode: int
    timed_out: bool
    log: str
    summary: dict | None  # {"passed", "failed", "errors", "skipped"} or None (no report)
    seconds: float
    killed: str = ""  # why the run was killed, if it was
    network_isolated: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def can_unshare() -> bool:
    exe = shutil.which("unshare")
    if not exe or os.environ.get("PAPERLAB_SYNCMIND_NO_UNSHARE"):
        return False
    try:
        return subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except Exception:
        return False


def _user_procs() -> int:
    uid = os.getuid()
    n = 0
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


def _limited(argv: list[str], limits: Limits, nproc: int) -> list[str]:
    """``argv`` under the resource limits, set by util-linux ``prlimit`` before it execs the command. Not a
    ``preexec_fn``: Python code run in a child forked from a threaded process (the web app, a worker) can deadlock —
    seen in CI, where a deallocation in the fork's child waited forever on a condition variable of a PyAV slice
    thread that only exists in the parent."""
    cpu = max(1, int(limits.cpu_s))
    return ["prlimit", f"--cpu={cpu}:{cpu + 1}", f"--as={limits.memory_mb * 1024 * 1024}",
            f"--fsize={limits.file_mb * 1024 * 1024}", f"--nproc={nproc}", "--core=0", "--", *argv]


def _env(home: Path, site: Path) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TERM") if k in os.environ}
    dead = "http://127.0.0.1:9"
    return dict(keep, HOME=str(home), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1",
                PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONHASHSEED="0", http_proxy=dead, https_proxy=dead,
                HTTP_PROXY=dead, HTTPS_PROXY=dead, no_proxy="", HF_HUB_OFFLINE="1")


def execute(argv: list[str], cwd: Path, limits: Limits, scratch: Path) -> tuple[int, bool, str, float, str, bool]:
    """Run ``argv`` in ``cwd`` under the limits: (returncode, timed_out, output, seconds, killed, isolated)."""
    site = scratch / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCK_NET)
    isolated = can_unshare()
    if isolated:
        argv = ["unshare", "-rn", "--", *argv]
    nproc = _user_procs() + limits.max_procs
    t0 = time.perf_counter()
    proc = subprocess.Popen(_limited(argv, limits, nproc), cwd=cwd, env=_env(scratch, site), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    killed = ""
    try:
        out, _ = proc.communicate(timeout=limits.timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        killed = f"wall-clock timeout after {limits.timeout_s:g} s"
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    rc = proc.returncode
    if not timed_out and rc in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU):
        killed = f"CPU-time limit ({limits.cpu_s} s) or memory limit reached"
    text = out.decode("utf-8", "replace")
    if len(text) > MAX_LOG:
        text = "[... earlier output omitted]\n" + text[-MAX_LOG:]
    return rc, timed_out, text, time.perf_counter() - t0, killed, isolated


def parse_junit(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tot = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in suites:
        for k in tot:
            tot[k] += int(s.get(k, 0))
    return {"passed": tot["tests"] - tot["failures"] - tot["errors"] - tot["skipped"],
            "failed": tot["failures"], "errors": tot["errors"], "skipped": tot["skipped"]}


def copy_repo(repo: Path, dest: Path) -> Path:
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache"),
                    symlinks=True)
    return dest


def run_tests(repo: Path, test_path: str, overrides: dict[str, str] | None = None,
              limits: Limits | None = None, cache: dict | None = None) -> RunResult:
    """pytest on one test file in a temporary copy of ``repo`` with ``overrides`` ({relpath: content}) applied."""
    limits = limits or Limits()
    overrides = overrides or {}
    key = None
    if cache is not None:
        h = hashlib.sha256(json.dumps([str(repo), test_path, sorted(overrides.items()), asdict(limits)]).encode())
        key = h.hexdigest()
        if key in cache:
            return cache[key]
    with tempfile.TemporaryDirectory(prefix="syncmind-run-") as tmp:
        work = copy_repo(repo, Path(tmp) / "repo")
        for rel, content in overrides.items():
            f = (work / rel).resolve()
            if work.resolve() not in f.parents:
                raise ValueError(f"override path escapes the repository: {rel}")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(content, encoding="utf-8")
        junit = Path(tmp) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "-q", "--tb=short", "-rfE", "--no-header", "-p", "no:cacheprovider",
                "-o", "addopts=", "--rootdir", str(work), f"--junitxml={junit}", test_path]
        rc, timed_out, log, secs, killed, iso = execute(argv, work, limits, Path(tmp) / "scratch")
        log = log.replace(str(work) + "/", "").replace(str(work), ".")
        res = RunResult(rc, timed_out, log, None if timed_out else parse_junit(junit), secs, killed, iso)
    if cache is not None and key is not None:
        cache[key] = res
    return res


def run_shell(command: str, workspace: Path, limits: Limits | None = None, python: bool = False) -> RunResult:
    """An exploration action (bash or Python) inside the agent's workspace copy, with the same limits."""
    limits = limits or Limits(timeout_s=20, cpu_s=20)
    with tempfile.TemporaryDirectory(prefix="syncmind-sh-") as tmp:
        argv = [sys.executable, "-c", command] if python else ["bash", "-c", command]
        rc, timed_out, log, secs, killed, iso = execute(argv, workspace, limits, Path(tmp))
    return RunResult(rc, timed_out, log, None, secs, killed, iso)

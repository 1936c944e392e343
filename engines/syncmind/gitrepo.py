"""Deterministic git histories: every commit has fixed author, committer and dates, so hashes are stable."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

AUTHOR = ("SyncBench builder", "syncbench@paperlab.invalid")
EPOCH = 1_700_000_000  # first commit's timestamp; each later commit is one day later


def _env(i: int) -> dict:
    date = f"{EPOCH + 86_400 * i} +0000"
    return dict(os.environ, GIT_AUTHOR_NAME=AUTHOR[0], GIT_AUTHOR_EMAIL=AUTHOR[1], GIT_AUTHOR_DATE=date,
                GIT_COMMITTER_NAME=AUTHOR[0], GIT_COMMITTER_EMAIL=AUTHOR[1], GIT_COMMITTER_DATE=date,
                GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_SYSTEM="/dev/null", LC_ALL="C")


def git(repo: Path, *args: str, i: int = 0, check: bool = True) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], env=_env(i), capture_output=True, text=True,
                         timeout=60)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()[:500]}")
    return out.stdout


def build_history(target: Path, snapshots: list[tuple[str, dict[str, str]]]) -> Path:
    """Write each (message, {path: content}) snapshot as one commit (files absent from a snapshot are removed)."""
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    git(tmp, "init", "-q", "-b", "main")
    for i, (message, files) in enumerate(snapshots):
        for p in tmp.rglob("*"):
            if p.is_file() and ".git" not in p.relative_to(tmp).parts:
                p.unlink()
        for rel, content in files.items():
            f = tmp / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(content, encoding="utf-8")
        git(tmp, "add", "-A", i=i)
        git(tmp, "commit", "-q", "--allow-empty", "-m", message, i=i)
    shutil.rmtree(target, ignore_errors=True)
    tmp.replace(target)
    return target


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def commits_touching(repo: Path, path: str) -> list[str]:
    """Commits that touched ``path``, newest first (``git log -- path``)."""
    return [c for c in git(repo, "log", "--format=%H", "--", path).split() if c]


def show(repo: Path, commit: str, path: str) -> str | None:
    out = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], env=_env(0), capture_output=True,
                         timeout=60)
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def tracked_files(repo: Path, commit: str = "HEAD") -> list[str]:
    return sorted(git(repo, "ls-tree", "-r", "--name-only", commit).split("\n")[:-1])


def export_head(repo: Path, dest: Path) -> Path:
    """Copy the tracked files at HEAD (no .git) to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in tracked_files(repo):
        content = show(repo, "HEAD", rel)
        if content is None:
            continue
        f = dest / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(content, encoding="utf-8")
    return dest

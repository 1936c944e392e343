"""Repository sources: the bundled synthetic repository and the PyPI-release history of toolz.

For each source the package ships the built instances (``data/<repo>_instances.json``); toolz also ships
its HEAD tree (``data/toolz_head.tar.gz``) so its instances run offline. Both are rebuilt by
``python -m engines.syncmind.build minilib`` and ``python -m engines.syncmind.build toolz`` (the latter
downloads the sdists from PyPI once).
"""
from __future__ import annotations

import functools
import tarfile
from pathlib import Path

from engines.common.settings import get_settings

from .gitrepo import export_head
from .instances import Instance, InstanceSet, load

DATA = Path(__file__).resolve().parent / "data"
REPOS = ("minilib", "toolz")


def shipped_path(repo: str) -> Path:
    return DATA / f"{repo}_instances.json"


def heads_root() -> Path:
    return get_settings().data_dir / "syncmind" / "heads"


def head_dir(repo: str) -> Path:
    """The HEAD tree of ``repo`` (no .git), materialised under the data directory."""
    if repo == "minilib":
        from .synthetic import fingerprint, synthetic_repo

        d = heads_root() / f"minilib-{fingerprint()}"
        if not (d / ".complete").exists():
            export_head(synthetic_repo(), d)
            (d / ".complete").write_text("ok")
        return d
    if repo == "toolz":
        tar = DATA / "toolz_head.tar.gz"
        if not tar.exists():
            raise FileNotFoundError(f"{tar} is missing: run `python -m engines.syncmind.build toolz`")
        import hashlib

        d = heads_root() / f"toolz-{hashlib.sha256(tar.read_bytes()).hexdigest()[:12]}"
        if not (d / ".complete").exists():
            d.mkdir(parents=True, exist_ok=True)
            with tarfile.open(tar) as t:
                t.extractall(d, filter="data")
            (d / ".complete").write_text("ok")
        return d
    raise ValueError(f"unknown repository {repo!r}; choose one of {REPOS}")


@functools.lru_cache(maxsize=8)
def _load(repo: str, mtime: float) -> InstanceSet:
    return load(shipped_path(repo))


def instance_set(repo: str) -> InstanceSet:
    p = shipped_path(repo)
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run `python -m engines.syncmind.build {repo}`")
    return _load(repo, p.stat().st_mtime)


def get_instance(repo: str, instance_id: str = "") -> Instance:
    iset = instance_set(repo)
    if not instance_id:
        return iset.instances[0]
    for inst in iset.instances:
        if inst.instance_id == instance_id:
            return inst
    raise ValueError(f"instance_id: no instance {instance_id!r} in {repo} ({len(iset.instances)} instances)")

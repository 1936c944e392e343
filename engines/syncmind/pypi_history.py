"""Git histories built offline from successive PyPI releases (spec §4, data 1): one commit per release.

``build_toolz()`` downloads the sdists of toolz 0.9.0 … 1.0.0 with ``pip download --no-deps
--no-binary :all:`` (once; cached under ``<data_dir>/syncmind/sdists``), commits the package sources of
each release in release order with fixed dates (deterministic hashes), builds the instances against the
newest release, and ships ``data/toolz_head.tar.gz`` and ``data/toolz_instances.json``.
"""
from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

from engines.common.settings import get_settings

from .gitrepo import build_history
from .instances import build_instances, save
from .sources import DATA, head_dir, shipped_path

TOOLZ_VERSIONS = ("0.9.0", "0.10.0", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.12.1", "1.0.0")
KEEP = ("toolz/", "tlz/")
# The core test files (the others re-test the same functions through the curried / tlz wrappers,
# pickling or doctests, which multiplies build time without adding distinct instances).
TEST_FILES = ["toolz/tests/test_dicttoolz.py", "toolz/tests/test_functoolz.py", "toolz/tests/test_itertoolz.py",
              "toolz/tests/test_recipes.py", "toolz/tests/test_utils.py"]


def sdist(package: str, version: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{package}-{version}.tar.gz"))
    if found:
        return found[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    "--no-build-isolation", "-q", "-d", str(cache), f"{package}=={version}"], check=True)
    return sorted(cache.glob(f"{package}-{version}.tar.gz"))[0]


def release_files(tar_path: Path, keep: tuple[str, ...] = KEEP) -> dict[str, str]:
    out = {}
    with tarfile.open(tar_path) as t:
        for m in t.getmembers():
            if not m.isfile() or not m.name.endswith(".py"):
                continue
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if rel.startswith(keep):
                out[rel] = t.extractfile(m).read().decode("utf-8", "replace")
    return out


def toolz_repo() -> Path:
    root = get_settings().data_dir / "syncmind"
    snaps = [(f"toolz {v}", release_files(sdist("toolz", v, root / "sdists"))) for v in TOOLZ_VERSIONS]
    return build_history(root / "repos" / "toolz-history", snaps)


def ship_head(repo: Path) -> Path:
    """Write the HEAD tree as a reproducible tar.gz (sorted, fixed mtimes)."""
    from .gitrepo import show, tracked_files

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for rel in tracked_files(repo):
            data = (show(repo, "HEAD", rel) or "").encode()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    import gzip

    out = DATA / "toolz_head.tar.gz"
    out.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return out


def build_toolz():
    repo = toolz_repo()
    ship_head(repo)
    iset = build_instances(repo, "toolz", head_dir("toolz"), repo_id=2, repo_url="https://github.com/pytoolz/toolz",
                           test_files=TEST_FILES,
                           progress=lambda f, m: print(f"  {f:.0%} {m}", flush=True))
    return save(iset, shipped_path("toolz")), iset

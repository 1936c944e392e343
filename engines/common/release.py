"""The model release: trained weights shipped in the repository (``release/``) and installed on first use.

A released artifact lives in ``release/<kind>/<key>/``: its files (safetensors weights, stored in half
precision where the held-out metrics do not move, plus small JSON/text files) and ``manifest.json``
(config, entry/code version, training record, held-out metrics, sha256 and size of every file).
``release/RELEASE.json`` names the release version and lists every artifact.

The key is the owner's own cache key (the zoo's config hash, object_audio's cache directory name, ...),
so "the same model" means the same thing to the cache and to the release: when the cache misses, the
owner asks :func:`install` for that key; a shipped artifact is verified (sha256) and copied into the
cache directory (half precision restored to float32), and nothing is trained. A missing, truncated or
changed file raises :class:`ReleaseError` naming the file and the command that rebuilds it; nothing
falls back to random weights. ``PAPERLAB_RELEASE=off`` ignores the release (``make models`` trains
from scratch that way); the test profile's micro configurations have keys the release never holds.

No torch at import time (the landing page reads manifests).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RELEASE_FILE = "RELEASE.json"
MANIFEST = "manifest.json"
INSTALLED = "release.json"  # written into the cache directory of an installed artifact
REBUILD = "make models MODELS={kind}/{key}"


class ReleaseError(RuntimeError):
    """A shipped artifact is missing files or its files do not match the manifest's sha256."""


def release_dir() -> Path:
    return Path(os.environ.get("PAPERLAB_RELEASE_DIR") or REPO / "release")


def enabled() -> bool:
    return os.environ.get("PAPERLAB_RELEASE", "on").lower() not in ("off", "0", "no", "false")


def read_release() -> dict:
    f = release_dir() / RELEASE_FILE
    if not f.exists():
        return {"version": 0, "artifacts": {}}
    return json.loads(f.read_text())


def version() -> int:
    return int(read_release().get("version", 0))


def artifact_dir(kind: str, key: str) -> Path:
    return release_dir() / kind / key


def manifest(kind: str, key: str) -> dict | None:
    """The shipped manifest of ``kind/key`` (None when the release does not hold it or is switched off)."""
    if not enabled():
        return None
    f = artifact_dir(kind, key) / MANIFEST
    if not f.exists():
        return None
    return json.loads(f.read_text())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(kind: str, key: str) -> dict:
    """Check every file of ``kind/key`` against its manifest; the manifest, or ReleaseError."""
    d = artifact_dir(kind, key)
    m = json.loads((d / MANIFEST).read_text())
    problems = []
    for rel, info in m["files"].items():
        f = d / rel
        if not f.exists():
            problems.append(f"{rel}: missing")
        elif f.stat().st_size != info["bytes"]:
            problems.append(f"{rel}: {f.stat().st_size} bytes, the manifest says {info['bytes']} (truncated or changed)")
        elif sha256(f) != info["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest (the file was changed or damaged)")
    if problems:
        cmd = m.get("rebuild") or REBUILD.format(kind=kind, key=key)
        raise ReleaseError(
            f"released model {kind}/{key} ({d}) failed verification: " + "; ".join(problems)
            + f". Restore the files with `git checkout -- {_rel(d)}` or rebuild them with `{cmd}`."
        )
    return m


def _rel(d: Path) -> str:
    try:
        return str(d.relative_to(REPO))
    except ValueError:
        return str(d)


def install(kind: str, key: str, dest: Path, progress: Any = None) -> dict | None:
    """Copy the shipped ``kind/key`` into ``dest`` (verified; float16 weights restored to float32).

    Returns the manifest, or None when the release does not hold the key. ``dest`` appears atomically.
    """
    m = manifest(kind, key)
    if m is None:
        return None
    if progress is not None:
        progress(0.0, f"installing {kind}/{key} from release v{version()}")
    m = verify(kind, key)
    src = artifact_dir(kind, key)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.release-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for rel, info in m["files"].items():
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            if info.get("stored") == "float16":
                _convert(src / rel, out, "float32")
            else:
                shutil.copyfile(src / rel, out)
        (tmp / INSTALLED).write_text(json.dumps({"release": version(), "kind": kind, "key": key,
                                                 "installed_at": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=1))
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return m


def ensure_installed(kind: str, key: str, folder: Path, complete, build_test, label: str, rebuild: str,
                     progress: Any = None) -> None:
    """Make ``folder`` hold a complete ``kind/key`` (``complete()`` says when it does), under a lock shared by the
    processes that use the data directory: the test profile builds its micro models (``build_test()``, one torch
    thread), any other profile installs the shipped artifact. Missing or damaged files raise, naming ``rebuild``."""
    import fcntl

    from .settings import get_settings

    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if complete():
            return
        if get_settings().profile == "test":
            from .threads import torch_threads

            with torch_threads(1):
                build_test()
        elif install(kind, key, folder, progress) is None:
            raise FileNotFoundError(f"no released {label} models for key {key} (release/{kind}/): rebuild with `{rebuild}`")
        if not complete():
            raise RuntimeError(f"the {label} models in {folder} are incomplete or damaged: `{rebuild}`")


def install_file(kind: str, key: str, rel: str, dest: Path) -> bool:
    """Install one shipped artifact that the owner keeps as a single file (its directory holds ``rel``)."""
    m = manifest(kind, key)
    if m is None:
        return False
    m = verify(kind, key)
    info = m["files"][rel]
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.release-{os.getpid()}")
    if info.get("stored") == "float16":
        _convert(artifact_dir(kind, key) / rel, tmp, "float32")
    else:
        shutil.copyfile(artifact_dir(kind, key) / rel, tmp)
    os.replace(tmp, dest)
    return True


def installed_from(cache_dir: Path) -> dict | None:
    """The install record of a cache directory that came from the release (None: built locally)."""
    f = Path(cache_dir) / INSTALLED
    return json.loads(f.read_text()) if f.exists() else None


def _convert(src: Path, dst: Path, dtype: str) -> None:
    """Rewrite a safetensors file with its floating tensors (float32 ↔ float16) in ``dtype``, metadata kept."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    want = getattr(torch, dtype)
    with safe_open(str(src), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    out = {k: (v.to(want) if v.is_floating_point() and v.dtype in (torch.float32, torch.float16) else v).contiguous()
           for k, v in tensors.items()}
    save_file(out, str(dst), metadata=meta)


# ----------------------------------------------------------------------------- publishing


def hardware() -> dict:
    """What the training ran on (the record says so; GPU when one was used)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out = {"cpu": cpu, "cores": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version()}
    try:
        import torch

        out["torch"] = torch.__version__
        out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 (informational only)
        pass
    return out


def code_version() -> str:
    """The git commit of the code (``+dirty`` when the work tree has changes under engines/)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "engines"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "") if head else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def publish(kind: str, key: str, src: Path, *, config: dict, record: dict, metrics: dict, half: bool,
            files: list[str] | None = None, label: str = "", extra: dict | None = None, rebuild: str = "") -> dict:
    """Copy the artifact in ``src`` into ``release/<kind>/<key>/`` and write its manifest.

    ``half``: store the floating weights of ``*.safetensors`` files in float16 (decided by the caller after
    measuring that the held-out metrics do not move). ``files``: paths relative to ``src`` (default: all,
    minus lock files and install records).
    """
    src = Path(src)
    d = artifact_dir(kind, key)
    tmp = d.parent / f".{d.name}.publish-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    names = files if files is not None else sorted(
        str(p.relative_to(src)) for p in src.rglob("*") if p.is_file() and not p.name.endswith(".lock") and p.name != INSTALLED)
    listing = {}
    for rel in names:
        out = tmp / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        stored = None
        if half and rel.endswith(".safetensors"):
            _convert(src / rel, out, "float16")
            stored = "float16"
        else:
            shutil.copyfile(src / rel, out)
        listing[rel] = {"sha256": sha256(out), "bytes": out.stat().st_size, **({"stored": stored} if stored else {})}
    m = {
        "kind": kind, "key": key, "label": label or key, "release": version() or 1, "config": config, "record": record,
        "metrics": metrics, "files": listing, "rebuild": rebuild or REBUILD.format(kind=kind, key=key),
        "published_at": time.strftime("%Y-%m-%d %H:%M:%S"), **(extra or {}),
    }
    (tmp / MANIFEST).write_text(json.dumps(m, indent=1, sort_keys=False))
    if d.exists():
        shutil.rmtree(d)
    os.replace(tmp, d)
    _register(kind, key, m)
    return m


def update_manifest(kind: str, key: str, **fields) -> dict:
    """Change fields of a published manifest (e.g. the metrics measured on the shipped files); re-registered."""
    f = artifact_dir(kind, key) / MANIFEST
    m = {**json.loads(f.read_text()), **fields}
    f.write_text(json.dumps(m, indent=1))
    _register(kind, key, m)
    return m


def _register(kind: str, key: str, m: dict) -> None:
    rel = read_release()
    rel.setdefault("artifacts", {})[f"{kind}/{key}"] = {
        "label": m["label"], "bytes": sum(f["bytes"] for f in m["files"].values()), "metrics": m["metrics"],
    }
    rel["bytes"] = sum(a["bytes"] for a in rel["artifacts"].values())
    rel["updated_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    f = release_dir() / RELEASE_FILE
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"version": rel.get("version", 1) or 1, **{k: v for k, v in rel.items() if k != "version"}},
                            indent=1))


def retire(kind: str, keep: str) -> list[str]:
    """Remove every artifact of ``kind`` but ``keep`` (a rebuilt default replaces the old one): directories and
    entries. Returns the keys removed."""
    rel = read_release()
    gone = [k.split("/", 1)[1] for k in artifacts(kind) if k != f"{kind}/{keep}"]
    for key in gone:
        shutil.rmtree(artifact_dir(kind, key), ignore_errors=True)
        rel["artifacts"].pop(f"{kind}/{key}", None)
    if gone:
        rel["bytes"] = sum(a["bytes"] for a in rel["artifacts"].values())
        rel["updated_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
        (release_dir() / RELEASE_FILE).write_text(json.dumps(rel, indent=1))
    return gone


def set_version(v: int) -> None:
    rel = read_release()
    rel["version"] = int(v)
    f = release_dir() / RELEASE_FILE
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(rel, indent=1))


def artifacts(kind: str | None = None) -> dict[str, dict]:
    """``{"kind/key": summary}`` of the release (all kinds or one)."""
    arts = read_release().get("artifacts", {})
    return {k: v for k, v in arts.items() if kind is None or k.startswith(kind + "/")}

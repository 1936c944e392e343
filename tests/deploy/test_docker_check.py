"""``make docker-check`` refuses bad set-ups with a message that says what is wrong and how to fix it.

The real check (build, run, compose) needs a Docker daemon and minutes: it is ``make docker-check``, not part
of ``make test``. These run the script's preflight for real, on broken inputs.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import ROOT

CHECK = ROOT / "docker" / "check.py"


def run_check(tmp_path, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "PAPERLAB_CHECK_DIR": str(tmp_path / "out"), **env}
    return subprocess.run([sys.executable, str(CHECK), "space"], capture_output=True, text=True, env=full, timeout=60)


def test_missing_release_is_named(tmp_path):
    p = run_check(tmp_path, PAPERLAB_RELEASE_DIR=str(tmp_path / "no-release"))
    assert p.returncode == 4, p.stderr
    assert "model release is missing" in p.stderr and "git checkout -- release/" in p.stderr


def test_damaged_release_names_the_file(tmp_path):
    rel = tmp_path / "release"
    shutil.copytree(ROOT / "release" / "rose", rel / "rose")
    index = json.loads((ROOT / "release" / "RELEASE.json").read_text())
    index["artifacts"] = {k: v for k, v in index["artifacts"].items() if k.startswith("rose/")}
    (rel / "RELEASE.json").write_text(json.dumps(index))
    weights = next((rel / "rose").glob("*/rose_tiny.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    p = run_check(tmp_path, PAPERLAB_RELEASE_DIR=str(rel))
    assert p.returncode == 4, p.stderr
    assert "damaged" in p.stderr and "rose_tiny.safetensors" in p.stderr and "truncated" in p.stderr


def test_missing_ca_bundle_is_named(tmp_path):
    p = run_check(tmp_path, PAPERLAB_PIP_CA=str(tmp_path / "corp-ca.pem"))
    assert p.returncode == 3, p.stderr
    assert "PAPERLAB_PIP_CA" in p.stderr and "corp-ca.pem: no such file" in p.stderr


def test_no_docker_client(tmp_path):
    p = run_check(tmp_path, DOCKER=str(tmp_path / "bin" / "docker"), PAPERLAB_PIP_CA="none")
    assert p.returncode == 2, p.stderr
    assert "no docker client" in p.stderr and "apt-get install docker.io" in p.stderr


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client installed")
def test_no_docker_daemon(tmp_path):
    p = run_check(tmp_path, DOCKER_HOST=f"unix://{tmp_path}/docker.sock", PAPERLAB_PIP_CA="none")
    assert p.returncode == 2, p.stderr
    assert "no Docker daemon answers" in p.stderr and "dockerd" in p.stderr

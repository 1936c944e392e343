"""The VL-RAG retriever: fused image+text embeddings and a flat L2 index over unit vectors.

e(i, t) = n( n(E_I(i)) + n(E_T(t)) ), n(x) = x / ‖x‖₂ (official ``Database.get_vector``). The index is
``faiss.IndexFlatL2`` when faiss is installed, otherwise the same exact search in numpy: on unit vectors the
squared L2 distance is 2 − 2·cos, so L2 ranking equals cosine ranking. Poison entries are appended last and
removed with ``remove_last`` (official ``Database.remove_last``); the index then holds exactly its previous bytes.
"""
from __future__ import annotations

import hashlib

import numpy as np
import torch
import torch.nn.functional as F


def unit(x):
    if isinstance(x, torch.Tensor):
        return F.normalize(x, dim=-1)
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


class Retriever:
    """E_I and E_T of a CLIP-family model (the zoo's tiny CLIP or a paper-scale CLIPModel)."""

    def __init__(self, zc, batch_size: int = 256):
        self.zc = zc
        self.batch_size = batch_size
        self._text_cache: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return int(self.zc.model.config.projection_dim)

    @torch.no_grad()
    def image_vectors(self, images) -> np.ndarray:
        """n(E_I(i)) for uint8 images (N, H, W, 3)."""
        out = [self.zc.encode_images(images[i:i + self.batch_size]).cpu().numpy()
               for i in range(0, len(images), self.batch_size)]
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)

    @torch.no_grad()
    def text_vectors(self, texts: list[str]) -> np.ndarray:
        """n(E_T(t)), cached per text (captions and questions repeat)."""
        missing = sorted({t for t in texts if t not in self._text_cache})
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i:i + self.batch_size]
            for t, v in zip(chunk, self.zc.encode_texts(chunk).cpu().numpy()):
                self._text_cache[t] = v.astype(np.float32)
        return np.stack([self._text_cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def fused(self, images, texts: list[str], image_vecs: np.ndarray | None = None) -> np.ndarray:
        """e(i, t) for paired images and texts (a single text is broadcast)."""
        iv = self.image_vectors(images) if image_vecs is None else image_vecs
        tv = self.text_vectors(list(texts))
        if len(tv) == 1 and len(iv) > 1:
            tv = np.repeat(tv, len(iv), 0)
        return unit(unit(iv) + unit(tv))

    def fused_torch(self, pixels01: torch.Tensor, text_vec: torch.Tensor) -> torch.Tensor:
        """Differentiable e(i, t) for images (B, 3, H, W) in [0, 1] and unit text vectors (B or 1, d)."""
        return F.normalize(self.zc.encode_images(pixels01) + text_vec, dim=-1)


class FlatIndex:
    """Exact L2 search over unit vectors; ``add`` appends, ``remove_last`` undoes the last ``add``."""

    def __init__(self, vectors: np.ndarray, use_faiss: bool | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = vectors.shape[1]
        self._faiss = None
        if use_faiss is not False:
            try:
                import faiss  # optional: the official code's index type

                self._faiss = faiss.IndexFlatL2(self.dim)
                self._faiss.add(vectors)
            except ImportError:
                if use_faiss:
                    raise
        self._vecs = vectors.copy()
        self._added: list[int] = []

    @property
    def backend(self) -> str:
        return "faiss.IndexFlatL2" if self._faiss is not None else "numpy (exact flat L2)"

    @property
    def ntotal(self) -> int:
        return len(self._vecs)

    def add(self, vectors: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        first = self.ntotal
        self._vecs = np.concatenate([self._vecs, v])
        if self._faiss is not None:
            self._faiss.add(v)
        self._added.append(len(v))
        return np.arange(first, first + len(v))

    def remove_last(self) -> int:
        """Remove the entries of the last ``add``; returns how many were removed."""
        if not self._added:
            raise IndexError("nothing was added to remove")
        n = self._added.pop()
        ids = np.arange(self.ntotal - n, self.ntotal, dtype=np.int64)
        self._vecs = self._vecs[: self.ntotal - n].copy()
        if self._faiss is not None:
            self._faiss.remove_ids(ids)
        return n

    def fingerprint(self) -> str:
        """sha256 of the stored vectors (faiss's own copy when faiss is used): equal means bit-identical."""
        v = self._vecs if self._faiss is None else self._faiss.reconstruct_n(0, self._faiss.ntotal)
        return hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()[:16] + f":{len(v)}"

    def distances(self, queries: np.ndarray) -> np.ndarray:
        """Squared L2 distance from every query to every entry (N_q, ntotal)."""
        q = np.atleast_2d(queries).astype(np.float32)
        return np.maximum((q * q).sum(1)[:, None] + (self._vecs * self._vecs).sum(1)[None] - 2 * q @ self._vecs.T, 0)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(distances, ids) of the k nearest entries, nearest first (ties: lower id first, as faiss)."""
        if self.ntotal == 0:
            from .knowledge import EmptyKnowledgeBase

            raise EmptyKnowledgeBase("the knowledge base is empty: nothing to retrieve")
        k = min(k, self.ntotal)
        if self._faiss is not None:
            d, i = self._faiss.search(np.atleast_2d(queries).astype(np.float32), k)
            return d, i
        d = self.distances(queries)
        idx = np.argsort(d, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(d, idx, 1), idx

    def rank_of(self, queries: np.ndarray, entry: int) -> np.ndarray:
        """1-based rank of ``entry`` for each query (1 = nearest)."""
        d = self.distances(queries)
        mine = d[:, entry:entry + 1]
        ids = np.arange(d.shape[1])[None]
        return 1 + ((d < mine) | ((d == mine) & (ids < entry))).sum(1)

"""The vision-language RAG system under attack (VLRAG): ingestion with defences, retrieval, generation."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import defence
from .generator import conversation, image_note
from .knowledge import Corpus, EmptyKnowledgeBase
from .retriever import FlatIndex, Retriever, unit


@dataclass
class Ingested:
    accepted: bool
    reason: str  # why an entry was refused ("" when accepted)
    entry: int  # its id in the index (-1 when refused)


class VLRag:
    """Knowledge base K = {(i_k, t_k)} indexed by fused embeddings; top-k retrieval; a generator reads the pairs."""

    def __init__(self, retr: Retriever, corpus: Corpus, k: int = 3, purification: str = "none",
                 instruction_filter: bool = False, consistency_filter: bool = False, consistency_z: float = 3.0,
                 kb_image_vecs: np.ndarray | None = None):
        self.retr, self.corpus, self.k = retr, corpus, k
        self.purification = purification
        self.instruction_filter, self.consistency_filter = instruction_filter, consistency_filter
        self.class_vecs = self._class_vectors()
        images = defence.purify(corpus.kb_images, purification)
        iv = kb_image_vecs if kb_image_vecs is not None and purification == "none" else retr.image_vectors(images)
        tv = retr.text_vectors(corpus.kb_texts)
        scores = defence.consistency_scores(iv, tv)
        self.consistency_cut = defence.consistency_threshold(scores, consistency_z)
        keep = np.ones(len(images), bool)
        if instruction_filter:
            keep &= ~np.array([defence.is_instruction(t) for t in corpus.kb_texts], bool)
        if consistency_filter:
            keep &= scores >= self.consistency_cut
        self.filtered_clean = int((~keep).sum())
        if not keep.any():
            raise EmptyKnowledgeBase("every knowledge-base entry was filtered out: the knowledge base is empty")
        self.images = list(images[keep])
        self.texts = [t for t, m in zip(corpus.kb_texts, keep) if m]
        self.labels = list(corpus.kb_labels[keep])
        self.notes = list(self._labels_of(iv[keep]))
        self.index = FlatIndex(unit(unit(iv[keep]) + tv[keep]))

    # ------------------------------------------------------------------ knowledge base

    def _class_vectors(self) -> np.ndarray:
        prompts = self.corpus.zero_shot_prompts()
        rows = []
        for p in prompts:
            group = [p] if isinstance(p, str) else list(p)
            rows.append(unit(self.retr.text_vectors(group).mean(0)))
        return np.stack(rows)

    def _labels_of(self, image_vecs: np.ndarray) -> np.ndarray:
        return (image_vecs @ self.class_vecs.T).argmax(1)

    def zero_shot(self, images: np.ndarray) -> np.ndarray:
        return self._labels_of(self.retr.image_vectors(images))

    def note(self, label: int) -> str:
        return image_note(self.corpus.classes[int(label)], self.corpus.dataset)

    def ingest(self, image: np.ndarray, text: str, label: int = -1) -> Ingested:
        """Add one pair through the same defences as the knowledge base (the attacker's poison takes this path)."""
        img = defence.purify(np.asarray(image, np.uint8)[None], self.purification)
        iv = self.retr.image_vectors(img)
        tv = self.retr.text_vectors([text])
        if self.instruction_filter and defence.is_instruction(text):
            return Ingested(False, "instruction filter: answer-forcing phrase in the text", -1)
        score = float(defence.consistency_scores(iv, tv)[0])
        if self.consistency_filter and score < self.consistency_cut:
            return Ingested(False, f"consistency filter: image-text cosine {score:.3f} < {self.consistency_cut:.3f}", -1)
        entry = int(self.index.add(unit(unit(iv) + tv))[0])
        self.images.append(img[0])
        self.texts.append(text)
        self.labels.append(label)
        self.notes.append(int(self._labels_of(iv)[0]))
        return Ingested(True, "", entry)

    def remove_last(self) -> None:
        self.index.remove_last()
        for lst in (self.images, self.texts, self.labels, self.notes):
            lst.pop()

    # ------------------------------------------------------------------ retrieval and generation

    def query_vectors(self, images: np.ndarray, question: str, image_vecs: np.ndarray | None = None) -> np.ndarray:
        return self.retr.fused(images, [question], image_vecs=image_vecs)

    def retrieve(self, qvecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.index.ntotal == 0:
            raise EmptyKnowledgeBase("the knowledge base is empty: nothing to retrieve")
        return self.index.search(qvecs, self.k)

    def conversations(self, ids: np.ndarray, query_labels: np.ndarray, question: str, fmt: str = "qwen") -> list[list[dict]]:
        """``query_labels``: the zero-shot labels of the query images (what the generator is told it sees)."""
        out = []
        for row, ql in zip(ids, query_labels):
            ctx = [(self.note(self.notes[j]), self.texts[j]) for j in row]
            out.append(conversation(question, self.note(ql), ctx, fmt))
        return out

    def answer(self, reader, ids: np.ndarray, query_labels: np.ndarray, question: str, max_new_tokens: int = 12,
               cancelled=None, fmt: str = "qwen") -> list[str]:
        convs = self.conversations(ids, query_labels, question, fmt)
        if getattr(reader, "name", "") == "smollm2":
            return reader.answer(convs, max_new_tokens, cancelled=cancelled)
        return reader.answer(convs, max_new_tokens)

    def recall(self, ids: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
        """(recall@k: a same-class entry among the top k; precision@k: share of same-class entries)."""
        same = np.array([[self.labels[j] == y for j in row] for row, y in zip(ids, labels)])
        return float(same.any(1).mean()), float(same.mean())

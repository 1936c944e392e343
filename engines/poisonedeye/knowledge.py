"""The knowledge base, the attacker's auxiliary image pool and the held-out queries (spec §4).

The paper's knowledge base is M-BEIR's OVEN-Wiki pool (image + Wikipedia text), the auxiliary pool WebQA images
(no text) and the queries ImageNet / Places-365 / Caltech-101 / Country-211 images with a fixed question per
dataset. Here: one image domain (digits by default) split 60 / 20 / 20. The knowledge base and the auxiliary pool
come from the domain's training split (what the zoo CLIP saw), the queries from its test split (never seen).
Every knowledge-base image gets a caption from templates plus one "fact" about its class.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

QUESTIONS = {
    "digits": "What digit is shown in this image?",
    "fashion": "What item of clothing is shown in this image?",
    "minicanvas": "What shape is shown in this image?",
}

_DIGIT_TEMPLATES = ("a photo of the digit {n}", "a handwritten digit {n}", "the number {d} written in ink",
                    "a scanned digit {n}", "a picture of the number {n}")
_FASHION_TEMPLATES = ("a photo of {a} {n}", "a greyscale picture of {a} {n}", "{a} {n} from a clothing catalogue",
                      "a product photo of {a} {n}")
_FASHION_KIND = {"t-shirt": "a top", "trouser": "worn on the legs", "pullover": "a top", "dress": "a garment",
                 "coat": "outerwear", "sandal": "footwear", "shirt": "a top", "sneaker": "footwear", "bag": "an accessory",
                 "ankle boot": "footwear"}


class EmptyKnowledgeBase(ValueError):
    """The knowledge base has no entries left (e.g. every entry was filtered out)."""


@dataclass
class Corpus:
    """One image domain prepared for VL-RAG."""

    dataset: str
    classes: list[str]
    question: str
    kb_images: np.ndarray  # uint8 (N, H, W, 3)
    kb_texts: list[str]
    kb_labels: np.ndarray
    aux_images: np.ndarray  # the attacker's public images (no text)
    aux_labels: np.ndarray
    query_images: np.ndarray
    query_labels: np.ndarray

    def answer_names(self, label: int) -> list[str]:
        """Strings that count as the correct answer for class ``label`` (official ``eval_answer``: any in output)."""
        name = self.classes[label]
        return [name, str(label)] if self.dataset == "digits" else [name]

    def zero_shot_prompts(self) -> list:
        from engines.common import data

        if self.dataset == "digits":
            return [data.digit_caption(k) for k in range(10)]
        if self.dataset == "fashion":
            return [data.fashion_caption(k) for k in range(10)]
        from engines.common.zoo.clip import minicanvas_prompts

        return minicanvas_prompts("object")

    def class_queries(self, label: int) -> np.ndarray:
        return np.flatnonzero(self.query_labels == label)


def _digit_caption(d: int, rng: np.random.Generator) -> str:
    n = DIGIT_NAMES[d]
    facts = [f"{n} is an {'even' if d % 2 == 0 else 'odd'} number", f"{n} is written {d}"]
    if d > 0:
        facts.append(f"{n} comes after {DIGIT_NAMES[d - 1]}")
    if d < 9:
        facts.append(f"{n} comes before {DIGIT_NAMES[d + 1]}")
    t = _DIGIT_TEMPLATES[rng.integers(len(_DIGIT_TEMPLATES))].format(n=n, d=d)
    return f"{t}. {facts[rng.integers(len(facts))]}."


def _fashion_caption(k: int, names: list[str], rng: np.random.Generator) -> str:
    n = names[k]
    a = "an" if n[0] in "aeiou" else "a"
    t = _FASHION_TEMPLATES[rng.integers(len(_FASHION_TEMPLATES))].format(a=a, n=n)
    return f"{t}. {a.capitalize()} {n} is {_FASHION_KIND.get(n, 'clothing')}."


def _minicanvas_caption(base: str, obj: str, rng: np.random.Generator) -> str:
    facts = [f"the shape is a {obj}", f"this {obj} was drawn on a small canvas", f"a {obj} is a simple shape"]
    return f"{base}. {facts[rng.integers(len(facts))].capitalize()}."


def _split(n: int, rng: np.random.Generator, kb_fraction: float = 0.75):
    perm = rng.permutation(n)
    cut = int(round(n * kb_fraction))
    return perm[:cut], perm[cut:]


@lru_cache(maxsize=4)
def build_corpus(dataset: str = "digits", seed: int = 0, small: bool = False) -> Corpus:
    """Knowledge base (¾ of the training split), auxiliary pool (¼ of it) and queries (the test split).

    ``small`` (the test profile) keeps about a fifth of each part.
    """
    from engines.common import data

    rng = np.random.default_rng(seed)
    if dataset == "digits":
        train, test = data.digits("train"), data.digits("test")
        classes = list(DIGIT_NAMES)
    elif dataset == "fashion":
        if not data.fashion_available():
            raise data.DatasetMissing("Fashion-MNIST needs the Debian package dataset-fashion-mnist "
                                      "(`sudo apt-get install dataset-fashion-mnist`); choose digits or minicanvas")
        train, test = data.fashion_mnist("train", n=2000), data.fashion_mnist("test", n=500)
        classes = list(data.FASHION_NAMES)
    elif dataset == "minicanvas":
        train, test = data.minicanvas(1500, seed=0), data.minicanvas(400, seed=10_000 + seed)
        classes = list(data.OBJECTS)
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose digits, fashion or minicanvas")
    key = "object" if dataset == "minicanvas" else "label"
    ytr, yte = np.asarray(train.labels[key]), np.asarray(test.labels[key])
    kb_idx, aux_idx = _split(len(train), rng)
    q_idx = np.arange(len(test))
    if small:
        kb_idx, aux_idx = kb_idx[: max(60, len(kb_idx) // 5)], aux_idx[: max(40, len(aux_idx) // 5)]
    kb_idx, aux_idx = np.sort(kb_idx), np.sort(aux_idx)
    if dataset == "digits":
        texts = [_digit_caption(int(ytr[i]), rng) for i in kb_idx]
    elif dataset == "fashion":
        texts = [_fashion_caption(int(ytr[i]), classes, rng) for i in kb_idx]
    else:
        texts = [_minicanvas_caption(train.captions[i], classes[int(ytr[i])], rng) for i in kb_idx]
    imgs = lambda s, idx: np.ascontiguousarray(np.asarray(s.images)[idx])  # noqa: E731
    return Corpus(dataset, classes, QUESTIONS[dataset], imgs(train, kb_idx), texts, ytr[kb_idx], imgs(train, aux_idx),
                  ytr[aux_idx], imgs(test, q_idx), yte[q_idx])

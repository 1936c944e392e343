"""Paper-scale path (spec §5): EMLoC's :class:`~engines.emloc.memory.Runner` on ``transformers``'
``Qwen2VLForConditionalGeneration``, and a loader that never downloads unless a model is configured.

:class:`VLRunner` runs the language model of a Qwen2-VL checkpoint layer by layer (``model.model.language_model``:
``layers``, ``norm``, ``rotary_emb``; ``model.lm_head``) with each layer's memory K/V as a fully visible prefix,
exactly as the tiny model's runner does, so :class:`~engines.emloc.memory.Compressor` (chunking, observation pass,
top-down JS-bounded pruning) and :func:`~engines.emloc.memory.answer` run on it unchanged. What differs is the
position encoding: Qwen2-VL's multimodal RoPE takes 3-D position ids (temporal, height, width). Each chunk's ids
come from the model's own ``get_rope_index`` (text tokens: all three components equal; image tokens: their
(t, h, w) grid cell) shifted by the running offset, and the next chunk starts at ``max(position) + 1`` — the
official driver's ``custom_kv_pos_offset += position_ids.max() + 1``. Kept keys are stored after RoPE, so they keep
their original positions. ``rotary_emb`` interleaves the three components by ``mrope_section``
(``transformers`` 5 does this in the rotary module; ``apply_rotary_pos_emb`` then is the plain one).

Token layout of the synthetic task in Qwen2-VL form: an image is ``<|vision_start|> <|image_pad|> × 4
<|vision_end|>`` with grid (t, h, w) = (1, 2m, 2m) patches, m = ``spatial_merge_size`` (2 × 2 merged tokens, the
4 patch tokens of the tiny task); a demonstration is ``[image, QUERY, label, SEP]`` (9 tokens, 7 positions).
The other task tokens keep their ids (``token_ids`` maps them elsewhere). Image tokens are fed as
``inputs_embeds`` from a linear projector of the 16-d patch features, as the tiny model does; the Qwen2-VL vision
tower is not run (its weights are loaded with a checkpoint but no image processor or real image data is wired).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engines.common.settings import get_settings

from . import task
from .memory import Runner

PAPER_MODEL = "Qwen/Qwen2-VL-7B-Instruct"


class PaperScaleError(RuntimeError):
    """No Qwen2-VL model configured, or the configured one is not a Qwen2-VL checkpoint: the message says which."""


class VLRunner(Runner):
    """:class:`Runner` for ``Qwen2VLForConditionalGeneration``: 3-D mRoPE positions from the model's rope index."""

    demo_len = task.DEMO_LEN + 2  # <|vision_start|> and <|vision_end|> around the 4 image tokens
    answer_offset = task.ANSWER_OFFSET + 2

    def __init__(self, model, projector: nn.Module | None = None, token_ids: dict[int, int] | None = None,
                 seed: int = 0):
        from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb

        self.model = model
        text = model.model.language_model
        self.layers, self.norm, self.head, self.rotary = text.layers, text.norm, model.lm_head, text.rotary_emb
        self.embed_tokens = text.embed_tokens
        c = model.config.text_config
        bad = [i for i, t in enumerate(c.layer_types) if t != "full_attention"]
        if bad:
            raise PaperScaleError(f"layers {bad} use sliding-window attention, which the EMLoC runner does not model")
        att = text.layers[0].self_attn
        self.nh, self.nkv, self.hd = att.num_heads, att.num_key_value_heads, att.head_dim
        self.groups = self.nh // self.nkv
        self.n_layers = len(self.layers)
        self._rope = apply_rotary_pos_emb
        cfg = model.config
        self.image_id, self.start_id, self.end_id = (cfg.image_token_id, cfg.vision_start_token_id,
                                                     cfg.vision_end_token_id)
        m = cfg.vision_config.spatial_merge_size
        side = int(round(task.PATCHES ** 0.5))
        assert side * side == task.PATCHES
        self.grid = (1, side * m, side * m)  # patches before the m × m merge: side × side tokens per image
        # task token -> model token (identity by default: the task's ids must lie in the vocabulary)
        self.token_ids = {t: t for t in range(task.VOCAB)} | dict(token_ids or {})
        for t, v in self.token_ids.items():
            if t != task.IMG and not 0 <= v < c.vocab_size:
                raise PaperScaleError(f"task token {t} maps to {v}, outside the vocabulary of {c.vocab_size}")
        if projector is None:
            g = torch.Generator().manual_seed(seed)
            projector = nn.Linear(task.PATCH_DIM, c.hidden_size)
            with torch.no_grad():
                projector.weight.copy_(torch.randn(projector.weight.shape, generator=g) * task.PATCH_DIM ** -0.5)
                projector.bias.zero_()
        self.projector = projector.to(device=self.device, dtype=self.dtype)

    # -- layout --
    def _image(self) -> list[int]:
        return [self.start_id] + [self.image_id] * task.PATCHES + [self.end_id]

    def convert(self, ids: np.ndarray, patches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A task sequence (ids [T], patches [T, 16], each image a run of 4 IMG tokens) in Qwen2-VL form."""
        out_ids, out_p, i = [], [], 0
        zero = np.zeros(task.PATCH_DIM, np.float32)
        while i < len(ids):
            if ids[i] == task.IMG:
                out_ids += self._image()
                out_p += [zero] + list(patches[i:i + task.PATCHES]) + [zero]
                i += task.PATCHES
            else:
                out_ids.append(self.token_ids[int(ids[i])])
                out_p.append(zero)
                i += 1
        pats = np.stack(out_p).astype(np.float32) if out_p else np.zeros((0, task.PATCH_DIM), np.float32)
        return np.array(out_ids, np.int64), pats

    def _rows(self, ids: np.ndarray, pats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        conv = [self.convert(i, p) for i, p in zip(ids, pats)]
        return np.stack([c[0] for c in conv]), np.stack([c[1] for c in conv])

    def chunk_inputs(self, ep, lo, hi):
        return self.convert(*ep.context(lo, hi))

    def demo_inputs(self, ep, lo, hi):
        return self._rows(*super().demo_inputs(ep, lo, hi))

    def query_inputs(self, query_patches):
        return self._rows(*super().query_inputs(query_patches))

    def mm_inputs(self, ids) -> dict:
        """``input_ids``, ``mm_token_type_ids`` and ``image_grid_thw`` of sequences ``ids`` [B, T] (same layout per
        row), the arguments the model's own ``get_rope_index`` and forward take."""
        ids = torch.as_tensor(np.atleast_2d(ids), device=self.device)
        types = (ids == self.image_id).int()
        n_img = int((ids[0] == self.start_id).sum())
        grid = torch.tensor([self.grid] * max(n_img, 0), device=self.device).reshape(-1, 3)
        return dict(input_ids=ids, mm_token_type_ids=types, image_grid_thw=grid)

    def positions(self, ids, offset):
        """3-D position ids [3, T] of one sequence from the model's rope index, shifted by ``offset``; the next
        offset is ``max + 1`` (spec §1 step 2). Text-only sequences: all three rows equal, consecutive."""
        mm = self.mm_inputs(ids)
        if mm["image_grid_thw"].shape[0]:
            pos, _ = self.model.model.get_rope_index(**mm)
            pos = pos[:, 0]
        else:
            pos = torch.arange(mm["input_ids"].shape[1], device=self.device).expand(3, -1)
        pos = pos + offset
        return pos, int(pos.max()) + 1 if pos.numel() else offset

    def embed(self, ids, patches):
        ids = torch.as_tensor(ids, device=self.device)
        e = self.embed_tokens(ids)
        img = (ids == self.image_id).unsqueeze(-1)
        return torch.where(img, self.projector(torch.as_tensor(patches, device=self.device, dtype=self.dtype)), e)

    def rope(self, h, positions):
        """cos, sin [1, T, head_dim] of 3-D positions [3, T] (or 1-D [T]: text-like, all components equal)."""
        p = positions.reshape(3, 1, -1) if positions.ndim == 2 else positions.reshape(1, -1)
        return self.rotary(h, p)

    # -- the model's own forward (the reference of the exactness check) --
    @torch.no_grad()
    def full_logits(self, ids: np.ndarray, patches: np.ndarray) -> torch.Tensor:
        """Logits [B, T, V] of sequences ids [B, T] through ``Qwen2VLForConditionalGeneration.forward`` (its own
        3-D rope index from ``input_ids`` / ``mm_token_type_ids`` / ``image_grid_thw``; image tokens from the
        projector as ``inputs_embeds``)."""
        mm = self.mm_inputs(ids)
        emb = self.embed(mm["input_ids"], np.asarray(patches).reshape(*mm["input_ids"].shape, task.PATCH_DIM))
        self.model.model.rope_deltas = None
        mm["image_grid_thw"] = mm["image_grid_thw"].repeat(mm["input_ids"].shape[0], 1)
        return self.model(inputs_embeds=emb, use_cache=False, **mm).logits


def tiny_config(layers: int = 2, width: int = 64, heads: int = 4, kv_heads: int = 2, vocab: int = task.VOCAB):
    """A small random Qwen2-VL configuration (spec check 8): the task's 14 tokens, then <|vision_start|>,
    <|vision_end|>, <|image_pad|>, <|video_pad|>; mRoPE sections for head_dim = width / heads. Weights are drawn
    with std 0.1 (the checkpoint default 0.02 leaves a 2-layer random model's logits nearly position-blind, so a
    wrong position would move them by only ~1e-4)."""
    from transformers import Qwen2VLConfig

    hd = width // heads
    half = hd // 2
    sec = [half - 2 * (3 * half // 8), 3 * half // 8, 3 * half // 8]  # the 7B's [16, 24, 24] ratio at this size
    v = vocab
    return Qwen2VLConfig(
        text_config=dict(vocab_size=v + 4, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=4096,
                         initializer_range=0.1, bos_token_id=None, eos_token_id=None, pad_token_id=task.PAD,
                         rope_parameters={"rope_type": "default", "mrope_section": sec, "rope_theta": 10000.0}),
        vision_config=dict(depth=1, embed_dim=16, hidden_size=width, num_heads=2, patch_size=2, spatial_merge_size=2),
        vision_start_token_id=v, vision_end_token_id=v + 1, image_token_id=v + 2, video_token_id=v + 3,
        initializer_range=0.1, attn_implementation="sdpa")


def tiny_model(seed: int = 0, **kw):
    """A randomly initialised Qwen2-VL of :func:`tiny_config` in float32 eval mode."""
    from transformers import Qwen2VLForConditionalGeneration

    torch.manual_seed(seed)
    return Qwen2VLForConditionalGeneration(tiny_config(**kw)).eval()


def _looks_local(model_id: str) -> bool:
    """A folder (existing, or written as a path) rather than a hub id ``org/name``."""
    return Path(model_id).expanduser().exists() or model_id.startswith(("/", ".", "~")) or model_id.count("/") != 1


def load(model_id: str | None = None, device: str | None = None, dtype: torch.dtype = torch.bfloat16):
    """``Qwen2VLForConditionalGeneration`` (SDPA, eval) from ``model_id`` or ``PAPERLAB_VLM_MODEL``.

    Nothing is configured: :class:`PaperScaleError`, nothing downloaded. A local folder loads with
    ``local_files_only=True``; a hub id (e.g. ``Qwen/Qwen2-VL-7B-Instruct``) is fetched by ``transformers`` only
    because the user configured it (and not at all under ``HF_HUB_OFFLINE=1``)."""
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration

    s = get_settings()
    model_id = (model_id or s.vlm_model or "").strip()
    if not model_id:
        raise PaperScaleError("no Qwen2-VL model is configured: set PAPERLAB_VLM_MODEL to a local folder or a hub id "
                              f"(the paper's is {PAPER_MODEL}); nothing is downloaded otherwise")
    local = _looks_local(model_id)
    path = str(Path(model_id).expanduser()) if local else model_id
    if local and not Path(path).is_dir():
        raise PaperScaleError(f"{model_id}: no such folder (a hub id is written org/name)")
    kw = {"local_files_only": True} if local else {}
    cfg = AutoConfig.from_pretrained(path, **kw)
    if cfg.model_type != "qwen2_vl":
        raise PaperScaleError(f"{model_id}: model type {cfg.model_type!r}, not qwen2_vl")
    model = Qwen2VLForConditionalGeneration.from_pretrained(path, dtype=dtype, attn_implementation="sdpa", **kw)
    return model.to(device or s.resolved_device()).eval()

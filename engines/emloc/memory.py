"""EMLoC (spec §1): chunk-wise compression of many demonstrations into a per-layer key/value memory, each layer's
retention chosen top-down under a Jensen-Shannon bound δ on the observation set's output distribution.

The decoder layers of any ``Qwen2``/``Llama``-family ``transformers`` model are run by :class:`Runner` one at a
time, with the layer's memory K/V prepended as extra, fully visible keys (post-RoPE: kept tokens keep their
original positions) and an explicit softmax where the attention probabilities are needed. Memory per layer is a
pair of tensors ``[kv_heads, M_l, head_dim]``: every KV head keeps the same number of tokens, chosen per head.

The runner also owns the model's token layout of the task (``chunk_inputs``, ``demo_inputs``, ``query_inputs``) and
its position ids (``positions``: the chunk's ids from the running offset, and the next offset); the paper-scale
adapter (:mod:`engines.emloc.qwen2vl`, Qwen2-VL with 3-D mRoPE positions) overrides these, and :class:`Compressor`
and :func:`answer` take either a model or a runner.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from engines.common.context import JobCancelled

from . import task

RATIOS = (0.1, 0.2, 0.5)
DELTA = 0.005
POOL = 5
ANSWER_BONUS = 100.0


class Runner:
    """Layer-by-layer forward of a decoder with per-layer K/V prefixes (the attention hook of the method)."""

    demo_len = task.DEMO_LEN  # tokens of one demonstration in this model's layout
    answer_offset = task.ANSWER_OFFSET  # index of the answer token inside a demonstration

    def __init__(self, model):
        from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

        self.model = model
        inner = model.lm.model
        self.layers, self.norm, self.head, self.rotary = inner.layers, inner.norm, model.lm.lm_head, inner.rotary_emb
        c = model.lm.config
        self.nh, self.nkv = c.num_attention_heads, c.num_key_value_heads
        self.hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.groups = self.nh // self.nkv
        self.n_layers = len(self.layers)
        self._rope = apply_rotary_pos_emb

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.head.weight.dtype

    # -- the task's token layout and position ids for this model (overridden by the paper-scale adapter) --
    def chunk_inputs(self, ep: task.Episode, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Token ids [L] and patch features [L, 16] of demonstrations lo..hi as one sequence."""
        return ep.context(lo, hi)

    def demo_inputs(self, ep: task.Episode, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Demonstrations lo..hi as batch rows: ids [n, demo_len], patches [n, demo_len, 16]."""
        ids = np.stack([ep.demo_tokens(i) for i in range(lo, hi)])
        pats = np.zeros((hi - lo, task.DEMO_LEN, task.PATCH_DIM), np.float32)
        pats[:, :task.PATCHES] = ep.demo_patches[lo:hi]
        return ids, pats

    def query_inputs(self, query_patches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each query ``[IMG × 4, QUERY]`` as a batch row: ids [n, 5], patches [n, 5, 16]."""
        n = len(query_patches)
        ids = np.tile(np.array([task.IMG] * task.PATCHES + [task.QUERY]), (n, 1))
        pats = np.zeros((n, task.QUERY_LEN, task.PATCH_DIM), np.float32)
        pats[:, :task.PATCHES] = query_patches
        return ids, pats

    def positions(self, ids: np.ndarray, offset: int) -> tuple[torch.Tensor, int]:
        """Position ids of one sequence ``ids`` [T] placed after ``offset``, and the offset after it (1-D RoPE)."""
        T = int(np.shape(ids)[-1])
        return torch.arange(offset, offset + T, device=self.device), offset + T

    def embed(self, ids: np.ndarray, patches: np.ndarray) -> torch.Tensor:
        return self.model.embed(torch.as_tensor(ids, device=self.device),
                                torch.as_tensor(patches, device=self.device))

    def rope(self, h: torch.Tensor, positions: torch.Tensor):
        return self.rotary(h, positions.reshape(1, -1))

    def layer(self, l: int, h: torch.Tensor, rope, prefix_k: torch.Tensor | None, prefix_v: torch.Tensor | None,
              want_probs: bool = False):
        """One decoder layer on ``h`` [B, T, d]: causal among the T tokens, prefix [B or 1, kv, P, hd] fully visible.

        Returns (h_out, k, v, probs) with k, v [B, kv, T, hd] (post-RoPE) and probs [B, heads, T, P + T] or None."""
        lay = self.layers[l]
        att = lay.self_attn
        B, T, _ = h.shape
        x = lay.input_layernorm(h)
        q = att.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = att.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = att.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        cos, sin = rope
        q, k = self._rope(q, k, cos, sin)
        if prefix_k is not None and prefix_k.shape[-2]:
            K = torch.cat([prefix_k.expand(B, -1, -1, -1), k], 2)
            V = torch.cat([prefix_v.expand(B, -1, -1, -1), v], 2)
        else:
            K, V = k, v
        P = K.shape[2] - T
        K = K.repeat_interleave(self.groups, 1)
        V = V.repeat_interleave(self.groups, 1)
        scores = (q @ K.transpose(-1, -2)) * att.scaling
        causal = torch.ones(T, T, dtype=torch.bool, device=h.device).triu(1)
        mask = torch.cat([torch.zeros(T, P, dtype=torch.bool, device=h.device), causal], 1)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")).float(), -1).to(q.dtype)
        out = (probs @ V).transpose(1, 2).reshape(B, T, -1)
        h = h + att.o_proj(out)
        h = h + lay.mlp(lay.post_attention_layernorm(h))
        return h, k, v, (probs if want_probs else None)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(h))


@dataclass
class Memory:
    """The compressed demonstration cache: per layer K, V [1, kv_heads, M_l, head_dim]; ``offset`` = next position."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    offset: int = 0  # the next position id (= context_tokens with 1-D RoPE; less with Qwen2-VL's 2-D image grids)
    context_tokens: int = 0  # demonstration tokens seen (the full context's length)
    # token indices in the full context (= RoPE positions with 1-D RoPE): the demos' answer tokens, and per
    # [layer][kv head] the tokens kept
    answer_positions: list[int] = field(default_factory=list)
    kept_positions: list[list[np.ndarray]] = field(default_factory=list)

    @classmethod
    def empty(cls, r: Runner) -> "Memory":
        z = torch.zeros(1, r.nkv, 0, r.hd, device=r.device, dtype=r.dtype)
        return cls([z] * r.n_layers, [z] * r.n_layers, kept_positions=[[np.zeros(0, np.int64)] * r.nkv
                                                                          for _ in range(r.n_layers)])

    def per_layer(self) -> list[int]:
        return [int(k.shape[2]) for k in self.keys]

    @property
    def retained_fraction(self) -> float:
        """Kept tokens over the full context's, averaged over layers."""
        return float(np.mean(self.per_layer())) / max(self.context_tokens, 1)

    def kv_bytes(self) -> int:
        return int(sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in zip(self.keys, self.values)))


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """JS(p‖q) = ½KL(p‖m) + ½KL(q‖m), m = ½(p + q), in float64 over the last axis (natural log)."""
    p, q = p.double(), q.double()
    m = 0.5 * (p + q)

    def kl(a, b):
        return torch.where(a > 0, a * (torch.log(a.clamp_min(1e-300)) - torch.log(b.clamp_min(1e-300))), 0.0).sum(-1)

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def _gather(kv: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
    """kv [1, kv_heads, L, hd], idx [kv_heads, n] (None: all) -> [1, kv_heads, n, hd]."""
    if idx is None:
        return kv
    return torch.gather(kv, 2, idx[None, :, :, None].expand(1, -1, -1, kv.shape[-1]))


def scores_from_probs(probs: torch.Tensor, obs: list[int], start: int, length: int, groups: int) -> torch.Tensor:
    """s_h(τ) = AvgPool₅(Σ_obs Σ_{heads ∈ h} attention(τ)) over the chunk's tokens (memory excluded): [kv, L]."""
    a = probs[:, :, obs, start:start + length].sum((0, 2))  # [heads, L]
    a = a.view(-1, groups, length).sum(1)  # [kv, L]
    return nn.functional.avg_pool1d(a[:, None], POOL, stride=1, padding=POOL // 2, count_include_pad=False)[:, 0]


@dataclass
class ChunkRecord:
    chunk: int
    tokens: int
    kept: list[int]  # tokens kept per layer
    ratio: list[float | None]  # accepted ratio per layer (None: whole chunk kept)
    trace: list[dict]  # every JS test: layer, ratio, js, accepted
    js_final: float


class Compressor:
    """Chunk-wise memory building. ``ratios`` empty: no pruning (the full context, chunk by chunk);
    ``fixed`` (per-layer ratios): a fixed schedule (uniform, pyramid) with the same scores and no JS search;
    ``policy="random"``: random tokens instead of the attention scores (answer tokens still kept)."""

    def __init__(self, model, ratios=RATIOS, delta: float = DELTA, chunk_size: int = 16,
                 fixed: list[float] | None = None, policy: str = "attention", seed: int = 0):
        self.r = model if isinstance(model, Runner) else Runner(model)
        self.ratios, self.delta, self.chunk_size = tuple(sorted(ratios)), delta, chunk_size
        self.fixed, self.policy = fixed, policy
        self.gen = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def build(self, ep: task.Episode, progress=None, cancelled=lambda: False) -> tuple[Memory, list[ChunkRecord]]:
        mem, records = Memory.empty(self.r), []
        n_chunks = math.ceil(ep.n_shots / self.chunk_size)
        for j in range(n_chunks):
            if cancelled():
                raise JobCancelled("cancelled")
            lo, hi = j * self.chunk_size, min(ep.n_shots, (j + 1) * self.chunk_size)
            records.append(self._chunk(mem, ep, j, lo, hi))
            if progress:
                progress((j + 1) / n_chunks, f"chunk {j + 1}/{n_chunks}: kept {records[-1].kept} of {records[-1].tokens}")
        return mem, records

    def _chunk(self, mem: Memory, ep: task.Episode, j: int, lo: int, hi: int) -> ChunkRecord:
        r = self.r
        ids, pats = r.chunk_inputs(ep, lo, hi)
        L = len(ids)
        pos, next_offset = r.positions(ids, mem.offset)  # positions continue after the running offset
        # Step 2: chunk prefill against the memory
        h = r.embed(ids, pats)[None]
        rope = r.rope(h, pos)
        Ks, Vs = [], []
        for l in range(r.n_layers):
            h, k, v, _ = r.layer(l, h, rope, mem.keys[l], mem.values[l])
            Ks.append(k)
            Vs.append(v)
        n_demo = hi - lo
        answers = np.arange(n_demo) * r.demo_len + r.answer_offset  # the demos' answer tokens, within the chunk
        if not self.ratios and self.fixed is None:
            kept = [None] * r.n_layers
            rec = ChunkRecord(j, L, [L] * r.n_layers, [None] * r.n_layers, [], 0.0)
        else:
            kept, rec = self._select(mem, ep, j, lo, hi, L, Ks, Vs, answers, n_demo, next_offset)
        # Step 5: append the kept tokens to every layer's memory
        for l in range(r.n_layers):
            mem.keys[l] = torch.cat([mem.keys[l], _gather(Ks[l], kept[l])], 2)
            mem.values[l] = torch.cat([mem.values[l], _gather(Vs[l], kept[l])], 2)
            for hh in range(r.nkv):
                sel = np.arange(L) if kept[l] is None else kept[l][hh].cpu().numpy()
                mem.kept_positions[l][hh] = np.concatenate([mem.kept_positions[l][hh], mem.context_tokens + sel])
        mem.answer_positions += list(mem.context_tokens + answers)
        mem.offset = next_offset
        mem.context_tokens += L
        return rec

    def _observe(self, mem: Memory, ep: task.Episode, lo: int, hi: int, L: int, Ks, Vs, start: int):
        """Step 3: each demo of the chunk re-fed as a batch row after [memory; chunk] (positions from ``start``, the
        offset after the chunk); returns the attention scores of its observation tokens onto the chunk, the
        reference distributions and the hidden state entering every layer."""
        r = self.r
        ids, pats = r.demo_inputs(ep, lo, hi)
        h = r.embed(ids, pats)
        rope = r.rope(h, r.positions(ids[0], start)[0])  # every row has the same layout
        obs = [r.answer_offset - 1, r.answer_offset]  # QUERY (predicts the answer) and the answer token
        hidden, scores = [], []
        for l in range(r.n_layers):
            hidden.append(h)
            pk = torch.cat([mem.keys[l], Ks[l]], 2)
            pv = torch.cat([mem.values[l], Vs[l]], 2)
            h, _, _, probs = r.layer(l, h, rope, pk, pv, want_probs=True)
            scores.append(scores_from_probs(probs, obs, mem.keys[l].shape[2], L, r.groups))
        p_ref = torch.softmax(r.logits(h)[:, obs].double(), -1)
        return hidden, scores, p_ref, rope, obs

    def _partial(self, mem: Memory, start: int, hidden, rope, obs, Ks, Vs, kept) -> torch.Tensor:
        """Layers start..L−1 for the observation rows from their stored input, with the chunk pruned to ``kept``."""
        r = self.r
        h = hidden[start]
        for l in range(start, r.n_layers):
            pk = torch.cat([mem.keys[l], _gather(Ks[l], kept[l])], 2)
            pv = torch.cat([mem.values[l], _gather(Vs[l], kept[l])], 2)
            h, _, _, _ = r.layer(l, h, rope, pk, pv)
        return torch.softmax(r.logits(h)[:, obs].double(), -1)

    def _topk(self, s: torch.Tensor, ratio: float, L: int, n_answers: int) -> torch.Tensor | None:
        n = max(math.ceil(ratio * L), n_answers)
        if n >= L:
            return None
        return torch.topk(s, n, -1).indices.sort(-1).values

    def _select(self, mem, ep, j, lo, hi, L, Ks, Vs, answers, n_demo, start):
        r = self.r
        hidden, scores, p_ref, rope, obs = self._observe(mem, ep, lo, hi, L, Ks, Vs, start)
        bonus = torch.zeros(L, device=scores[0].device)
        bonus[torch.as_tensor(answers)] = ANSWER_BONUS  # every demo's answer token is always kept
        kept: list[torch.Tensor | None] = [None] * r.n_layers
        ratio: list[float | None] = [None] * r.n_layers
        trace = []
        for l in reversed(range(r.n_layers)):  # Step 4: top-down greedy
            s = scores[l] if self.policy == "attention" else torch.rand(r.nkv, L, generator=self.gen).to(bonus.device)
            s = s + bonus
            if self.fixed is not None:
                kept[l], ratio[l] = self._topk(s, self.fixed[l], L, n_demo), self.fixed[l]
                continue
            for rr in self.ratios:
                idx = self._topk(s, rr, L, n_demo)
                if idx is None:
                    break
                trial = list(kept)
                trial[l] = idx
                js = float(js_divergence(p_ref, self._partial(mem, l, hidden, rope, obs, Ks, Vs, trial)).mean())
                ok = js <= self.delta
                trace.append({"layer": l, "ratio": rr, "js": js, "accepted": ok})
                if ok:
                    kept[l], ratio[l] = idx, rr
                    break
        js_final = float(js_divergence(p_ref, self._partial(mem, 0, hidden, rope, obs, Ks, Vs, kept)).mean())
        return kept, ChunkRecord(j, L,
                                 [L if k is None else int(k.shape[1]) for k in kept], ratio, trace, js_final)


@torch.no_grad()
def answer(model, mem: Memory, query_patches: np.ndarray) -> torch.Tensor:
    """Logits [n_queries, V] of each query ``[IMG × 4, QUERY]`` prefilled after the memory (positions offset).
    ``model``: the tiny model or a :class:`Runner` (the paper-scale adapter)."""
    r = model if isinstance(model, Runner) else Runner(model)
    ids, pats = r.query_inputs(query_patches)
    h = r.embed(ids, pats)
    rope = r.rope(h, r.positions(ids[0], mem.offset)[0])
    for l in range(r.n_layers):
        h, _, _, _ = r.layer(l, h, rope, mem.keys[l], mem.values[l])
    return r.logits(h)[:, -1]


def predict(model, mem: Memory, ep: task.Episode) -> np.ndarray:
    """Predicted classes of the episode's queries (argmax over the 10 label tokens, mapped back by the permutation)."""
    lab = answer(model, mem, ep.query_patches)[:, task.LABEL0:task.VOCAB].argmax(-1).cpu().numpy()
    inv = np.argsort(ep.perm)
    return inv[lab]


def truncated(model, ep: task.Episode, budget_tokens: int, chunk_size: int = 16,
              cancelled=lambda: False) -> tuple[Memory, int]:
    """Naive truncation: the last demonstrations whose tokens fit the budget, as a fresh context from position 0."""
    keep = max(1, min(ep.n_shots, budget_tokens // task.DEMO_LEN))
    sub = task.Episode(ep.demo_patches[-keep:], ep.demo_labels[-keep:], ep.query_patches, ep.query_labels, ep.perm)
    mem, _ = Compressor(model, ratios=(), chunk_size=chunk_size).build(sub, cancelled=cancelled)
    return mem, keep


def timed_answer(model, mem: Memory, qp: np.ndarray, repeats: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeats):
        answer(model, mem, qp)
    return (time.perf_counter() - t0) / repeats

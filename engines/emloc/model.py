"""The tiny multimodal in-context learner: a ``transformers`` ``Qwen2ForCausalLM`` (GQA, RoPE) whose image tokens
are 16-d patch features mapped to the model width by a linear "vision projector" (the Qwen2-VL layout at toy
size). Trained here for many-shot in-context classification; EMLoC itself changes no weight.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from engines.common.context import JobCancelled

from . import task


@dataclass(frozen=True)
class ModelConfig:
    layers: int = 4
    width: int = 64
    heads: int = 4
    kv_heads: int = 2
    mlp: int = 256
    max_positions: int = 4096

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 30000  # 8,000 left the loss falling (1.0) and accuracy falling with shots (40% @8 → 17% @256)
    tokens_per_batch: int = 4096  # batch size = tokens_per_batch // episode length (at least 2)
    min_shots: int = 8
    max_shots: int = 256  # the spec's plan trains on 8-64 shots; we evaluate at 256, so train up to it
    lr: float = 3e-3
    warmup: int = 300
    curriculum: float = 0.0  # image noise starts at this fraction of task.NOISE, reaching it at a third of the steps
    # (and the longest episodes grow from 32 to max_shots demonstrations between 10% and 60% of the steps)
    seed: int = 0
    task: str = "prototype"

    def to_dict(self) -> dict:
        return asdict(self)


MICRO = TrainConfig(steps=60, tokens_per_batch=1024, max_shots=32)  # the test profile's re-training schedule


class TinyICL(nn.Module):
    def __init__(self, cfg: ModelConfig = ModelConfig()):
        super().__init__()
        from transformers import Qwen2Config, Qwen2ForCausalLM

        self.cfg = cfg
        hf = Qwen2Config(vocab_size=task.VOCAB, hidden_size=cfg.width, intermediate_size=cfg.mlp,
                         num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                         num_key_value_heads=cfg.kv_heads, max_position_embeddings=cfg.max_positions,
                         rope_theta=10000.0, tie_word_embeddings=False, use_sliding_window=False,
                         attn_implementation="sdpa", pad_token_id=task.PAD)
        self.lm = Qwen2ForCausalLM(hf)
        self.projector = nn.Linear(task.PATCH_DIM, cfg.width)

    def embed(self, ids: torch.Tensor, patches: torch.Tensor) -> torch.Tensor:
        """Token embeddings, with projected patch features at the IMG positions. ids [..., T], patches [..., T, 16]."""
        e = self.lm.model.embed_tokens(ids)
        img = (ids == task.IMG).unsqueeze(-1)
        return torch.where(img, self.projector(patches), e)

    def forward(self, ids: torch.Tensor, patches: torch.Tensor, position_ids: torch.Tensor | None = None):
        """Logits [B, T, V] of the plain (full-context) model, through transformers' own forward."""
        return self.lm(inputs_embeds=self.embed(ids, patches), position_ids=position_ids).logits


def _batch(rng: np.random.Generator, cfg: TrainConfig, noise: float = task.NOISE, max_shots: int | None = None):
    """Episodes of one shot count (log-uniform in [min, max]) with every demo's label as a target."""
    n = int(round(math.exp(rng.uniform(math.log(cfg.min_shots), math.log(max_shots or cfg.max_shots)))))
    b = max(2, cfg.tokens_per_batch // (n * task.DEMO_LEN))
    ids, pats = [], []
    for _ in range(b):
        # 2-10 classes per episode: copying a label seen in the context then pays off at once, the first step
        # towards matching the query's image to a demonstration's (with all 10 present it is worth nothing)
        ep = task.episode(rng, n, 0, cfg.task, "train", noise, int(rng.integers(2, task.N_CLASSES + 1)))
        i, p = ep.context()
        ids.append(i)
        pats.append(p)
    return torch.from_numpy(np.stack(ids)), torch.from_numpy(np.stack(pats))


def train(cfg: TrainConfig = TrainConfig(), mcfg: ModelConfig = ModelConfig(), progress=None,
          cancelled=lambda: False) -> tuple[TinyICL, dict]:
    """Next-label prediction at every QUERY token of many-shot episodes (labels permuted per episode)."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng([task.SPLIT_SEEDS["train"], cfg.seed])
    model = TinyICL(mcfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / cfg.steps))))
    curve, t0, run = [], time.perf_counter(), 0.0
    for step in range(cfg.steps):
        if cancelled():
            raise JobCancelled("training cancelled")
        ramp = min(1.0, cfg.curriculum + (1 - cfg.curriculum) * step / max(1, cfg.steps // 3))
        # curriculum: low image noise and short contexts first (the longest reach max_shots at half the steps)
        longest = math.exp(math.log(min(32, cfg.max_shots)) + math.log(cfg.max_shots / min(32, cfg.max_shots))
                           * min(1.0, max(0.0, 2 * step / cfg.steps - 0.2)))
        ids, pats = _batch(rng, cfg, task.NOISE * ramp, int(round(longest)))
        logits = model(ids, pats)
        q = ids[:, :-1] == task.QUERY  # the QUERY token predicts the label that follows
        loss = nn.functional.cross_entropy(logits[:, :-1][q], ids[:, 1:][q])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        run = loss.item() if step == 0 else 0.98 * run + 0.02 * loss.item()
        if step % 50 == 0 or step == cfg.steps - 1:
            curve.append({"step": step, "loss": round(run, 4)})
            if progress:
                progress((step + 1) / cfg.steps, f"step {step + 1}/{cfg.steps}: loss {run:.3f}")
    model.eval()
    return model, {"train": cfg.to_dict(), "model": mcfg.to_dict(), "loss_curve": curve,
                   "train_seconds": round(time.perf_counter() - t0, 1),
                   "params": sum(p.numel() for p in model.parameters())}


@torch.no_grad()
def full_context_accuracy(model: TinyICL, eps: list[task.Episode]) -> float:
    """Accuracy of the plain model (transformers forward, whole context + each query), label tokens only."""
    right = total = 0
    for ep in eps:
        ids, pats = ep.context()
        for qp, ql in zip(ep.query_patches, ep.query_labels):
            qi = np.array([task.IMG] * task.PATCHES + [task.QUERY])
            qpat = np.zeros((len(qi), task.PATCH_DIM), np.float32)
            qpat[:task.PATCHES] = qp
            x = torch.from_numpy(np.concatenate([ids, qi]))[None]
            p = torch.from_numpy(np.concatenate([pats, qpat]))[None]
            logits = model(x, p)[0, -1, task.LABEL0:]
            right += int(int(logits.argmax()) == ep.perm[ql])
            total += 1
    return right / max(total, 1)

"""Tiny character-level GPT-2 actor and critic (spec §4): batched sampling with a KV cache, response
log-probabilities (the quantities DPO compares), and the supervised loop used for pretraining and SFT.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from engines.common.context import JobCancelled

from . import task
from .config import TinyConfig

Progress = Callable[[float, str], None]


def make_model(cfg: TinyConfig, seed: int | None = None):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(cfg.seed if seed is None else seed)
    conf = GPT2Config(vocab_size=len(task.VOCAB), n_positions=task.POSITIONS, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                      n_head=cfg.n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      bos_token_id=task.BOS, eos_token_id=task.EOS)  # no pad id: PAD after an EOS is part of a message
    return GPT2LMHeadModel(conf)


def clone(model):
    import copy

    return copy.deepcopy(model)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def generate(model, prompts: torch.Tensor, length: int, temperature: float = 1.0,
             generator: torch.Generator | None = None, batch_size: int = 2048) -> torch.Tensor:
    """``length`` tokens per prompt (prompts of one length), greedy at temperature 0, else sampled.

    Tokens after an EOS are replaced by PAD (the model stopped there)."""
    model.eval()
    outs = []
    for s in range(0, len(prompts), batch_size):
        ids = prompts[s:s + batch_size]
        out = model(input_ids=ids, use_cache=True)
        past, logits, toks = out.cache, out.logits[:, -1], []
        for t in range(length):
            if temperature <= 0:
                nxt = logits.argmax(-1)
            else:
                probs = torch.softmax(logits.float() / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=generator)[:, 0]
            toks.append(nxt)
            if t + 1 < length:
                out = model(input_ids=nxt[:, None], cache=past, use_cache=True)
                past, logits = out.cache, out.logits[:, -1]
        outs.append(torch.stack(toks, 1))
    res = torch.cat(outs) if outs else torch.zeros(0, length, dtype=torch.long)
    return res.masked_fill(mask_of(res) == 0, task.PAD)


def mask_of(resp: torch.Tensor) -> torch.Tensor:
    """1 up to and including the first EOS of each response."""
    eos = (resp == task.EOS).long()
    return ((torch.cumsum(eos, 1) - eos) == 0).float()


def response_logprob(model, prompts: torch.Tensor, resp: torch.Tensor) -> torch.Tensor:
    """log π(response | prompt), summed over the response's tokens (up to its EOS); prompts of one length."""
    P, L = prompts.shape[1], resp.shape[1]
    logits = model(input_ids=torch.cat([prompts, resp], 1)).logits[:, P - 1:P - 1 + L]
    lp = torch.log_softmax(logits.float(), -1).gather(-1, resp[..., None])[..., 0]
    return (lp * mask_of(resp)).sum(1)


def _lr(step: int, total: int, peak: float, warmup: int = 50) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup)))) + 1e-6


def supervised(model, data: list[tuple[torch.Tensor, torch.Tensor]], steps: int, batch: int, lr: float, seed: int,
               progress: Progress, cancelled: Callable[[], bool], label: str,
               evaluate: Callable[[], float] | None = None, eval_every: int = 0) -> dict:
    """Cross-entropy on the response tokens of (prompt, response) groups, each group of one prompt length;
    batches are drawn from one group at a time, in proportion to the group sizes."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    sizes = np.array([len(p) for p, _ in data], float)
    curve, losses = [], []
    model.train()
    for step in range(steps):
        if cancelled():
            raise JobCancelled("stopped")
        g = int(rng.choice(len(data), p=sizes / sizes.sum()))
        prompts, resp = data[g]
        idx = torch.from_numpy(rng.integers(0, len(prompts), batch))
        p, r = prompts[idx], resp[idx]
        for grp in opt.param_groups:
            grp["lr"] = _lr(step, steps, lr)
        loss = -(response_logprob(model, p, r) / mask_of(r).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        last = step + 1 == steps
        if (eval_every and (step + 1) % eval_every == 0) or last:
            row = {"step": step + 1, "loss": float(np.mean(losses[-100:]))}
            if evaluate is not None:
                model.eval()
                row["val"] = evaluate()
                model.train()
            curve.append(row)
            val = f", validation {row['val']:.1%}" if "val" in row else ""
            progress((step + 1) / steps, f"{label} step {step + 1}/{steps}: loss {row['loss']:.3f}{val}")
        elif step % 50 == 0:
            progress((step + 1) / steps, f"{label} step {step + 1}/{steps}: loss {np.mean(losses[-50:]):.3f}")
    model.eval()
    return {"steps": steps, "batch": batch, "lr": lr, "curve": curve, "final_loss": float(np.mean(losses[-100:]))}


def dpo_loss(pi_chosen: torch.Tensor, pi_rejected: torch.Tensor, ref_chosen: torch.Tensor,
             ref_rejected: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """−log σ(β[(log π(a⁺|s) − log π_ref(a⁺|s)) − (log π(a⁻|s) − log π_ref(a⁻|s))]) per pair, and the
    reward margin β[…] (trl's ``sigmoid`` loss: ``-F.logsigmoid(beta * (chosen_logratios - rejected_logratios))``)."""
    margin = beta * ((pi_chosen - ref_chosen) - (pi_rejected - ref_rejected))
    return -F.logsigmoid(margin), margin

"""Pre-training on the multi-domain corpus, few-shot fine-tuning, training from scratch, forecasting.

Pre-training (spec §1): every step draws a batch of windows (context + longest horizon) from the synthetic
families and the bundled real series that are not held out, and minimises
L = L_rec + Σ_H L_pred,H + L_codebook + L_commit. Downstream (ROSE_finetune.py): L1 loss, codebook frozen,
register = mean of the top-k codes times the low-rank adapter u·vᵀ.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from . import data
from .model import MICRO, ROSE, TINY, RoseConfig


def config_for(size: str, **over) -> RoseConfig:
    base = {"tiny": TINY, "micro": MICRO}[size]
    d = base.to_dict()
    d.update(over)
    return RoseConfig.from_dict(d)


@dataclass
class Corpus:
    synth: np.ndarray  # [S, length]
    family: np.ndarray  # [S]
    real: dict[str, np.ndarray]
    real_prob: float = 0.25


def build_corpus(n_series: int, cfg: RoseConfig, seed: int, real: bool = True) -> Corpus:
    length = max(4 * (cfg.context + max(cfg.horizons)), 1024) if cfg.context >= 256 else 3 * (
        cfg.context + max(cfg.horizons))
    synth, fam = data.synthetic_corpus(n_series, length, seed)
    reals = data.available_real(data.PRETRAIN_REAL) if real else {}
    need = max(cfg.horizons) + 2 * cfg.patch_len
    reals = {k: v.astype(np.float32) for k, v in reals.items() if len(v) >= need}
    return Corpus(np.stack(synth), fam, reals)


def sample_batch(corpus: Corpus, cfg: RoseConfig, batch: int, rng: np.random.Generator):
    """Windows x [B, L], valid [B, L], future [B, H_max]; a share of contexts is left-padded (variable history).

    A context whose observed part is constant (an intermittent series with no demand in a short padded context)
    is redrawn: RevIN would scale its future by √eps ≈ 0.003, and one such window put ~10⁴ into a batch's
    forecasting loss (the spike at step 5,950 of release v2)."""
    x, v, fut = _draw_batch(corpus, cfg, batch, rng)
    for _ in range(20):
        flat = flat_contexts(x, v)
        if not flat.any():
            break
        x[flat], v[flat], fut[flat] = _draw_batch(corpus, cfg, int(flat.sum()), rng)
    return x, v, fut


def flat_contexts(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rows whose observed context has (numerically) no variation: std ≤ 1e-3 · mean |x| + 1e-6."""
    w = v.float()
    n = w.sum(1).clamp_min(1)
    mean = (x * w).sum(1) / n
    std = ((((x - mean[:, None]) * w) ** 2).sum(1) / n).sqrt()
    return std <= 1e-3 * (x.abs() * w).sum(1) / n + 1e-6


def _draw_batch(corpus: Corpus, cfg: RoseConfig, batch: int, rng: np.random.Generator):
    L, H = cfg.context, max(cfg.horizons)
    W = L + H
    n_real = rng.binomial(batch, corpus.real_prob) if corpus.real else 0
    S, T = corpus.synth.shape
    rows = rng.integers(0, S, batch - n_real)
    starts = rng.integers(0, T - W + 1, batch - n_real)
    win = corpus.synth[rows[:, None], starts[:, None] + np.arange(W)]
    valid = np.ones((batch, L), bool)
    xs = [win]
    names = list(corpus.real)
    for i in range(n_real):
        y = corpus.real[names[rng.integers(len(names))]]
        end = rng.integers(H + 2 * cfg.patch_len, len(y) + 1)
        seg = y[max(0, end - W):end]
        pad = W - len(seg)
        xs.append(np.concatenate([np.full(pad, seg[0]), seg])[None])
        valid[batch - n_real + i, :pad] = False
    win = np.concatenate(xs).astype(np.float32)
    # variable-length histories: left-pad a share of contexts
    pad_rows = rng.random(batch) < cfg.pad_prob
    pad_len = rng.integers(0, L - 2 * cfg.patch_len + 1, batch)
    valid &= ~((np.arange(L)[None] < pad_len[:, None]) & pad_rows[:, None])
    x = torch.from_numpy(win[:, :L])
    v = torch.from_numpy(valid)
    return x * v, v, torch.from_numpy(win[:, L:])


def _lr_at(step: int, steps: int, lr: float, warmup: int = 100) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def pretrain(cfg: RoseConfig, corpus: Corpus, steps: int, batch: int, lr: float, seed: int,
             on_progress=None, log_every: int = 50, max_seconds: float | None = None) -> tuple[ROSE, list[dict]]:
    """``max_seconds``: a wall-clock budget; after 20 steps the step count (and the cosine schedule) is cut to
    what fits, so a busy machine trains a shorter but complete schedule (the manifest records the steps)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed + 1)
    model = ROSE(cfg)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=1e-4)
    history, acc, t_last, t_start = [], {}, time.monotonic(), time.monotonic()
    model.train()
    step = 0
    while step < steps:
        if max_seconds and step == 20:
            per_step = (time.monotonic() - t_start) / 20
            steps = min(steps, max(40, int(max_seconds / per_step)))
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, steps, lr, warmup=min(100, steps // 10 + 1))
        x, v, fut = sample_batch(corpus, cfg, batch, rng)
        losses = model.pretrain_loss(x, fut, v)
        opt.zero_grad(set_to_none=True)
        losses["total"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        for k, val in losses.items():
            acc[k] = acc.get(k, 0.0) + float(val.detach())
        if (step + 1) % log_every == 0 or step + 1 == steps:
            n = (step % log_every) + 1
            history.append({"step": step + 1, **{k: round(a / n, 5) for k, a in acc.items()}})
            acc = {}
        if on_progress is not None and (time.monotonic() - t_last > 1.0 or step + 1 == steps):
            t_last = time.monotonic()
            last = history[-1]["total"] if history else float("nan")
            on_progress((step + 1) / steps, f"pre-training step {step + 1}/{steps}, loss {last:.3f}")
        step += 1
    model.copy_tower()
    model.eval()
    return model, history


# ----------------------------------------------------------------------------- downstream


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float32)


@torch.no_grad()
def predict(model: ROSE, y_hist: np.ndarray, horizon: int, context: int | None = None, few_shot: bool = False,
            return_info: bool = False):
    """Point forecast of the next ``horizon`` values from the end of ``y_hist`` (left-padded if short)."""
    return predict_many(model, [y_hist], horizon, context, few_shot, return_info)


@torch.no_grad()
def predict_many(model: ROSE, hists, horizon: int, context: int | None = None, few_shot: bool = False,
                 return_info: bool = False):
    cfg = model.cfg
    context = min(context or cfg.context, cfg.context)
    X, V = [], []
    for y in hists:
        ctx = np.asarray(y[-context:], np.float32)
        pad = cfg.context - len(ctx)
        X.append(np.concatenate([np.zeros(pad, np.float32), ctx]))
        V.append(np.concatenate([np.zeros(pad, bool), np.ones(len(ctx), bool)]))
    model.eval()
    x, v = _t(X), torch.as_tensor(np.array(V))
    out = model(x * v, horizon, v, select="topk" if few_shot else "argmin", adapter=few_shot, return_info=return_info)
    if return_info:
        y, info = out
        return y.numpy(), {k: t.numpy() for k, t in info.items()}
    return out.numpy()


def train_windows(y: np.ndarray, cfg: RoseConfig, horizon: int, context: int | None = None, stride: int = 1):
    """All (context, horizon) windows whose target lies inside ``y``, oldest first."""
    context = min(context or cfg.context, cfg.context)
    first = max(cfg.patch_len, 16)
    origins = list(range(first, len(y) - horizon + 1, stride))
    X, V, Y = data.windows(y, context, horizon, origins)
    pad = cfg.context - context
    if pad:
        X = np.concatenate([np.zeros((len(X), pad), np.float32), X], 1)
        V = np.concatenate([np.zeros((len(V), pad), bool), V], 1)
    return X, V, Y


def fit_downstream(model: ROSE, X, V, Y, steps: int, lr: float, seed: int = 0, val=None, batch: int = 32,
                   on_progress=None, check=None) -> tuple[ROSE, dict]:
    """Fine-tune (or train from scratch) on windows with the L1 loss; codebook frozen (freeze_embedding=1).

    With ``val`` = (X, V, Y) the state with the lowest validation MSE (at the start and 5 times during
    training) is kept."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    horizon = Y.shape[1]
    if model.T:
        model.codebook.weight.requires_grad_(False)
    params = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("tower_pred")]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    Xt, Vt, Yt = _t(X), torch.as_tensor(V), _t(Y)
    best, best_val, evals = None, np.inf, []
    if val is not None:  # the starting point is a candidate too (early stopping may keep it)
        best_val = _val_mse(model, *val)
        best = copy.deepcopy(model.state_dict())
        evals.append({"step": 0, "val_mse": best_val})
    every = max(1, steps // 5)
    t_last = time.monotonic()
    for step in range(steps):
        model.train()
        idx = torch.as_tensor(rng.integers(0, len(Xt), min(batch, len(Xt))))
        pred = model(Xt[idx] * Vt[idx], horizon, Vt[idx], select="topk", adapter=True)
        loss = F.l1_loss(pred, Yt[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if val is not None and ((step + 1) % every == 0 or step + 1 == steps):
            v = _val_mse(model, *val)
            evals.append({"step": step + 1, "val_mse": v})
            if v < best_val:
                best_val, best = v, copy.deepcopy(model.state_dict())
        if on_progress is not None and time.monotonic() - t_last > 1.0:
            t_last = time.monotonic()
            on_progress((step + 1) / steps, f"fine-tuning step {step + 1}/{steps}")
        if check is not None:
            check()
    if best is not None:
        model.load_state_dict(best)
    model.eval()
    return model, {"evals": evals, "best_val_mse": None if best is None else float(best_val)}


@torch.no_grad()
def _val_mse(model, X, V, Y) -> float:
    model.eval()
    Xt, Vt = _t(X), torch.as_tensor(V)
    p = model(Xt * Vt, Y.shape[1], Vt, select="topk", adapter=True).numpy()
    # standardise per window by the context scale so long and short series weigh alike
    sd = np.array([x[v].std() + 1e-6 if v.any() else 1.0 for x, v in zip(X, V)])[:, None]
    return float(np.mean(((p - Y) / sd) ** 2))


def few_shot_split(y_hist: np.ndarray, cfg: RoseConfig, horizon: int, fraction: float, context=None,
                   min_windows: int = 8, max_val: int = 48):
    """First ``fraction`` of the history's windows for training (at least ``min_windows``), the last 20 %
    (targets strictly after the training windows' targets) for validation."""
    X, V, Y = train_windows(y_hist, cfg, horizon, context)
    n = len(X)
    if n < 2:
        raise ValueError(f"the history is too short to fine-tune at horizon {horizon}: need at least "
                         f"{max(cfg.patch_len, 16) + horizon + 1} points, got {len(y_hist)}")
    n_val = max(1, n // 5)
    n_tr = min(max(min_windows, int(round(fraction * n))), max(1, n - n_val - horizon))
    tr = slice(0, n_tr)
    va = np.arange(max(n_tr + horizon, n - n_val) if n - n_val >= n_tr + horizon else n - n_val, n)
    va = va[np.linspace(0, len(va) - 1, min(len(va), max_val)).round().astype(int)]  # at most max_val windows
    return (X[tr], V[tr], Y[tr]), (X[va], V[va], Y[va])


def adapt(base: ROSE | None, cfg: RoseConfig, y_hist: np.ndarray, horizon: int, fraction: float, steps: int,
          seed: int = 0, context=None, lrs=(1e-4, 1e-3), on_progress=None, check=None) -> tuple[ROSE, dict]:
    """Few-shot ROSE (``base`` = pre-trained) or the same architecture from scratch (``base`` = None).

    The learning rate is chosen from ``lrs`` on the validation windows; both arms get the same budget."""
    train, val = few_shot_split(y_hist, cfg, horizon, fraction, context)
    best = (np.inf, None, None)
    for i, lr in enumerate(lrs):
        torch.manual_seed(seed)
        m = copy.deepcopy(base) if base is not None else ROSE(cfg)
        sub = None if on_progress is None else (lambda f, msg, i=i: on_progress((i + f) / len(lrs), msg))
        m, rec = fit_downstream(m, *train, steps=steps, lr=lr, seed=seed, val=val, on_progress=sub, check=check)
        v = rec["best_val_mse"]
        if v is not None and v < best[0]:
            best = (v, m, {"lr": lr, "train_windows": len(train[0]), "val_windows": len(val[0]), **rec})
    return best[1], best[2]


def conformal_interval(model: ROSE, y_hist: np.ndarray, horizon: int, coverage: float, context=None,
                       few_shot: bool = False, max_origins: int = 30):
    """Split-conformal half-widths per step h from backtest errors on the history's last origins."""
    n = len(y_hist)
    stride = max(1, horizon // 4)
    origins = [t for t in range(n - horizon, max(model.cfg.patch_len, n - horizon - stride * max_origins), -stride)]
    if len(origins) < 3:
        return None
    preds = predict_many(model, [y_hist[:t] for t in origins], horizon, context, few_shot)
    err = np.abs(preds - np.array([y_hist[t:t + horizon] for t in origins]))
    q = min(1.0, coverage * (1 + 1 / len(origins)))
    return np.quantile(err, q, axis=0)

"""Data splits, training of the chess GPT variants, cached weights, and activations at the '.' positions."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engines.common.context import JobCancelled
from engines.common.settings import get_settings

from . import data as D
from .layers import MoELayer
from .model import GPTConfig, TrainConfig, aux_loss, build_model, mlps, probe_mlp

RELEASE_KIND = "moex"


@dataclass(frozen=True)
class Splits:
    """Game counts: LM training games (seed 0), and disjoint probing splits (label / val / test, other seeds)."""

    train: int = 6000
    label: int = 1500
    val: int = 400
    test: int = 800


TINY_SPLITS = Splits()
MICRO_SPLITS = Splits(train=160, label=100, val=40, test=60)


def profile_splits() -> Splits:
    return MICRO_SPLITS if get_settings().profile == "test" else TINY_SPLITS


SPLIT_SEEDS = {"train": 0, "label": 1, "val": 2, "test": 3}


def moex_dir() -> Path:
    d = get_settings().data_dir / "moex"
    d.mkdir(parents=True, exist_ok=True)
    return d


_SETS: dict = {}


def gameset(split: str, n: int, ctx: int, progress=None) -> D.GameSet:
    """Cached synthetic games of one split (seeded; the same for every model)."""
    key = (split, n, ctx)
    if key in _SETS:
        return _SETS[key]
    f = moex_dir() / "data" / f"{split}-{n}-{ctx}-v1.npz"
    if f.exists():
        gs = D.GameSet.load(f)
    else:
        games = D.synthetic_games(n, 10_007 * SPLIT_SEEDS[split] + 17, progress=progress)
        gs = D.build_gameset(games, ctx)
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp.npz")
        gs.save(tmp)
        tmp.replace(f)
    _SETS[key] = gs
    return gs


def lm_loss(model, ids: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=ids).logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


@torch.no_grad()
def validation_loss(model, ids: np.ndarray, batch: int = 64) -> float:
    model.eval()
    tot, n = 0.0, 0
    for i in range(0, len(ids), batch):
        x = torch.as_tensor(ids[i:i + batch])
        tot += float(lm_loss(model, x)) * len(x)
        n += len(x)
    return tot / max(n, 1)


def train(tc: TrainConfig, progress=None, cancelled=None, init_model=None) -> tuple[torch.nn.Module, dict]:
    """AdamW with a short warm-up and cosine decay; returns the model and its record (loss curve, val loss)."""
    cfg = tc.model
    tr = gameset("train", tc.n_games, cfg.ctx, progress=(lambda f, m: progress(0.05 * f, m)) if progress else None)
    va = gameset("val", profile_splits().val, cfg.ctx)
    model = init_model if init_model is not None else build_model(cfg, tc.variant, tc.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=0.01, betas=(0.9, 0.99))
    g = torch.Generator().manual_seed(tc.seed)
    ids = torch.as_tensor(tr.ids)
    curve, t0 = [], time.perf_counter()
    init_loss = validation_loss(model, va.ids)
    model.train()
    warm = max(1, tc.steps // 20)
    for step in range(tc.steps):
        lr = tc.lr * min(1.0, (step + 1) / warm) * 0.5 * (1 + np.cos(np.pi * step / tc.steps))
        for pg in opt.param_groups:
            pg["lr"] = lr
        x = ids[torch.randint(0, len(ids), (tc.batch,), generator=g)]
        loss = lm_loss(model, x)
        total = loss + aux_loss(model)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 25 == 0 or step == tc.steps - 1:
            curve.append([step, round(loss.item(), 4)])
            if progress is not None:
                progress(0.05 + 0.95 * (step + 1) / tc.steps, f"{tc.variant} seed {tc.seed}: step {step + 1}/"
                         f"{tc.steps}, loss {loss.item():.3f}")
            if cancelled is not None and cancelled():
                raise JobCancelled("training cancelled")
    model.eval()
    rec = {"config": {**asdict(tc), "model": cfg.to_dict()}, "key": tc.key(), "init_val_loss": init_loss,
           "val_loss": validation_loss(model, va.ids), "curve": curve,
           "train_seconds": round(time.perf_counter() - t0, 1)}
    return model, rec


# ----------------------------------------------------------------------------- cache and release


def _paths(key: str) -> tuple[Path, Path]:
    d = moex_dir() / "models"
    return d / f"{key}.safetensors", d / f"{key}.json"


def save(model, rec: dict) -> None:
    from safetensors.torch import save_file

    w, j = _paths(rec["key"])
    w.parent.mkdir(parents=True, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied to wte
    save_file(sd, str(w.with_suffix(".tmp")))
    w.with_suffix(".tmp").replace(w)
    j.write_text(json.dumps(rec))


def load(tc: TrainConfig):
    """(model, record) from the cache, else from the model release, else None."""
    from safetensors.torch import load_file

    w, j = _paths(tc.key())
    if not w.exists():
        from engines.common import release

        if release.manifest(RELEASE_KIND, tc.key()) is None:
            return None
        release.install(RELEASE_KIND, tc.key(), w.parent / f".{tc.key()}.rel")
        src = w.parent / f".{tc.key()}.rel"
        (src / "model.safetensors").replace(w)
        (src / "record.json").replace(j)
        import shutil

        shutil.rmtree(src, ignore_errors=True)
    model = build_model(tc.model, tc.variant, tc.seed)
    sd = load_file(str(w))
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" and not k.endswith(("attn.bias", "masked_bias"))]
    if missing or unexpected:
        raise ValueError(f"cached moex weights {w} do not match the model: missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]}")
    return model.eval(), json.loads(j.read_text())


def ensure(tc: TrainConfig, progress=None, cancelled=None):
    got = load(tc)
    if got is not None:
        return got
    model, rec = train(tc, progress, cancelled)
    save(model, rec)
    return model, rec


# ----------------------------------------------------------------------------- activations


@torch.no_grad()
def hidden_at_dots(model, gs: D.GameSet, batch: int = 64, routes: bool = False) -> dict:
    """The probed MLP's hidden code h at every '.' position: (P, units) float32 (+ routing info for MoE)."""
    layer = probe_mlp(model)
    layer.record = True
    hs, sc, idx, l0, est = [], [], [], [], []
    try:
        for i in range(0, len(gs.ids), batch):
            model(input_ids=torch.as_tensor(gs.ids[i:i + batch]))
            sel = gs.pos_game[(gs.pos_game >= i) & (gs.pos_game < i + batch)] - i
            ch = gs.pos_char[(gs.pos_game >= i) & (gs.pos_game < i + batch)]
            hs.append(layer.last_h[sel, ch].float())
            if routes and isinstance(layer, MoELayer):
                sc.append(layer.last_route["scores"][sel, ch])
                idx.append(layer.last_route["idx"][sel, ch])
    finally:
        layer.record = False
        layer.last_h = None
    out = {"h": torch.cat(hs).numpy()}
    if sc:
        out["scores"], out["idx"] = torch.cat(sc).numpy(), torch.cat(idx).numpy()
    return out


@torch.no_grad()
def residual_at_dots(model, gs: D.GameSet, batch: int = 64) -> np.ndarray:
    """The probed MLP's input (after ln_2) at every '.' position, for router diagnostics."""
    cfg = model.moex_cfg
    block = model.transformer.h[cfg.probe_layer]
    got = []
    hook = block.ln_2.register_forward_hook(lambda m, i, o: got.append(o.detach()))
    xs = []
    try:
        for i in range(0, len(gs.ids), batch):
            got.clear()
            model(input_ids=torch.as_tensor(gs.ids[i:i + batch]))
            m = (gs.pos_game >= i) & (gs.pos_game < i + batch)
            xs.append(got[0][gs.pos_game[m] - i, gs.pos_char[m]])
    finally:
        hook.remove()
    return torch.cat(xs).numpy()


@torch.no_grad()
def hidden_at(model, pgn: str) -> dict:
    """h at every character of one game string (for the tab), plus routing of the probed layer."""
    cfg: GPTConfig = model.moex_cfg
    ids = torch.as_tensor(D.encode(pgn[:cfg.ctx], cfg.ctx))[None]
    layer = probe_mlp(model)
    layer.record = True
    try:
        model(input_ids=ids)
        out = {"h": layer.last_h[0].numpy().copy()}
        if isinstance(layer, MoELayer):
            out["scores"] = layer.last_route["scores"][0].numpy().copy()
            out["idx"] = layer.last_route["idx"][0].numpy().copy()
    finally:
        layer.record = False
    return out


def hidden_l0(h: np.ndarray) -> float:
    return float((h > 0).sum(1).mean())


def all_layers_h_bound(model, ids: torch.Tensor) -> bool:
    """‖h‖_0 ≤ k·D on every token of every MoE layer (acceptance check 5)."""
    ok = True
    for m in mlps(model):
        if isinstance(m, MoELayer):
            m.record = True
    try:
        with torch.no_grad():
            model(input_ids=ids)
        for m in mlps(model):
            if isinstance(m, MoELayer):
                ok &= bool(((m.last_h != 0).sum(-1) <= m.k * m.D).all())
    finally:
        for m in mlps(model):
            m.record = False
    return ok

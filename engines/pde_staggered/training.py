"""Solver data (generated once, cached) and one-step training of the surrogate variants (cached)."""
from __future__ import annotations

import copy
import math
import time
from typing import Callable

import numpy as np
import torch

from . import groups as G
from . import ics, ins, swe
from .config import Sizes, cache_dir, key
from .models import StaggeredUNet, build, n_params

DATA_VERSION = 1
MODEL_VERSION = 3
Progress = Callable[[float, str], None]


def _noop(f: float, m: str = "") -> None:
    pass


def solver_config(sz: Sizes) -> swe.SWEConfig:
    return swe.SWEConfig(n=sz.n)


def ins_config(sz: Sizes) -> ins.INSConfig:
    return ins.INSConfig(n=sz.n)


def act(problem: str, state, g):
    """D4 acting on a state tuple of either problem."""
    return G.act_state(*state, g) if problem == "swe" else ins.act(*state, g)


def dataset(sz: Sizes, split: str = "train", frames: int | None = None, progress: Progress = _noop,
            problem: str = "swe"):
    """Trajectories of shape (B, T+1, ...) from random ICs, cached as .npz: (ζ, u, v) for shallow water
    (random bumps), (u, v) on the periodic MAC grid for turbulence (random spectra). The train split uses
    seeds from 0, the test split from 10_000 (held out)."""
    cfg = solver_config(sz) if problem == "swe" else ins_config(sz)
    count = sz.n_train if split == "train" else sz.n_test
    frames = frames or (sz.train_frames if split == "train" else 100)
    seed = 0 if split == "train" else 10_000
    path = cache_dir() / f"{'' if problem == 'swe' else 'ins_'}data_{split}_{key(cfg, [count, frames, seed, DATA_VERSION])}.npz"
    names = ("zeta", "u", "v") if problem == "swe" else ("u", "v")
    if path.exists():
        with np.load(path) as d:
            return tuple(d[k] for k in names)
    progress(0.0, f"solver: {count} {split} trajectories × {frames} steps on {sz.n}×{sz.n}")
    out = [[] for _ in names]
    chunk = max(1, min(count, 32))
    for start in range(0, count, chunk):
        b = min(chunk, count - start)
        if problem == "swe":
            traj = swe.rollout(cfg, *ics.batch_random(seed + start, b, sz.n), frames)
        else:
            rng = np.random.default_rng(seed + start)
            w = np.stack([ins.random_vorticity(rng, sz.n, cfg.k_peak) for _ in range(b)])
            traj = ins.rollout(cfg, w, frames)
        for acc, arr in zip(out, traj):
            acc.append(arr)
        progress((start + b) / count, f"solver: {start + b}/{count} {split} trajectories")
    arrays = tuple(np.concatenate(a).astype(np.float32) for a in out)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **dict(zip(names, arrays)))
    tmp.replace(path)
    return arrays


def scales(*state) -> dict[str, float]:
    """Per-variable scalar scales (one for ζ, one shared by u and v, so normalisation commutes with D4)."""
    if len(state) == 2:  # periodic turbulence: all faces are interior
        u, v = state
        return dict(zeta=1.0, dzeta=1.0, vel=float(np.concatenate([u.ravel(), v.ravel()]).std()),
                    dvel=float(np.concatenate([np.diff(u, axis=1).ravel(), np.diff(v, axis=1).ravel()]).std()))
    zeta, u, v = state
    vel = np.concatenate([u[..., 1:-1].ravel(), v[..., 1:-1, :].ravel()])
    dvel = np.concatenate([np.diff(u, axis=1)[..., 1:-1].ravel(), np.diff(v, axis=1)[..., 1:-1, :].ravel()])
    zc = zeta - zeta.mean((-2, -1), keepdims=True)
    return dict(zeta=float(zc.std()), vel=float(vel.std()), dzeta=float(np.diff(zeta, axis=1).std()),
                dvel=float(dvel.std()))


def _loss(model: StaggeredUNet, pred, target) -> torch.Tensor:
    if len(pred) == 3:
        (z, u, v), (zt, ut, vt) = pred, target
        lz = ((z - zt) / model.s_dzeta).pow(2).mean()
    else:
        (u, v), (ut, vt) = pred, target
        lz = 0.0
    lv = torch.cat([((u - ut) / model.s_dvel).flatten(1), ((v - vt) / model.s_dvel).flatten(1)], 1).pow(2).mean()
    return lz + lv


def corrupt(state, noise: float, model: StaggeredUNet, problem: str = "swe"):
    """The input state plus Gaussian noise of ``noise`` × the one-step change's scale (``s_dzeta`` for ζ,
    ``s_dvel`` for the velocities). The noise keeps what the data keep, so a constrained model can still reach
    the clean target: zero mean over the basin for ζ (mass), zero on the closed walls for the shallow-water face
    velocities. Its distribution is D4-invariant (i.i.d. per cell and face), so it does not break the symmetry."""
    if problem == "swe":
        zeta, u, v = state
        nz = torch.randn_like(zeta) * (noise * model.s_dzeta)
        nz = nz - nz.mean((-2, -1), keepdim=True)
        nu = torch.randn_like(u) * (noise * model.s_dvel)
        nv = torch.randn_like(v) * (noise * model.s_dvel)
        nu[..., 0] = nu[..., -1] = 0.0
        nv[..., 0, :] = nv[..., -1, :] = 0.0
        return zeta + nz, u + nu, v + nv
    u, v = state
    return u + torch.randn_like(u) * (noise * model.s_dvel), v + torch.randn_like(v) * (noise * model.s_dvel)


def model_path(variant: str, sz: Sizes, seed: int, pushforward: bool, augment: bool, problem: str = "swe"):
    k = key(sz, [variant, seed, pushforward, augment, MODEL_VERSION, DATA_VERSION] + ([problem] if problem != "swe" else []))
    suffix = ("_pf" if pushforward else "") + ("_aug" if augment else "")
    return cache_dir() / "models" / f"{'' if problem == 'swe' else 'ins_'}{variant}{suffix}_{k}.pt"


def load_model(variant: str, sz: Sizes, seed: int = 0, pushforward: bool = False, augment: bool = False,
               problem: str = "swe"):
    """The cached model (with its training record), or None."""
    path = model_path(variant, sz, seed, pushforward, augment, problem)
    if not path.exists() and not _from_release(path):
        return None
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = build(variant, sz.width, blob["scales"], problem=problem)
    model.load_state_dict(blob["state"])
    model.eval()
    return model, blob["record"]


def _from_release(path) -> bool:
    """Install the shipped model of this cache key (``release/pde_staggered/<file stem>``: safetensors weights
    + scales and training record as JSON), verified; no training. False when the release does not hold it."""
    import json
    import tempfile
    from pathlib import Path

    from safetensors.torch import load_file

    from engines.common import release

    if release.manifest("pde_staggered", path.stem) is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "m"
        release.install("pde_staggered", path.stem, d)
        meta = json.loads((d / "meta.json").read_text())
        blob = dict(state=load_file(str(d / "model.safetensors")), scales=meta["scales"], record=meta["record"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".release.tmp")
    torch.save(blob, tmp_path)
    tmp_path.replace(path)
    return True


def export_for_release(path, out_dir) -> dict:
    """Write a cached model as release files (``model.safetensors`` + ``meta.json``); returns its record."""
    import json
    from pathlib import Path

    from safetensors.torch import save_file

    blob = torch.load(path, map_location="cpu", weights_only=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in blob["state"].items()}, str(out / "model.safetensors"))
    (out / "meta.json").write_text(json.dumps({"scales": blob["scales"], "record": blob["record"]}))
    return blob["record"]


def train_variant(variant: str, sz: Sizes, seed: int = 0, pushforward: bool = False, augment: bool = False,
                  progress: Progress = _noop, device: str = "cpu", problem: str = "swe"):
    """Adam + cosine schedule on one-step MSE (normalised), validation-based model selection (10% of the
    trajectories held out). pushforward: in the second half every other step unrolls 2 steps with the first
    one detached (Brandstetter et al. 2022). augment: each batch is transformed by a random D4 element.
    ``sz.noise``: training-noise injection (Sanchez-Gonzalez et al. 2020): the input state is corrupted by
    Gaussian noise of ``sz.noise`` × the one-step change's scale while the target stays the clean next state, so
    the model learns to correct the errors a rollout feeds back to it (see ``corrupt``)."""
    hit = load_model(variant, sz, seed, pushforward, augment, problem)
    if hit is not None:
        progress(1.0, f"{variant}: loaded from cache")
        return hit
    data = dataset(sz, "train", progress=lambda f, m: progress(0.1 * f, m), problem=problem)
    sc = scales(*data)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = build(variant, sz.width, sc, problem=problem).to(device)
    n_val = max(1, len(data[0]) // 10)
    D = tuple(torch.as_tensor(a, device=device) for a in data)
    tr, va = np.arange(n_val, len(data[0])), np.arange(n_val)
    T = data[0].shape[1] - 1
    opt = torch.optim.Adam(model.parameters(), lr=sz.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / sz.steps)))
    vb, vt = np.repeat(va, T), np.tile(np.arange(T), len(va))

    def val_loss() -> float:
        model.eval()
        with torch.no_grad():
            out = model(*(a[vb, vt] for a in D))
            lo = float(_loss(model, out, tuple(a[vb, vt + 1] for a in D)))
        model.train()
        return lo

    losses, vals, best = [], [], (math.inf, None, 0)
    every = max(1, sz.steps // 10)
    t0 = time.perf_counter()
    for s in range(sz.steps):
        unroll = 2 if pushforward and s >= sz.steps // 2 and s % 2 == 1 and T >= 2 else 1
        b = rng.choice(tr, sz.batch)
        t = rng.integers(0, T - unroll + 1, sz.batch)
        x = tuple(a[b, t] for a in D)
        y = tuple(a[b, t + unroll] for a in D)
        if augment:
            g = G.ELEMENTS[int(rng.integers(8))]
            x, y = act(problem, x, g), act(problem, y, g)
        if unroll == 2:
            with torch.no_grad():
                x = model(*x)
        if sz.noise:
            x = corrupt(x, sz.noise, model, problem)
        lo = _loss(model, model(*x), y)
        opt.zero_grad()
        lo.backward()
        opt.step()
        sched.step()
        losses.append(float(lo.detach()))
        if (s + 1) % every == 0 or s + 1 == sz.steps:
            vals.append((s + 1, val_loss()))
            if vals[-1][1] < best[0]:
                best = (vals[-1][1], copy.deepcopy(model.state_dict()), s + 1)
            progress(0.1 + 0.9 * (s + 1) / sz.steps, f"{variant}: step {s + 1}/{sz.steps}, loss {np.mean(losses[-every:]):.4f}, "
                     f"val {vals[-1][1]:.4f}")
    model.load_state_dict(best[1])
    model = model.cpu().eval()
    record = dict(variant=variant, params=n_params(model), width=model.width, losses=losses, val=vals,
                  best_step=best[2], best_val=best[0], seconds=time.perf_counter() - t0, seed=seed,
                  pushforward=pushforward, augment=augment, problem=problem, noise=sz.noise)
    path = model_path(variant, sz, seed, pushforward, augment, problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(dict(state=model.state_dict(), scales=sc, record=record), tmp)
    tmp.replace(path)
    return model, record

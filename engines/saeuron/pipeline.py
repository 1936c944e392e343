"""Building SAeUron for the zoo's tiny text-to-image model: anchor-prompt activations over every sampling
step (cached), one TopK SAE per hook point, and the per-timestep concept statistics μ(i, t, c).

Entry ``build(params, ctx)`` (a job): everything lands in ``<data_dir>/saeuron/<key>/`` where the key
hashes the resolved parameters and the text-to-image model's cache key (its directory name, so the key is the
same on every machine). The default setting ships in the model release (``release/saeuron/<key>/``):
:func:`ensure_built` installs it, verified, instead of training.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel

from engines.common.context import LocalContext, Subprogress
from engines.common.params import validate
from engines.common.settings import get_settings
from engines.common.threads import torch_threads

from .hooks import ActivationCollector, StepTracker, hooked, locate_block
from .params import COLOURS, OBJECTS, STYLES, BuildParams
from .sae import SaeConfig, TopKSae, train_sae
from engines.common.figures import subplots

KINDS = ("style", "object")
PROFILE_DEFAULTS = {
    "default": dict(colours=4, steps=25, expansion=16, k=8, epochs=50, dead_after_tokens=200_000, stats_seeds=2),
    "test": dict(colours=1, steps=6, expansion=4, k=4, epochs=2, dead_after_tokens=5_000, stats_seeds=1),
}
GEN_BATCH = 80


class NotBuilt(RuntimeError):
    """No SAE / statistics for this setting yet."""


def resolve_build(p: BuildParams | dict | None = None) -> BuildParams:
    p = validate(BuildParams, p or {})
    d = PROFILE_DEFAULTS[get_settings().profile]
    return p.model_copy(update={k: v for k, v in d.items() if getattr(p, k) is None})


def _t2i_dir() -> str:
    """The text-to-image model's cache key (its config hash: the directory name, not the machine's path)."""
    from engines.common import zoo

    return zoo.model_dir("t2i").name


def build_key(p: BuildParams) -> str:
    blob = json.dumps({"params": p.model_dump(mode="json"), "t2i": _t2i_dir(), "v": 1}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def acts_path(p: BuildParams, tag: str = "anchors") -> Path:
    """An activation cache, keyed only by what the collection depends on (SAE settings may change)."""
    keys = ("hook_style", "hook_object", "styles", "objects", "steps", "guidance", "seed")
    keys += ("colours",) if tag == "anchors" else ("stats_seeds",)
    blob = json.dumps({"c": {k: p.model_dump(mode="json")[k] for k in keys}, "t2i": _t2i_dir(), "tag": tag, "v": 1},
                      sort_keys=True)
    return get_settings().data_dir / "saeuron" / "activations" / f"{hashlib.sha256(blob.encode()).hexdigest()[:16]}.safetensors"


def build_dir(p: BuildParams) -> Path:
    return get_settings().data_dir / "saeuron" / build_key(p)


def ensure_built(p: BuildParams, ctx=None) -> bool:
    """True when ``build_dir(p)`` holds a finished build, installing the released one for this key if the
    release has it (verified; a damaged file raises ReleaseError naming the rebuild command). No training."""
    import fcntl

    from engines.common import release

    d = build_dir(p)
    if (d / "build.json").exists():
        return True
    if release.manifest("saeuron", d.name) is None:
        return False
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f".{d.name}.lock", "w") as lk:  # the web process and a worker may ask at once
        fcntl.flock(lk, fcntl.LOCK_EX)
        if (d / "build.json").exists():
            return True
        return release.install("saeuron", d.name, d, getattr(ctx, "progress", None)) is not None


def hook_of(p: BuildParams, kind: str) -> str:
    return p.hook_style if kind == "style" else p.hook_object


# ---------------------------------------------------------------------------- the model


_PIPES: dict[str, object] = {}
_LOCK = threading.Lock()


def get_pipe(ctx=None):
    """The zoo's text-to-image pipeline, loaded once per process (hooks are added and removed per call)."""
    from engines.common import zoo

    key = _t2i_dir()
    with _LOCK:
        if key not in _PIPES:
            pipe = zoo.load("t2i", ctx=ctx)
            pipe.unet.requires_grad_(False)
            _PIPES[key] = pipe
        return _PIPES[key]


@torch.no_grad()
def generate(pipe, prompts: list[str], seed: int, steps: int, guidance: float, hooks: dict | None = None,
             tracker: StepTracker | None = None, as_float: bool = False) -> np.ndarray:
    """uint8 NHWC images (float in [0, 1] with ``as_float``); ``hooks`` are active only during this call."""
    tracker = tracker or StepTracker()
    tracker.reset(steps, cfg=guidance > 1.0)
    g = torch.Generator(device="cpu").manual_seed(int(seed))
    with hooked(pipe.unet, hooks or {}, tracker):
        out = pipe(list(prompts), num_inference_steps=steps, guidance_scale=guidance, generator=g, output_type="np")
    if as_float:
        return np.asarray(out.images, dtype=np.float32)
    return (np.clip(out.images, 0, 1) * 255 + 0.5).astype(np.uint8)


def caption(obj: str, style: str, colour: str) -> str:
    return f"a {colour} {obj} in {style} style"


def anchor_prompts(p: BuildParams, n_colours: int, offset: int = 0) -> list[tuple[str, int, int]]:
    """(caption, object index, style index) for every object × style × ``n_colours`` colours."""
    out = []
    for o in p.objects:
        for s in p.styles:
            for j in range(n_colours):
                col = COLOURS[(OBJECTS.index(o) + 3 * STYLES.index(s) + j + offset) % len(COLOURS)]
                out.append((caption(o, s, col), OBJECTS.index(o), STYLES.index(s)))
    return out


def collect(pipe, prompts: list[str], hook_paths: list[str], steps: int, guidance: float, seed: int,
            progress=None) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Activations of the conditional branch at every step: {hook: [P, T, H·W, C]}, timesteps [T]."""
    for h in hook_paths:
        locate_block(pipe.unet, h)
    acts: dict[str, list] = {h: [] for h in hook_paths}
    ts = None
    for b in range(0, len(prompts), GEN_BATCH):
        tracker = StepTracker()
        cols = {h: ActivationCollector(tracker) for h in hook_paths}
        generate(pipe, prompts[b:b + GEN_BATCH], seed + b, steps, guidance, cols, tracker)
        for h, c in cols.items():
            acts[h].append(c.stacked())
        ts = torch.tensor(next(iter(cols.values())).timesteps)
        if progress is not None:
            progress(min(1.0, (b + GEN_BATCH) / len(prompts)), f"collected {min(b + GEN_BATCH, len(prompts))}/{len(prompts)} prompts")
    return {h: torch.cat(v) for h, v in acts.items()}, ts


# ---------------------------------------------------------------------------- the build job


class SaeReport(BaseModel):
    kind: str
    hook: str
    d_in: int
    num_latents: int
    k: int
    fvu: float
    l0: float
    dead_fraction: float
    tokens: int
    steps: int
    seconds: float


class BuildResult(BaseModel):
    key: str
    cached: bool
    saes: list[SaeReport]
    n_anchor_prompts: int
    n_stats_prompts: int
    timesteps: int
    seconds: float
    curve_plot: str | None = None
    curves: dict[str, list[float]] = {}  # FVU per training step, per SAE (the release records how it converged)


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    tmp = path.with_suffix(".tmp")
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp))
    tmp.replace(path)


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))


@torch_threads(1)
def build(params: BuildParams | dict | None = None, ctx=None) -> BuildResult:
    p = resolve_build(params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    d = build_dir(p)
    done = d / "build.json"
    if ensure_built(p, ctx):
        res = BuildResult.model_validate_json(done.read_text())
        ctx.progress(1.0, "SAEs and statistics already built (cached)")
        return res.model_copy(update={"cached": True})
    d.mkdir(parents=True, exist_ok=True)
    pipe = get_pipe(ctx=Subprogress(ctx, 0.0, 0.05))
    hooks = [hook_of(p, k) for k in KINDS]
    # 1. Anchor-prompt activations over all sampling steps (conditional branch), cached.
    anchors = anchor_prompts(p, p.colours)
    apath = acts_path(p)
    if p.sae_dir:
        acts = {}
    elif apath.exists():
        acts = {k: v.float() for k, v in _load_tensors(apath).items() if k != "timesteps"}
        ctx.progress(0.35, "activations loaded from cache")
    else:
        ctx.progress(0.05, f"collecting activations of {len(anchors)} anchor prompts × {p.steps} steps")
        raw, ts = collect(pipe, [a[0] for a in anchors], hooks, p.steps, p.guidance, p.seed,
                          Subprogress(ctx, 0.05, 0.35))
        acts = {k: raw[hook_of(p, k)] for k in KINDS}
        apath.parent.mkdir(parents=True, exist_ok=True)
        _save_tensors(apath, {**{k: v.half() for k, v in acts.items()}, "timesteps": ts})
        acts = {k: v.half().float() for k, v in acts.items()}  # train on exactly what the cache holds
    # 2. One TopK SAE per hook point (or the released ones, at paper scale).
    reports, curves = [], {}
    if p.sae_dir:
        from .paper import load_paper_sae

        for kind in KINDS:
            sae = load_paper_sae(kind, p.sae_dir)
            sae.save_to_disk(d / kind, extra={"hookpoint": hook_of(p, kind), "source": p.sae_dir})
            reports.append(SaeReport(kind=kind, hook=hook_of(p, kind), d_in=sae.d_in, num_latents=sae.num_latents,
                                     k=sae.cfg.k, fvu=-1.0, l0=float(sae.cfg.k), dead_fraction=-1.0,
                                     tokens=0, steps=0, seconds=0.0))
    for j, kind in enumerate(KINDS if not p.sae_dir else ()):
        x = acts[kind].reshape(-1, acts[kind].shape[-1]).float()
        cfg = SaeConfig(expansion_factor=p.expansion, k=p.k)
        ts0 = time.perf_counter()
        sae, st = train_sae(x, x.shape[-1], cfg, epochs=p.epochs, batch_size=p.batch_size, lr=p.lr,
                            auxk_alpha=p.auxk_alpha, dead_after_tokens=p.dead_after_tokens, seed=p.seed + j,
                            progress=Subprogress(ctx, 0.35 + 0.2 * j, 0.55 + 0.2 * j))
        sae.save_to_disk(d / kind, extra={"hookpoint": hook_of(p, kind), "purpose": f"{kind} concepts",
                                          "training_data": f"minicanvas anchor prompts ({len(anchors)}) × {p.steps} steps"})
        with torch.no_grad():
            l0 = float((sae.encode(x[:4096]) > 0).sum(-1).float().mean())
        reports.append(SaeReport(kind=kind, hook=hook_of(p, kind), d_in=sae.d_in, num_latents=sae.num_latents, k=sae.cfg.k,
                                 fvu=st.fvu, l0=l0, dead_fraction=st.dead_fraction, tokens=st.tokens, steps=st.steps,
                                 seconds=time.perf_counter() - ts0))
        curves[kind] = st.curve
    del acts
    # 3. Concept statistics: validation prompts (new colours and seeds), SAE latents and raw channels
    #    averaged over spatial positions → μ [P, T, n] per hook point.
    ctx.progress(0.75, "computing concept statistics μ(i, t, c)")
    val = anchor_prompts(p, p.stats_seeds, offset=5)
    vpath = acts_path(p, "validation")
    if vpath.exists():
        vt = _load_tensors(vpath)
        raw, ts = {h: vt[h].float() for h in hooks}, vt["timesteps"]
    else:
        raw, ts = collect(pipe, [v[0] for v in val], hooks, p.steps, p.guidance, p.seed + 7919, Subprogress(ctx, 0.75, 0.97))
        vpath.parent.mkdir(parents=True, exist_ok=True)
        _save_tensors(vpath, {**raw, "timesteps": ts})
    labels = {"style": torch.tensor([v[2] for v in val]), "object": torch.tensor([v[1] for v in val])}
    per_prompt = {}
    for kind in KINDS:
        sae = TopKSae.load_from_disk(d / kind)
        a = raw[hook_of(p, kind)]  # [P, T, HW, C]
        with torch.no_grad():
            z = sae.encode(a.reshape(-1, a.shape[-1])).reshape(a.shape[0], a.shape[1], a.shape[2], -1)
        per_prompt[f"mu_{kind}"] = z.mean(2)
        per_prompt[f"raw_{kind}"] = a.clamp_min(0).mean(2)  # the same statistic on raw (rectified) channels
    _save_tensors(d / "stats.safetensors", concept_statistics(per_prompt, labels, ts))
    ref = None
    try:
        ref = _curve_plot(ctx, curves) if curves else None
    except Exception:  # plotting is a nicety
        pass
    res = BuildResult(key=build_key(p), cached=False, saes=reports, n_anchor_prompts=len(anchors),
                      n_stats_prompts=len(val), timesteps=len(ts), seconds=time.perf_counter() - t0, curve_plot=ref,
                      curves={k: c[:: max(1, len(c) // 400)] for k, c in curves.items()})
    done.write_text(res.model_dump_json())
    _BUNDLES.pop(build_key(p), None)
    ctx.progress(1.0, f"built in {res.seconds:.0f} s")
    return res


def concept_statistics(per_prompt: dict[str, torch.Tensor], labels: dict[str, torch.Tensor], ts: torch.Tensor) -> dict:
    """μ(i, t, c): the per-prompt statistics [P, T, n] averaged over the prompts of each concept c → one row per
    concept (``label_<kind>`` = its concept index). The statistics prompts are a full object × style × colour design,
    so every concept has the same number of prompts and the mean over the other concepts' rows equals the mean over
    their prompts: the importance scores are those of the per-prompt tensors, in a file ~P/C times smaller."""
    out = {"timesteps": ts}
    for kind, lab in labels.items():
        concepts, counts = lab.unique(return_counts=True)
        if len(set(counts.tolist())) != 1:
            raise ValueError(f"unbalanced {kind} statistics prompts {dict(zip(concepts.tolist(), counts.tolist()))}")
        out[f"label_{kind}"] = concepts
        for name in ("mu", "raw"):
            x = per_prompt[f"{name}_{kind}"].float()
            out[f"{name}_{kind}"] = torch.stack([x[lab == c].mean(0) for c in concepts])
    return out


def curve_figure(curves: dict[str, list[float]], steps: dict[str, int] | None = None):
    """FVU per training step; ``steps``: the run's step count per SAE when ``curves`` keep every few steps only."""
    import matplotlib

    matplotlib.use("Agg")

    fig, ax = subplots(figsize=(5, 3))
    for kind, c in curves.items():
        n = (steps or {}).get(kind, len(c))
        ax.plot(np.linspace(1, n, len(c)), c, label=f"{kind} SAE")
    ax.set_xlabel("step")
    ax.set_ylabel("FVU (BatchTopK)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("SAE training")
    return fig


def _curve_plot(ctx, curves: dict[str, list[float]]) -> str:
    return ctx.artifacts.save_figure("sae_training.png", curve_figure(curves))


def built_summary(params: BuildParams | dict | None = None) -> tuple[Path | None, BuildResult] | None:
    """The finished build of these settings (built here or installed from the release; None when neither):
    its training-curve PNG (drawn from the record's FVU curves into the artifacts folder, which the web app
    serves; redrawn if housekeeping removed it) and its record."""
    p = resolve_build(params)
    if not ensure_built(p):
        return None
    d = build_dir(p)
    res = BuildResult.model_validate_json((d / "build.json").read_text())
    png = get_settings().artifacts_dir / "saeuron-builds" / f"training_curve_{d.name}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    if res.curves and not png.exists():
        tmp = png.with_suffix(f".{os.getpid()}.tmp.png")
        curve_figure(res.curves, {r.kind: r.steps for r in res.saes}).savefig(tmp, dpi=100, bbox_inches="tight")
        tmp.replace(png)  # atomic: two page loads never serve a half-written file
    return (png if png.exists() else None), res


# ---------------------------------------------------------------------------- loading a build


@dataclass
class Stats:
    mu: torch.Tensor  # [R, T, n] SAE latents: one row per concept (or per prompt, in builds before the release)
    raw: torch.Tensor  # [R, T, C] rectified channels
    labels: torch.Tensor  # [R] concept index (into STYLES or OBJECTS)
    timesteps: torch.Tensor  # [T]


@dataclass
class Bundle:
    params: BuildParams
    pipe: object
    saes: dict[str, TopKSae]
    stats: dict[str, Stats]


_BUNDLES: dict[str, Bundle] = {}


def load_bundle(params: BuildParams | dict | None = None, ctx=None) -> Bundle:
    p = resolve_build(params)
    key = build_key(p)
    if key in _BUNDLES:
        return _BUNDLES[key]
    d = build_dir(p)
    if not ensure_built(p, ctx):
        raise NotBuilt("no SAE and concept statistics for these settings yet: press 'Train SAE & statistics' "
                       "(the saeuron 'build' job) first")
    st = _load_tensors(d / "stats.safetensors")
    stats = {k: Stats(mu=st[f"mu_{k}"].float(), raw=st[f"raw_{k}"].float(), labels=st[f"label_{k}"].long(),
                      timesteps=st["timesteps"].float()) for k in KINDS}
    saes = {k: TopKSae.load_from_disk(d / k) for k in KINDS}
    b = Bundle(params=p, pipe=get_pipe(ctx), saes=saes, stats=stats)
    _BUNDLES[key] = b
    return b

"""``make models`` / ``python -m engines.release_models``: build, check and publish the model release.

    python -m engines.release_models list                 # what the release holds (sizes, metrics)
    python -m engines.release_models verify               # sha256 of every shipped file
    python -m engines.release_models build [TARGET ...]   # retrain from scratch, check, write release/
    python -m engines.release_models publish [TARGET ...] # ship what is cached (already trained), measured

Targets: ``zoo/clip``, ``zoo/judge_object``, ``zoo/judge_style``, ``zoo/vae``, ``zoo/t2i``, ``object_audio``
(its CLIP, base encoders, AudioLDM analogue and the dot / additive diffusion models), ``pde_staggered``
(4 surrogate variants × 3 seeds per problem, p4m/M with pushforward), ``saeuron`` (the default setting's
two TopK SAEs and concept statistics on the zoo's text-to-image model); none = all, in dependency order. ``build`` trains with ``PAPERLAB_RELEASE=off`` in a fresh data directory (``--data-dir``,
default a new folder under ``~/.cache/paperlab/models-build/``), so nothing comes from the release or an
old cache; then it measures the held-out metrics, compares them with the manifest being replaced
(``engines.common.zoo.heldout.TOLERANCE``) and publishes. Exit status 1 when a metric moved beyond its
tolerance (the new files are written anyway: review with ``git diff release/`` and keep or revert).
Weights are stored in float16 when that moves no held-out metric beyond ``HALF_TOLERANCE``, else float32.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ZOO_ORDER = ["clip", "judge_object", "judge_style", "vae", "t2i"]
TARGETS = [f"zoo/{n}" for n in ZOO_ORDER] + ["object_audio", "pde_staggered", "saeuron"]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _progress(label: str):
    last = [0.0]

    def report(fraction: float, message: str) -> None:
        if time.time() - last[0] > 20 or fraction >= 1:
            last[0] = time.time()
            _say(f"  [{fraction:5.1%}] {label}: {message}")

    return report


# ----------------------------------------------------------------------------- the zoo


def _judges() -> dict:
    from engines.common import zoo

    return {t: zoo.load(f"judge_{t}") for t in ("object", "style")}


def _zoo_measure(name: str, d: Path) -> dict:
    from engines.common.zoo import catalog, heldout

    mod = __import__(f"engines.common.zoo.{catalog.entry(name).module}", fromlist=["load"])
    model = mod.load(d, None, "cpu")
    return heldout.measure(name, model, _judges() if name in ("vae", "t2i") else None)


def publish_zoo(name: str, config: dict | None = None, label: str = "") -> list[str]:
    """Publish the cached zoo model ``name`` (profile default, or ``config`` overrides) → problems vs the old manifest."""
    from engines.common import release, zoo
    from engines.common.zoo import catalog, heldout

    cfg = catalog.resolve_config(name, config)
    h = catalog.config_hash(name, cfg)
    d = zoo.model_dir(name, cfg)
    meta = json.loads((d / "zoo.json").read_text())
    old = release.manifest("zoo", f"{name}/{h}")
    _say(f"measuring {name} ({h}) on held-out data")
    m32 = _zoo_measure(name, d)
    _say(f"  float32: {m32}")
    record = {k: meta.get(k) for k in ("train_seconds", "train_cpu_seconds", "threads", "built_at", "code")}
    record["code"] = record["code"] or os.environ.get("PAPERLAB_RELEASE_CODE") or release.code_version()
    record.update(steps=cfg.steps if hasattr(cfg, "steps") else None, hardware=meta.get("hardware") or release.hardware(),
                  build_metrics=meta.get("metrics", {}))
    common = dict(config=cfg.model_dump(mode="json"), record=record, label=label or name,
                  rebuild=f"make models MODELS=zoo/{name}" if not config else f"python -m engines.common.zoo build {name} --force",
                  extra={"entry_version": catalog.entry(name).version, "curve": meta.get("curve")})
    release.publish("zoo", f"{name}/{h}", d, metrics=m32, half=True, **common)
    with tempfile.TemporaryDirectory() as tmp:
        release.install("zoo", f"{name}/{h}", Path(tmp) / "m")
        m16 = _zoo_measure(name, Path(tmp) / "m")
    moved = heldout.compare(m16, m32, heldout.HALF_TOLERANCE)
    _say(f"  float16: {m16}" + (f" (moved: {moved}; shipping float32)" if moved else " (no metric moved: shipping float16)"))
    if moved:
        release.publish("zoo", f"{name}/{h}", d, metrics=m32, half=False, **common)
    else:  # the manifest's metrics are those of the shipped (float16) files
        release.update_manifest("zoo", f"{name}/{h}", metrics=m16, metrics_float32=m32)
    return heldout.compare(m16 if not moved else m32, old["metrics"]) if old else []


# ----------------------------------------------------------------------------- object_audio


def build_object_audio() -> None:
    import torch

    from engines.object_audio import train as T

    torch.set_num_threads(max(1, torch.get_num_threads()))
    for att in ("dot", "additive"):
        T.ensure_trained(*T.default_configs(att), ctx=_progress(f"object_audio {att}"))


def _object_audio_base_metrics(b) -> dict:
    """Held-out: the classifier's accuracy and the mel autoencoder's L1 on fresh single-source clips."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from engines.object_audio import sounds
    from engines.object_audio.bundle import load_base

    base = load_base(b)
    rng = np.random.default_rng([b.seed + 77_000, 5])
    n = 20
    labels = np.repeat(np.arange(len(sounds.CLASSES)), n)
    mel = sounds.log_mel(np.stack([0.9 * sounds.class_clip(sounds.CLASSES[c], rng) for c in labels]))
    with torch.no_grad():
        pred = base.cls(mel).argmax(1).numpy()
        l1 = float(F.l1_loss(base.ae.decode(base.ae.encode(mel)), mel))
    return {"classifier_accuracy": float((pred == labels).mean()), "ae_heldout_mae": l1}


def publish_object_audio() -> list[str]:
    """Ship object_audio's models (and the zoo CLIP it reads patch features from), keyed by its cache dirs."""
    from engines.common import release
    from engines.common.zoo import heldout
    from engines.object_audio import train as T

    problems = publish_zoo("clip", T.CLIP_SHORT, label="clip for object_audio (4-px patches, 300 steps × 64)")
    b, dot = T.default_configs("dot")
    _, add = T.default_configs("additive")
    items = [
        (T.base_dir(b), "object_audio base: tiny CLAP, mel autoencoder, audio classifier", _object_audio_base_metrics(b)),
        (T.pretrain_dir(b, dot), "object_audio stage 1: AudioLDM analogue (UNet conditioned on CLAP audio)", None),
        (T.diffusion_dir(b, dot), "object_audio stage 2: dot-product object attention + UNet (the paper)", None),
        (T.diffusion_dir(b, add), "object_audio stage 2: additive attention + UNet (ablation)", None),
    ]
    for d, label, metrics in items:
        if not (d / "meta.json").exists():
            _say(f"  {d.name}: not trained, skipped")
            continue
        meta = json.loads((d / "meta.json").read_text())
        if metrics is None:  # diffusion models: their final training loss (reported; the benchmark measures them)
            metrics = {"final_loss": meta["final_loss"]}
            if "attention_var" in meta:
                metrics["attention_var"] = meta["attention_var"]
        old = release.manifest("object_audio", d.name)
        record = {"train_seconds": meta.get("train_s"), "code": release.code_version(), "hardware": release.hardware()}
        release.publish("object_audio", d.name, d, config=meta.get("config", {}), record=record, metrics=metrics,
                        half=False, label=label, rebuild="make models MODELS=object_audio",
                        extra={"code_version": T.CODE_VERSION, "curve": meta.get("loss_curve")})
        _say(f"  published {d.name}: {metrics}")
        if old:
            problems += [f"{d.name} {p}" for p in heldout.compare(
                metrics, old["metrics"], {**heldout.TOLERANCE, "accuracy": heldout.TOLERANCE["accuracy"]})]
    return problems


# ----------------------------------------------------------------------------- pde_staggered


def _pde_items():
    """The surrogates the tab and the benchmark use: 4 variants × 3 seeds per problem, plus p4m/M with pushforward."""
    from engines.pde_staggered.config import sizes
    from engines.pde_staggered.models import VARIANTS

    for problem in ("swe", "ins"):
        sz = sizes(problem)
        for seed in range(3):
            for v in VARIANTS:
                yield v, sz, seed, False, False, problem
        if problem == "swe":
            yield "p4m_M", sz, 0, True, False, problem


def build_pde_staggered() -> None:
    from engines.pde_staggered.training import train_variant

    for v, sz, seed, pf, aug, problem in _pde_items():
        train_variant(v, sz, seed, pf, aug, progress=_progress(f"pde_staggered {problem} {v} seed {seed}"), problem=problem)


def publish_pde_staggered() -> list[str]:
    """Ship every cached surrogate of ``_pde_items`` (keyed by its cache file's stem); metric: best validation loss."""
    from engines.common import release
    from engines.common.zoo import heldout
    from engines.pde_staggered.training import MODEL_VERSION, export_for_release, model_path

    problems = []
    for v, sz, seed, pf, aug, problem in _pde_items():
        path = model_path(v, sz, seed, pf, aug, problem)
        if not path.exists():
            _say(f"  {path.stem}: not trained, skipped")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rec = export_for_release(path, tmp)
            metrics = {"best_val_loss": rec["best_val"]}
            old = release.manifest("pde_staggered", path.stem)
            release.publish(
                "pde_staggered", path.stem, Path(tmp), config={"sizes": asdict(sz), "variant": v, "seed": seed,
                                                               "pushforward": pf, "augment": aug, "problem": problem},
                record={"steps": sz.steps, "train_seconds": rec.get("seconds"), "best_step": rec.get("best_step"),
                        "code": release.code_version(), "hardware": release.hardware()},
                metrics=metrics, half=False, label=f"pde_staggered {problem} {v} seed {seed}" + (" pushforward" if pf else ""),
                rebuild="make models MODELS=pde_staggered",
                extra={"model_version": MODEL_VERSION, "curve": {"val_name": "validation loss (10% of the training trajectories)",
                                                                 "val": rec.get("val")}})
        _say(f"  published {path.stem}: {metrics}")
        if old:
            problems += [f"{path.stem} {p}" for p in heldout.compare(metrics, old["metrics"])]
    return problems


# ----------------------------------------------------------------------------- saeuron


def build_saeuron() -> None:
    from engines.common.context import LocalContext
    from engines.saeuron.pipeline import build

    report = _progress("saeuron")
    build(None, LocalContext(on_progress=lambda f, m, _p=None: report(f, m)))


def _saeuron_heldout(d: Path, p) -> dict:
    """FVU of each SAE in ``d`` on the validation activations (new colours and seeds, never trained on)."""
    import torch

    from engines.saeuron.pipeline import KINDS, _load_tensors, acts_path, hook_of
    from engines.saeuron.sae import TopKSae, evaluate_fvu

    vt = _load_tensors(acts_path(p, "validation"))
    out = {}
    for kind in KINDS:
        a = vt[hook_of(p, kind)].float()
        with torch.no_grad():
            out[f"{kind}_heldout_fvu"] = round(evaluate_fvu(TopKSae.load_from_disk(d / kind), a.reshape(-1, a.shape[-1])), 5)
    return out


def publish_saeuron() -> list[str]:
    """Ship the default setting's SAEs and statistics, keyed by their build key (which names the t2i model)."""
    from engines.common import release
    from engines.common.zoo import heldout
    from engines.saeuron.pipeline import BuildResult, build_dir, resolve_build

    p = resolve_build(None)
    d = build_dir(p)
    if not (d / "build.json").exists():
        _say(f"  saeuron {d.name}: not built, skipped")
        return []
    res = BuildResult.model_validate_json((d / "build.json").read_text())
    old = release.manifest("saeuron", d.name)
    m32 = _saeuron_heldout(d, p)
    common = dict(config=p.model_dump(mode="json"), label="saeuron: TopK SAEs (style, object hooks) + concept statistics",
                  record={"train_seconds": round(res.seconds, 1), "code": release.code_version(), "hardware": release.hardware(),
                          "sae_steps": {s.kind: s.steps for s in res.saes}, "tokens": {s.kind: s.tokens for s in res.saes}},
                  rebuild="make models MODELS=saeuron", extra={"curve": res.curves})
    with tempfile.TemporaryDirectory() as tmp:  # the build record without its job-local training plot
        src = Path(tmp) / "src"
        shutil.copytree(d, src, ignore=shutil.ignore_patterns("*.lock", release.INSTALLED))
        (src / "build.json").write_text(res.model_copy(update={"curve_plot": None, "cached": False}).model_dump_json())
        release.publish("saeuron", d.name, src, metrics=m32, half=True, **common)
        release.install("saeuron", d.name, Path(tmp) / "m")
        m16 = _saeuron_heldout(Path(tmp) / "m", p)
        moved = heldout.compare(m16, m32, heldout.HALF_TOLERANCE)
        _say(f"  float32 {m32}; float16 {m16}" + (f" (moved: {moved}; shipping float32)" if moved else ""))
        if moved:
            release.publish("saeuron", d.name, src, metrics=m32, half=False, **common)
    return heldout.compare(m32, old["metrics"]) if old else []


# ----------------------------------------------------------------------------- CLI


def _expand(targets: list[str]) -> list[str]:
    if not targets:
        return list(TARGETS)
    out = []
    for t in targets:
        t = t if t in TARGETS or t.startswith("zoo/") else (f"zoo/{t}" if f"zoo/{t}" in TARGETS else t)
        if t not in TARGETS:
            raise SystemExit(f"unknown release target {t!r}; choose from {TARGETS}")
        out.append(t)
    return [t for t in TARGETS if t in out]


def _build(target: str) -> None:
    from engines.common import zoo

    if target.startswith("zoo/"):
        name = target.split("/", 1)[1]
        zoo.build(name, ctx=_progress(name))
    elif target == "object_audio":
        build_object_audio()
    elif target == "pde_staggered":
        build_pde_staggered()
    elif target == "saeuron":
        build_saeuron()


def _publish(target: str) -> list[str]:
    if target.startswith("zoo/"):
        return publish_zoo(target.split("/", 1)[1])
    return {"object_audio": publish_object_audio, "pde_staggered": publish_pde_staggered,
            "saeuron": publish_saeuron}[target]()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engines.release_models", description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["list", "verify", "build", "publish"])
    ap.add_argument("targets", nargs="*")
    ap.add_argument("--data-dir", default="", help="build: where to train (default: a fresh folder)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args(argv)

    from engines.common import release

    if args.cmd in ("list", "verify"):
        rel = release.read_release()
        _say(f"release v{rel.get('version', 0)} in {release.release_dir()}: {rel.get('bytes', 0) / 1e6:.1f} MB")
        bad = 0
        for key, a in rel.get("artifacts", {}).items():
            kind, k = key.split("/", 1)
            line = f"  {key:<48} {a['bytes'] / 1e6:6.2f} MB  {a['label']}"
            if args.cmd == "verify":
                try:
                    release.verify(kind, k)
                    line += "  ok"
                except release.ReleaseError as e:
                    line += f"  FAILED: {e}"
                    bad += 1
            _say(line)
        return 1 if bad else 0

    if os.environ.get("PAPERLAB_PROFILE", "default") == "test":
        raise SystemExit("the release holds the default profile's models: unset PAPERLAB_PROFILE")
    targets = _expand(args.targets)
    if args.cmd == "build":
        data_dir = args.data_dir or str(Path.home() / ".cache" / "paperlab" / "models-build" / time.strftime("%Y%m%d-%H%M%S"))
        os.environ["PAPERLAB_DATA_DIR"] = data_dir
        os.environ["PAPERLAB_RELEASE"] = "off"  # train from scratch: nothing from the release
        from engines.common.settings import reset_settings

        reset_settings()
        _say(f"training from scratch in {data_dir}")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    problems = {}
    for t in targets:
        if args.cmd == "build":
            _say(f"== building {t}")
            _build(t)
        os.environ["PAPERLAB_RELEASE"] = "on"  # publishing reads / writes the release
        _say(f"== publishing {t}")
        p = _publish(t)  # PAPERLAB_RELEASE_CODE: the commit that trained it, when its build record predates the field
        if args.cmd == "build":
            os.environ["PAPERLAB_RELEASE"] = "off"
        if p:
            problems[t] = p
    rel = release.read_release()
    _say(f"release v{rel['version']}: {rel['bytes'] / 1e6:.1f} MB in {len(rel['artifacts'])} artifacts")
    for t, p in problems.items():
        _say(f"MISMATCH {t}: " + "; ".join(p))
    if not problems:
        _say("every re-measured metric is within tolerance of the manifest it replaced")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

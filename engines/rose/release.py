"""The shipped pre-trained model: ``python -m engines.rose.release`` rebuilds release/rose/<key>/rose_tiny.*.

One command, fixed seed: pre-train the tiny ROSE (≈ 0.3M parameters) on the synthetic multi-domain corpus plus
the bundled real series that are not held out, measure the register's usage (perplexity, NMI with the generator
family), write safetensors + a JSON manifest (config, recipe, loss curve, sha256), then the tab's worked
example (``example.json``), computed with the released weights.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from engines.common.threads import torch_threads

from . import data, training
from .checkpoint import RELEASE_DIR, RELEASE_KIND, load_release, save_release
from .model import ROSE

RECIPE = {"size": "tiny", "steps": 30000, "batch_size": 48, "lr": 2e-3, "n_series": 6000, "seed": 0,
          "mask_mode": "freq_multi", "register": True, "max_seconds": None}
EXAMPLE = {"series": "airline", "horizon": 24, "few_shot": True}


@torch.no_grad()
def register_usage(model: ROSE, n_per_family: int = 200, seed: int = 123) -> dict:
    """Code index of fresh synthetic series (unseen seed): usage per family, perplexity, NMI(code; family)."""
    from sklearn.metrics import normalized_mutual_info_score

    cfg = model.cfg
    if not model.T:
        return {}
    rng = np.random.default_rng(seed)
    ys, fam = [], []
    for f in range(len(data.FAMILIES)):
        for _ in range(n_per_family):
            ys.append(data.synth_series(f, cfg.context, rng))
            fam.append(f)
    _, info = training.predict_many(model, ys, min(cfg.horizons), return_info=True)
    codes = info["codes"][:, 0]
    K = cfg.n_embedding
    counts = np.zeros((len(data.FAMILIES), K), int)
    np.add.at(counts, (np.array(fam), codes), 1)
    p = counts.sum(0) / counts.sum()
    perplexity = float(np.exp(-(p[p > 0] * np.log(p[p > 0])).sum()))
    return {"perplexity": perplexity, "nmi_family": float(normalized_mutual_info_score(fam, codes)),
            "codes_used": int((counts.sum(0) > 0).sum()), "usage_by_family": counts.tolist(),
            "families": list(data.FAMILIES)}


_CORPORA: dict = {}


def pretrain_from_recipe(recipe: dict, on_progress=None) -> tuple[ROSE, dict]:
    over = {} if recipe.get("register", recipe.get("with_register", True)) else {"n_embedding": 0}
    cfg = training.config_for(recipe["size"], mask_mode=recipe["mask_mode"], **over)
    key = (recipe["n_series"], recipe["size"], recipe["seed"], recipe.get("real", True))
    if key not in _CORPORA:  # the ablation's variants share one corpus per seed
        _CORPORA.clear()
        _CORPORA[key] = training.build_corpus(recipe["n_series"], cfg, recipe["seed"], real=recipe.get("real", True))
    corpus = _CORPORA[key]
    t0 = time.perf_counter()
    model, hist = training.pretrain(cfg, corpus, recipe["steps"], recipe["batch_size"], recipe["lr"],
                                    recipe["seed"], on_progress=on_progress, max_seconds=recipe.get("max_seconds"))
    record = {"recipe": recipe, "steps_run": hist[-1]["step"] if hist else 0,
              "train_seconds": round(time.perf_counter() - t0, 1), "loss_curve": hist,
              "corpus": {"synthetic_series": len(corpus.synth), "families": list(data.FAMILIES),
                         "real_series": sorted(corpus.real), "held_out": list(data.HELD_OUT)}}
    return model, record


def release_key(recipe: dict | None = None) -> str:
    """The model's key in the project release: a hash of the recipe and the resulting configuration."""
    import hashlib

    recipe = {k: v for k, v in (recipe or RECIPE).items() if k != "max_seconds"}  # a budget, not the model
    cfg = training.config_for(recipe["size"], mask_mode=recipe["mask_mode"])
    blob = json.dumps({"recipe": recipe, "config": cfg.to_dict()}, sort_keys=True).encode()
    return f"{recipe['size']}-{hashlib.sha256(blob).hexdigest()[:12]}"


def build(steps: int | None = None) -> dict:
    """Pre-train with the recipe, measure, publish into release/rose/<key>/ (engines.common.release)."""
    import tempfile

    from engines.common import release

    from .experiment import evaluate_zero_shot, mean_metric

    recipe = dict(RECIPE, **({"steps": steps} if steps else {}))
    with torch_threads(1):
        model, record = pretrain_from_recipe(recipe, on_progress=lambda f, m: print(f"{f:5.1%} {m}", flush=True))
        record["register"] = register_usage(model)
        zs = evaluate_zero_shot(model)
    record["heldout_zero_shot"] = zs
    record["convergence"] = convergence(record["loss_curve"])
    metrics = {"zero_shot_mean_mase": round(mean_metric(zs, "mase"), 4),
               "zero_shot_mean_mse": round(mean_metric(zs, "mse"), 4),
               "register_perplexity": round(record["register"]["perplexity"], 3),
               "register_nmi_family": round(record["register"]["nmi_family"], 4)}
    with tempfile.TemporaryDirectory() as tmp:
        manifest = save_release(model, Path(tmp) / "rose_tiny", record)
        release.publish(RELEASE_KIND, release_key(recipe), Path(tmp), config=manifest["config"],
                        record={k: v for k, v in record.items() if k != "loss_curve"}, metrics=metrics, half=False,
                        label=f"rose tiny ({manifest['n_params'] / 1e6:.2f}M) pre-trained",
                        rebuild="python -m engines.rose.release")
    if recipe == RECIPE:  # a --steps experiment publishes beside the shipped model, never in its place
        _drop_superseded(release_key(recipe))
    print(json.dumps({**metrics, "convergence": record["convergence"]}), flush=True)
    return manifest


def convergence(loss_curve: list[dict]) -> dict:
    """Median logged total loss (50-step means) over the 60-80 % and the 80-100 % stretches of the schedule and the
    relative change between them (release v2, 6,000 steps: −4.2 %, not converged)."""
    if not loss_curve:
        return {}
    last = loss_curve[-1]["step"]
    a = [r["total"] for r in loss_curve if 0.6 * last < r["step"] <= 0.8 * last]
    b = [r["total"] for r in loss_curve if r["step"] > 0.8 * last]
    if not a or not b:
        return {}
    ma, mb = float(np.median(a)), float(np.median(b))  # medians: one odd batch does not move them
    return {"loss_60_80": round(ma, 4), "loss_80_100": round(mb, 4), "relative_change": round((mb - ma) / ma, 4)}


def _drop_superseded(key: str) -> list[str]:
    """Remove the other ROSE models from the release (folders and RELEASE.json entries): the tab loads the one
    whose key matches ``RECIPE``, and a stale folder would ship a model no code loads."""
    import shutil

    from engines.common import release

    keep = f"{RELEASE_KIND}/{key}"
    rel = release.read_release()
    arts = rel.get("artifacts", {})
    stale = sorted({k for k in arts if k.startswith(RELEASE_KIND + "/") and k != keep}
                   | {f"{RELEASE_KIND}/{d.name}" for d in (release.release_dir() / RELEASE_KIND).glob("*")
                      if d.is_dir() and d.name != key})
    for k in stale:
        shutil.rmtree(release.release_dir() / k, ignore_errors=True)
        arts.pop(k, None)
        print(f"removed the superseded release/{k} (commit the deletion with the new model)", flush=True)
    if stale:
        rel["bytes"] = sum(a["bytes"] for a in arts.values())
        (release.release_dir() / release.RELEASE_FILE).write_text(json.dumps(rel, indent=1))
    return stale


def build_example() -> dict:
    """The tab's worked example, computed from the released weights (so the tab opens on a result)."""
    from .experiment import forecast

    from .plots import forecast_figure, register_figure

    res = forecast(dict(EXAMPLE)).model_dump(mode="json")
    (RELEASE_DIR / "example.json").write_text(json.dumps(res))
    forecast_figure(res).savefig(RELEASE_DIR / "example_forecast.png", dpi=90)
    register_figure(res).savefig(RELEASE_DIR / "example_register.png", dpi=90)
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--example-only", action="store_true")
    a = ap.parse_args()
    if not a.example_only:
        build(a.steps)
    load_release()  # verifies the sha256 (and engines.release_models verify checks the release's manifest)
    build_example()

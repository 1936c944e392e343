"""The tab's shipped models: ``python -m engines.moex.release`` rebuilds release/moex/<key>/.

Seed-0 chess GPTs with the default recipe: dense GELU (GPT-2 MLP), TopK MoE (Switch, GELU) and MoE-X, each with
its analysis (every unit's best board-state properties, every property's best unit, on the labelling split),
plus the SAE trained on the dense model's probed layer at MoE-X's L0. Loading goes cache → release → train.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch

from engines.common.threads import torch_threads

from . import train as T
from .experiment import (SAE_RECIPE, analysis_record, default_train_config, evaluate, evaluate_acts, feature_mask,
                         probe_sets, public, sae_codes, sae_on_dense)
from .layers import SAE

TAB_VARIANTS = ("dense_gelu", "topk_gelu", "moex")
_LOADED: dict = {}


def _analysis_path(key: str) -> Path:
    return T.moex_dir() / "analysis" / f"{key}.json"


def model_with_analysis(variant: str, progress=None, cancelled=None) -> dict:
    tc = default_train_config(variant, 0)
    model, rec = T.ensure(tc, progress, cancelled)
    f = _analysis_path(tc.key())
    if not f.exists():
        from engines.common import release

        shipped = release.artifact_dir(T.RELEASE_KIND, tc.key()) / "analysis.json"
        if release.manifest(T.RELEASE_KIND, tc.key()) is not None and shipped.exists():
            a = json.loads(shipped.read_text())
        else:
            ev = evaluate(model, rec)
            a = {"analysis": analysis_record(ev), "eval": public(ev)}
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(a))
    a = json.loads(f.read_text())
    return {"model": model, "record": rec, "analysis": a["analysis"], "eval": a["eval"], "key": tc.key()}


def sae_key(dense_key: str) -> str:
    import hashlib

    return "sae-" + hashlib.sha256(json.dumps({"d": dense_key, **SAE_RECIPE}, default=str).encode()).hexdigest()[:10]


def sae_with_analysis(dense: dict, target_l0: float, cancelled=None) -> dict:
    from safetensors.torch import load_file, save_file

    key = sae_key(dense["key"])
    w, a = T.moex_dir() / "models" / f"{key}.safetensors", _analysis_path(key)
    if not w.exists():
        from engines.common import release

        if release.manifest(T.RELEASE_KIND, key) is not None:
            d = release.artifact_dir(T.RELEASE_KIND, key)
            release.verify(T.RELEASE_KIND, key)
            w.parent.mkdir(parents=True, exist_ok=True)
            w.write_bytes((d / "sae.safetensors").read_bytes())
            a.parent.mkdir(parents=True, exist_ok=True)
            a.write_text((d / "analysis.json").read_text())
        else:
            sae, info = sae_on_dense(dense["model"], target_l0, cancelled=cancelled)
            sets = probe_sets(dense["model"].moex_cfg.ctx)
            hs = [sae_codes(sae, T.hidden_at_dots(dense["model"], s)["h"]) for s in sets]
            ev = evaluate_acts(*hs, sets, feature_mask(sets[0]))
            ev.update(val_loss=dense["eval"]["val_loss"], variant="sae", sae=info)
            w.parent.mkdir(parents=True, exist_ok=True)
            sd = {k: v.detach().contiguous() for k, v in sae.state_dict().items()}
            sd["scale"] = torch.tensor(sae.scale)
            save_file(sd, str(w))
            a.parent.mkdir(parents=True, exist_ok=True)
            a.write_text(json.dumps({"analysis": analysis_record(ev), "eval": public(ev)}))
    sd = load_file(str(w))
    scale = float(sd.pop("scale"))
    sae = SAE(sd["w_dec"].shape[1], sd["w_dec"].shape[0])
    sae.load_state_dict(sd)
    sae.scale = scale
    an = json.loads(a.read_text())
    return {"sae": sae.eval(), "analysis": an["analysis"], "eval": an["eval"], "key": key}


def load_tab_models(progress=None, cancelled=None) -> dict:
    """dense_gelu, topk_gelu, moex (+ 'sae' on dense_gelu), cached per process."""
    from engines.common.settings import get_settings

    pk = get_settings().profile
    if pk in _LOADED:
        return _LOADED[pk]
    with torch_threads(1):
        out = {v: model_with_analysis(v, progress, cancelled) for v in TAB_VARIANTS}
        out["sae"] = sae_with_analysis(out["dense_gelu"], out["moex"]["eval"]["l0"], cancelled)
    _LOADED[pk] = out
    return out


def build() -> None:
    """Train (or reuse the cache), analyse and publish the tab's models into release/moex/."""
    from engines.common import release

    models = load_tab_models(progress=lambda f, m: print(f"{f:5.1%} {m}", flush=True))
    for name, m in models.items():
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            if name == "sae":
                src = T.moex_dir() / "models" / f"{m['key']}.safetensors"
                (tmp / "sae.safetensors").write_bytes(src.read_bytes())
                rec = {"sae": m["eval"].get("sae"), "dense": models["dense_gelu"]["key"]}
            else:
                w, j = T._paths(m["key"])
                (tmp / "model.safetensors").write_bytes(w.read_bytes())
                (tmp / "record.json").write_text(j.read_text())
                rec = {k: v for k, v in m["record"].items() if k != "curve"}
            (tmp / "analysis.json").write_text(json.dumps({"analysis": m["analysis"], "eval": m["eval"]}))
            ev = m["eval"]
            release.publish(T.RELEASE_KIND, m["key"], tmp, config=rec.get("config", {}), record=rec,
                            metrics={k: round(float(ev[k]), 4) for k in ("val_loss", "coverage", "reconstruction", "l0")
                                     if ev.get(k) is not None},
                            half=True, label=f"moex: {name} chess GPT (seed 0)" if name != "sae" else
                            "moex: SAE on the dense GELU chess GPT", rebuild="python -m engines.moex.release")
        print(name, json.dumps({k: m["eval"][k] for k in ("val_loss", "coverage", "reconstruction", "l0")
                                if k in m["eval"]}), flush=True)


def missing_tab_models() -> str | None:
    """Why the tab's models cannot be had without training (page loads never train), or None when each of
    them is in this profile's cache or in the model release."""
    from engines.common import release

    keys = {v: default_train_config(v, 0).key() for v in TAB_VARIANTS}
    keys["sae"] = sae_key(keys["dense_gelu"])
    miss = [v for v, key in keys.items() if release.manifest(T.RELEASE_KIND, key) is None
            and not (T.moex_dir() / "models" / f"{key}.safetensors").exists()]
    if not miss:
        return None
    return (f"the tab's models of this profile ({', '.join(miss)}) are neither trained nor in the release, and page "
            f"loads never train. Restore the release with `git checkout -- release/moex` (default profile), or "
            f"Train them once: press **Show position** (a background job), then reload the page.")


if __name__ == "__main__":
    build()

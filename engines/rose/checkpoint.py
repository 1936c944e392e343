"""Weights in and out: the shipped release (safetensors + JSON manifest) and the authors' checkpoints.

The released ``zero-shot.pth`` / ``full-shot.pth`` of decisionintelligence/ROSE are plain state dicts of
``src/models/ROSE*.py``. ``load_official`` maps their keys onto this implementation with a table, infers the
configuration (d_model, patch length, context, num_token, codebook size, layers, d_ff, horizons, heads) from
tensor shapes, and fails loudly on any mismatch instead of skipping tensors (the released ``transfer_weights``
silently drops mismatched ones). Files are read with ``torch.load(weights_only=True)`` or safetensors.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import torch

from .model import ROSE, RoseConfig

RELEASE_DIR = Path(__file__).resolve().parent / "release"  # the tab's worked example (JSON + PNGs)
RELEASE_KIND = "rose"


def default_release() -> Path:
    """Stem of the shipped model in the project's model release: release/rose/<key>/rose_tiny.*"""
    from engines.common import release

    from .release import release_key

    return release.artifact_dir(RELEASE_KIND, release_key()) / "rose_tiny"

# ----------------------------------------------------------------------------- our release format


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_release(model: ROSE, stem: Path, record: dict) -> dict:
    """Write ``<stem>.safetensors`` and ``<stem>.json`` (config, training record, sha256)."""
    from safetensors.torch import save_file

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    weights = stem.with_suffix(".safetensors")
    state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()
             if not k.startswith("tower_pred.")}  # the prediction tower is a copy of the reconstruction tower
    save_file(state, str(weights))
    manifest = {"name": stem.name, "method": "rose", "config": model.cfg.to_dict(), "weights": weights.name,
                "sha256": sha256(weights), "n_params": sum(p.numel() for p in model.parameters()), **record}
    stem.with_suffix(".json").write_text(json.dumps(manifest, indent=1))
    return manifest


def load_release(stem: Path | str | None = None, verify: bool = True) -> tuple[ROSE, dict]:
    from safetensors.torch import load_file

    stem = Path(stem) if stem else default_release()
    if stem.suffix in (".json", ".safetensors"):
        stem = stem.with_suffix("")
    mpath = stem.with_suffix(".json")
    if not mpath.exists():
        raise FileNotFoundError(f"no ROSE release at {stem} (expected {mpath.name} and its .safetensors); "
                                "build it with `python -m engines.rose.release`")
    manifest = json.loads(mpath.read_text())
    weights = stem.parent / manifest["weights"]
    if verify and sha256(weights) != manifest["sha256"]:
        raise ValueError(f"{weights.name}: sha256 does not match the manifest (corrupt or replaced file)")
    model = ROSE(RoseConfig.from_dict(manifest["config"]))
    state = load_file(str(weights))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith("tower_pred.")]
    if missing or unexpected:
        raise ValueError(f"release {stem.name} does not match its config: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    model.copy_tower()
    model.eval()
    return model, manifest


# ----------------------------------------------------------------------------- the authors' checkpoints

_LAYER = [  # sub-layer names inside one TSTEncoderLayer
    (r"self_attn\.W_Q\.", "q."), (r"self_attn\.W_K\.", "k."), (r"self_attn\.W_V\.", "v."),
    (r"self_attn\.to_out\.0\.", "o."), (r"norm_attn\.1\.", "norm_attn.bn."), (r"ff\.0\.", "ff1."),
    (r"ff\.3\.", "ff2."), (r"norm_ffn\.1\.", "norm_ffn.bn."),
]
_TOP = [
    (r"^backbone\.W_pos$", "pos"),
    (r"^backbone\.encoder\.layers\.(\d+)\.(.+)$", r"encoder.layers.\1.\2"),
    (r"^encoder_reconstruct\.encoder\.layers\.(\d+)\.(.+)$", r"tower_rec.layers.\1.\2"),
    (r"^encoder_predict\.encoder\.layers\.(\d+)\.(.+)$", r"tower_pred.layers.\1.\2"),
    (r"^patch_embed\.(weight|bias)$", r"patch_embed.\1"),
    (r"^token_embed\.(weight|bias)$", r"register_proj.\1"),
    (r"^vq_embedding\.weight$", "codebook.weight"),
    (r"^u$", "u"), (r"^v$", "v"),
    (r"^head_reconstruct\.linear\.(weight|bias)$", r"rec_head.\1"),
    (r"^head_(\d+)\.linear\.(weight|bias)$", r"heads.\1.\2"),
]
# Keys with no counterpart: the attention scale (fixed (d/h)^-½, used to infer the head count) and
# ROSE_predict's 21-layer ``backbone_2`` whose output is returned but never used for the forecast.
_IGNORED = [r"\.self_attn\.sdp_attn\.scale$", r"^backbone_2\."]
# Absent from some released variants: initialised fresh (reconstruction head: prediction checkpoints;
# u, v: pre-training checkpoints; prediction tower: re-copied from the reconstruction tower).
_OPTIONAL = ("rec_head.", "u", "v", "tower_pred.")


def map_key(key: str) -> str | None:
    if any(re.search(p, key) for p in _IGNORED):
        return None
    for pat, rep in _TOP:
        if re.match(pat, key):
            out = re.sub(pat, rep, key)
            if ".layers." in out:
                head, tail = out.split(".layers.", 1)
                idx, rest = tail.split(".", 1)
                for p, r in _LAYER:
                    rest = re.sub("^" + p, r, rest)
                out = f"{head}.layers.{idx}.{rest}"
            return out
    raise KeyError(f"checkpoint key {key!r} has no counterpart in this implementation")


def infer_config(state: dict, n_heads: int | None = None, base: RoseConfig | None = None) -> RoseConfig:
    """Configuration from tensor shapes (the scripts' flags disagree with the checkpoints: d_model 128 vs 256,
    num_token 3 vs 1)."""
    def shape(k):
        if k not in state:
            raise ValueError(f"checkpoint lacks {k!r}: not a ROSE state dict")
        return tuple(state[k].shape)

    d, P = shape("patch_embed.weight")
    td, NP = shape("token_embed.weight")
    if td % d or NP % P:
        raise ValueError(f"token_embed {td}×{NP} is inconsistent with d_model {d} and patch length {P}")
    T, N = td // d, NP // P
    K, cd = shape("vq_embedding.weight")
    if cd != td:
        raise ValueError(f"codebook width {cd} ≠ num_token·d_model = {td}")
    if shape("backbone.W_pos")[0] != N + T:
        raise ValueError(f"positional table has {shape('backbone.W_pos')[0]} rows, expected N + T = {N + T}")

    def n_layers(prefix):
        return len({int(m.group(1)) for k in state if (m := re.match(prefix + r"(\d+)\.", k))})

    L_enc, L_tow = n_layers(r"backbone\.encoder\.layers\."), n_layers(r"encoder_reconstruct\.encoder\.layers\.")
    d_ff = shape("backbone.encoder.layers.0.ff.0.weight")[0]
    horizons = sorted(int(m.group(1)) for k in state if (m := re.match(r"^head_(\d+)\.linear\.weight$", k)))
    scale_key = "backbone.encoder.layers.0.self_attn.sdp_attn.scale"
    if scale_key in state:
        heads_from_scale = round(d * float(state[scale_key]) ** 2)
        if n_heads is not None and n_heads != heads_from_scale:
            raise ValueError(f"n_heads {n_heads} disagrees with the checkpoint's attention scale "
                             f"({heads_from_scale} heads)")
        n_heads = heads_from_scale
    base = base or RoseConfig()
    return RoseConfig.from_dict({**base.to_dict(), "context": N * P, "patch_len": P, "d_model": d,
                                 "n_heads": n_heads or 16, "d_ff": d_ff, "n_layers": L_enc,
                                 "tower_layers": L_tow or L_enc, "n_embedding": K, "num_token": T,
                                 "horizons": horizons})


def load_official(src, expected: dict | None = None, n_heads: int | None = None) -> tuple[ROSE, dict]:
    """Load a state dict of the official code (path or dict). ``expected`` (e.g. the flags a script passes:
    {"d_model": 128}) must agree with the shapes, else ValueError. Returns (model, report)."""
    state = src if isinstance(src, dict) else torch.load(src, map_location="cpu", weights_only=True)
    if "model" in state and isinstance(state["model"], dict):
        state = state["model"]
    cfg = infer_config(state, n_heads)
    for k, v in (expected or {}).items():
        got = getattr(cfg, k)
        if (tuple(got) if isinstance(got, (list, tuple)) else got) != (tuple(v) if isinstance(v, list) else v):
            raise ValueError(f"checkpoint has {k} = {got} but the configuration asks for {v}")
    model = ROSE(cfg)
    mapped, ignored = {}, []
    for k, t in state.items():
        m = map_key(k)
        if m is None:
            ignored.append(k)
        else:
            mapped[m] = t
    own = model.state_dict()
    for k, t in mapped.items():
        if k not in own:
            raise ValueError(f"mapped key {k!r} does not exist in the model")
        if tuple(own[k].shape) != tuple(t.shape):
            raise ValueError(f"{k}: checkpoint shape {tuple(t.shape)} ≠ model shape {tuple(own[k].shape)}")
    missing = [k for k in own if k not in mapped]
    hard_missing = [k for k in missing if not k.startswith(_OPTIONAL)]
    if hard_missing:
        raise ValueError(f"checkpoint lacks {len(hard_missing)} tensors, e.g. {hard_missing[:4]}")
    model.load_state_dict(mapped, strict=False)
    model.copy_tower()
    model.eval()
    return model, {"config": cfg.to_dict(), "loaded": len(mapped), "ignored": ignored,
                   "initialised": missing}


def to_official(model: ROSE) -> dict:
    """The inverse mapping: this model's weights in the released key layout (to test the loader)."""
    inv = {}
    cfg = model.cfg
    official = official_key_names(cfg)
    own = model.state_dict()
    for k in official:
        m = map_key(k)
        if m is not None:
            inv[k] = own[m].clone()
        elif k.endswith("sdp_attn.scale"):
            inv[k] = torch.tensor((cfg.d_model // cfg.n_heads) ** -0.5)
    return inv


def official_key_names(cfg: RoseConfig) -> list[str]:
    """Every key of a released ROSE_lowrank state dict for this configuration, spelled as the official code."""
    def layer(prefix, i):
        p = f"{prefix}.layers.{i}."
        keys = [p + "self_attn.sdp_attn.scale"]
        for mod in ("self_attn.W_Q", "self_attn.W_K", "self_attn.W_V", "self_attn.to_out.0", "ff.0", "ff.3"):
            keys += [p + mod + ".weight", p + mod + ".bias"]
        for bn in ("norm_attn.1", "norm_ffn.1"):
            keys += [f"{p}{bn}.{s}" for s in ("weight", "bias", "running_mean", "running_var",
                                                "num_batches_tracked")]
        return keys

    keys = ["backbone.W_pos"]
    for i in range(cfg.n_layers):
        keys += layer("backbone.encoder", i)
    for tower in ("encoder_predict", "encoder_reconstruct"):
        for i in range(cfg.tower_layers):
            keys += layer(f"{tower}.encoder", i)
    keys += ["patch_embed.weight", "patch_embed.bias", "token_embed.weight", "token_embed.bias",
             "vq_embedding.weight", "u", "v", "head_reconstruct.linear.weight", "head_reconstruct.linear.bias"]
    for h in cfg.horizons:
        keys += [f"head_{h}.linear.weight", f"head_{h}.linear.bias"]
    return keys

"""Entry points: ``train_models`` (background job), ``click_to_audio`` (one click → two clips), ``benchmark``."""
from __future__ import annotations

import time

import numpy as np

from engines.common.context import LocalContext
from engines.common.params import validate
from engines.common.threads import torch_threads

from . import generate as G
from . import images as I
from . import segment as SG
from . import sounds
from . import train as T
from .params import ClickParams, TrainParams

SILENT_LEVEL = -0.9


def train_models(params: TrainParams | dict, ctx=None) -> dict:
    """Train (or load) CLAP, the autoencoder, the classifier and the conditional diffusion model."""
    p = validate(TrainParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    b, dc = T.default_configs(p.attention)
    bundle = T.ensure_trained(b, dc, ctx, (0.0, 1.0), force=p.force)
    return dict(attention=p.attention, attention_var=bundle.meta["attention_var"],
                final_loss=bundle.meta["final_loss"], ae_l1=bundle.base.meta["ae_l1"],
                train_s=bundle.meta["train_s"] + bundle.base.meta["train_s"], elapsed_s=time.perf_counter() - t0,
                clip=T.clip_key(), sources={c: sounds.source(c) for c in sounds.CLASSES})


def _clicked_kind(iid: str, mask: np.ndarray | None) -> tuple[str | None, str]:
    """Which scene object the mask covers most (None for uploads) and a note about silent choices."""
    info = I.scene_info(iid)
    if info is None:
        return None, ""
    kinds, masks = info
    if not any(k in sounds.SOUND_CLASSES for k in kinds):
        return None, "This scene has no sounding object: every clip can only be background."
    if mask is None:
        return None, ""
    overlap = [(np.logical_and(mask, m).sum() / max(1, mask.sum()), k) for m, k in zip(masks, kinds)]
    frac, kind = max(overlap)
    if frac < 0.5:
        return None, "The selection is mostly background, which makes no sound in these scenes."
    if kind not in sounds.SOUND_CLASSES:
        return None, f"You selected a silent object ({kind.split(':')[1]}): it has no sound of its own."
    return kind, ""


@torch_threads(1)  # one intra-op thread for tiny-model inference
def click_to_audio(params: ClickParams | dict, ctx=None) -> dict:
    """Segment the clicked object, substitute its mask for the attention, and generate its clip and the
    whole-scene clip (A/B). Returns artifact refs (overlay, figure, two WAVs) and the numbers behind them."""
    import torch

    p = validate(ClickParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    image = I.load(p.image_id)
    mask, seg_note = None, ""
    if p.mode == "mask":
        mask, seg_note = SG.segment(image, p.clicks, p.segmenter, _sam_ckpt(), _sam_type())
        if not mask.any():
            raise G.MaskError(f"the mask is empty: {seg_note} found no object at the click; click inside an object "
                              "or switch to the flood-fill segmenter")
    elif p.mode == "text" and not p.prompt.strip():
        raise G.MaskError("text-attention mode needs a prompt naming a sound (e.g. 'bell')")
    t_seg = time.perf_counter() - t0
    ctx.progress(0.05, f"segmented ({seg_note})" if seg_note else "loading models")
    b, dc = T.default_configs("dot")
    bundle = T.ensure_trained(b, dc, ctx, (0.05, 0.8))
    ctx.check_cancelled()
    T.clip_model()  # loaded once per process, outside the click-to-audio timing
    t1 = time.perf_counter()
    feats = T.patch_features(image[None])
    P, grid = bundle.meta["patches"], bundle.grid
    clicked, note = _clicked_kind(p.image_id, mask)
    query_text = p.prompt.strip() or clicked or ""
    with torch.no_grad():
        if query_text:
            q = bundle.base.clap.encode_text([query_text])
            w_attn = bundle.attn.attention(q, feats)[0].numpy()
        else:
            w_attn = None
    if p.mode == "mask":
        w = G.mask_to_weights(mask, grid, bundle.meta["attention_var"])
    elif p.mode == "text":
        w = w_attn
    else:
        w = G.uniform_weights(P)
    weights = np.stack([w, G.uniform_weights(P)])
    ctx.progress(0.85, "sampling (DDIM with classifier-free guidance)")
    mels, _ = G.generate_mels(bundle, feats.expand(2, -1, -1), weights=weights, steps=p.steps, cfg=p.cfg, seed=p.seed)
    probs = G.classify(bundle, mels)
    waves = [sounds.griffin_lim(m.numpy(), seed=p.seed) for m in mels]
    latency = time.perf_counter() - t1 + t_seg
    from . import plots

    a = ctx.artifacts
    refs = dict(
        overlay=a.save_image("overlay.png", plots.overlay(image, mask, p.clicks if p.mode == "mask" else ())),
        audio_object=a.save_bytes("object.wav", sounds.to_wav_bytes(waves[0])),
        audio_whole=a.save_bytes("whole.wav", sounds.to_wav_bytes(waves[1])),
        figure=a.save_figure("analysis.png", plots.results_figure(
            mels[0].numpy(), mels[1].numpy(), w, w_attn if w_attn is not None else np.zeros(P), probs[0], probs[1],
            clicked, f"learned text attention: '{query_text}'" if query_text else "no text query", p.mode)),
    )
    top = sounds.CLASSES[int(np.argmax(probs[0]))]
    level = float(mels[0].mean())  # normalised log-mel: -1.04 is digital silence, real clips ≈ -0.45
    if level < SILENT_LEVEL:
        note = (note + " " if note else "") + "The generated clip is nearly silent."
    ctx.progress(1.0, "done")
    return dict(
        **refs, mode=p.mode, segmenter_note=seg_note, clicked_class=clicked, predicted_class=top,
        probs_object=probs[0].round(4).tolist(), probs_whole=probs[1].round(4).tolist(), classes=sounds.CLASSES,
        weights=np.round(w, 5).tolist(), attention=None if w_attn is None else np.round(w_attn, 5).tolist(),
        mask_pixels=int(mask.sum()) if mask is not None else None, note=note, latency_s=latency,
        level=level, query=query_text, elapsed_s=time.perf_counter() - t0)


def _sam_ckpt() -> str:
    from engines.common.settings import get_settings

    return get_settings().sam_checkpoint


def _sam_type() -> str:
    from engines.common.settings import get_settings

    return get_settings().sam_model_type

"""Tiny CLIP: a transformers ``CLIPModel`` trained contrastively on minicanvas, digits and Fashion-MNIST.

``ZooClip`` wraps the model and the real CLIP BPE tokenizer with the calls methods need
(``encode_images``, ``encode_texts``, ``patch_features``, ``text_states``, ``zero_shot``); the same
wrapper serves a paper-scale hub checkpoint (``PAPERLAB_CLIP_MODEL``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .configs import ClipConfig
from .tensors import Curve, lr_at, random_translate, set_lr, to_tensor01
from .tokenizer import clip_tokenizer

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def make_model(cfg: ClipConfig):
    from transformers import CLIPConfig, CLIPModel

    text = dict(
        vocab_size=49408, hidden_size=cfg.text_width, intermediate_size=4 * cfg.text_width,
        num_hidden_layers=cfg.text_layers, num_attention_heads=cfg.heads, max_position_embeddings=cfg.max_length,
        bos_token_id=49406, eos_token_id=49407, pad_token_id=49407, projection_dim=cfg.projection_dim,
    )
    vision = dict(
        hidden_size=cfg.vision_width, intermediate_size=4 * cfg.vision_width, num_hidden_layers=cfg.vision_layers,
        num_attention_heads=cfg.heads, image_size=cfg.image_size, patch_size=cfg.patch_size, projection_dim=cfg.projection_dim,
    )
    return CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=cfg.projection_dim))


@dataclass
class ZooClip:
    """A CLIP model with its tokenizer. Images: uint8/float arrays NHWC or tensors NCHW in [0, 1]."""

    model: "object"  # transformers.CLIPModel
    tokenizer: "object"  # transformers.CLIPTokenizer

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def image_size(self) -> int:
        return self.model.config.vision_config.image_size

    @property
    def patch_grid(self) -> int:
        c = self.model.config.vision_config
        return c.image_size // c.patch_size

    @property
    def max_length(self) -> int:
        return int(min(self.tokenizer.model_max_length, self.model.config.text_config.max_position_embeddings))

    def pixel_values(self, images) -> torch.Tensor:
        x = to_tensor01(images, self.device)
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bicubic", align_corners=False).clamp(0, 1)
        mean = torch.tensor(CLIP_MEAN, device=x.device)[None, :, None, None]
        std = torch.tensor(CLIP_STD, device=x.device)[None, :, None, None]
        return (x - mean) / std

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        tok = self.tokenizer(list(texts), padding="max_length", truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in tok.items() if k in ("input_ids", "attention_mask")}

    def encode_images(self, images, normalize: bool = True) -> torch.Tensor:
        f = _features(self.model.get_image_features(pixel_values=self.pixel_values(images)))
        return F.normalize(f, dim=-1) if normalize else f

    def encode_texts(self, texts: list[str], normalize: bool = True) -> torch.Tensor:
        f = _features(self.model.get_text_features(**self.tokenize(texts)))
        return F.normalize(f, dim=-1) if normalize else f

    def patch_features(self, images) -> torch.Tensor:
        """Patch tokens of the vision tower's last layer, (N, P, width), P = patch_grid² (CLS dropped)."""
        out = self.model.vision_model(pixel_values=self.pixel_values(images))
        return out.last_hidden_state[:, 1:]

    def text_states(self, texts: list[str]) -> torch.Tensor:
        """Per-token text states (N, max_length, width), what Stable Diffusion's UNet cross-attends to."""
        return self.model.text_model(input_ids=self.tokenize(texts)["input_ids"]).last_hidden_state

    @torch.no_grad()
    def class_embeddings(self, prompts: list[list[str]] | list[str]) -> torch.Tensor:
        """One unit vector per class; a list of prompts per class is averaged (prompt ensembling)."""
        rows = []
        for p in prompts:
            group = [p] if isinstance(p, str) else list(p)
            rows.append(F.normalize(self.encode_texts(group).mean(0), dim=-1))
        return torch.stack(rows)

    @torch.no_grad()
    def zero_shot(self, images, prompts: list[list[str]] | list[str], batch_size: int = 512) -> np.ndarray:
        """Zero-shot class probabilities (N, C) from the cosine of image and class-prompt embeddings."""
        cls = self.class_embeddings(prompts)
        scale = self.model.logit_scale.exp()
        out = []
        for i in range(0, len(images), batch_size):
            img = self.encode_images(images[i : i + batch_size])
            out.append((scale * img @ cls.T).softmax(-1).cpu())
        return torch.cat(out).numpy()


def _features(out) -> torch.Tensor:
    # transformers 5 may return a model output object; older versions a tensor.
    return out if isinstance(out, torch.Tensor) else getattr(out, "pooler_output", out[0])


# ----------------------------------------------------------------------------- zero-shot prompts


def minicanvas_prompts(key: str) -> list[list[str]]:
    """Prompt ensembles for zero-shot minicanvas classification of ``key`` (object / style / colour)."""
    from engines.common.data import COLOUR_NAMES, OBJECTS, STYLES, caption

    if key == "object":
        return [[caption(o, s, c) for s in STYLES for c in COLOUR_NAMES] for o in OBJECTS]
    if key == "style":
        return [[caption(o, s, c) for o in OBJECTS for c in COLOUR_NAMES] for s in STYLES]
    if key == "colour":
        return [[caption(o, s, c) for o in OBJECTS for s in STYLES] for c in COLOUR_NAMES]
    raise ValueError(f"key must be object, style or colour, got {key!r}")


def evaluate(zc: ZooClip, n: int = 1000, seed: int = 1) -> dict[str, float]:
    """Zero-shot accuracy on held-out images: minicanvas objects/styles (fresh seed), digits/fashion test splits."""
    from engines.common import data

    zc.model.eval()
    mc = data.minicanvas(n, seed=10_000 + seed)
    res = {}
    for key in ("object", "style"):
        p = zc.zero_shot(mc.images, minicanvas_prompts(key))
        res[f"minicanvas_{key}"] = float((p.argmax(1) == mc.labels[key]).mean())
    dg = data.digits("test")
    p = zc.zero_shot(dg.images, [data.digit_caption(k) for k in range(10)])
    res["digits"] = float((p.argmax(1) == dg.labels["label"]).mean())
    if data.fashion_available():
        fm = data.fashion_mnist("test", n=min(n, 10000))
        p = zc.zero_shot(fm.images, [data.fashion_caption(k) for k in range(10)])
        res["fashion_mnist"] = float((p.argmax(1) == fm.labels["label"]).mean())
    return res


# ----------------------------------------------------------------------------- training


def _training_sets(cfg: ClipConfig):
    from engines.common import data

    sets = [data.minicanvas(cfg.n_minicanvas, seed=cfg.seed)]
    if cfg.digits:
        sets.append(data.digits("train"))
    if cfg.fashion and cfg.n_fashion > 0:
        sets.append(data.fashion_mnist("train", n=cfg.n_fashion))
    return sets


PARTIAL_TEMPLATES = ("a {o}", "a {c} {o}", "a {o} in {s} style", "a {c} shape in {s} style", "a shape in {s} style")


def _text_table(sets, captions: list[str], partial: bool):
    """Texts with the factors they pin: (domain, object/label, style, colour), -1 = any.

    The full captions come first, in ``captions`` order; then (when ``partial``) the partial ones.
    Returns (texts, constraints (T, 4), per-set image labels (N, 4), per-set text ids (N, 1 + templates)).
    """
    from engines.common import data

    full = {c: i for i, c in enumerate(captions)}
    texts, cons = list(captions), [None] * len(captions)
    extra: dict[str, int] = {}

    def tid(text: str, key: tuple) -> int:
        if text in full:
            cons[full[text]] = key
            return full[text]
        if text not in extra:
            extra[text] = len(texts)
            texts.append(text)
            cons.append(key)
        return extra[text]

    labels, ids = [], []
    for dom, s in enumerate(sets):
        if s.name == "digits" or s.name == "fashion_mnist":
            d = 1 if s.name == "digits" else 2
            lab = np.stack([np.full(len(s), d), s.labels["label"], np.zeros(len(s), int), np.zeros(len(s), int)], 1)
            row = [[tid(c, (d, int(k), -1, -1))] for c, k in zip(s.captions, s.labels["label"])]
        else:
            o, st, co = s.labels["object"], s.labels["style"], s.labels["colour"]
            lab = np.stack([np.zeros(len(s), int), o, st, co], 1)
            row = []
            for cap, a, b, c in zip(s.captions, o, st, co):
                r = [tid(cap, (0, int(a), int(b), int(c)))]
                if partial:
                    names = dict(o=data.OBJECTS[a], s=data.STYLES[b], c=data.COLOUR_NAMES[c])
                    keys = [(0, a, -1, -1), (0, a, -1, c), (0, a, b, -1), (0, -1, b, c), (0, -1, b, -1)]
                    r += [tid(t.format(**names), tuple(int(v) for v in k)) for t, k in zip(PARTIAL_TEMPLATES, keys)]
                row.append(r)
        labels.append(torch.from_numpy(lab.astype(np.int64)))
        ids.append(torch.tensor(row))  # rows of one set have equal length (partial captions or not)
    return texts, torch.tensor(cons), labels, ids


def train(cfg: ClipConfig, out_dir: Path, progress) -> dict:
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = make_model(cfg)
    tok = clip_tokenizer(cfg.max_length)
    zc = ZooClip(model, tok)
    sets = _training_sets(cfg)
    # Every distinct text is tokenised once; images index into the text table.
    captions = sorted({c for s in sets for c in s.captions})
    partial = cfg.partial_captions > 0
    texts, cons, labs, tids = _text_table(sets, captions, partial)
    ids = zc.tokenize(texts)["input_ids"]
    images = [torch.from_numpy(np.array(s.images)) for s in sets]
    # Each batch mixes the sets: minicanvas gets half, the others share the rest.
    shares = [1.0] if len(sets) == 1 else [0.5] + [0.5 / (len(sets) - 1)] * (len(sets) - 1)
    counts = [max(1, int(round(cfg.batch_size * s))) for s in shares]
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98), eps=1e-6)
    model.train()
    losses = []
    curve = Curve(cfg.steps, "held-out zero-shot accuracy (minicanvas object / style, 200 images)")
    for step in range(cfg.steps):
        if curve.due(step):
            curve.add(step, losses, _quick_eval(zc))
            model.train()
        set_lr(opt, lr_at(step, cfg.steps, cfg.lr, warmup=min(100, cfg.steps // 10 + 1)))
        xb, cb, lb = [], [], []
        for im, ti, la, k in zip(images, tids, labs, counts):
            j = torch.randint(0, len(im), (k,), generator=gen)
            xb.append(im[j])
            col = torch.zeros(k, dtype=torch.long)
            if partial and ti.shape[1] > 1:
                use = torch.rand(k, generator=gen) < cfg.partial_captions
                col = torch.where(use, torch.randint(1, ti.shape[1], (k,), generator=gen), col)
            cb.append(ti[j, col])
            lb.append(la[j])
        x = random_translate(to_tensor01(torch.cat(xb).permute(0, 3, 1, 2).float() / 255.0), 2, gen)
        c = torch.cat(cb)
        uniq, inv = torch.unique(c, return_inverse=True)
        img = F.normalize(_features(model.get_image_features(pixel_values=zc.pixel_values(x))), dim=-1)
        txt = F.normalize(_features(model.get_text_features(input_ids=ids[uniq])), dim=-1)
        logits = model.logit_scale.exp().clamp(max=100) * img @ txt.T  # (B, U)
        if partial:
            # Positives: every text in the batch that describes the image (its factors match the text's).
            k = cons[uniq][None]  # (1, U, 4)
            pos = ((k == -1) | (k == torch.cat(lb)[:, None])).all(-1)  # (B, U)
            loss_i = (torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~pos, float("-inf")), 1)).mean()
            w = pos.T.float()
            loss_t = -((F.log_softmax(logits.T, dim=1) * w).sum(1) / w.sum(1)).mean()
        else:
            # Images sharing a caption are all positives of that caption (no false negatives).
            onehot = F.one_hot(inv, len(uniq)).float()
            loss_i = F.cross_entropy(logits, inv)
            loss_t = -(F.log_softmax(logits.T, dim=1) * (onehot.T / onehot.T.sum(1, keepdim=True))).sum(1).mean()
        loss = 0.5 * (loss_i + loss_t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, np.log(100))
        losses.append(float(loss.detach()))
        if step % 20 == 0 or step == cfg.steps - 1:
            progress(0.95 * (step + 1) / cfg.steps, f"tiny CLIP step {step + 1}/{cfg.steps}, loss {np.mean(losses[-20:]):.3f}")
    model.eval()
    curve.add(cfg.steps, losses, _quick_eval(zc))
    model.save_pretrained(out_dir)  # config.json + model.safetensors
    tok.save_pretrained(out_dir)
    progress(0.96, "evaluating zero-shot accuracy")
    with torch.no_grad():
        metrics = evaluate(zc, n=200 if cfg.steps < 50 else 1000)
    metrics["final_loss"] = float(np.mean(losses[-50:]))
    return {**metrics, "curve": curve.data}


def _quick_eval(zc: ZooClip) -> dict[str, float]:
    """The validation point of the training curve: zero-shot accuracy on 200 held-out minicanvas images."""
    from engines.common import data

    zc.model.eval()
    mc = data.minicanvas(200, seed=10_500)
    with torch.no_grad():
        return {k: float((zc.zero_shot(mc.images, minicanvas_prompts(k)).argmax(1) == mc.labels[k]).mean())
                for k in ("object", "style")}


def load(d: Path, cfg: ClipConfig | None = None, device: str = "cpu") -> ZooClip:
    from transformers import CLIPModel, CLIPTokenizer

    from .t2i import _quiet

    _quiet()
    model = CLIPModel.from_pretrained(d, local_files_only=True).to(device).eval()
    return ZooClip(model, CLIPTokenizer.from_pretrained(d, local_files_only=True))


def load_external(src: str, device: str = "cpu") -> ZooClip:
    """A paper-scale CLIP from a hub id or local directory (e.g. ``openai/clip-vit-base-patch32``)."""
    from transformers import CLIPModel, CLIPTokenizer

    model = CLIPModel.from_pretrained(src).to(device).eval()
    return ZooClip(model, CLIPTokenizer.from_pretrained(src))

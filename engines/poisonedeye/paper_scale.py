"""Paper-scale components, loaded only from local folders (never downloaded here).

- Retriever: SigLIP-so400m (``google/siglip-so400m-patch14-384``, d = 1152) or CLIP-ViT-H-14 (d = 1024): any
  folder with a transformers ``SiglipModel`` / ``CLIPModel``. ``PAPERLAB_CLIP_MODEL`` pointing at a CLIPModel
  folder already replaces the zoo CLIP everywhere (``zoo.load("clip")``); ``load_retriever`` also takes SigLIP.
- LVLM: ``LlavaNextForConditionalGeneration`` (llava-v1.6-mistral-7b-hf) or ``Qwen2VLForConditionalGeneration``
  (Qwen2-VL-7B-Instruct) with the official chat layouts (``generator.conversation(fmt="llava"|"qwen")``).

``smoke_test`` builds tiny random versions of all four classes from configs, saves them and loads them back with
``local_files_only=True`` (acceptance check 7): the loading code paths run without weights or network.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from engines.common.zoo.clip import CLIP_MEAN, CLIP_STD
from engines.common.zoo.tensors import to_tensor01


@dataclass
class HFRetrieverModel:
    """A SigLIP or CLIP model with the ``ZooClip`` calls the pipeline uses (encode_images / encode_texts)."""

    model: object
    tokenizer: object
    mean: tuple = CLIP_MEAN
    std: tuple = CLIP_STD

    @property
    def device(self):
        return next(self.model.parameters()).device

    @property
    def image_size(self) -> int:
        return int(self.model.config.vision_config.image_size)

    def pixel_values(self, images) -> torch.Tensor:
        x = to_tensor01(images, self.device)
        if x.shape[-1] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bicubic", align_corners=False).clamp(0, 1)
        m = torch.tensor(self.mean, device=x.device)[None, :, None, None]
        s = torch.tensor(self.std, device=x.device)[None, :, None, None]
        return (x - m) / s

    def encode_images(self, images, normalize: bool = True) -> torch.Tensor:
        f = self.model.get_image_features(pixel_values=self.pixel_values(images))
        f = f if isinstance(f, torch.Tensor) else f.pooler_output
        return F.normalize(f, dim=-1) if normalize else f

    def encode_texts(self, texts, normalize: bool = True) -> torch.Tensor:
        tok = self.tokenizer(list(texts), padding="max_length", truncation=True, return_tensors="pt",
                             max_length=int(self.model.config.text_config.max_position_embeddings))
        f = self.model.get_text_features(input_ids=tok["input_ids"].to(self.device))
        f = f if isinstance(f, torch.Tensor) else f.pooler_output
        return F.normalize(f, dim=-1) if normalize else f


def load_retriever(path: str | Path, device: str = "cpu", tokenizer=None) -> HFRetrieverModel:
    """SigLIP or CLIP from a local folder (``local_files_only``); SigLIP normalises with mean = std = 0.5."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    cfg = AutoConfig.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).to(device).eval()
    tok = tokenizer or AutoTokenizer.from_pretrained(path, local_files_only=True)
    if cfg.model_type == "siglip":
        return HFRetrieverModel(model, tok, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    return HFRetrieverModel(model, tok)


def load_lvlm(path: str | Path, device: str = "cpu"):
    """LLaVA-NeXT or Qwen2-VL from a local folder (``local_files_only``), by the config's model type."""
    from transformers import AutoConfig, LlavaNextForConditionalGeneration, Qwen2VLForConditionalGeneration

    cfg = AutoConfig.from_pretrained(path, local_files_only=True)
    cls = {"llava_next": LlavaNextForConditionalGeneration, "qwen2_vl": Qwen2VLForConditionalGeneration}.get(cfg.model_type)
    if cls is None:
        raise ValueError(f"{path}: model type {cfg.model_type!r} is not an LVLM this pipeline knows "
                         "(llava_next or qwen2_vl)")
    return cls.from_pretrained(path, local_files_only=True).to(device).eval()


def _tiny_configs():
    from transformers import CLIPConfig, LlavaNextConfig, Qwen2VLConfig, SiglipConfig

    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    siglip = SiglipConfig(text_config=dict(vocab_size=49408, max_position_embeddings=16, **small),
                          vision_config=dict(image_size=32, patch_size=8, **small))
    clip = CLIPConfig(text_config=dict(vocab_size=49408, max_position_embeddings=16, **small),
                      vision_config=dict(image_size=32, patch_size=8, **small), projection_dim=24)
    llava = LlavaNextConfig(vision_config=dict(model_type="clip_vision_model", image_size=32, patch_size=8, **small),
                            text_config=dict(model_type="llama", vocab_size=1000, num_key_value_heads=2, **small),
                            image_grid_pinpoints=[[32, 32]], image_token_index=999)
    qwen = Qwen2VLConfig(text_config=dict(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                          num_attention_heads=2, num_key_value_heads=2,
                                          rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}),
                         vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, patch_size=4))
    return dict(siglip=siglip, clip=clip, llava_next=llava, qwen2_vl=qwen)


def smoke_test(root: Path) -> dict:
    """Build, save and reload tiny random SigLIP / CLIP retrievers and LLaVA-NeXT / Qwen2-VL LVLMs offline."""
    import os

    from transformers import AutoModel, LlavaNextForConditionalGeneration, Qwen2VLForConditionalGeneration

    from engines.common.zoo.tokenizer import clip_tokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = {}
    torch.manual_seed(0)
    for name, cfg in _tiny_configs().items():
        try:
            cls = {"llava_next": LlavaNextForConditionalGeneration, "qwen2_vl": Qwen2VLForConditionalGeneration}.get(name, AutoModel)
            model = cls.from_config(cfg) if cls is AutoModel else cls(cfg)
            d = root / name
            model.save_pretrained(d)
            if name in ("siglip", "clip"):
                r = load_retriever(d, tokenizer=clip_tokenizer(16))
                e = F.normalize(r.encode_images(torch.rand(2, 3, 32, 32)) + r.encode_texts(["a digit", "a coat"]), dim=-1)
                out[name] = dict(ok=bool(torch.allclose(e.norm(dim=-1), torch.ones(2), atol=1e-5)), dim=int(e.shape[1]),
                                 cls=type(r.model).__name__)
            else:
                m = load_lvlm(d)
                out[name] = dict(ok=True, cls=type(m).__name__, params=int(sum(p.numel() for p in m.parameters())))
        except Exception as e:  # reported, not hidden
            out[name] = dict(ok=False, error=f"{type(e).__name__}: {str(e)[:160]}")
    return out

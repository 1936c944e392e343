"""Paper-scale path: the authors' released SAEs and a Stable-Diffusion-v1.5-structured UNet.

Settings (environment variables, nothing is downloaded unless a hub id is configured elsewhere):

- ``PAPERLAB_SAEURON_SAE_DIR``: a local directory in the ``bcywinski/SAeUron`` layout, i.e. one
  subfolder per hook point (``unet.up_blocks.1.attentions.1`` for objects, ``…attentions.2`` for
  styles) with ``cfg.json`` + ``sae.safetensors``; or directly one such subfolder.
- ``PAPERLAB_DIFFUSION_MODEL``: the UnlearnCanvas SD v1.5 checkpoint directory (or
  ``CompVis/stable-diffusion-v1-4`` for nudity), loaded by ``engines.common.zoo``.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from .sae import SaeConfig, TopKSae

SETTING = "PAPERLAB_SAEURON_SAE_DIR"
PAPER_HOOKS = {"object": "unet.up_blocks.1.attentions.1", "style": "unet.up_blocks.1.attentions.2"}


class MissingCheckpoint(FileNotFoundError):
    pass


def sae_path(kind: str = "style", root: str | Path | None = None) -> Path:
    """The directory of the paper's SAE for ``kind``; a clear error names the setting to fill."""
    root = root or os.environ.get(SETTING, "")
    if not root:
        raise MissingCheckpoint(f"no paper-scale SAE configured: set {SETTING} to a local copy of bcywinski/SAeUron "
                                f"(subfolders {PAPER_HOOKS['object']!r} and {PAPER_HOOKS['style']!r})")
    root = Path(root)
    for cand in (root / PAPER_HOOKS[kind], root):
        if (cand / "cfg.json").is_file():
            return cand
    raise MissingCheckpoint(f"{SETTING}={root} holds no SAE for {kind}s: expected {root / PAPER_HOOKS[kind]}/cfg.json "
                            "and sae.safetensors")


def load_paper_sae(kind: str = "style", root: str | Path | None = None, device: str = "cpu") -> TopKSae:
    return TopKSae.load_from_disk(sae_path(kind, root), device=device)


def write_random_release(root: Path, d_in: int = 1280, expansion: int = 16, k: int = 32, seed: int = 0,
                       kinds=("object", "style")) -> Path:
    """A ``bcywinski/SAeUron``-style directory with random weights (offline tests of the loader)."""
    for kind in kinds:
        with torch.no_grad():
            sae = TopKSae(d_in, SaeConfig(expansion_factor=expansion, k=k, batch_topk=True), seed=seed)
        sae.save_to_disk(Path(root) / PAPER_HOOKS[kind])
    return Path(root)


def sd15_structured_unet(width: int = 32, cross_attention_dim: int = 64, seed: int = 0):
    """A randomly initialised UNet with SD v1.5's block structure (4 levels, 2 layers per block, cross-attention
    in the first three down and last three up blocks), channels (w, 2w, 4w, 4w) instead of (320, 640, 1280, 1280).
    ``up_blocks.1.attentions.{1,2}`` exist as in SD."""
    from diffusers import UNet2DConditionModel

    torch.manual_seed(seed)
    return UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=2,
        block_out_channels=(width, 2 * width, 4 * width, 4 * width),
        down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
        cross_attention_dim=cross_attention_dim, attention_head_dim=8, norm_num_groups=min(32, width),
    ).eval()

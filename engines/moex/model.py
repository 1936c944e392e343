"""Chess GPTs (transformers ``GPT2LMHeadModel``, small config) whose MLP blocks are swapped for the paper's variants.

Every variant shares the backbone; only the MLP differs, at matched *activated* width (k·D = dense hidden).
Upcycling (paper Table 4, paper-scale path): copy a trained dense GPT-2 MLP into every expert of MoE-X.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn

from .data import VOCAB
from .layers import DenseMLP, MoELayer

# variant id -> (kind, activation, router), paper names in VARIANT_LABELS
VARIANTS: dict[str, tuple[str, str, str | None]] = {
    "dense_gelu": ("dense", "gelu", None),
    "dense_relu": ("dense", "relu", None),
    "topk_gelu": ("moe", "gelu", "topk_linear"),
    "topk_relu": ("moe", "relu", "topk_linear"),
    "topk_gelu_sparsity": ("moe", "gelu", "sparsity_gaussian"),
    "moex": ("moe", "relu", "sparsity_gaussian"),
}
VARIANT_LABELS = {
    "dense_gelu": "Dense GELU (GPT-2)", "dense_relu": "Dense ReLU", "topk_gelu": "TopK MoE (Switch, GELU)",
    "topk_relu": "TopK MoE + ReLU experts", "topk_gelu_sparsity": "TopK MoE + sparsity router",
    "moex": "MoE-X (ReLU + sparsity router)", "sae": "SAE on dense GELU",
}


@dataclass(frozen=True)
class GPTConfig:
    n_layer: int = 4
    n_embd: int = 64
    n_head: int = 4
    ctx: int = 96
    dense_hidden: int = 256
    n_experts: int = 8
    expert_hidden: int = 128
    top_k: int = 2
    temperature: float = 1.0
    balance_coef: float = 0.01
    l1_coef: float = 0.0
    probe_layer: int = 2  # 0-based: layer 3 of 4 (spec §4)

    def to_dict(self) -> dict:
        return asdict(self)


TINY = GPTConfig()
MICRO = GPTConfig(n_layer=2, n_embd=32, n_head=2, ctx=64, dense_hidden=64, n_experts=4, expert_hidden=32,
                  top_k=2, probe_layer=1)


def profile_config() -> GPTConfig:
    from engines.common.settings import get_settings

    return MICRO if get_settings().profile == "test" else TINY


@dataclass(frozen=True)
class TrainConfig:
    variant: str
    model: GPTConfig = field(default_factory=GPTConfig)
    steps: int = 600
    batch: int = 32
    lr: float = 2e-3
    seed: int = 0
    n_games: int = 6000
    upcycle_from: str | None = None  # a dense variant's key (Table 4 upcycling)

    def key(self) -> str:
        blob = json.dumps({"v": 2, **asdict(self)}, sort_keys=True, default=str).encode()
        return f"{self.variant}-s{self.seed}-{hashlib.sha256(blob).hexdigest()[:10]}"


def gpt2_config(cfg: GPTConfig, activation: str = "gelu"):
    from transformers import GPT2Config

    return GPT2Config(vocab_size=len(VOCAB), n_positions=cfg.ctx, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                      n_head=cfg.n_head, n_inner=cfg.dense_hidden,
                      activation_function="gelu_new" if activation == "gelu" else "relu",
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)


def make_mlp(cfg: GPTConfig, variant: str) -> nn.Module:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    kind, act, router = VARIANTS[variant]
    if kind == "dense":
        return DenseMLP(cfg.n_embd, cfg.dense_hidden, act)
    return MoELayer(cfg.n_embd, cfg.n_experts, cfg.expert_hidden, cfg.top_k, act, router, cfg.temperature,
                    cfg.balance_coef, cfg.l1_coef)


def build_model(cfg: GPTConfig, variant: str, seed: int = 0):
    """A GPT2LMHeadModel whose every block's MLP is the variant's layer."""
    from transformers import GPT2LMHeadModel

    if cfg.n_embd % cfg.n_head:
        raise ValueError(f"n_embd={cfg.n_embd} must be divisible by n_head={cfg.n_head}")
    if not 0 <= cfg.probe_layer < cfg.n_layer:
        raise ValueError(f"probe_layer must be in [0, {cfg.n_layer - 1}] (got {cfg.probe_layer})")
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(gpt2_config(cfg, VARIANTS[variant][1] if variant in VARIANTS else "gelu"))
    for block in model.transformer.h:
        block.mlp = make_mlp(cfg, variant)
    model.moex_cfg, model.moex_variant = cfg, variant
    return model.eval()


def mlps(model) -> list[nn.Module]:
    return [b.mlp for b in model.transformer.h]


def probe_mlp(model) -> nn.Module:
    return mlps(model)[model.moex_cfg.probe_layer]


def aux_loss(model) -> torch.Tensor:
    return sum((m.aux_loss for m in mlps(model)), torch.zeros(()))


# ----------------------------------------------------------------------------- upcycling (paper Table 4)


def upcycle_dense_mlp(dense_fc_w: torch.Tensor, dense_fc_b: torch.Tensor, dense_proj_w: torch.Tensor,
                      dense_proj_b: torch.Tensor, moe: MoELayer, noise: float = 0.0, seed: int = 0) -> None:
    """Copy one dense MLP (fc: d→H, proj: H→d, stored as (H, d)/(d, H) nn.Linear or GPT-2 Conv1D transposed)
    into every expert (D must equal H); with routing weights summing to 1 the layer then equals the dense MLP."""
    H = dense_fc_b.shape[0]
    if moe.D != H:
        raise ValueError(f"upcycling needs expert_hidden == dense hidden ({moe.D} vs {H})")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for j in range(moe.M):
            w = dense_fc_w + (noise * torch.randn(dense_fc_w.shape, generator=g) if noise else 0)
            moe.w_enc[j].copy_(w)  # (d, H)
            moe.b_enc[j].copy_(dense_fc_b)
            moe.w_dec[j].copy_(dense_proj_w)  # (H, d)
        moe.b_dec.copy_(dense_proj_b)


def upcycle(dense_model, cfg: GPTConfig, variant: str = "moex", noise: float = 0.0, seed: int = 0):
    """A MoE-X GPT initialised from a dense GPT-2 (HF ``GPT2LMHeadModel`` with Conv1D MLPs, or one of ours).

    Attention, embeddings and norms are copied; each MLP is copied into all experts (expert_hidden = dense width).
    """
    target = build_model(cfg, variant, seed)
    sd = {k: v for k, v in dense_model.state_dict().items() if ".mlp." not in k}
    missing, unexpected = target.load_state_dict(sd, strict=False)
    bad = [k for k in missing if ".mlp." not in k]
    if bad or unexpected:
        raise ValueError(f"dense checkpoint does not match the backbone: missing {bad[:5]}, unexpected {unexpected[:5]}")
    for src, dst in zip(mlps(dense_model), mlps(target)):
        if isinstance(src, DenseMLP):
            fc_w, fc_b, pr_w, pr_b = src.fc.weight.T, src.fc.bias, src.proj.weight.T, src.proj.bias
        else:  # transformers GPT2MLP: Conv1D weights are (in, out) already
            fc_w, fc_b, pr_w, pr_b = src.c_fc.weight, src.c_fc.bias, src.c_proj.weight, src.c_proj.bias
        upcycle_dense_mlp(fc_w, fc_b, pr_w, pr_b, dst, noise, seed)
    return target


def load_hf_dense(path_or_id: str):
    """A dense GPT-2-style checkpoint for upcycling (local path, or a hub id when the user configured one)."""
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(path_or_id)


def n_params(model, activated: bool = False) -> int:
    total = sum(p.numel() for p in model.parameters())
    if not activated:
        return total
    cfg = model.moex_cfg
    for m in mlps(model):
        if isinstance(m, MoELayer):
            total -= (m.M - m.k) * (m.w_enc[0].numel() + m.b_enc[0].numel() + m.w_dec[0].numel())
    return total

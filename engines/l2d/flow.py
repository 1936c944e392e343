"""The L2D diffusion path (spec §1), attached to a frozen causal LM without modifying it.

Model-agnostic: the frozen model runs as usual (transformers' own forward with a KV cache); the
diffusion path reads that cache and the blocks' weights through a small ``Adapter`` (GPT-2 and
Llama/Qwen2/SmolLM2 layouts). Names follow the official code (``flow_q_proj``, ``flow_o_proj``,
``FlowToLM``, ``modulation_head``, ``preserve_behavior_at_flow_start``).

Per layer the flow stream h^f (one vector per query position) is
    h^f ← h^f + gate₁ · flow_o_proj(Attn(flow_q_proj(shift₁ + Norm₁(h^f; w₁+Δw₁)), K_main, V_main))
    h^f ← h^f + gate₂ · flowMLP(shift₂ + Norm₂(h^f; w₂+Δw₂))
with (Δw, shift, gate) from a 2-layer head on the timestep (+ class) embedding (DiT "full" modulation),
and q/o/MLP = frozen base weights + LoRA. The output is
    logits = LMHead(Norm_f(h_L + (g(t, c) − g(0, c)) ⊙ h^f_L))
so at t = 0 the model is exactly the frozen LM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN


@dataclass(frozen=True)
class FlowConfig:
    flow_dim: int = 64  # d_f
    noise_rescaling: float = 64.0  # σ
    flow_to_lm_hidden: int = 64
    freq_dim: int = 128  # sinusoidal timestep features
    cond_dim: int = 64  # timestep_modulation_hidden_size
    lora_rank: int = 16
    lora_alpha: float = 16.0
    num_classes: int = 2  # guidance labels (task types); 0 = no guidance
    class_dropout: float = 0.2
    flow_to_lm_timestep_rescaling: float = 1.0


# ----------------------------------------------------------------------------- the frozen model's layout


class Adapter:
    """Reads a transformers causal LM: blocks, norms, projections, RoPE. Nothing is copied."""

    def __init__(self, model: nn.Module):
        self.model = model
        cfg = model.config
        self.kind = cfg.model_type
        if self.kind == "gpt2":
            self.blocks = list(model.transformer.h)
            self.final_norm = model.transformer.ln_f
            self.d = cfg.n_embd
            self.n_head = cfg.n_head
            self.n_kv = cfg.n_head
            self.act = ACT2FN[cfg.activation_function]
            self.rotary = None
        elif self.kind in ("llama", "qwen2", "mistral"):
            self.blocks = list(model.model.layers)
            self.final_norm = model.model.norm
            self.d = cfg.hidden_size
            self.n_head = cfg.num_attention_heads
            self.n_kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
            self.act = ACT2FN[cfg.hidden_act]
            self.rotary = model.model.rotary_emb
        else:
            raise ValueError(f"L2D supports GPT-2 and Llama/Qwen2 layouts, not {self.kind!r}")
        self.head_dim = self.d // self.n_head
        self.lm_head = model.lm_head

    def mlp_dims(self, i: int) -> list[tuple[str, int, int]]:
        """(name, in, out) of the MLP projections that get LoRA copies."""
        b = self.blocks[i]
        if self.kind == "gpt2":
            h = b.mlp.c_fc.weight.shape[1]
            return [("fc", self.d, h), ("proj", h, self.d)]
        h = b.mlp.gate_proj.out_features
        return [("gate", self.d, h), ("up", self.d, h), ("down", h, self.d)]

    def norm(self, i: int, which: int, x: torch.Tensor, dw: torch.Tensor) -> torch.Tensor:
        b = self.blocks[i]
        if self.kind == "gpt2":
            ln = b.ln_1 if which == 1 else b.ln_2
            return F.layer_norm(x, (self.d,), None, None, ln.eps) * (ln.weight + dw) + ln.bias
        ln = b.input_layernorm if which == 1 else b.post_attention_layernorm
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + ln.variance_epsilon)
        return (ln.weight + dw) * xf.to(x.dtype)

    def q(self, i: int, x: torch.Tensor) -> torch.Tensor:
        b = self.blocks[i]
        if self.kind == "gpt2":
            w, bias = b.attn.c_attn.weight[:, : self.d], b.attn.c_attn.bias[: self.d]
            return x @ w + bias
        return b.self_attn.q_proj(x)

    def o(self, i: int, x: torch.Tensor) -> torch.Tensor:
        b = self.blocks[i]
        return b.attn.c_proj(x) if self.kind == "gpt2" else b.self_attn.o_proj(x)

    def mlp(self, i: int, x: torch.Tensor, lora: nn.ModuleDict) -> torch.Tensor:
        b = self.blocks[i]
        if self.kind == "gpt2":
            h = self.act(b.mlp.c_fc(x) + lora["fc"](x))
            return b.mlp.c_proj(h) + lora["proj"](h)
        m = b.mlp
        h = self.act(m.gate_proj(x) + lora["gate"](x)) * (m.up_proj(x) + lora["up"](x))
        return m.down_proj(h) + lora["down"](h)

    def rope(self, q: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """q: (B, H, Q, hd) at absolute ``positions`` (B, Q)."""
        if self.rotary is None:
            return q
        cos, sin = self.rotary(q, positions)
        cos, sin = cos.unsqueeze(1).to(q.dtype), sin.unsqueeze(1).to(q.dtype)
        half = q.shape[-1] // 2
        rot = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return q * cos + rot * sin


# ----------------------------------------------------------------------------- the main path, run once


@dataclass
class MainPass:
    """What the frozen model computed once for a prefix: its cache, pre-norm final states, logits."""

    cache: object  # transformers DynamicCache (keys/values per layer, keys after RoPE)
    h_last: torch.Tensor  # (B, T, d) residual stream before the final norm
    logits: torch.Tensor  # (B, T, V) the base LM's logits
    length: int


@torch.no_grad()
def main_pass(model: nn.Module, adapter: Adapter, input_ids: torch.Tensor, prev: MainPass | None = None) -> MainPass:
    """Run the frozen model on ``input_ids`` (appended to ``prev``'s cache when given)."""
    captured = {}
    hook = adapter.final_norm.register_forward_hook(lambda m, args, out: captured.__setitem__("h", args[0]))
    try:
        kw = {CACHE_KW: prev.cache} if prev is not None else {}
        out = model(input_ids=input_ids, use_cache=True, **kw)
    finally:
        hook.remove()
    h = captured["h"]
    if prev is not None:
        h = torch.cat([prev.h_last, h], 1)
        logits = torch.cat([prev.logits, out.logits], 1)
    else:
        logits = out.logits
    cache = getattr(out, "cache", None) or out.past_key_values
    return MainPass(cache, h, logits, h.shape[1])


def _cache_kw() -> str:
    import inspect

    from transformers import GPT2LMHeadModel

    return "cache" if "cache" in inspect.signature(GPT2LMHeadModel.forward).parameters else "past_key_values"


CACHE_KW = _cache_kw()


def cache_kv(cache, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    if hasattr(cache, "layers"):
        return cache.layers[layer].keys, cache.layers[layer].values
    return cache.key_cache[layer], cache.value_cache[layer]  # older transformers


# ----------------------------------------------------------------------------- the diffusion path


class LoRA(nn.Module):
    def __init__(self, d_in: int, d_out: int, rank: int, alpha: float):
        super().__init__()
        self.A = nn.Parameter(torch.randn(rank, d_in) / math.sqrt(d_in))
        self.B = nn.Parameter(torch.zeros(d_out, rank))
        self.scale = alpha / rank

    def forward(self, x):
        return (x @ self.A.t() @ self.B.t()) * self.scale


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal features of t ∈ [0, 1] (as the official FrequencyEmbedder: t is not rescaled)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[..., None].float() * freqs
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class FlowLayer(nn.Module):
    def __init__(self, adapter: Adapter, i: int, fc: FlowConfig):
        super().__init__()
        d = adapter.d
        self.flow_q_proj = LoRA(d, d, fc.lora_rank, fc.lora_alpha)
        self.flow_o_proj = LoRA(d, d, fc.lora_rank, fc.lora_alpha)
        self.flow_mlp = nn.ModuleDict({n: LoRA(a, b, fc.lora_rank, fc.lora_alpha) for n, a, b in adapter.mlp_dims(i)})
        self.modulation_head = nn.Sequential(nn.Linear(fc.cond_dim, fc.cond_dim), nn.SiLU(), nn.Linear(fc.cond_dim, 6 * d))
        nn.init.zeros_(self.modulation_head[-1].weight)
        nn.init.zeros_(self.modulation_head[-1].bias)


class FlowPath(nn.Module):
    """All trainable L2D parameters; the frozen model is passed in, never owned."""

    def __init__(self, adapter: Adapter, fc: FlowConfig):
        super().__init__()
        self.fc = fc
        d = adapter.d
        # φ(y) = normalize(Linear(E[y])) · √d_f ("mapping" space, 1 layer, "mult" rescaling)
        self.flow_token_embedder = nn.Linear(d, fc.flow_dim)
        self.flow_to_lm = nn.Sequential(nn.Linear(fc.flow_dim, fc.flow_to_lm_hidden), nn.SiLU(),
                                        nn.Linear(fc.flow_to_lm_hidden, d))
        self.timestep_embedder = nn.Sequential(nn.Linear(fc.freq_dim, fc.cond_dim), nn.SiLU(),
                                               nn.Linear(fc.cond_dim, fc.cond_dim))
        nn.init.normal_(self.timestep_embedder[0].weight, std=0.02)
        nn.init.normal_(self.timestep_embedder[2].weight, std=0.02)
        # class labels 0..C-1 and the null class C (dropped with probability class_dropout in training)
        self.data_label_embedder = nn.Embedding(fc.num_classes + 1, fc.cond_dim) if fc.num_classes > 0 else None
        if self.data_label_embedder is not None:
            nn.init.normal_(self.data_label_embedder.weight, std=0.02)
        self.layers = nn.ModuleList(FlowLayer(adapter, i, fc) for i in range(len(adapter.blocks)))
        self.modulation_head = nn.Sequential(nn.Linear(fc.cond_dim, fc.cond_dim), nn.SiLU(), nn.Linear(fc.cond_dim, d))
        nn.init.zeros_(self.modulation_head[-1].weight)
        nn.init.zeros_(self.modulation_head[-1].bias)

    @property
    def null_class(self) -> int:
        return self.fc.num_classes

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- token latent space
    def flow_table(self, adapter: Adapter) -> torch.Tensor:
        """φ of every vocabulary token: (V, d_f), norm √d_f."""
        emb = adapter.model.get_input_embeddings().weight
        return F.normalize(self.flow_token_embedder(emb), dim=-1) * math.sqrt(self.fc.flow_dim)

    def phi(self, adapter: Adapter, ids: torch.Tensor) -> torch.Tensor:
        emb = adapter.model.get_input_embeddings()(ids)
        return F.normalize(self.flow_token_embedder(emb), dim=-1) * math.sqrt(self.fc.flow_dim)

    def conditioning(self, t: torch.Tensor, labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Modulation embeddings at t and at t = 0 (same class): (..., cond_dim) each."""
        c_t = self.timestep_embedder(timestep_embedding(t, self.fc.freq_dim))
        c_0 = self.timestep_embedder(timestep_embedding(torch.zeros_like(t), self.fc.freq_dim))
        if self.data_label_embedder is not None:
            if labels is None:
                labels = torch.full(t.shape, self.null_class, dtype=torch.long, device=t.device)
            e = self.data_label_embedder(labels.expand(t.shape))
            c_t, c_0 = c_t + e, c_0 + e
        return c_t, c_0

    def forward(self, adapter: Adapter, main: MainPass, q_pos: torch.Tensor, x: torch.Tensor, t: torch.Tensor,
                labels: torch.Tensor | None = None) -> torch.Tensor:
        """Logits at query positions ``q_pos`` (B, Q) given noisy next-token latents x (B, Q, d_f) at times t (B, Q).

        Flow queries attend causally to the frozen stream's cached keys/values (positions ≤ q_pos).
        """
        fc = self.fc
        B, Q = q_pos.shape
        t = t.to(x.dtype).expand(B, Q)
        # FlowToLM on the noisy latent divided by its std at t (flow_to_lm_timestep_rescaling)
        std = torch.sqrt((1 - t) ** 2 * fc.noise_rescaling ** 2 + t ** 2)[..., None]
        h = self.flow_to_lm(x / std * fc.flow_to_lm_timestep_rescaling)
        c_t, c_0 = self.conditioning(t, labels)
        T = main.length
        keys_pos = torch.arange(T, device=x.device)
        mask = keys_pos[None, None, None, :] <= q_pos[:, None, :, None]  # (B, 1, Q, T)
        H, hd = adapter.n_head, adapter.head_dim
        for i, layer in enumerate(self.layers):
            dw1, sh1, g1, dw2, sh2, g2 = layer.modulation_head(c_t).chunk(6, dim=-1)
            a = adapter.norm(i, 1, h, dw1) + sh1
            q = (adapter.q(i, a) + layer.flow_q_proj(a)).view(B, Q, H, hd).transpose(1, 2)
            q = adapter.rope(q, q_pos)
            k, v = cache_kv(main.cache, i)
            if k.shape[1] != H:  # grouped-query attention
                k = k.repeat_interleave(H // k.shape[1], dim=1)
                v = v.repeat_interleave(H // v.shape[1], dim=1)
            att = F.scaled_dot_product_attention(q, k.to(q.dtype), v.to(q.dtype), attn_mask=mask)
            att = att.transpose(1, 2).reshape(B, Q, H * hd)
            h = h + g1 * (adapter.o(i, att) + layer.flow_o_proj(att))
            m = adapter.norm(i, 2, h, dw2) + sh2
            h = h + g2 * adapter.mlp(i, m, layer.flow_mlp)
        gate = self.modulation_head(c_t) - self.modulation_head(c_0)  # preserve_behavior_at_flow_start
        h_main = torch.gather(main.h_last, 1, q_pos[..., None].expand(B, Q, main.h_last.shape[-1]))
        return adapter.lm_head(adapter.final_norm(h_main + gate * h))


def freeze(model: nn.Module) -> nn.Module:
    for p in model.parameters():
        p.requires_grad_(False)
    return model.eval()

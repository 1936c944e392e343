"""The tiny models: CLAP-like text-audio encoder, log-mel autoencoder, the object attention, UNet, classifier.

Everything is small enough to train in minutes on one CPU thread; the diffusion backbone is diffusers'
``UNet2DConditionModel`` (the same class AudioLDM's pipeline uses), conditioned through a single
cross-attention token ``c`` produced by the paper's text-guided single-head attention (Sec. 3.2).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import sounds

# ----------------------------------------------------------------------------- text


VOCAB = ["<pad>", "<unk>", "and", "a", "the", "of", "sound", *sounds.CLASSES]
MAX_WORDS = 12


def tokenize(texts: list[str]) -> torch.Tensor:
    """Word-level ids (B, MAX_WORDS); unknown words map to <unk>."""
    ids = torch.zeros(len(texts), MAX_WORDS, dtype=torch.long)
    for i, t in enumerate(texts):
        words = t.lower().replace(",", " ").split()[:MAX_WORDS]
        for j, w in enumerate(words):
            ids[i, j] = VOCAB.index(w) if w in VOCAB else 1
    return ids


class TextEncoder(nn.Module):
    """E_t: a 2-layer transformer over word embeddings, mean-pooled, projected to L dims."""

    def __init__(self, width: int = 64, out_dim: int = 64, layers: int = 2):
        super().__init__()
        self.emb = nn.Embedding(len(VOCAB), width)
        self.pos = nn.Parameter(0.02 * torch.randn(MAX_WORDS, width))
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.tf = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.proj = nn.Linear(width, out_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pad = ids == 0
        h = self.tf(self.emb(ids) + self.pos, src_key_padding_mask=pad)
        keep = (~pad).float().unsqueeze(-1)
        return self.proj((h * keep).sum(1) / keep.sum(1).clamp(min=1))


class MelCNN(nn.Module):
    """A small CNN over (B, 64, 96) log-mel → (B, out_dim); the audio tower of CLAP and the classifier's body."""

    def __init__(self, width: int = 32, out_dim: int = 64):
        super().__init__()
        w = width
        self.net = nn.Sequential(
            nn.Conv2d(1, w, 3, 2, 1), nn.GELU(), nn.Conv2d(w, 2 * w, 3, 2, 1), nn.GELU(),
            nn.Conv2d(2 * w, 2 * w, 3, 2, 1), nn.GELU(), nn.Conv2d(2 * w, 2 * w, 3, 1, 1), nn.GELU())
        self.proj = nn.Linear(2 * w, out_dim)

    def embed(self, mel: torch.Tensor) -> torch.Tensor:
        return self.net(mel.unsqueeze(1)).mean(dim=(2, 3))

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.proj(self.embed(mel))


class TinyCLAP(nn.Module):
    """CLAP-like dual encoder trained with InfoNCE on (clip, caption) pairs."""

    def __init__(self, width: int = 64, dim: int = 64, audio_width: int = 16):
        super().__init__()
        self.text = TextEncoder(width, dim)
        self.audio = MelCNN(audio_width, dim)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(10.0)))

    def encode_text(self, texts: list[str]) -> torch.Tensor:
        return F.normalize(self.text(tokenize(texts)), dim=-1)

    def encode_audio(self, mel: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.audio(mel), dim=-1)

    def loss(self, mel: torch.Tensor, texts: list[str]) -> torch.Tensor:
        a, t = self.encode_audio(mel), self.encode_text(texts)
        logits = self.logit_scale.exp().clamp(max=100) * a @ t.T
        # duplicate captions in a batch are all positives (soft targets)
        same = torch.tensor([[x == y for y in texts] for x in texts], dtype=torch.float32)
        tgt = same / same.sum(1, keepdim=True)
        return 0.5 * (-(tgt * logits.log_softmax(1)).sum(1).mean() - (tgt * logits.T.log_softmax(1)).sum(1).mean())


class AudioClassifier(nn.Module):
    """Multi-label audio classifier over the sound classes (the evaluation's "ACC" judge)."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.body = MelCNN(width, len(sounds.CLASSES))

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.body(mel)

    def embed(self, mel: torch.Tensor) -> torch.Tensor:
        return self.body.embed(mel)


# ----------------------------------------------------------------------------- audio autoencoder


class MelAutoencoder(nn.Module):
    """Log-mel (64 × 96) ↔ latent z (8 × 8 × 12, the paper's 8 channels): three stride-2 convolutions each way."""

    def __init__(self, width: int = 32, latent_channels: int = 8):
        super().__init__()
        w = width
        self.enc = nn.Sequential(nn.Conv2d(1, w, 3, 2, 1), nn.GELU(), nn.Conv2d(w, 2 * w, 3, 2, 1), nn.GELU(),
                                 nn.Conv2d(2 * w, 2 * w, 3, 2, 1), nn.GELU(), nn.Conv2d(2 * w, latent_channels, 1))
        self.dec = nn.Sequential(nn.Conv2d(latent_channels, 2 * w, 3, 1, 1), nn.GELU(),
                                 nn.ConvTranspose2d(2 * w, 2 * w, 4, 2, 1), nn.GELU(),
                                 nn.ConvTranspose2d(2 * w, w, 4, 2, 1), nn.GELU(),
                                 nn.ConvTranspose2d(w, w, 4, 2, 1), nn.GELU(), nn.Conv2d(w, 1, 3, 1, 1))
        self.register_buffer("scale", torch.tensor(1.0))  # latents / scale have unit std

    def encode(self, mel: torch.Tensor) -> torch.Tensor:
        return self.enc(mel.unsqueeze(1)) / self.scale

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.dec(z * self.scale).squeeze(1)


# ----------------------------------------------------------------------------- the object attention


class ObjectAttention(nn.Module):
    """Text-guided visual object localisation (Sec. 3.2), single head.

    Q = E_t(t) W^Q, K = E_v(i) W^K + PE_K, V = E_v(i) W^V + PE_V, w = softmax(QKᵀ/√d_k),
    c = MLP(Σ_p w_p V_p). At test time ``weights`` (the rescaled mask) replace w.
    ``kind="additive"`` is the ablation: w = softmax(vᵀ tanh(Q + K_p)) (Bahdanau).
    ``value_pe=False`` drops PE_V (kept as a zero buffer): with a learnable PE_V the query can encode its
    class in *where* it looks (a fixed patch whose PE_V the UNet reads) instead of finding the object.
    """

    def __init__(self, text_dim: int = 64, vis_dim: int = 64, d_k: int = 64, patches: int = 64,
                 out_dim: int = 64, kind: str = "dot", value_pe: bool = True):
        super().__init__()
        self.kind, self.d_k = kind, d_k
        self.wq = nn.Linear(text_dim, d_k, bias=False)
        self.wk = nn.Linear(vis_dim, d_k, bias=False)
        self.wv = nn.Linear(vis_dim, d_k, bias=False)
        self.pe_k = nn.Parameter(0.02 * torch.randn(patches, d_k))
        if value_pe:
            self.pe_v = nn.Parameter(0.02 * torch.randn(patches, d_k))
        else:
            self.register_buffer("pe_v", torch.zeros(patches, d_k))
        if kind == "additive":
            self.v_a = nn.Linear(d_k, 1, bias=False)
        elif kind != "dot":
            raise ValueError(f"unknown attention kind {kind!r}")
        self.mlp = nn.Sequential(nn.LayerNorm(d_k), nn.Linear(d_k, 2 * out_dim), nn.GELU(), nn.Linear(2 * out_dim, out_dim))
        self.norm_in = nn.LayerNorm(vis_dim)
        self.norm_q = nn.LayerNorm(text_dim)  # CLAP embeddings are unit vectors: normalise their scale

    def attention(self, query: torch.Tensor, patches: torch.Tensor) -> torch.Tensor:
        """(B, L) text embeddings, (B, P, D) patch features → (B, P) weights summing to 1."""
        q = self.wq(self.norm_q(query))
        k = self.wk(self.norm_in(patches)) + self.pe_k
        if self.kind == "dot":
            scores = (k @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(self.d_k)
        else:
            scores = self.v_a(torch.tanh(k + q.unsqueeze(1))).squeeze(-1)
        return scores.softmax(-1)

    def forward(self, patches: torch.Tensor, query: torch.Tensor | None = None,
                weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """→ (c as one cross-attention token (B, 1, out_dim), the weights used (B, P))."""
        if weights is None:
            weights = self.attention(query, patches)
        v = self.wv(self.norm_in(patches)) + self.pe_v
        pooled = (weights.unsqueeze(-1) * v).sum(1)
        return self.mlp(pooled).unsqueeze(1), weights


def make_unet(channels: tuple[int, ...] = (32, 64), cross_dim: int = 64, latent_channels: int = 8):
    """diffusers ``UNet2DConditionModel`` taking the condition ``c`` twice: as AudioLDM-1 does, through
    ``class_labels`` (projected and added to the timestep embedding of every ResNet block), and as one
    cross-attention token. See :func:`predict_noise`."""
    from diffusers import UNet2DConditionModel

    n = len(channels)
    down = ("DownBlock2D",) + ("CrossAttnDownBlock2D",) * (n - 1)
    up = ("CrossAttnUpBlock2D",) * (n - 1) + ("UpBlock2D",)
    return UNet2DConditionModel(
        sample_size=(8, 12), in_channels=latent_channels, out_channels=latent_channels,
        block_out_channels=tuple(channels), layers_per_block=1, down_block_types=down, up_block_types=up,
        cross_attention_dim=cross_dim, attention_head_dim=8, norm_num_groups=8,
        class_embed_type="projection", projection_class_embeddings_input_dim=cross_dim)


def predict_noise(unet, x, t, c):
    """ε_θ(z_n, n, c) for ``c`` of shape (B, 1, D): the 1-token cross-attention states and the class label."""
    return unet(x, t, encoder_hidden_states=c, class_labels=c[:, 0]).sample


def make_schedulers(train_steps: int = 1000):
    """The paper's linear β schedule 0.0015 → 0.0195 over N = 1000 steps; DDIM for sampling."""
    from diffusers import DDIMScheduler, DDPMScheduler

    kw = dict(num_train_timesteps=train_steps, beta_start=0.0015, beta_end=0.0195, beta_schedule="linear",
              clip_sample=False)
    return DDPMScheduler(**kw), DDIMScheduler(**kw, set_alpha_to_one=False)

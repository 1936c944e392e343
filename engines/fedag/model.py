"""Server and client models (spec §1; authors' ``models/CLIP_adapter.py`` and ``Client.py``).

Server: frozen CLIP image features z = E_I(x) (pre-computed once: the encoder never changes), one gating adapter
per in-domain A_i(z) = softmax(W₂ tanh(W₁ z)) with z̃_i = A_i(z) ⊙ z, adapter logits s_i = 100·cos(z̃_i, E_T(prompt_y)),
and the attention scorer g(s) = ReLU(w·s + b) (code: ``nn.Sequential(nn.Linear(n_classes, 1), nn.ReLU())``) with
α_i(x) = softmax_i g(s_i(x)) and combined logits Σ_i α_i s_i.
Client: a small CNN (the ViT-tiny analogue) whose penultimate features feed the quality prototypes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LOGIT_SCALE = 100.0  # code: ``logit_scale = 100`` (not CLIP's learnt scale)


class GateAdapter(nn.Module):
    """A_i(z) = softmax(W₂ tanh(W₁ z)): a gate over the d feature dimensions that sums to 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim), nn.Softmax(dim=1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class ServerModel(nn.Module):
    """Frozen text embeddings of the class prompts, D gating adapters and the attention scorer g."""

    def __init__(self, text_features: torch.Tensor, n_adapters: int):
        super().__init__()
        t = F.normalize(text_features.float(), dim=-1)
        self.register_buffer("text", t)  # (C, d), frozen
        c, d = t.shape
        self.adapters = nn.ModuleList(GateAdapter(d) for _ in range(n_adapters))
        self.scorer = nn.Sequential(nn.Linear(c, 1), nn.ReLU())
        # g starts at w = 0, b = 1: α uniform and the ReLU active. PyTorch's default init put w·s + b below 0
        # for every sample in our runs (logits are ~100·cos), so the ReLU was dead and α stayed uniform forever.
        nn.init.zeros_(self.scorer[0].weight)
        nn.init.ones_(self.scorer[0].bias)

    @property
    def n_adapters(self) -> int:
        return len(self.adapters)

    def adapter_logits(self, z: torch.Tensor, i: int) -> torch.Tensor:
        """s_i(x) = 100 · cos(A_i(z) ⊙ z, E_T) over the classes (code: ``CLIP_logtis``)."""
        zt = F.normalize(self.adapters[i](z) * z, dim=-1)
        return LOGIT_SCALE * zt @ self.text.t()

    def all_logits(self, z: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.adapter_logits(z, j) for j in range(self.n_adapters)])  # (D, B, C)

    def attention(self, logits: torch.Tensor) -> torch.Tensor:
        """α (D, B): softmax over adapters of g(s_j) (code: ``torch.softmax(att_score, dim=0)``)."""
        return torch.softmax(self.scorer(logits).squeeze(-1), dim=0)

    def combined(self, z: torch.Tensor, logits: torch.Tensor | None = None):
        """(Σ_j α_j s_j, α, s): the one2all prediction."""
        s = self.all_logits(z) if logits is None else logits
        a = self.attention(s)
        return (a.unsqueeze(-1) * s).sum(0), a, s


def zero_shot_logits(z: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
    return LOGIT_SCALE * F.normalize(z, dim=-1) @ F.normalize(text, dim=-1).t()


class ClientNet(nn.Module):
    """The clients' lightweight classifier (≈ 0.1 M parameters); ``features`` is the penultimate layer h_c(x)."""

    def __init__(self, n_classes: int = 10, width: int = 16, feat: int = 64):
        super().__init__()
        w = width
        self.body = nn.Sequential(
            nn.Conv2d(3, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(4 * w * 16, feat), nn.ReLU())
        self.head = nn.Linear(feat, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def to_tensor(x) -> torch.Tensor:
    """(N, H, W, 3) float images in [0, 1] → (N, 3, H, W) tensor, normalised to zero mean per channel."""
    t = torch.as_tensor(x, dtype=torch.float32).permute(0, 3, 1, 2)
    return (t - 0.5) / 0.5

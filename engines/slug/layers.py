"""Steps 2–4 of SLUG: layer importance, gradient alignment, the Pareto front; parameter groups.

I(l) = ‖∇_{θ_l} L_f‖₂ / ‖θ_l‖₂ and A(l) = |cos(∇_{θ_l} L_f, ∇_{θ_l} L_r)| (the official code takes |cos|).
Candidates are weight matrices only (no biases, logit scale, position/token/patch embeddings, norms), split by
tower. Layer l is dominated when another layer of its tower has strictly lower A and strictly higher I.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

_SKIP = ("bias", "logit_scale", "position", "embedding", "norm")
_LAYER_RE = re.compile(r"encoder\.layers\.(\d+)\.")


class UnknownLayer(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


@dataclass
class LayerScore:
    name: str
    tower: str  # "vision" | "text"
    importance: float
    alignment: float
    depth: int  # encoder block index; projections after the last block; -1 otherwise
    pareto: bool = False
    numel: int = 0

    def as_dict(self) -> dict:
        return dict(name=self.name, tower=self.tower, importance=self.importance, alignment=self.alignment,
                    depth=self.depth, pareto=self.pareto, numel=self.numel)


def tower_of(name: str) -> str:
    return "vision" if name.startswith(("vision_model", "visual_projection", "visual.")) else "text"


def depth_of(name: str, n_layers: int) -> int:
    m = _LAYER_RE.search(name)
    if m:
        return int(m.group(1))
    return n_layers if "projection" in name else -1


def is_candidate(name: str, p: torch.Tensor) -> bool:
    """Weight matrices only (the official filter plus HF's norms)."""
    return p.ndim >= 2 and not any(s in name for s in _SKIP)


def candidate_names(model, tower: str = "both") -> list[str]:
    out = []
    for n, p in model.named_parameters():
        if is_candidate(n, p) and (tower == "both" or tower_of(n) == tower):
            out.append(n)
    return out


def check_layer(model, name: str) -> None:
    """Raise UnknownLayer with a helpful message unless ``name`` is a candidate parameter of ``model``."""
    params = dict(model.named_parameters())
    if name not in params:
        close = [n for n in params if name.split(".")[-2:] == n.split(".")[-2:]][:3]
        hint = f" (similar: {', '.join(close)})" if close else ""
        raise UnknownLayer(f"layer {name!r} does not exist in this model{hint}; "
                           f"weight matrices look like 'text_model.encoder.layers.0.mlp.fc1.weight'")
    if not is_candidate(name, params[name]):
        raise UnknownLayer(f"layer {name!r} is not a weight matrix SLUG may update (biases, norms, "
                           "embeddings and the logit scale are excluded)")


def importance(g: torch.Tensor, theta: torch.Tensor) -> float:
    return float(g.norm() / theta.norm().clamp_min(1e-12))


def alignment(g_f: torch.Tensor, g_r: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(g_f.flatten(), g_r.flatten(), dim=0, eps=1e-6).abs())


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated (alignment, importance) points: dominated ⇔ ∃ j: A_j < A_i and I_j > I_i."""
    out = []
    for i, (a, imp) in enumerate(points):
        if not any(a2 < a and i2 > imp for a2, i2 in points):
            out.append(i)
    return out


def score_layers(model, g_f: dict, g_r: dict, tower: str = "both") -> list[LayerScore]:
    params = dict(model.named_parameters())
    cfg = getattr(model, "config", None)
    nv = getattr(getattr(cfg, "vision_config", None), "num_hidden_layers", 0) or 0
    nt = getattr(getattr(cfg, "text_config", None), "num_hidden_layers", 0) or 0
    scores = []
    for n in candidate_names(model, tower):
        tw = tower_of(n)
        scores.append(LayerScore(n, tw, importance(g_f[n], params[n].detach()), alignment(g_f[n], g_r[n]),
                                 depth_of(n, nv if tw == "vision" else nt), numel=params[n].numel()))
    for tw in ("vision", "text"):
        group = [s for s in scores if s.tower == tw]
        for i in pareto_front([(s.alignment, s.importance) for s in group]):
            group[i].pareto = True
    return scores


def group_of(name: str, whole_block: bool) -> list[str]:
    """The parameters updated together: SD's variant updates q/k/v together and fc1+fc2 together."""
    if not whole_block:
        return [name]
    for members in (("q_proj", "k_proj", "v_proj"), ("fc1", "fc2")):
        for m in members:
            if f".{m}." in name:
                return [name.replace(f".{m}.", f".{o}.") for o in members]
    return [name]


def deepest(scores: list[LayerScore]) -> LayerScore | None:
    """The SD script's default: the deepest Pareto layer inside the encoder blocks."""
    cands = [s for s in scores if s.pareto and _LAYER_RE.search(s.name)]
    return max(cands, key=lambda s: (s.depth, s.importance)) if cands else None

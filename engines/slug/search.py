"""Steps 5–6 of SLUG: the single-layer update θ_l ← θ_l⁽⁰⁾ + λ·∇_{θ_l} L_f and the step-size binary search.

The search works in relative units r = λ·‖g_l‖/‖θ_l‖ (official code: start at r = 0.1, i.e. a 10 % weight
change). Forget accuracy above the target → raise the lower bound and double r until an upper bound exists,
then bisect; at or below the target → the upper bound drops to r and r moves halfway down. At most
``max_evals`` evaluations, no retraining. The result is the smallest evaluated r that reached the target.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .layers import tower_of


class SearchFailed(RuntimeError):
    """The step-size search did not reach the forget-accuracy target."""


# ----------------------------------------------------------------------------- the patch


def apply_patch(model, grads: dict, names: list[str], lam: float) -> dict[str, torch.Tensor]:
    """θ_n ← θ_n + λ·g_n for each n in ``names``; returns clones of the originals (for a bit-exact revert)."""
    params = dict(model.named_parameters())
    originals = {n: params[n].detach().clone() for n in names}
    with torch.no_grad():
        for n in names:
            params[n].add_(grads[n].to(params[n].device, params[n].dtype), alpha=float(lam))
    return originals


def revert_patch(model, originals: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    with torch.no_grad():
        for n, t in originals.items():
            params[n].copy_(t)


@contextlib.contextmanager
def patched(model, grads: dict, names: list[str], lam: float):
    originals = apply_patch(model, grads, names, lam)
    try:
        yield
    finally:
        revert_patch(model, originals)


def changed_parameters(model, reference: dict[str, torch.Tensor]) -> list[str]:
    """Names of the parameters that differ (bitwise) from a state snapshot."""
    return [n for n, p in model.named_parameters() if not torch.equal(p.detach(), reference[n])]


def snapshot(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def lam_from_rel(model, grads: dict, name: str, rel: float) -> float:
    p = dict(model.named_parameters())[name].detach()
    return float(rel * p.norm() / grads[name].norm().clamp_min(1e-20))


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def class_embeddings(zc, prompts) -> torch.Tensor:
    """Prompt-ensembled unit class vectors (as ``ZooClip.class_embeddings``), all prompts in one batch."""
    groups = [[p] if isinstance(p, str) else list(p) for p in prompts]
    flat = [q for g in groups for q in g]
    emb = zc.encode_texts(flat)
    out, i = [], 0
    for g in groups:
        out.append(torch.nn.functional.normalize(emb[i:i + len(g)].mean(0), dim=-1))
        i += len(g)
    return torch.stack(out)


class Evaluator:
    """Zero-shot forget / retain / utility accuracy; caches the tower a patch does not touch."""

    def __init__(self, zc, concept):
        self.zc, self.c = zc, concept
        self.evals = 0
        with torch.no_grad():
            self._img0 = self._images()
            self._cls0 = self._classes()

    @torch.no_grad()
    def _images(self):
        zc = self.zc
        tasks = (self.c.task, self.c.utility) + ((self.c.test_task,) if getattr(self.c, "test_task", None) else ())
        return [torch.cat([zc.encode_images(t.images[i:i + 256]) for i in range(0, len(t.images), 256)])
                for t in tasks]

    @torch.no_grad()
    def _classes(self):
        return [class_embeddings(self.zc, t.prompts) for t in (self.c.task, self.c.utility)]

    @torch.no_grad()
    def forget_accuracy(self) -> float:
        """Forget accuracy@1 only (images of the concept, all towers recomputed): GA's per-step stopping check."""
        self.evals += 1
        was = self.zc.model.training
        self.zc.model.eval()
        fm = self.c.task.labels == self.c.index
        img = self.zc.encode_images(self.c.task.images[fm])
        cls = class_embeddings(self.zc, self.c.task.prompts)
        self.zc.model.train(was)
        return float(((img @ cls.T).argmax(1).cpu().numpy() == self.c.index).mean())

    @torch.no_grad()
    def __call__(self, changed: list[str] | None = None, per_class: bool = False) -> dict:
        self.evals += 1
        towers = {tower_of(n) for n in changed} if changed is not None else {"vision", "text"}
        was = self.zc.model.training
        self.zc.model.eval()
        img = self._images() if "vision" in towers else self._img0
        cls = self._classes() if "text" in towers else self._cls0
        self.zc.model.train(was)
        c = self.c
        sims = (img[0] @ cls[0].T).cpu().numpy()
        pred = sims.argmax(1)
        y = c.task.labels
        fm = y == c.index
        k = min(5, sims.shape[1])
        top5 = np.argsort(-sims[fm], axis=1)[:, :k]
        out = dict(forget1=float((pred[fm] == c.index).mean()), forget5=float((top5 == c.index).any(1).mean()),
                   retain=float((pred[~fm] == y[~fm]).mean()),
                   utility=float(((img[1] @ cls[1].T).argmax(1).cpu().numpy() == c.utility.labels).mean()))
        if per_class:
            out["per_class"] = [float((pred[y == j] == j).mean()) if np.any(y == j) else float("nan")
                                for j in range(len(c.task.classes))]
        if len(img) > 2:  # the held-out test half: reported, never used by the search or the stopping rules
            ts = (img[2] @ cls[0].T).cpu().numpy()
            yt, ft = c.test_task.labels, c.test_task.labels == c.index
            out["test"] = dict(forget1=float((ts[ft].argmax(1) == c.index).mean()),
                               retain=float((ts[~ft].argmax(1) == yt[~ft]).mean()))
        return out


# ----------------------------------------------------------------------------- binary search


@dataclass
class SearchTrace:
    layer: str
    names: list[str]
    rows: list[dict] = field(default_factory=list)
    best: int | None = None  # index into rows

    @property
    def reached(self) -> bool:
        return self.best is not None

    @property
    def best_row(self) -> dict | None:
        return None if self.best is None else self.rows[self.best]

    def as_dict(self) -> dict:
        return dict(layer=self.layer, names=self.names, rows=self.rows, best=self.best)


def binary_search(model, grads: dict, names: list[str], evaluate, forget_target: float = 0.05,
                  max_evals: int = 10, init_rel: float = 0.1, max_rel: float = 20.0, metric: str = "forget1",
                  accept=None, progress=None) -> SearchTrace:
    """Search r for the update of ``names`` (λ from the first name's norms, as the SD script does).

    ``evaluate(names) -> dict`` is called with the patch applied; ``accept(row)`` (default: row[metric] ≤
    forget_target) decides whether a probe forgot enough.
    """
    accept = accept or (lambda row: row[metric] <= forget_target)
    trace = SearchTrace(names[0], list(names))
    scale = lam_from_rel(model, grads, names[0], 1.0)
    r, lo, hi = min(init_rel, max_rel), 0.0, math.inf
    for i in range(max_evals):
        lam = r * scale
        with patched(model, grads, names, lam):
            row = dict(iter=i + 1, rel=float(r), lam=float(lam), **evaluate(names))
        row["reached"] = bool(accept(row))
        trace.rows.append(row)
        if progress is not None:
            progress((i + 1) / max_evals, f"{names[0]}: r = {r:.3g}, forget {row[metric]:.2f}, retain {row['retain']:.2f}")
        if row["reached"]:
            if trace.best is None or r < trace.rows[trace.best]["rel"]:
                trace.best = len(trace.rows) - 1
            hi = r
            r = 0.5 * (lo + hi)
        else:
            lo = r
            r = 2 * r if math.isinf(hi) else 0.5 * (lo + hi)
            if r > max_rel:
                break
    return trace

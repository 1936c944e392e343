"""The context facade every long entry point receives.

``ctx.progress(fraction, message)`` reports progress (never backwards),
``ctx.cancelled()`` is checked between steps (``ctx.check_cancelled()`` raises),
``ctx.artifacts`` saves files by job-scoped reference, ``ctx.log(...)`` logs.
``LocalContext`` serves in-process callers and tests; the Celery worker and
the inline job backend subclass it to forward progress.
"""
from __future__ import annotations

import logging
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from .artifacts import ArtifactStore

log = logging.getLogger("paperlab.jobs")


class JobCancelled(Exception):
    """Raised inside an entry point when the user pressed Stop."""


@runtime_checkable
class JobContext(Protocol):
    job_id: str
    artifacts: ArtifactStore

    def progress(self, fraction: float, message: str = "", preview: dict | None = None) -> None: ...

    def cancelled(self) -> bool: ...

    def check_cancelled(self) -> None: ...

    def log(self, message: str, *args: Any) -> None: ...


ProgressSink = Callable[[float, str, "dict | None"], None]


class LocalContext:
    """A plain context. ``on_progress`` receives monotone (fraction, message, preview)."""

    def __init__(
        self,
        job_id: str | None = None,
        artifacts_root: Path | None = None,
        on_progress: ProgressSink | None = None,
        cancel_event: threading.Event | None = None,
    ):
        if artifacts_root is None:
            from .settings import get_settings

            artifacts_root = get_settings().artifacts_dir
        self.job_id = job_id or uuid.uuid4().hex
        self.artifacts = ArtifactStore(artifacts_root, self.job_id)
        self._on_progress = on_progress
        self._cancel = cancel_event or threading.Event()
        self._fraction = 0.0
        self.messages: list[str] = []

    @property
    def fraction(self) -> float:
        return self._fraction

    def progress(self, fraction: float, message: str = "", preview: dict | None = None) -> None:
        # Progress never goes backwards, and stays in [0, 1].
        f = min(1.0, max(self._fraction, float(fraction)))
        self._fraction = f
        if message:
            self.messages.append(message)
        if self._on_progress is not None:
            self._on_progress(f, message, preview)

    def cancel(self) -> None:
        self._cancel.set()

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        if self.cancelled():
            raise JobCancelled(f"job {self.job_id} was cancelled")

    def log(self, message: str, *args: Any) -> None:
        log.info("[%s] " + message, self.job_id, *args)


def stop_generation_when(cancelled: Callable[[], bool]):
    """``stopping_criteria`` for a transformers ``generate`` call: the whole batch stops at the next token
    once ``cancelled()`` (a job's ``ctx.cancelled``) is true; the caller then raises ``JobCancelled``.
    One ``generate`` of a batch of samples can take tens of seconds on a busy CPU."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return torch.full((input_ids.shape[0],), bool(cancelled()), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_Cancelled()])


@contextmanager
def cancellable_layers(model, cancelled: Callable[[], bool]):
    """Within the block, each decoder layer of ``model`` (a transformers LM) first checks ``cancelled()``
    and raises ``JobCancelled``: one forward pass (the prefill of a batch of long prompts, a training step
    of a 135M model) takes 10-20 s on a busy CPU, longer than a Stop may take. Only the thread that opened
    the block is affected (a cached model may be shared); the hooks are removed on exit."""
    owner = threading.get_ident()

    def hook(_module, _args):
        if threading.get_ident() == owner and cancelled():
            raise JobCancelled("cancelled inside a forward pass")

    handles = [m.register_forward_pre_hook(hook) for m in model.modules()
               if type(m).__name__.endswith("DecoderLayer")]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def cancellable_generate(model, cancelled: Callable[[], bool] | None, **kwargs):
    """``model.generate(**kwargs)`` (under ``torch.no_grad``) that a job's Stop ends within a decoder layer
    (:func:`cancellable_layers`) or at the next token (:func:`stop_generation_when`), raising
    ``JobCancelled`` instead of returning a cut-short output; ``cancelled=None``: a plain call."""
    import torch

    if cancelled is None:
        with torch.no_grad():
            return model.generate(**kwargs)
    with torch.no_grad(), cancellable_layers(model, cancelled):
        out = model.generate(**kwargs, stopping_criteria=stop_generation_when(cancelled))
    if cancelled():
        raise JobCancelled("cancelled while generating")
    return out


class Subprogress:
    """Maps [0, 1] of a sub-task onto [start, stop] of the parent's progress."""

    def __init__(self, ctx: JobContext, start: float, stop: float):
        self.ctx, self.start, self.stop = ctx, start, stop

    def __call__(self, fraction: float, message: str = "", preview: dict | None = None) -> None:
        self.ctx.progress(self.start + (self.stop - self.start) * fraction, message, preview)
        self.ctx.check_cancelled()

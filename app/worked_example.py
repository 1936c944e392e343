"""Worked examples: every tab opens on a real result of its first example.

``fetch(method_id, entry, params)`` returns the engine's result for the example's parameters. The first
call submits the example as a job through the job backend (the same path, validation and worker as the
tab's button); the result is cached as JSON under ``<data_dir>/worked_examples/<method>/``, keyed by the
engine's code version (:func:`engines.common.results.code_version`), the release version and the
parameters, so later page loads only read a file. Example jobs run one at a time in a background thread
of the web process (a closed page does not lose a half-done example, and a visitor's own job never
queues behind a dozen of them); the examples of the tab a visitor opens (``promote``, on the tab's select
event) go before those of tabs nobody is looking at.

``on_load(...)`` registers a page-load hook for a tab: it shows "computing…" while a cold example runs,
then renders the result with the same functions as the tab's button. When the example cannot be computed
(the released models are missing or damaged, no worker answers) the tab shows a banner that says why
and, for models, the command that restores them: never empty panels without a word.

Nothing here imports torch or matplotlib: renderers import what they need when the page loads.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import queue
import threading
from concurrent.futures import Future
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

log = logging.getLogger("paperlab.worked_example")

RESTORE = "git checkout -- release/ && make models"  # the release is part of the repository

_inflight: dict[Path, Future] = {}
_lock = threading.Lock()


class ExampleUnavailable(RuntimeError):
    """The worked example could not be computed; the message says why (and how to fix it)."""


def _root() -> Path:
    from engines.common.settings import get_settings

    return get_settings().data_dir / "worked_examples"


@lru_cache(maxsize=64)
def _code_version(method_id: str) -> str:
    from engines.common.results import code_version

    return code_version(f"engines.{method_id}", "engines.common")


def cache_path(method_id: str, entry: str, params: dict[str, Any]) -> Path:
    from engines.common import release

    ver = _code_version(method_id)
    blob = json.dumps([entry, params, release.version()], sort_keys=True, default=str)
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return _root() / method_id / f"{entry}-{ver}-{key}.json"


def cached(method_id: str, entry: str, params: dict[str, Any]) -> dict | None:
    """The cached result, or None when this example was not computed with this code yet, or when the job
    artifacts it shows (images, sounds) were removed since (housekeeping deletes old job folders)."""
    p = cache_path(method_id, entry, params)
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not _artifacts_present(p):
        p.unlink(missing_ok=True)
        _job_file(p).unlink(missing_ok=True)
        return None
    return res


def _job_file(path: Path) -> Path:
    """Beside a cached result: the id of the job whose artifact folder the result refers to (if it has one)."""
    return path.with_suffix(".job")


def _artifacts_present(path: Path) -> bool:
    from engines.common.settings import get_settings

    try:
        job_id = _job_file(path).read_text(encoding="utf-8").strip()
    except OSError:
        return True  # the job wrote no artifacts
    return bool(job_id) and (get_settings().artifacts_dir / job_id).is_dir()


def _compute(method_id: str, entry: str, params: dict[str, Any], path: Path) -> dict:
    from engines.common.settings import get_settings

    from .jobs import get_backend

    backend = get_backend()
    try:
        job_id = backend.submit(method_id, entry, params)
    except Exception as e:  # a ParamError here is a bug of the tab's example
        raise ExampleUnavailable(f"the example's parameters were rejected: {e}") from None
    try:
        for ev in backend.events(job_id, timeout=None if _timeout() is None else _timeout()):
            if ev.kind == "result":
                res = ev.result or {}
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(res, default=_jsonable), encoding="utf-8")
                job_file = _job_file(path)
                if (get_settings().artifacts_dir / job_id).is_dir():
                    job_file.write_text(job_id, encoding="utf-8")
                else:
                    job_file.unlink(missing_ok=True)
                os.replace(tmp, path)
                _drop_stale(path)
                return json.loads(path.read_text(encoding="utf-8"))
            if ev.kind in ("error", "cancelled"):
                raise ExampleUnavailable(_explain(ev.error or ev.message or ev.kind))
    except TimeoutError as e:
        backend.cancel(job_id)
        raise ExampleUnavailable(f"no result in time ({e})") from None
    raise ExampleUnavailable("the job ended without a result")


def _drop_stale(path: Path) -> None:
    """Remove this example's results computed by older code (same entry and parameters, other version)."""
    entry, _, key = path.stem.split("-")
    for old in path.parent.glob(f"{entry}-*-{key}.json"):
        if old != path:
            old.unlink(missing_ok=True)
            _job_file(old).unlink(missing_ok=True)


def _timeout() -> float | None:
    from engines.common.settings import get_settings

    s = get_settings()
    return s.job_queue_timeout_s + s.hard_time_limit_s + 60


def _jsonable(o):
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def _explain(error: str) -> str:
    low = error.lower()
    if "release" in low or "make models" in low or "manifest" in low or "sha256" in low:
        return (f"the released models are missing or damaged ({error.strip()}). Restore them with "
                f"`{RESTORE}`.")
    return error.strip()


def submit(method_id: str, entry: str, params: dict[str, Any]) -> Future:
    """A future of the example's result: read from the cache, or computed once (one example at a time, the
    examples of the tab a visitor is looking at first: :func:`promote`)."""
    path = cache_path(method_id, entry, params)
    hit = cached(method_id, entry, params)
    if hit is not None:
        f: Future = Future()
        f.set_result(hit)
        return f
    with _lock:
        fut = _inflight.get(path)
        if fut is not None and not fut.cancelled():
            return fut
        fut = Future()

        def work():
            if not fut.set_running_or_notify_cancel():
                with _lock:
                    if _inflight.get(path) is fut:
                        del _inflight[path]
                return
            try:
                again = cached(method_id, entry, params)
                fut.set_result(again if again is not None else _compute(method_id, entry, params, path))
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits
                fut.set_exception(e)
            finally:
                with _lock:
                    _inflight.pop(path, None)

        _inflight[path] = fut
        _waiting[path] = (method_id, work)
        _enqueue(_LATER, path)
        _start_runner()
        return fut


# The example queue: one runner thread takes the most urgent waiting example (a tab the visitor opened
# before the others that page loads asked for), in order of arrival within a priority.
_NOW, _LATER = 0, 1
_queue: "queue.PriorityQueue[tuple[int, int, Path]]" = queue.PriorityQueue()
_waiting: dict[Path, tuple[str, Callable[[], None]]] = {}
_seq = itertools.count()
_runner: threading.Thread | None = None


def _enqueue(priority: int, path: Path) -> None:
    _queue.put((priority, next(_seq), path))


def _start_runner() -> None:
    global _runner
    if _runner is None or not _runner.is_alive():
        _runner = threading.Thread(target=_run, name="worked-example", daemon=True)
        _runner.start()


def _run() -> None:
    while True:
        _, _, path = _queue.get()
        with _lock:
            item = _waiting.pop(path, None)  # None: already run (it was queued again by promote)
        if item is not None:
            item[1]()


def promote(method_id: str) -> None:
    """The visitor opened this method's tab: its waiting examples run next."""
    with _lock:
        for path, (mid, _) in _waiting.items():
            if mid == method_id:
                _enqueue(_NOW, path)


def fetch(method_id: str, entry: str, params: dict[str, Any], timeout: float | None = None) -> dict:
    """The example's result (blocking); raises :class:`ExampleUnavailable` with the reason."""
    try:
        return submit(method_id, entry, params).result(timeout)
    except Exception as e:
        raise _unavailable(e) from None


def _unavailable(e: Exception) -> ExampleUnavailable:
    return e if isinstance(e, ExampleUnavailable) else ExampleUnavailable(f"{type(e).__name__}: {e}")


def missing_zoo(*names: str) -> str | None:
    """Why zoo models are unavailable without training (None when each is built, shipped or external)."""
    from engines.common import release
    from engines.common.zoo import catalog

    miss = []
    for name in names:
        if catalog.external_source(name) or catalog.is_built(name):
            continue
        d = catalog.model_dir(name)
        if release.manifest("zoo", f"{name}/{d.name}") is None:
            miss.append(name)
    if not miss:
        return None
    cmd = " ".join(f"zoo/{n}" for n in miss)
    return (f"the model{'s' if len(miss) > 1 else ''} {', '.join(miss)} of this profile "
            f"{'are' if len(miss) > 1 else 'is'} neither built nor in the release, and page loads never train. "
            f"Restore the release with `git checkout -- release/` (default profile) or build "
            f"{'them' if len(miss) > 1 else 'it'} with `make models MODELS=\"{cmd}\"`, then reload the page.")


def as_example(status: str) -> str:
    """A run's status line, reworded for the worked example (it was computed once, not just now; the
    wording also keeps "Done in" unique to the visitor's own runs)."""
    return status.replace("Done in", "Computed in")


def banner(reason: str) -> str:
    return f"⚠️ **The worked example is not available:** {reason}"


def on_load(method_id: str, entry: str, params: dict[str, Any] | Callable[[], dict[str, Any]], render: Callable[..., Sequence[Any]],
            outputs: Sequence, status, done: str | Callable[..., str] = "",
            more: Sequence[tuple[str, dict[str, Any]]] = (), cancel_on: Sequence[Callable] = (),
            missing: Callable[[], str | None] | None = None, own_status: bool = False):
    """Register the tab's page-load hook: the example's result rendered into ``outputs``, a line in ``status``.

    ``render(result, *more_results)`` returns one value per output (the tab's button renderers); ``more``
    lists further ``(entry, params)`` jobs of the same example (their results follow the first); ``params``
    may be a function (called when the page loads, for examples that need work to set up). ``status``
    is a Markdown component (not in ``outputs``) that shows progress, then ``done`` (a string, or a function
    of the results) or the reason the example is missing. ``cancel_on`` lists the listeners (``run.click``,
    ``slider.release``) of the tab's own runs: they stop a late example from overwriting the visitor's result
    (the example's job itself still finishes and is cached). ``missing()`` (tabs whose engine would train
    what is not there) returns why the example cannot be computed without training, with the command that
    provides the models, or None; it runs only when the example is not cached. ``own_status``: ``status`` shows
    the example alone (the tab's runs write elsewhere), so a run that cancels a late example clears its line
    (it would otherwise keep saying "Computing…" over the visitor's result).
    """
    import gradio as gr

    n = len(outputs)

    async def hook():
        # Async: a page load waits for its examples without holding one of Gradio's worker threads
        # (a dozen tabs per page load, pages opened while examples compute, used to pin them all).
        import asyncio

        from anyio import to_thread

        def setup():  # may read files and build parameters: off the event loop
            jobs = [(entry, params() if callable(params) else params), *more]
            hits = [cached(method_id, e, p) for e, p in jobs]
            why = missing() if missing is not None and any(h is None for h in hits) else None
            return jobs, hits, why

        try:
            jobs, hits, why = await to_thread.run_sync(setup)
        except Exception as e:
            log.exception("worked example of %s could not be set up", method_id)
            yield (*[gr.skip()] * n, banner(f"{type(e).__name__}: {e}"))
            return
        if any(h is None for h in hits):
            if why:
                yield (*[gr.skip()] * n, banner(why))
                return
            yield (*[gr.skip()] * n, "Computing the worked example (first visit only, a few seconds)…")
        try:
            results = []
            for h, (e, p) in zip(hits, jobs):
                if h is None:
                    try:
                        # shield: a visitor's click cancels this page's hook (cancel_on), never the shared
                        # computation that other pages wait for
                        h = await asyncio.shield(asyncio.wrap_future(submit(method_id, e, p)))
                    except Exception as err:
                        raise _unavailable(err) from None
                results.append(h)
            values, line = await to_thread.run_sync(lambda: (
                tuple(render(*results)), done(*results) if callable(done) else done))
        except ExampleUnavailable as e:
            yield (*[gr.skip()] * n, banner(str(e)))
            return
        except Exception as e:  # a renderer bug must not leave the tab silently empty
            log.exception("worked example of %s failed to render", method_id)
            yield (*[gr.skip()] * n, banner(f"{type(e).__name__}: {e}"))
            return
        yield (*values, line)

    dep = gr.on(None, hook, None, [*outputs, status], api_visibility="private", show_progress="minimal")
    for listen in cancel_on:
        if own_status:
            listen(lambda: "", None, status, cancels=[dep], api_visibility="private", show_progress="hidden")
        else:
            listen(None, None, None, cancels=[dep], api_visibility="private")
    return dep

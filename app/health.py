"""Worker health: a ``/healthz`` JSON endpoint on the web server and a line on the landing page.

* embedded workers: the supervisor's view (processes alive, restarts, last exit);
* a broker (Redis, …): workers that answer a Celery ping (cached for a few seconds);
* inline jobs: always ok (jobs run in the web process).

``/healthz`` answers 200 when jobs can run and 503 otherwise, so a load balancer or
``docker compose`` health check can use it.
"""
from __future__ import annotations

import threading
import time

import gradio as gr

_cache: dict = {"at": 0.0, "value": None}
_lock = threading.Lock()
PING_CACHE_S = 10.0


def worker_health() -> dict:
    from engines.common.settings import get_settings

    s = get_settings()
    if s.inline_jobs:
        return {"kind": "inline", "ok": True, "detail": "jobs run in the web process"}
    from workers import embedded

    if embedded.CURRENT is not None:
        return embedded.CURRENT.health()
    with _lock:
        if _cache["value"] is not None and time.monotonic() - _cache["at"] < PING_CACHE_S:
            return _cache["value"]
    try:
        from workers.celery_app import app

        replies = app.control.ping(timeout=1.0) or []
        names = sorted(n for r in replies for n in r)
        value = {"kind": "broker", "ok": bool(names), "workers": names,
                 "detail": "" if names else "no worker answered a ping within 1 s"}
    except Exception as e:  # broker down or unreachable
        value = {"kind": "broker", "ok": False, "workers": [], "detail": f"broker unreachable ({type(e).__name__})"}
    with _lock:
        _cache.update(at=time.monotonic(), value=value)
    return value


def health() -> dict:
    from .limits import TRACKER

    w = worker_health()
    jobs = {"active": len(TRACKER.running()), "accepting": TRACKER.accepting,
            "cancelled_abandoned": TRACKER.cancelled_abandoned}
    ok = w["ok"] and TRACKER.accepting
    return {"status": "ok" if ok else "degraded", "web": "ok" if TRACKER.accepting else "shutting down",
            "worker": w, "jobs": jobs, "time": time.time()}


def status_markdown() -> str:
    w = worker_health()
    if w["kind"] == "inline":
        return "**Jobs:** run in the web process (development mode)."
    if w["kind"] == "embedded":
        state = "✅ running" if w["ok"] else "⚠️ restarting"
        extra = f", {w['restarts']} restart(s); last: {w['last_exit']}" if w["restarts"] else ""
        return f"**Worker:** {state} ({w['alive']}/{w['processes']} embedded process(es){extra})."
    if w["ok"]:
        return f"**Workers:** ✅ {len(w['workers'])} answering."
    return f"**Workers:** ⚠️ none available ({w['detail']}); jobs wait, then fail with “no worker is available”."


def build() -> None:
    """The landing page's worker-health line (refreshed on every page load)."""
    md = gr.Markdown(elem_id="worker-health")
    root = gr.context.Context.root_block
    if root is not None:
        root.load(status_markdown, None, md, api_visibility="private", show_progress="hidden", queue=False)


def install(demo: gr.Blocks) -> None:
    """Add ``GET /healthz`` to the running app's FastAPI server (call after ``launch``)."""
    from fastapi.responses import JSONResponse

    fastapi_app = demo.app if hasattr(demo, "app") else None
    if fastapi_app is None:  # pragma: no cover - not launched
        return

    def healthz():
        h = health()
        return JSONResponse(h, status_code=200 if h["status"] == "ok" else 503)

    fastapi_app.add_api_route("/healthz", healthz, methods=["GET"], include_in_schema=False)
    routes = fastapi_app.router.routes
    routes.insert(0, routes.pop())  # before Gradio's catch-all routes

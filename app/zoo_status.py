"""Landing-page section: which shared zoo models are built, their measured metrics, and a build button.

Imports no torch: the table comes from ``engines.common.zoo.status()`` (files on disk); building runs
as a job (the INTERNAL registry entry ``zoo`` / ``build``) through the job backend.
"""
from __future__ import annotations

import hmac
import threading
import time
from collections import deque

import gradio as gr

from engines.common import zoo
from engines.common.settings import get_settings

from .bridge import JobRun, cancel_job
from .limits import TRACKER

#: Start times of the builds submitted from the UI in the last hour (all users): the rate limit.
_BUILDS: deque[float] = deque()
_BUILDS_LOCK = threading.Lock()

HEADERS = ["model", "status", "source", "metrics", "train time", "cache directory"]

# The metrics worth a glance, in display order (others are kept in zoo.json).
_SHOWN = {
    "minicanvas_object": "objects", "minicanvas_style": "styles", "digits": "digits", "fashion_mnist": "fashion",
    "test_accuracy": "test acc", "test_mae": "MAE", "judge_object": "judge object", "judge_style": "judge style",
    "t2i_object": "generated object", "t2i_style": "generated style", "t2i_min_style": "worst style",
    "final_loss": "loss",
}


def _fmt_metrics(metrics: dict) -> str:
    parts = []
    for key, label in _SHOWN.items():
        v = metrics.get(key)
        if isinstance(v, (int, float)):
            percent = "acc" in key or key.startswith(("minicanvas", "judge", "t2i_")) or key in ("digits", "fashion_mnist")
            parts.append(f"{label} {v:.1%}" if percent else f"{label} {v:.3g}")
    return ", ".join(parts)


def shown_path(path) -> str:
    """A cache directory as users see it: relative to the data directory (no absolute server path)."""
    from pathlib import Path

    p = Path(str(path))
    try:
        return "<data>/" + p.resolve().relative_to(get_settings().data_dir.resolve()).as_posix()
    except ValueError:
        return p.name


def status_rows() -> list[list]:
    """One row per zoo model of the current profile (read from disk; cheap).

    Status: "release vN (shipped)" (weights in the repository's release, installed on first use without
    training), "built locally" (trained here: a custom configuration or a retrain) or "not built".
    """
    rows = []
    for r in zoo.status():
        secs = r.get("train_seconds")
        rows.append([r["name"], r["state"], r["source"], _fmt_metrics(r.get("metrics") or {}),
                     f"{secs:.0f} s" if isinstance(secs, (int, float)) else "", shown_path(r["path"])])
    return rows


def _table() -> dict:
    return {"headers": HEADERS, "data": status_rows()}


def is_admin(token: str | None) -> bool:
    """True when ``token`` is the server's ``PAPERLAB_ADMIN_TOKEN`` (never when none is set)."""
    secret = get_settings().admin_token
    return bool(secret) and isinstance(token, str) and hmac.compare_digest(token.encode(), secret.encode())


def _admit_build() -> None:
    """One shared-model build at a time, and at most ``zoo_builds_per_hour`` (all users together)."""
    limit = get_settings().zoo_builds_per_hour
    if any(t.method_id == "zoo" for t in TRACKER.running()):
        raise gr.Error("A model build is already running on the server; try again when it has finished.",
                       title="Busy, try again")
    with _BUILDS_LOCK:
        while _BUILDS and time.time() - _BUILDS[0] > 3600:
            _BUILDS.popleft()
        if len(_BUILDS) >= limit:
            wait = 3600 - (time.time() - _BUILDS[0]) if _BUILDS else 3600
            raise gr.Error(f"At most {limit} model builds per hour run on this server; try again in "
                           f"{wait / 60:.0f} min.", title="Busy, try again")


def build_model(name: str, force: bool = False, admin_token: str = "", progress=gr.Progress()):
    """Train and cache one zoo model as a job; streams progress, then the refreshed table.

    Builds are rate-limited (``_admit_build``); a forced rebuild of a cached model (it replaces the shared
    model every user loads) needs the admin token.
    """
    if name not in zoo.NAMES:
        raise gr.Error(f"unknown zoo model {name!r}; choose from {', '.join(zoo.NAMES)}", title="Invalid model")
    if force and not is_admin(admin_token):
        raise gr.Error("Rebuilding a cached model is for the server's admin: type the admin token "
                       "(PAPERLAB_ADMIN_TOKEN), or untick 'rebuild even if cached'.", title="Not allowed")
    if zoo.is_built(name) and not force:
        yield None, _table(), f"{name} is already built ({shown_path(zoo.model_dir(name))})"
        return
    _admit_build()
    job = JobRun("zoo", "build", {"name": name, "force": bool(force)})
    with _BUILDS_LOCK:
        _BUILDS.append(time.time())
    yield job.id, gr.skip(), f"building {name} (job {job.id[:8]}) …"
    res = job.wait(progress)
    yield job.id, _table(), f"{name} built in {res.get('train_seconds') or 0:.0f} s → {shown_path(res['path'])}"


def build() -> None:
    with gr.Accordion("Model zoo: shared tiny models", open=False, elem_id="zoo-status"):
        gr.Markdown(
            "Methods that need CLIP or Stable Diffusion load small stand-ins (`engines.common.zoo.load`). "
            "The default models ship with the repository (`release/`, rebuilt by `make models`) and load without "
            "training; a custom configuration the release does not cover is trained on first use (build it here). Measured claims: [docs/results/zoo.md](/gradio_api/file=docs/results/zoo.md)."
        )
        table = gr.Dataframe(value=_table(), headers=HEADERS, interactive=False, wrap=True, label="zoo models")
        with gr.Row():
            name = gr.Dropdown(zoo.NAMES, value=zoo.NAMES[0], label="model", scale=2)
            force = gr.Checkbox(False, label="rebuild even if cached (admin)", scale=1)
            token = gr.Textbox("", type="password", label="admin token", max_length=200, scale=1,
                               visible=bool(get_settings().admin_token))
            build_btn = gr.Button("Build", variant="primary", scale=1)
            refresh = gr.Button("Refresh", scale=1)
            stop = gr.Button("Stop", variant="stop", scale=1)
        status = gr.Textbox(label="zoo build status", interactive=False)
        job_id = gr.State(None)
    # Not public API names: tests/app/api_names.py pins the paper methods' endpoints only.
    ev = build_btn.click(build_model, [name, force, token], [job_id, table, status], api_name="zoo_build",
                         api_visibility="undocumented")
    refresh.click(_table, None, table, api_name="zoo_status", api_visibility="undocumented")
    root = gr.context.Context.root_block
    if root is not None:  # refresh on every page load (a model may have been built since start-up)
        root.load(_table, None, table, api_visibility="private", show_progress="hidden")
    stop.click(cancel_job, job_id, status, cancels=[ev], api_name="zoo_stop", api_visibility="undocumented")

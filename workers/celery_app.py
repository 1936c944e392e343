"""The Celery application: queues ``cpu`` and ``gpu``, late acks, prefetch 1, time limits.

Broker selection (``PAPERLAB_BROKER_URL``):

* empty (default): the embedded setup, kombu's filesystem transport and a file
  result backend under ``<data_dir>/broker`` (atomic writes, ``workers/fsbackend.py``) — no server needed;
* ``redis://…``: Redis broker and result backend (any number of workers);
* ``amqp://…``: RabbitMQ broker; results in ``PAPERLAB_RESULT_BACKEND`` (default:
  files under the data directory, so web and workers must share it).

Start a worker with ``celery -A workers.celery_app worker -Q cpu`` (CPU) or
``celery -A workers.celery_app worker -Q gpu --pool=solo`` (one per GPU).
"""
from __future__ import annotations

from pathlib import Path

from celery import Celery
from kombu import Queue

from engines.common.settings import Settings, get_settings

from .fsbackend import atomic_file_url

TASK_NAME = "paperlab.run_entry"


def broker_config(s: Settings) -> tuple[str, str, dict]:
    """(broker URL, result backend URL, broker transport options) for these settings."""
    visibility = {"visibility_timeout": s.hard_time_limit_s + 600}
    if not s.broker_url or s.broker_url.startswith("filesystem"):
        root = Path(s.data_dir) / "broker"
        for sub in ("queue", "processed", "control", "results"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        opts = {
            "data_folder_in": str(root / "queue"),
            "data_folder_out": str(root / "queue"),
            "processed_folder": str(root / "processed"),
            "control_folder": str(root / "control"),
            "store_processed": False,
        }
        backend = s.result_backend or f"file://{root / 'results'}"
        return "filesystem://", atomic_file_url(backend), opts
    if s.broker_url.startswith(("redis://", "rediss://")):
        return s.broker_url, s.result_backend or s.broker_url, visibility
    results = Path(s.data_dir) / "results"
    results.mkdir(parents=True, exist_ok=True)
    return s.broker_url, atomic_file_url(s.result_backend or f"file://{results}"), visibility


def make_celery(settings: Settings | None = None) -> Celery:
    s = settings or get_settings()
    broker, backend, transport_options = broker_config(s)
    app = Celery("paperlab", broker=broker, backend=backend, include=["workers.tasks"])
    if broker == "filesystem://":
        from .fsbackend import TRANSPORT

        app.conf.broker_transport = TRANSPORT  # atomic message files (workers/fsbackend.py)
    app.conf.update(
        task_queues=(Queue("cpu"), Queue("gpu")),
        task_default_queue="cpu",
        task_acks_late=True,
        task_reject_on_worker_lost=False,  # a lost job fails with a message (see tasks.py)
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_soft_time_limit=s.soft_time_limit_s,
        task_time_limit=s.hard_time_limit_s,
        broker_transport_options=transport_options,
        result_backend_transport_options={"visibility_timeout": s.hard_time_limit_s + 600},
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # Never True: it would store every job's arguments (uploads included) with its result.
        result_extended=False,
        result_expires=s.result_expires_s,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        # A short Redis outage (restart) must not lose a finished job's result: storing it is retried.
        result_backend_always_retry=True,
        result_backend_max_retries=20,
        result_backend_max_sleep_between_retries_ms=5000,
    )
    return app


app = make_celery()

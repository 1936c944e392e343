"""Paperlab settings, read from ``PAPERLAB_*`` environment variables.

One flat settings object shared by the engines, the workers and the app.
Engines read the data directory, the device and per-method model ids here;
the app reads broker, limits and UI options.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

Profile = Literal["default", "test"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAPERLAB_", extra="ignore")

    # Where caches, artifacts, zoo weights and the embedded broker live.
    data_dir: Path = Field(default=Path.home() / ".cache" / "paperlab")
    # "default": the real tiny configurations; "test": micro sizes for the suite.
    profile: Profile = "default"
    # torch device for engines ("cpu", "cuda", "cuda:1", "auto").
    device: str = "auto"

    # Jobs. Empty broker URL = embedded worker on the kombu filesystem transport.
    broker_url: str = ""
    result_backend: str = ""
    soft_time_limit_s: int = Field(default=3 * 3600, ge=10)
    hard_time_limit_s: int = Field(default=3 * 3600 + 300, ge=20)
    # A running job whose worker sent no heartbeat for this long is declared lost (failed).
    job_stale_after_s: float = Field(default=20.0, ge=2.0)
    # A job that no worker picked up within this many seconds fails with "no worker is available".
    job_queue_timeout_s: float = Field(default=180.0, ge=2.0, le=86400.0)
    # A broker / result backend outage (Redis restart) is ridden out this long before a waiting job is reported.
    broker_outage_s: float = Field(default=60.0, ge=1.0, le=3600.0)
    # How long finished jobs' results (and their job records) are kept in the result backend.
    result_expires_s: int = Field(default=24 * 3600, ge=60, le=30 * 24 * 3600)
    # Job records larger than this keep no parameters (no automatic retry; nothing big is stored).
    job_record_max_bytes: int = Field(default=64 * 1024, ge=0)
    embedded_worker: bool = True
    embedded_concurrency: int = Field(default=1, ge=1, le=16)
    # Workers (embedded and separate) lower their CPU priority by this much at start, so that on a small
    # machine the web process answers interactive requests ahead of the jobs' computing (0 = unchanged).
    worker_nice: int = Field(default=10, ge=0, le=19)

    # Limits of the web process (app/limits.py): jobs it waits for, queued or running. Past a limit a request
    # is refused at once with "busy, try again".
    session_jobs_per_method: int = Field(default=1, ge=1, le=100)
    session_max_jobs: int = Field(default=3, ge=1, le=1000)
    method_max_jobs: int = Field(default=6, ge=1, le=10000)
    max_active_jobs: int = Field(default=16, ge=1, le=10000)
    # Gradio's own queue of events waiting for a handler thread (then "queue is full").
    queue_max_size: int = Field(default=64, ge=1, le=100000)
    # Housekeeping (app/housekeeping.py): job artifacts and results older than this, or beyond the size cap
    # (oldest first), are deleted; Gradio's upload/output cache is cleared of files older than a day.
    artifacts_max_age_s: int = Field(default=3 * 24 * 3600, ge=60)
    artifacts_max_mb: float = Field(default=2048.0, gt=0)
    gradio_cache_max_age_s: int = Field(default=24 * 3600, ge=60)
    housekeeping_interval_s: int = Field(default=600, ge=5)
    # Shared-model builds started from the UI: at most this many per hour (all users), one at a time.
    zoo_builds_per_hour: int = Field(default=4, ge=0, le=1000)
    # A non-empty token enables admin actions in the UI (the zoo's forced rebuild) for whoever types it.
    admin_token: str = ""
    # SIGTERM: running jobs get this long to finish, then they are cancelled and the worker stops.
    shutdown_grace_s: float = Field(default=5.0, ge=0.0, le=600.0)

    # Web app.
    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=1, le=65535)
    max_upload_mb: float = Field(default=20.0, gt=0)
    # Inline (in-web-process) jobs, for development without any worker.
    inline_jobs: bool = False

    # Paper-scale model ids or local paths (empty = tiny in-project default).
    llm_model: str = ""
    dpsdp_problems: str = ""  # a JSONL file of {"problem", "answer"} rows for DPSDP's LoRA job (engines/dpsdp/lora.py)
    vlm_model: str = ""  # a Qwen2-VL checkpoint for EMLoC's paper-scale path (engines/emloc/qwen2vl.py)
    clip_model: str = ""
    diffusion_model: str = ""
    sam_checkpoint: str = ""
    sam_model_type: str = "vit_b"

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch  # local import: the UI must not import torch at start-up

        return "cuda" if torch.cuda.is_available() else "cpu"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def zoo_dir(self) -> Path:
        return self.data_dir / "zoo"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def reset_settings() -> None:
    """Forget the cached settings (tests change the environment)."""
    get_settings.cache_clear()

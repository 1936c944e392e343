"""The embedded set-up's file result backend writes atomically: a concurrent reader never sees a torn value."""
from __future__ import annotations

import json
import threading
import time

from workers.celery_app import make_celery
from workers.fsbackend import AtomicFilesystemBackend


def test_file_backend_is_atomic_under_concurrent_writers_and_a_reader(tmp_path):
    from engines.common.settings import get_settings

    app = make_celery(get_settings().model_copy(update={"data_dir": tmp_path, "broker_url": ""}))
    b = app.backend
    assert isinstance(b, AtomicFilesystemBackend)
    stop = threading.Event()
    reads, bad = [0], []

    def write(n: int) -> None:
        i = 0
        while not stop.is_set():  # alternating long and short values, as progress and state updates are
            b.set(b"celery-task-meta-x", json.dumps({"pad": "y" * (i % 300), "writer": n}).encode())
            i += 1

    def read() -> None:
        while not stop.is_set():
            v = b.get(b"celery-task-meta-x")
            if v is not None:
                reads[0] += 1
                try:
                    json.loads(v)
                except ValueError as e:  # Celery's own FilesystemBackend: thousands per second
                    bad.append(str(e))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join()
    assert reads[0] > 100 and not bad, bad[:3]
    assert sorted(p.name for p in (tmp_path / "broker" / "results").iterdir()) == ["celery-task-meta-x"]

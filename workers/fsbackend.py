"""The file result backend of the embedded set-up, with atomic writes.

Celery's ``FilesystemBackend.set`` opens the key's file with ``"wb"`` (truncate) and writes into it;
a reader polling the same key (the web process reads a job's state every 0.1 s while the worker
stores progress every 0.2 s) can read an empty or half-written file, and two writers of one key (the
worker's progress and the web process marking the job) can interleave into a file that is no JSON
at all ("Extra data: line 1 column 172"): seen once in 103 jobs of ``make load``, as an internal error
shown to the user. Here every value is written to a temporary file in the same directory and
renamed over the key (``os.replace`` is atomic on POSIX), so a reader sees the old or the new value.
"""
from __future__ import annotations

import os
import threading

from celery.backends.filesystem import FilesystemBackend
from kombu.utils.encoding import ensure_bytes

def write_atomically(tmp: str | bytes, path: str | bytes, data: bytes) -> None:
    """Write ``data`` to ``tmp`` and rename it over ``path``: a reader sees the old file or the whole new one."""
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: Backend URL prefix (Celery's ``<class>+<url>`` form) selecting this backend for a ``file://`` URL.
PREFIX = "workers.fsbackend.AtomicFilesystemBackend+"


class AtomicFilesystemBackend(FilesystemBackend):
    def set(self, key, value):
        path = self._filename(key)
        head, _, name = path.rpartition(self.sep)
        # A dot name outside the key prefixes, so cleanup() and readers never take it for a key.
        tmp = self.sep.join((head, b".tmp-%d-%d-" % (os.getpid(), threading.get_ident()) + name))
        write_atomically(tmp, path, ensure_bytes(value))


def atomic_file_url(url: str) -> str:
    """``file://…`` → the same directory with this backend; other URLs unchanged."""
    return PREFIX + url if url.startswith("file://") else url


# --------------------------------------------------------------------------- the broker's queue files

from kombu.transport import filesystem as _kfs  # noqa: E402


class _AtomicChannel(_kfs.Channel):
    """kombu's filesystem channel writes a message file in place (``open`` creates it empty, then the
    payload is written): a worker polling the folder can move and read it before the payload is there,
    die on ``JSONDecodeError('Expecting value')`` and lose the message (seen in ``make load``: the
    embedded worker exited and was restarted). Here the payload goes to a dot file first (the reader
    skips names without ``.<queue>.msg``) and is renamed to the message name when complete."""

    def _put(self, queue, payload, **kwargs):
        import uuid

        from kombu.utils.encoding import str_to_bytes
        from kombu.utils.json import dumps

        name = f"{int(round(_kfs.monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        tmp = os.path.join(self.data_folder_out, f".tmp-{uuid.uuid4().hex}")
        try:
            write_atomically(tmp, final, str_to_bytes(dumps(payload)))
        except OSError as exc:
            raise _kfs.ChannelError(f"Cannot add file {final!r} to directory") from exc


class AtomicFilesystemTransport(_kfs.Transport):
    Channel = _AtomicChannel


#: ``broker_transport`` of the embedded set-up (with the ``filesystem://`` broker URL).
TRANSPORT = "workers.fsbackend.AtomicFilesystemTransport"

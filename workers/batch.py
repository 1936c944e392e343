"""Batch jobs from the command line.

    python -m workers.batch submit kl_bandits.regret_curves --params params.json [--wait] [--start-worker]
    python -m workers.batch status <job>
    python -m workers.batch result <job>
    python -m workers.batch cancel <job>

Uses the same broker settings as the app (``PAPERLAB_BROKER_URL``; empty = the
embedded filesystem broker under the data directory). ``--start-worker``
starts an embedded worker for the duration of the command. Exit codes: 0 ok,
2 bad input, 3 job failed or cancelled, 4 still running / timeout, 5 unknown job id.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engines.common.params import ParamError

from . import client


def _load_params(path: str | None) -> dict:
    if path is None:
        return {}
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParamError(f"--params {path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ParamError(f"--params {path} must hold a JSON object of parameters")
    return data


def _print_snapshot(s: client.Snapshot, out=sys.stdout) -> None:
    print(json.dumps({"job": s.job_id, "state": s.state, "fraction": round(s.fraction, 4),
                      "message": s.message, "error": s.error}), file=out, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workers.batch", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("submit", help="submit <method>.<entry>")
    sp.add_argument("target", help="method.entry, e.g. kl_bandits.regret_curves")
    sp.add_argument("--params", help="JSON file of parameters ('-' for stdin)")
    sp.add_argument("--wait", action="store_true", help="wait for the result, printing progress")
    sp.add_argument("--timeout", type=float, default=None)
    sp.add_argument("--start-worker", action="store_true", help="run an embedded worker while waiting")
    for name in ("status", "result", "cancel"):
        p = sub.add_parser(name)
        p.add_argument("job")
    args = ap.parse_args(argv)

    from .celery_app import app

    if args.cmd == "submit":
        method, _, entry = args.target.partition(".")
        worker = None
        try:
            params = _load_params(args.params)
            job = client.submit(app, method, entry, params)
        except (ParamError, KeyError) as e:
            print(f"error: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
            return 2
        print(job, flush=True)
        if not args.wait:
            return 0
        if args.start_worker:
            from .embedded import EmbeddedWorker

            worker = EmbeddedWorker().start()
        try:
            last = None
            for snap in client.wait(app, job, timeout=args.timeout):
                key = (snap.state, round(snap.fraction, 2), snap.message)
                if key != last:
                    _print_snapshot(snap, sys.stderr)
                    last = key
        except TimeoutError as e:
            print(f"error: {e}", file=sys.stderr)
            return 4
        finally:
            if worker is not None:
                worker.stop()
        if snap.state == "unknown":
            print(f"error: {snap.error}", file=sys.stderr)
            return 5
        if snap.state != "succeeded":
            print(f"error: job {job} {snap.state}: {snap.error or snap.message}", file=sys.stderr)
            return 3
        print(json.dumps(snap.result))
        return 0

    snap = client.snapshot(app, args.job)
    if snap.state == "unknown":
        if args.cmd == "status":
            _print_snapshot(snap)
        print(f"error: {snap.error}", file=sys.stderr)
        return 5
    if args.cmd == "cancel":
        client.cancel(app, args.job)
        print(f"cancel requested for {args.job}")
        return 0
    if args.cmd == "status":
        _print_snapshot(snap)
        return 0
    if snap.state == "succeeded":
        print(json.dumps(snap.result))
        return 0
    print(f"error: job {args.job} is {snap.state}" + (f": {snap.error}" if snap.error else ""), file=sys.stderr)
    return 3 if snap.done else 4


if __name__ == "__main__":
    sys.exit(main())

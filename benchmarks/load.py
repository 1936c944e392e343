"""``make load``: concurrent clients against a running Paperlab, latency percentiles and errors per endpoint.

    python benchmarks/load.py                       # starts `python -m app` (embedded worker) on a free port
    python benchmarks/load.py --url http://host:7860/ --clients 20 --seconds 120

Each client is a ``gradio_client.Client`` (its own session) that loops over a mix of requests:
interactive ones (``GET /healthz``, the zoo table ``/zoo_status``) and small jobs
(``/kl_bandits_run``, T = 1000, one seed). Every request ends as ``ok``, ``busy`` (refused at once by
a limit: "busy", "already have", "queue is full") or ``error``. Writes
``docs/reliability-load.tsv`` (per endpoint: count, ok, busy, error, p50/p95/max seconds) and
``docs/reliability-load.png`` (latency distribution), and prints the table.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SMALL_JOB = ["linear", 5, 1000, 8, 20, 0.1, 1.0, 1, "uniform", ["kl_ucb"]]
BUSY = ("busy", "already have", "queue is full", "restarting")


def _percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _start_app(port: int) -> subprocess.Popen:
    data = tempfile.mkdtemp(prefix="paperlab-load-")
    env = dict(os.environ, PAPERLAB_PORT=str(port), PAPERLAB_DATA_DIR=os.environ.get("PAPERLAB_DATA_DIR", data),
               PYTHONPATH=str(ROOT))
    log = open(Path(data) / "app.log", "wb")
    return subprocess.Popen([sys.executable, "-m", "app"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_up(url: str, timeout: float = 180) -> None:
    import httpx

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if httpx.get(url + "healthz", timeout=5).status_code in (200, 503):
                return
        except Exception:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not come up")


def run_load(url: str, clients: int, seconds: float, job_share: float, seed: int = 0) -> list[tuple]:
    """[(endpoint, outcome, seconds, message)] for every request of every client."""
    import httpx
    from gradio_client import Client

    records: list[tuple] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client_loop(i: int) -> None:
        rng = random.Random(seed + i)
        try:
            c = Client(url, verbose=False)
        except Exception as e:
            with lock:
                records.append(("connect", "error", 0.0, str(e)[:200]))
            return
        while time.monotonic() < deadline:
            kind = "job" if rng.random() < job_share else rng.choice(["healthz", "zoo_status"])
            t0 = time.monotonic()
            try:
                if kind == "healthz":
                    httpx.get(url + "healthz", timeout=30)
                    name = "GET /healthz"
                elif kind == "zoo_status":
                    c.predict(api_name="/zoo_status")
                    name = "/zoo_status"
                else:
                    c.predict(*SMALL_JOB, api_name="/kl_bandits_run")
                    name = "/kl_bandits_run (job)"
                outcome, msg = "ok", ""
            except Exception as e:
                name = {"healthz": "GET /healthz", "zoo_status": "/zoo_status"}.get(kind, "/kl_bandits_run (job)")
                msg = str(e)[:300]
                outcome = "busy" if any(b in msg.lower() for b in BUSY) else "error"
            with lock:
                records.append((name, outcome, time.monotonic() - t0, msg))
            if outcome == "busy":
                time.sleep(rng.uniform(1.0, 3.0))  # a polite client backs off

    threads = [threading.Thread(target=client_loop, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 600)
    return records


def summarize(records: list[tuple]) -> list[list]:
    rows = []
    for name in sorted({r[0] for r in records}):
        rs = [r for r in records if r[0] == name]
        ok = [r[2] for r in rs if r[1] == "ok"]
        rows.append([name, len(rs), len(ok), sum(r[1] == "busy" for r in rs), sum(r[1] == "error" for r in rs),
                     _percentile(ok, 0.5), _percentile(ok, 0.95), max(ok) if ok else float("nan")])
    return rows


def write(rows: list[list], records: list[tuple], out: Path, title: str) -> None:
    from engines.common.figures import subplots

    out.parent.mkdir(parents=True, exist_ok=True)
    head = "endpoint\trequests\tok\tbusy\terror\tp50_s\tp95_s\tmax_s\n"
    out.with_suffix(".tsv").write_text(head + "".join(
        "\t".join(str(v) if not isinstance(v, float) else f"{v:.2f}" for v in r) + "\n" for r in rows))
    fig, ax = subplots(figsize=(7, 3.5))
    names = [r[0] for r in rows]
    data = [[x[2] for x in records if x[0] == n and x[1] == "ok"] or [0.0] for n in names]
    ax.boxplot(data, orientation="horizontal", whis=(5, 95), showfliers=True)
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.set_xscale("log")
    ax.set_xlabel("latency of successful requests (s, log scale; whiskers 5–95 %)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks/load.py", description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running app (default: start one with the embedded worker)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--job-share", type=float, default=0.3, help="fraction of requests that start a job")
    ap.add_argument("--out", default=str(ROOT / "docs" / "reliability-load"))
    args = ap.parse_args(argv)
    proc = None
    url = args.url
    if not url:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/"
        proc = _start_app(port)
    url = url if url.endswith("/") else url + "/"
    try:
        _wait_up(url)
        t0 = time.monotonic()
        records = run_load(url, args.clients, args.seconds, args.job_share)
        took = time.monotonic() - t0
    finally:
        if proc is not None:
            from workers.embedded import stop_process_group

            stop_process_group(proc, 20)
    rows = summarize(records)
    title = (f"{args.clients} clients, {args.seconds:.0f} s, {args.job_share:.0%} job requests "
             f"({'embedded worker' if proc else url}); {time.strftime('%Y-%m-%d')}")
    write(rows, records, Path(args.out), title)
    print(title + f" (ran {took:.0f} s)")
    print(f"{'endpoint':24} {'n':>5} {'ok':>5} {'busy':>5} {'err':>5} {'p50':>7} {'p95':>7} {'max':>7}")
    for r in rows:
        print(f"{r[0]:24} {r[1]:5d} {r[2]:5d} {r[3]:5d} {r[4]:5d} {r[5]:7.2f} {r[6]:7.2f} {r[7]:7.2f}")
    errors = [r for r in records if r[1] == "error"]
    for e in errors[:5]:
        print("error:", e[0], e[3])


if __name__ == "__main__":
    main()

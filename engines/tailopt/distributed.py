"""The real distributed engine: one OS process per worker, torch.distributed with gloo on 127.0.0.1.

Each rank rebuilds the (deterministic) task, runs z inner steps for its own worker with its own random
stream, all-reduces Δ^i (SUM, then ÷N: one d-float message per round) and applies the same
deterministic outer step, so every rank holds the same x_t without a broadcast. ``run_gloo`` starts the
ranks as subprocesses (``python -m engines.tailopt.distributed``), which also works inside a Celery
prefork worker, and reads rank 0's result back.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import torch

from engines.common.context import JobCancelled

from .algorithms import Comm, Trace, run_method
from .params import HyperParams, ProblemParams

ROOT = Path(__file__).resolve().parents[2]


class GlooComm(Comm):
    def __init__(self, rank: int, world: int):
        super().__init__()
        self.workers, self.n_total = [rank], world

    def mean(self, t):
        import torch.distributed as dist

        self._count(t)
        buf = t[:, 0].contiguous().clone()
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
        return buf / self.n_total


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_gloo(p: ProblemParams, method: str, hps: list[HyperParams], seed: int, timeout: float = 600.0,
             cancelled=None, on_progress=None) -> dict:
    """Run ``method`` on ``p.workers`` gloo ranks; returns rank 0's trace as arrays plus timings."""
    world = p.workers
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="tailopt-gloo-") as tmp:
        spec = Path(tmp) / "spec.json"
        problem = {k: v for k, v in p.model_dump().items() if k in ProblemParams.model_fields}
        spec.write_text(json.dumps({"problem": problem, "method": method, "seed": seed,
                                    "hyper": [h.model_dump() for h in hps]}))
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        procs = [subprocess.Popen([sys.executable, "-m", "engines.tailopt.distributed", str(spec), str(r),
                                   str(world), str(port), tmp], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, start_new_session=True) for r in range(world)]
        t0 = time.monotonic()
        try:
            while any(pr.poll() is None for pr in procs):
                if cancelled is not None and cancelled():
                    raise JobCancelled("gloo run cancelled")
                if time.monotonic() - t0 > timeout:
                    raise TimeoutError(f"gloo ranks did not finish within {timeout:.0f} s")
                prog = Path(tmp) / "progress"
                if on_progress is not None and prog.exists():
                    try:
                        on_progress(int(prog.read_text() or 0) / max(p.rounds, 1))
                    except ValueError:
                        pass
                time.sleep(0.05)
        finally:
            for pr in procs:
                if pr.poll() is None:
                    pr.kill()
                    pr.wait()
        bad = [(r, pr.returncode, pr.stdout.read().decode(errors="replace")[-2000:])
               for r, pr in enumerate(procs) if pr.returncode != 0]
        for pr in procs:
            pr.stdout.close()
        if bad:
            r, rc, out = bad[0]
            raise RuntimeError(f"gloo rank {r} exited with {rc}:\n{out}")
        with np.load(Path(tmp) / "rank0.npz") as f:
            out = {k: f[k] for k in f.files}
        out["wall_s"] = time.monotonic() - t0
        return out


def _rank_main(spec_path: str, rank: int, world: int, port: int, outdir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    p = ProblemParams.model_validate(spec["problem"])
    hps = [HyperParams.model_validate(h) for h in spec["hyper"]]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        from .tasks import make_task

        task = make_task(p, optimum=False)
        prog = Path(outdir) / "progress"

        def on_round(t, _loss):
            if rank == 0:
                prog.write_text(str(t))

        tr: Trace = run_method(task, spec["method"], hps, p.rounds, GlooComm(rank, world), spec["seed"], on_round)
        if rank == 0:
            np.savez(Path(outdir) / "rank0.npz", x=tr.x.numpy(), loss=tr.loss, clip_in=tr.clip_in,
                     clip_out=tr.clip_out, state_worker=tr.state_worker, state_server=tr.state_server,
                     floats_per_round=tr.floats_per_round)
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    _rank_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])

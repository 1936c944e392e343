"""Running a method's ServerApp and ClientApp in Flower's simulation engine (Ray backend), as fedag and tailopt do.

Flower (``flwr``) is installed ``--no-deps`` (requirements-nodeps.txt); only the Flower paths of the methods import
this module, so nothing else loads Ray.
"""
from __future__ import annotations

import logging
import time

import numpy as np


def array_record(arrays: dict[str, np.ndarray]):
    """A Flower ``ArrayRecord`` of named numpy arrays (made contiguous, as Flower's serialiser needs)."""
    from flwr.app import Array, ArrayRecord

    rec = ArrayRecord()
    for k, v in arrays.items():
        rec[k] = Array.from_numpy_ndarray(np.ascontiguousarray(v))
    return rec


def wait_for_nodes(grid, n: int, timeout_s: float) -> None:
    """Block until ``n`` SuperNodes have registered with the ``Grid`` (they register while the ServerApp starts)."""
    t0 = time.monotonic()
    while len(list(grid.get_node_ids())) < n:
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"Flower: {len(list(grid.get_node_ids()))} of {n} client nodes connected")
        time.sleep(0.05)


def simulate(server_app, client_app, n_nodes: int, errors: list[BaseException], verbose: bool = False,
             backend_config: dict | None = None) -> float:
    """``flwr.simulation.run_simulation`` with one SuperNode per client: at most two Ray CPUs (one per client
    actor), no dashboard, Ray's log only when ``verbose``. The ServerApp's ``main`` runs in Flower's own thread, so
    it records what it raises in ``errors``; the first one is raised here. Returns the wall seconds, Ray's
    start-up included."""
    from flwr.simulation import run_simulation

    cfg = backend_config or {"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                             "init_args": {"num_cpus": min(n_nodes, 2), "include_dashboard": False,
                                           "logging_level": logging.ERROR, "log_to_driver": verbose}}
    t0 = time.perf_counter()
    run_simulation(server_app, client_app, num_supernodes=n_nodes, backend_config=cfg, verbose_logging=verbose)
    if errors:
        raise errors[0]
    return time.perf_counter() - t0

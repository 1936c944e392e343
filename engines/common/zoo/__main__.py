"""``python -m engines.common.zoo list | build [name ...] [--force] [--threads N]``."""
from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engines.common.zoo", description="Paperlab's shared model zoo")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="show the zoo's models and whether they are built")
    b = sub.add_parser("build", help="train and cache models (all when no name is given)")
    b.add_argument("names", nargs="*")
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    b.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args(argv)

    from . import NAMES, status

    if args.cmd == "list":
        for row in status():
            built = {True: "built", False: "not built", None: "package"}[row["built"]]
            metrics = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["metrics"].items())
            print(f"{row['name']:<13} {built:<10} {row['source']:<18} {row['description']}")
            if row["path"]:
                print(f"{'':<13} {row['path']}")
            if metrics:
                print(f"{'':<13} {metrics}")
        return 0

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from .store import build

    names = args.names or NAMES
    for n in names:
        if n not in NAMES:
            print(f"unknown zoo model {n!r}; choose from {NAMES}", file=sys.stderr)
            return 2
    last = [0.0]

    def report(fraction: float, message: str) -> None:
        if time.time() - last[0] > 5 or fraction >= 1:
            last[0] = time.time()
            print(f"  [{fraction:5.1%}] {message}", flush=True)

    for n in names:
        t0 = time.time()
        print(f"building {n} ...", flush=True)
        d = build(n, ctx=report, force=args.force)
        print(f"{n}: {d} ({time.time() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m engines.common.zoo list | build [name ...] [--set field=value ...] [--force] [--threads N]``.

``--set`` builds a configuration other than the profile's (e.g. ``build clip --set steps=20000``): the fields
override the profile's configuration of the one model named, the model is cached under that configuration's own
key, and its held-out metrics are printed. Values are JSON (``--set fashion=false``), else strings.
"""
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
    b.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a configuration field of the one model named (repeatable)")
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

    names = args.names or NAMES
    for n in names:
        if n not in NAMES:
            print(f"unknown zoo model {n!r}; choose from {NAMES}", file=sys.stderr)
            return 2
    try:
        overrides = parse_overrides(args.overrides, args.names)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from .store import build

    last = [0.0]

    def report(fraction: float, message: str) -> None:
        if time.time() - last[0] > 5 or fraction >= 1:
            last[0] = time.time()
            print(f"  [{fraction:5.1%}] {message}", flush=True)

    for n in names:
        t0 = time.time()
        print(f"building {n} ...", flush=True)
        d = build(n, overrides or None, ctx=report, force=args.force)
        print(f"{n}: {d} ({time.time() - t0:.0f} s)", flush=True)
        if overrides:
            import json

            from .catalog import read_meta

            print(json.dumps(read_meta(n, overrides)["metrics"]), flush=True)
    return 0


def parse_overrides(pairs: list[str], names: list[str]) -> dict:
    """``["steps=20000", "fashion=false"]`` → ``{"steps": 20000, "fashion": False}``, checked against the model's
    configuration class (unknown fields and out-of-range values are refused by name)."""
    import json

    from pydantic import ValidationError

    from .catalog import entry, resolve_config

    if not pairs:
        return {}
    if len(names) != 1:
        raise ValueError("--set applies to exactly one model: name it (e.g. build clip --set steps=20000)")
    out = {}
    for p in pairs:
        field, sep, raw = p.partition("=")
        if not sep or not field:
            raise ValueError(f"--set expects FIELD=VALUE, got {p!r}")
        try:
            out[field] = json.loads(raw)
        except json.JSONDecodeError:
            out[field] = raw
    fields = entry(names[0]).config_cls.model_fields
    unknown = sorted(set(out) - set(fields))
    if unknown:
        raise ValueError(f"{names[0]} has no configuration field {', '.join(map(repr, unknown))}; "
                         f"it has: {', '.join(fields)}")
    try:
        resolve_config(names[0], out)
    except ValidationError as e:
        raise ValueError(f"invalid --set for {names[0]}: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}") from None
    return out


if __name__ == "__main__":
    sys.exit(main())

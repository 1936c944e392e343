"""``python -m engines.reproduce [id ...]``: measure each method's claims and rewrite docs/results/<id>.md.

Each measured method has ``engines/<id>/reproduce.py`` with ``main() -> Path``.
With no id, every available method (and the model zoo, when present) is measured.
"""
from __future__ import annotations

import importlib
import sys

from engines import registry


def targets(ids: list[str]) -> list[str]:
    if ids:
        return ids
    out = [m.id for m in registry.available()]
    try:
        importlib.import_module("engines.common.zoo.reproduce")
        out.insert(0, "zoo")
    except ModuleNotFoundError:
        pass
    return out


def module_for(target: str) -> str:
    return "engines.common.zoo.reproduce" if target == "zoo" else f"engines.{target}.reproduce"


def main(argv: list[str] | None = None) -> int:
    ids = [a for a in (argv if argv is not None else sys.argv[1:]) if a]
    failed = []
    for t in targets(ids):
        if t != "zoo":
            registry.get(t)  # unknown ids fail loudly
        print(f"== reproducing {t}", flush=True)
        try:
            importlib.import_module(module_for(t)).main()
        except ModuleNotFoundError as e:
            print(f"{t}: no reproduce module ({e})", file=sys.stderr)
            failed.append(t)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

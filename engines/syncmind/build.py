"""``python -m engines.syncmind.build {minilib|toolz}``: rebuild the shipped instance sets.

toolz: downloads the sdists of successive releases once (``pip download``; cached under the data
directory), commits each release as one git commit, builds the instances and ships the HEAD tree and
the instances JSON in ``engines/syncmind/data``. Never run by the test suite.
"""
from __future__ import annotations

import sys
import time

from .instances import build_instances, save
from .sources import DATA, head_dir, shipped_path


def build_minilib():
    from .synthetic import synthetic_repo

    iset = build_instances(synthetic_repo(), "minilib", head_dir("minilib"),
                           progress=lambda f, m: print(f"  {f:.0%} {m}", flush=True))
    return save(iset, shipped_path("minilib")), iset


EXAMPLE_INSTANCE = "1_minilib_callee__minilib.geometry.py__rect_area__ca7a519a3f"


def build_example():
    """The tab's worked example: the heuristic agent with the oracle collaborator on one callee instance,
    and a batch of heuristic / gold / no-op over the minilib instances."""
    import json

    from .experiment import batch, episode

    ep = episode({"repo": "minilib", "instance_id": EXAMPLE_INSTANCE, "agent": "heuristic", "mode": "collaborative"})
    bt = batch({"repo": "minilib", "agents": ["heuristic", "gold", "noop"], "max_instances": 16})
    path = DATA / "worked_example.json"
    path.write_text(json.dumps({"episode": ep.model_dump(), "batch": bt.model_dump()}, indent=1), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    t0 = time.perf_counter()
    for repo in args or ["minilib"]:
        if repo == "example":
            print(f"wrote {build_example()}")
            continue
        if repo == "minilib":
            path, iset = build_minilib()
        elif repo == "toolz":
            from .pypi_history import build_toolz

            path, iset = build_toolz()
        else:
            print(f"unknown repository {repo!r}", file=sys.stderr)
            return 2
        kinds = [i.instance_type for i in iset.instances]
        print(f"{repo}: {len(kinds)} instances ({kinds.count('caller')} caller, {kinds.count('callee')} callee), "
              f"rejected {iset.rejected} -> {path.relative_to(DATA.parent.parent.parent)} "
              f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

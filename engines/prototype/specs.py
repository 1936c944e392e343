"""Where interface specifications come from: the hand-written reference or the automatically specified one."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import yaml

from .domains import get_domain
from .interface import build_spec

DATA = Path(__file__).resolve().parent / "data"
INDUCED = DATA / "induced_specs.json"


@lru_cache(maxsize=None)
def _hand_lexicon() -> dict:
    return yaml.safe_load((DATA / "hand_lexicon.yaml").read_text())


def hand_spec(domain: str) -> dict:
    lx = _hand_lexicon()
    d = lx["domains"][domain]
    return build_spec(get_domain(domain), {"components": d["components"], "operations": lx["operations"],
                                           "macros": d.get("macros", [])}, source="hand")


@lru_cache(maxsize=None)
def _induced_file(mtime: float) -> dict:
    return json.loads(INDUCED.read_text())


def induced_spec(domain: str) -> dict:
    """The automatically specified interface (engines/prototype/specification.py), bundled as JSON."""
    if not INDUCED.exists():
        raise FileNotFoundError("no induced specification yet: run the 'specify' job or "
                                "`python -m engines.prototype.specification`")
    from .overall import derived_spec

    spec = _induced_file(INDUCED.stat().st_mtime)[domain]
    spec.setdefault("derived", derived_spec(domain))  # overall dimensions come from the model program
    return spec


def get_spec(domain: str, source: str = "induced") -> dict:
    if source == "hand":
        return hand_spec(domain)
    if source == "induced":
        return induced_spec(domain)
    raise ValueError(f"unknown spec source {source!r}; use 'induced' or 'hand'")

"""Shared by the phrasing tests: map one instruction through the interface and see what it changed."""
from __future__ import annotations

from engines.prototype.domains import get_domain
from engines.prototype.interface import compile_program
from engines.prototype.mappers import InterfaceMapper
from engines.prototype.specs import get_spec


def run(domain, text, enc, source="induced"):
    """(mapping, compiled program) of ``text`` on the domain's defaults with the ``source`` spec."""
    s = get_spec(domain, source)
    m = InterfaceMapper(s, enc).map(text)
    return m, compile_program(s, get_domain(domain).defaults(), m.ops)


def changed(domain, c) -> dict[str, float]:
    """The settings the compiled program moved away from the defaults, with their new values."""
    d = get_domain(domain).defaults()
    return {k: round(c.state[k], 4) for k in d if abs(c.state[k] - d[k]) > 1e-9}

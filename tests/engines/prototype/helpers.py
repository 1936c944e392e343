"""Shared by the phrasing tests: map one instruction through the interface and see what it changed."""
from __future__ import annotations

from engines.prototype.domains import get_domain
from engines.prototype.interface import UnsupportedOp, compile_program
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


def edit(domain, text, enc, source="induced"):
    """(the settings ``text`` moved, its mapping), asserting the program compiled without a refusal."""
    m, c = run(domain, text, enc, source)
    assert c.ok, (c.refused, m.trace)
    return changed(domain, c), m


def assert_refused_by_name(domain, text, enc, source, named) -> None:
    """``text`` asks for something the model lacks: refused, nothing changed, and the message names it and
    says what the model has."""
    m, c = run(domain, text, enc, source)
    assert any(isinstance(o, UnsupportedOp) for o in m.ops), m.trace
    assert not c.ok and c.state == get_domain(domain).defaults()
    msg = "; ".join(c.refused)
    assert named in msg and "it has:" in msg, msg

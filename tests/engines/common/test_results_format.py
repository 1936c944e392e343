"""Report-format rules (issue 17): every PASS is earned.

* a claim's pass condition is computed, never a constant (checked statically in every
  ``engines/*/reproduce.py`` and at run time in ``Report.claim``);
* informational rows are ``Report.reported(...)``: shown as "reported", never counted as claims;
* the page header and the landing badges count claims only;
* ``Report.figure`` uses the matplotlib object API, not pyplot.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from engines.common import results
from engines.common.results import Report, claim_counts

ROOT = Path(__file__).resolve().parents[3]
REPRODUCE = sorted(ROOT.glob("engines/*/reproduce.py"))


def _is_constant(node: ast.AST) -> bool:
    """True when the expression has no variable part (a literal, or operators over literals only)."""
    return not any(isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Starred, ast.Lambda))
                   for n in ast.walk(node))


def _claim_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "claim":
            yield node


def _passed_arg(call: ast.Call) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "passed":
            return kw.value
    return call.args[3] if len(call.args) >= 4 else None


def _text(node: ast.AST) -> str:
    """The literal parts of a claim's text (str constants, f-strings, concatenations)."""
    return " ".join(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def test_every_method_has_a_reproduce_script():
    assert len(REPRODUCE) >= 10


@pytest.mark.parametrize("path", REPRODUCE, ids=lambda p: p.parent.name)
def test_no_claim_passes_by_a_constant(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for call in _claim_calls(tree):
        arg = _passed_arg(call)
        assert arg is not None, f"{path.parent.name}:{call.lineno}: claim(...) without a pass condition"
        if _is_constant(arg):
            bad.append(f"{path.parent.name}/reproduce.py:{call.lineno}: passed = {ast.unparse(arg)}")
    assert not bad, "claims whose pass condition is a constant (use Report.reported / Report.not_measured):\n" \
        + "\n".join(bad)


@pytest.mark.parametrize("path", REPRODUCE, ids=lambda p: p.parent.name)
def test_rows_calling_themselves_reported_are_reported_rows(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"{path.parent.name}/reproduce.py:{c.lineno}" for c in _claim_calls(tree)
           if c.args and ("(reported" in _text(c.args[0]).lower() or _text(c.args[0]).lower().lstrip().startswith("reported"))]
    assert not bad, f"claim(...) rows labelled reported: {bad}"


def test_the_static_check_catches_constants():
    src = ("rep.claim('a', 'b', 'c', True)\nrep.claim('a', 'b', 'c', passed=not False)\n"
           "rep.claim('a', 'b', 'c', x > 1)\nrep.claim('a', 'b', 'c', bool(r['ok']))\n")
    flags = [_is_constant(_passed_arg(c)) for c in sorted(_claim_calls(ast.parse(src)), key=lambda c: c.lineno)]
    assert flags == [True, True, False, False]


@pytest.fixture
def tmp_results(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    return tmp_path


def test_runtime_guard_rejects_non_boolean_conditions(tmp_results):
    rep = Report("fmt", "format")
    for bad in ("yes", 1, 0.5, None, [True]):
        with pytest.raises(TypeError):
            rep.claim("c", "p", "o", bad)
    with pytest.raises(ValueError):
        rep.claim("Speed (reported): x", "p", "o", True)
    assert rep.claim("c", "p", "o", np.float64(2.0) > 1).passed is True
    assert rep.rows and all(r.kind == "claim" for r in rep.rows)


def test_reported_rows_are_shown_but_not_counted(tmp_results):
    rep = Report("fmt", "format")
    rep.claim("a", "p", "o", 2 > 1)
    rep.claim("b", "p", "o", 1 > 2)
    rep.reported("c", "p", "figure")
    rep.not_measured("d", "p", "model missing")
    text = rep.write().read_text()
    assert "1 of 3 claims reproduced (1 reported row without a pass condition)" in text
    assert "| c | p | figure | reported |" in text
    assert "| d | p | not measured: model missing | MISS |" in text
    assert claim_counts(text) == (1, 3)


def test_claim_counts_of_an_old_page_reads_the_claims_table_only():
    old = ("# x\n\n3 of 4 claims pass.\n\n| claim | paper | ours | result |\n|---|---|---|---|\n"
           "| a | b | c | PASS |\n| d | e | f | MISS |\n| g | h | i | reported |\n\n| t | PASS |\n|---|---|\n| x | PASS |\n")
    assert claim_counts(old) == (1, 2)


def test_figure_uses_the_object_api(tmp_results):
    from matplotlib.figure import Figure

    assert "pyplot" not in Path(results.__file__).read_text()
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    rep = Report("fmt", "format")
    rep.figure(fig, "line", "a line")
    assert (tmp_results / "fmt_line.png").stat().st_size > 0


def test_landing_badges_count_claims_only(monkeypatch):
    from app import landing

    monkeypatch.setattr(landing, "results_page", lambda mid: results.PageSummary((2, 5), "", False))
    html = landing.landing_html()
    assert "2 of 5 claims reproduced" in html
    assert " PASS</span>" not in html


def test_pre_audit_pages_are_marked_on_the_landing_page(monkeypatch):
    from app import landing

    monkeypatch.setattr(landing, "results_page", lambda mid: results.PageSummary((1, 2), "", True))
    assert "1 of 2 claims reproduced (pre-audit)" in landing.landing_html()


_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:\[[^\]{}]+\]|\.\w+)+(?:![rsa])?(?::[^{}]*)?\}")


@pytest.mark.parametrize("path", REPRODUCE, ids=lambda p: p.parent.name)
def test_no_unformatted_placeholder_inside_an_f_string(path):
    """A literal piece of an implicitly concatenated f-string that lost its ``f`` prints ``{base['seeds']}`` on the
    page verbatim (found on fdgen's page): the literal parts of every f-string carry no expression placeholder."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"{path.parent.name}/reproduce.py:{node.lineno}: {m.group(0)}"
           for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
           for part in node.values if isinstance(part, ast.Constant) and isinstance(part.value, str)
           for m in [_PLACEHOLDER.search(part.value)] if m]
    assert not bad, bad


def test_no_results_page_shows_a_python_expression():
    pages = sorted((ROOT / "docs/results").glob("*.md"))
    bad = [f"{p.name}: {m.group(0)}" for p in pages for m in re.finditer(r"\{\w+\[['\"][^}]*\}", p.read_text())]
    assert pages and not bad, bad

"""Writing ``docs/results/<id>.md``: one row per claim (paper's figure, ours, PASS/MISS), plots, command, date.

Two kinds of rows:

* ``Report.claim(...)``: a claim with a pass condition computed from measurements (PASS / MISS);
* ``Report.reported(...)``: an informational row (a measured figure with no pass condition), shown as
  "reported" and never counted as a claim;
* ``Report.not_measured(...)``: a claim that could not be measured in this run: a MISS with the reason.

The page header, the landing badges and the README count claims only ("n of m claims reproduced").
A claim's pass condition must be computed: ``tests/engines/common/test_results_format.py`` rejects a literal
``passed`` argument in every ``engines/*/reproduce.py``, and :meth:`Report.claim` rejects anything but a
boolean (a string, a number, ``None``) at run time.
"""
from __future__ import annotations

import datetime as _dt
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "docs" / "results"

CLAIM, REPORTED = "claim", "reported"
# the header line, parsed back by app/landing.py
SUMMARY_RE = re.compile(r"(\d+) of (\d+) claims reproduced")
# the banner of a page measured before the claims audit (issue 17) and not re-run since
PRE_AUDIT = "**Pre-audit page.**"


@dataclass
class ClaimRow:
    claim: str
    paper: str  # the paper's (or spec's) figure
    ours: str  # what we measured
    passed: bool | None  # None for a reported row
    kind: str = CLAIM

    @property
    def verdict(self) -> str:
        if self.kind == REPORTED:
            return "reported"
        return "PASS" if self.passed else "MISS"


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _as_bool(passed) -> bool:
    """Only a computed truth value is a pass condition (Python or numpy bool)."""
    if isinstance(passed, bool):
        return passed
    if type(passed).__name__ in ("bool_", "bool") and type(passed).__module__ == "numpy":
        return bool(passed)
    if type(passed).__module__.startswith("torch") and getattr(passed, "dtype", None) is not None \
            and str(passed.dtype) == "torch.bool" and passed.numel() == 1:
        return bool(passed)
    raise TypeError(f"a claim's pass condition must be a computed boolean, got {type(passed).__name__} "
                    f"{passed!r}; use Report.reported(...) for a figure without a pass condition")


class Report:
    """Collects claim rows, reported rows and figures, then writes the markdown page."""

    def __init__(self, method_id: str, title: str):
        self.method_id = method_id
        self.title = title
        self.rows: list[ClaimRow] = []
        self.figures: list[tuple[str, str]] = []  # (file name, caption)
        self.sections: list[str] = []
        self.t0 = time.perf_counter()
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)

    def _add(self, row: ClaimRow) -> ClaimRow:
        self.rows.append(row)
        print(f"[{row.verdict}] {row.claim}: {row.ours}", flush=True)
        return row

    def claim(self, claim: str, paper: str, ours: str, passed) -> ClaimRow:
        """A claim with a pass condition computed from what was measured."""
        if re.match(r"\s*\(?reported\b", claim, re.I) or "(reported" in claim.lower():
            raise ValueError(f"{claim!r} calls itself reported: use Report.reported(...), not a claim")
        return self._add(ClaimRow(claim, paper, ours, _as_bool(passed)))

    def reported(self, claim: str, paper: str, ours: str) -> ClaimRow:
        """An informational row: a measured figure with no pass condition (not counted as a claim)."""
        return self._add(ClaimRow(claim, paper, ours, None, REPORTED))

    def not_measured(self, claim: str, paper: str, reason: str) -> ClaimRow:
        """A claim this run could not measure: counted as a MISS, with the reason."""
        return self._add(ClaimRow(claim, paper, f"not measured: {reason}", False))

    @property
    def claims(self) -> list[ClaimRow]:
        return [r for r in self.rows if r.kind == CLAIM]

    def figure(self, fig, name: str, caption: str) -> None:
        """Save a matplotlib ``Figure`` (object API only: the global figure manager is not thread-safe)."""
        fname = f"{self.method_id}_{name}.png"
        fig.savefig(RESULTS_DIR / fname, dpi=100, bbox_inches="tight")
        self.figures.append((fname, caption))

    def section(self, markdown: str) -> None:
        self.sections.append(markdown.strip())

    def summary(self) -> str:
        claims = self.claims
        n_pass = sum(bool(r.passed) for r in claims)
        n_rep = len(self.rows) - len(claims)
        s = f"{n_pass} of {len(claims)} claims reproduced"
        return s + (f" ({n_rep} reported row{'s' if n_rep != 1 else ''} without a pass condition)" if n_rep else "")

    def markdown(self, command: str | None = None) -> str:
        command = command or f"make reproduce METHOD={self.method_id}"
        elapsed = time.perf_counter() - self.t0
        lines = [
            f"# Measured claims: {self.title}",
            "",
            f"Generated by `{command}` on {_dt.date.today().isoformat()} "
            f"in {elapsed:.0f} s ({platform.machine()}, {_cpu_count()} CPU cores). {self.summary()}.",
            "",
            "| claim | paper | ours | result |",
            "|---|---|---|---|",
        ]
        lines += [f"| {_cell(r.claim)} | {_cell(r.paper)} | {_cell(r.ours)} | {r.verdict} |" for r in self.rows]
        for fname, caption in self.figures:
            lines += ["", f"![{caption}]({fname})", "", f"*{caption}*"]
        for s in self.sections:
            lines += ["", s]
        return "\n".join(lines) + "\n"

    def write(self, command: str | None = None) -> Path:
        path = RESULTS_DIR / f"{self.method_id}.md"
        path.write_text(self.markdown(command), encoding="utf-8")
        print(f"wrote {path} ({self.summary()}, {time.perf_counter() - self.t0:.0f} s)")
        return path


def claims_table(text: str) -> list[list[str]]:
    """The cells of the rows of a results page's first table (the claims table), header rows included."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|") and line.rstrip().endswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows


def claim_counts(text: str, rows: list[list[str]] | None = None) -> tuple[int, int] | None:
    """(reproduced, claims) from a results page: the header's "n of m claims reproduced", else the
    result column of the first table (pages written before reported rows existed).
    ``rows``: the page's ``claims_table`` when the caller has it already."""
    m = SUMMARY_RE.search(text)
    if m:
        return int(m.group(1)), int(m.group(2))
    verdicts = [cells[-1] for cells in (claims_table(text) if rows is None else rows)]
    n_pass, n_miss = verdicts.count("PASS"), verdicts.count("MISS")
    return (n_pass, n_pass + n_miss) if verdicts else None


@dataclass(frozen=True)
class PageSummary:
    """What the landing page shows of a results page, parsed from one read of it."""

    counts: tuple[int, int] | None  # (reproduced, claims), as ``claim_counts``
    first_miss: str  # the claim of the first MISS row of the claims table, "" if none
    pre_audit: bool  # the page carries the pre-audit banner


def summarize(text: str) -> PageSummary:
    rows = claims_table(text)
    first_miss = next((cells[0] for cells in rows if cells[-1] == "MISS"), "")
    return PageSummary(claim_counts(text, rows), first_miss, PRE_AUDIT in text)


def code_version(*modules: str) -> str:
    """A short hash of the source of the given packages/modules (``"engines.fdgen"``, ...): cached intermediate
    results are keyed by it as well as by their parameters, so a results page never mixes runs of different code."""
    import hashlib
    import importlib.util

    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(name)
        origin = Path(spec.origin)
        files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

"""Landing page: the 19 papers as cards with status, claims and links."""
from __future__ import annotations

import html
from pathlib import Path

from engines.common.results import PRE_AUDIT, claim_counts
from engines.registry import METHODS, MethodSpec

ROOT = Path(__file__).resolve().parent.parent


def claim_status(method_id: str) -> tuple[int, int] | None:
    """(claims reproduced, claims) from docs/results/<id>.md, or None if not measured yet.

    Claims only: "reported" rows (measured figures without a pass condition) are not counted.
    """
    p = ROOT / "docs" / "results" / f"{method_id}.md"
    if not p.exists():
        return None
    return claim_counts(p.read_text(encoding="utf-8", errors="replace"))


def is_pre_audit(method_id: str) -> bool:
    """A results page measured before the claims audit and not re-run since (it carries the banner)."""
    p = ROOT / "docs" / "results" / f"{method_id}.md"
    return p.exists() and PRE_AUDIT in p.read_text(encoding="utf-8", errors="replace")


def file_url(rel: str) -> str:
    return f"/gradio_api/file={rel}"


def card(m: MethodSpec) -> str:
    e = html.escape
    badge = f'<span class="pl-badge pl-{m.status}">{m.status}</span>'
    claims = ""
    st = claim_status(m.id) if m.status == "available" else None
    if st is not None:
        ok, n = st
        cls = "pl-pass" if ok == n else "pl-miss"
        stale = is_pre_audit(m.id)
        claims = (f'<span class="pl-badge {cls}" title="claims with a pass condition; reported figures are not '
                  f'counted{"; measured before the claims audit (issue 17)" if stale else ""}">{ok} of {n} claims '
                  f'reproduced{" (pre-audit)" if stale else ""}</span>')
    links = []
    if (ROOT / m.docs_page).exists():
        links.append(f'<a href="{file_url(m.docs_page)}" target="_blank">method docs</a>')
    if (ROOT / m.results_page).exists():
        links.append(f'<a href="{file_url(m.results_page)}" target="_blank">measured claims</a>')
    if m.paper.arxiv:
        links.append(f'<a href="https://arxiv.org/abs/{m.paper.arxiv}" target="_blank">arXiv</a>')
    if m.paper.code_url:
        links.append(f'<a href="{e(m.paper.code_url)}" target="_blank">official code</a>')
    try_line = f'<p class="pl-try"><b>In the tab:</b> {e(m.try_it)}</p>' if m.status == "available" else \
        f'<p class="pl-try"><b>Planned:</b> {e(m.try_it)}</p>'
    return (
        f'<div class="pl-card" id="card-{m.id}">'
        f"<h3>{badge}{claims}{e(m.title)}</h3>"
        f'<div class="pl-paper">{e(m.paper.title)}</div>'
        f'<div class="pl-authors">{e(m.paper.authors)} · {e(m.paper.venue)}</div>'
        f"<p>{e(m.summary)}</p>{try_line}"
        f'<div class="pl-links">{" · ".join(links)}</div></div>'
    )


def landing_html() -> str:
    n = sum(m.status == "available" for m in METHODS)
    head = (
        '<div class="pl-hero"><h1>Paperlab</h1>'
        f"<p>Nineteen ICML 2025 papers, each with a tab where you can run the method and see its effect. "
        f"{n} of {len(METHODS)} are available now; open their tabs above. Heavy work runs as background jobs "
        "with progress bars and a Stop button.</p></div>"
    )
    return head + '<div class="pl-grid">' + "".join(card(m) for m in METHODS) + "</div>"

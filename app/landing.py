"""Landing page: the 19 papers as cards with status, claims and links."""
from __future__ import annotations

import html
import json
from pathlib import Path

from engines.common.results import PageSummary, summarize
from engines.registry import METHODS, MethodSpec

ROOT = Path(__file__).resolve().parent.parent


def results_page(method_id: str) -> PageSummary | None:
    """docs/results/<id>.md, read once and parsed; None if the method has no results page yet."""
    p = ROOT / "docs" / "results" / f"{method_id}.md"
    if not p.exists():
        return None
    return summarize(p.read_text(encoding="utf-8", errors="replace"))


def claim_status(method_id: str) -> tuple[int, int] | None:
    """(claims reproduced, claims) from docs/results/<id>.md, or None if not measured yet.

    Claims only: "reported" rows (measured figures without a pass condition) are not counted.
    """
    page = results_page(method_id)
    return page.counts if page else None


def main_miss(method_id: str, page: PageSummary | None = None) -> str:
    """One line on why the method's main missed claim misses: ``docs/results/main_misses.json``, else the first
    missed claim's own text from the results page (``page``, when the caller has read it already)."""
    notes = ROOT / "docs" / "results" / "main_misses.json"
    try:
        note = json.loads(notes.read_text(encoding="utf-8")).get(method_id, "")
    except (OSError, ValueError):
        note = ""
    if note:
        return note
    page = page or results_page(method_id)
    return f"missed: {page.first_miss}" if page and page.first_miss else ""


def file_url(rel: str) -> str:
    return f"/gradio_api/file={rel}"


def card(m: MethodSpec) -> str:
    e = html.escape
    badge = f'<span class="pl-badge pl-{m.status}">{m.status}</span>'
    claims = claims_note = ""
    page = results_page(m.id) if m.status == "available" else None
    if page is not None and page.counts is not None:
        ok, n = page.counts
        cls = "pl-pass" if ok == n else "pl-miss"
        stale = page.pre_audit
        claims = (f'<span class="pl-badge {cls}" title="claims with a pass condition; reported figures are not '
                  f'counted{"; measured before the claims audit (issue 17)" if stale else ""}">{ok} of {n} claims '
                  f'reproduced{" (pre-audit)" if stale else ""}</span>')
        if ok < n and (why := main_miss(m.id, page)):
            results = file_url(m.results_page)
            claims_note = (f'<p class="pl-why"><b>Main miss:</b> {e(why)} '
                           f'<a href="{results}" target="_blank">What we measured</a></p>')
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
        f"<p>{e(m.summary)}</p>{try_line}{claims_note}"
        f'<div class="pl-links">{" · ".join(links)}</div></div>'
    )


def landing_html() -> str:
    n = sum(m.status == "available" for m in METHODS)
    head = (
        '<div class="pl-hero"><h1>Paperlab</h1>'
        f"<p>Nineteen ICML 2025 papers, each with a tab where you can run the method and see its effect. "
        f"{n} of {len(METHODS)} are available now; open their tabs above. Heavy work runs as background jobs "
        "with progress bars and a Stop button.</p>"
        '<details class="pl-how"><summary>How we measure</summary><p>Each method\'s central claims are measured by '
        "<code>make reproduce METHOD=&lt;id&gt;</code> on a 2-core CPU with tiny models trained here, at the paper's "
        "or the spec's thresholds. <b>PASS</b>: the measured figure meets the threshold on held-out data (anything "
        "tuned is chosen on a validation split). <b>MISS</b>: it does not, or the claim could not be measured in "
        "that run; each miss is explained on the method's results page, usually by the scale of our tiny models. "
        "Figures without a pass condition are shown as <i>reported</i> and are not counted. A card's "
        "\"n of m claims reproduced\" counts claims only.</p></details></div>"
    )
    return head + '<div class="pl-grid">' + "".join(card(m) for m in METHODS) + "</div>"

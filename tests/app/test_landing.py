"""The landing cards tell the truth kindly: claim counts, a one-line reason for the main miss, how we measure."""
from __future__ import annotations

import json
from pathlib import Path

from app import landing
from engines.registry import available


def test_every_card_with_a_miss_says_why():
    html = landing.landing_html()
    assert "How we measure" in html and "reported" in html
    for m in available():
        st = landing.claim_status(m.id)
        card = landing.card(m)
        if st and st[0] < st[1]:
            assert "Main miss:" in card and m.results_page in card, m.id
        else:
            assert "Main miss:" not in card, m.id


def test_main_miss_falls_back_to_the_first_missed_claim(tmp_path, monkeypatch):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "main_misses.json").write_text(json.dumps({"b": "because of scale"}))
    (tmp_path / "docs" / "results" / "a.md").write_text(
        "| claim | paper | ours | result |\n|---|---|---|---|\n| fast | 1 s | 0.5 s | PASS |\n| exact | 0 | 3 | MISS |\n")
    monkeypatch.setattr(landing, "ROOT", tmp_path)
    assert landing.main_miss("a") == "missed: exact"
    assert landing.main_miss("b") == "because of scale"
    assert landing.main_miss("c") == ""


def test_each_results_page_is_read_once_per_card(monkeypatch):
    reads = []
    read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self.name) or read_text(self, *a, **k))
    for m in available():
        reads.clear()
        landing.card(m)
        assert reads.count(f"{m.id}.md") <= 1, (m.id, reads)

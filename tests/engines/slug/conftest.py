"""The micro CLIP and one forget concept, shared by the SLUG tests (test profile)."""
from __future__ import annotations

import pytest

from engines.slug.concepts import build_concept


@pytest.fixture(scope="module")
def zc():
    from engines.common import zoo

    return zoo.load("clip")


@pytest.fixture(scope="module")
def concept():
    return build_concept("digit", "two", n_forget=40, n_retain=48, n_eval=60)

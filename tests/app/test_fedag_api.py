"""The fedag endpoints through gradio_client (inline jobs, micro CLIP), and bad input named clearly."""
from __future__ import annotations

import pytest
from gradio_client import Client

DOMAINS = ["tint", "rotate", "noise", "blur"]
# domains, held-out, clients per domain, rounds, λ, m, KD α, quality, corruption, baselines, seed
RUN = (DOMAINS, "blur", 1, 1, 0.1, 0.9, 0.5, True, 0.2, ["zeroshot"], 0)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_preview_run_and_attention(client):
    gallery, msg = client.predict(DOMAINS, "blur", 0.2, 0, api_name="/fedag_preview")
    assert len(gallery) == 3 * 6 + 3 and "4 domain(s)" in msg  # 3 in-domains: client + synthetic; held-out: test
    plot, table, qplot, heat, samples, status = client.predict(*RUN, api_name="/fedag_run")
    assert [r[0] for r in table["data"]] == ["FedAG", "zero-shot CLIP"]
    assert all(p["plot"].startswith("data:image") for p in (plot, qplot, heat))
    assert "raw images sent: 0" in status and len(samples) == 12
    image, bars, text = client.predict("blur", 0, api_name="/fedag_attention")  # the session keeps the result
    assert image and bars["plot"].startswith("data:image") and "held-out domain" in text and "α:" in text
    fresh = Client(client.src, verbose=False)  # a new session has no federation yet
    with pytest.raises(Exception, match="Run a federation first"):
        fresh.predict("blur", 0, api_name="/fedag_attention")


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="at least two in-domains"):
        client.predict(["tint", "blur"], *RUN[1:], api_name="/fedag_run")
    with pytest.raises(Exception, match="silos are empty"):
        client.predict([], *RUN[1:], api_name="/fedag_run")
    with pytest.raises(Exception, match="(?i)rounds|maximum"):
        client.predict(*RUN[:3], 99, *RUN[4:], api_name="/fedag_run")
    with pytest.raises(Exception, match="(?i)lam|maximum"):
        client.predict(*RUN[:4], 50.0, *RUN[5:], api_name="/fedag_run")
    with pytest.raises(Exception, match="Empty silos|at least one domain"):
        client.predict([], "blur", 0.2, 0, api_name="/fedag_preview")
    with pytest.raises(Exception, match="not one of the chosen domains"):
        client.predict(DOMAINS[:3], "blur", 0.2, 0, api_name="/fedag_preview")
    assert client.predict(DOMAINS[:3], "noise", 0.2, 0, api_name="/fedag_preview")[1].startswith("3 domain(s)")


def test_preview_shows_the_silos_and_synthetic_samples_training_uses(monkeypatch):
    """The preview's client images are the silos' first training images and its synthetic samples the first of
    the sets ``build_setup`` trains on, for the chosen corruption share and seed (not a fixed 40-digit split)."""
    import numpy as np

    from app.tabs.fedag import preview, sizes
    from engines.fedag.federation import build_setup
    from engines.fedag.params import SD_DIR_SETTING, FederationParams

    monkeypatch.delenv(SD_DIR_SETTING, raising=False)
    p = FederationParams(held_out="rotate", corruption=0.5, seed=7, **sizes(4))  # the tab's silo size
    items, msg = preview(list(p.domains), p.held_out, p.corruption, p.seed)
    s = build_setup(p)
    big = lambda x: (np.kron(x, np.ones((4, 4, 1))) * 255).round().astype(np.uint8)  # noqa: E731
    client = [img for img, cap in items if cap.endswith("client image")]
    syn = [(img, cap) for img, cap in items if "synthetic" in cap]
    held = [img for img, cap in items if "held-out" in cap]
    assert len(client) == len(syn) == 9 and len(held) == 3 and "50% deliberately wrong, seed 7" in msg
    for i, d in enumerate(s.in_domains):
        for j in range(3):
            assert np.array_equal(client[3 * i + j], big(s.clients[i]._x[j]))
            img, cap = syn[3 * i + j]
            assert np.array_equal(img, big(s.synthetic[i].x[j])) and f"'{s.synthetic[i].y[j]}'" in cap
            assert cap.endswith("(corrupted)") == bool(s.synthetic[i].corrupted[j])
    assert all(np.array_equal(h, big(s.eval_sets["test"]["rotate"]["x"][j])) for j, h in enumerate(held))
    five = ["tint", "rotate", "noise", "blur", "invert"]  # the pool needs smaller silos; the tab picks 339 outside
    items, msg = preview(five, "invert", 0.2, 0)  # the test profile (was: an error naming images_per_domain)
    assert len(items) == 4 * 6 + 3 and msg.startswith("5 domain(s)")
    monkeypatch.setenv(SD_DIR_SETTING, "/models/sd-2-1-base")  # paper scale: no pool digits pretending to be SD's
    items, msg = preview(list(p.domains), p.held_out, p.corruption, p.seed)
    assert not [c for _, c in items if "synthetic" in c] and "Stable Diffusion" in msg


def test_tab_sizes_follow_the_profile(monkeypatch):
    """Outside the test profile the tab's silos are the benchmark's 350 images (339 with five domains, leaving the
    pool generator its digits) with the code's initialisation epochs; the test profile's are smaller."""
    from types import SimpleNamespace

    import engines.common.settings as settings
    from app.tabs.fedag import sizes

    assert sizes(4) == {"images_per_domain": 100, "init_epochs": 3}
    monkeypatch.setattr(settings, "get_settings", lambda: SimpleNamespace(profile="default"))
    assert sizes(4) == {"images_per_domain": 350} and sizes(5) == {"images_per_domain": 339}

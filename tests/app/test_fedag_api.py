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
    gallery, msg = client.predict(DOMAINS, api_name="/fedag_preview")
    assert len(gallery) == 24 and "4 domain(s)" in msg
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
        client.predict([], api_name="/fedag_preview")
    assert client.predict(DOMAINS[:3], api_name="/fedag_preview")[1].startswith("3 domain(s)")

"""The landing page's model-zoo section through gradio_client: status table, build job, bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

from app.zoo_status import shown_path
from engines.common import zoo
from engines.common.settings import get_settings


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def _rows(table) -> dict[str, list]:
    return {r[0]: r for r in table["data"]}


def test_status_lists_every_zoo_model(client):
    rows = _rows(client.predict(api_name="/zoo_status"))
    assert set(zoo.NAMES) <= set(rows)
    for name in zoo.NAMES:
        assert rows[name][1] == ("built locally" if zoo.is_built(name) else "not built")  # micro models: never released
        assert rows[name][5] == shown_path(zoo.model_dir(name)) and rows[name][5].startswith("<data>/zoo/")


def test_forced_rebuild_needs_the_admin_token(client, monkeypatch):
    with pytest.raises(Exception, match="for the server's admin"):
        client.predict("judge_style", True, "", api_name="/zoo_build")
    monkeypatch.setattr(get_settings(), "admin_token", "s3cret")
    with pytest.raises(Exception, match="for the server's admin"):
        client.predict("judge_style", True, "guess", api_name="/zoo_build")


def test_build_job_trains_and_the_table_shows_metrics(client, monkeypatch):
    # force (admin): retrain even if another test already built the micro judge in this session
    monkeypatch.setattr(get_settings(), "admin_token", "s3cret")
    table, status = client.predict("judge_style", True, "s3cret", api_name="/zoo_build")
    assert "judge_style built" in status
    assert zoo.is_built("judge_style")
    row = _rows(table)["judge_style"]
    assert row[1] == "built locally" and "test acc" in row[3] and row[4].endswith(" s")
    # A second request does not retrain.
    _, status = client.predict("judge_style", False, "", api_name="/zoo_build")
    assert "already built" in status


def test_unknown_model_is_a_clear_error(client):
    with pytest.raises(Exception, match="(?i)unknown zoo model|dall-e"):
        client.predict("dall-e", False, "", api_name="/zoo_build")


def test_builds_are_rate_limited(client, monkeypatch):
    from app import zoo_status

    monkeypatch.setattr(get_settings(), "zoo_builds_per_hour", 0)
    name = next((n for n in zoo.NAMES if not zoo.is_built(n)), None)
    if name is None:  # every micro model is built: a forced (admin) build goes through the same gate
        monkeypatch.setattr(get_settings(), "admin_token", "s3cret")
        args = ("judge_style", True, "s3cret")
    else:
        args = (name, False, "")
    with pytest.raises(Exception, match="model builds per hour"):
        client.predict(*args, api_name="/zoo_build")
    assert zoo_status._BUILDS is not None


def test_build_params_are_validated_before_queueing():
    from engines.common.params import ParamError, validate
    from engines.common.zoo.params import ZooBuildParams

    with pytest.raises(ParamError, match="name"):
        validate(ZooBuildParams, {"name": "dall-e"})

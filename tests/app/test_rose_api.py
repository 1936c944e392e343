"""The rose endpoints through gradio_client (inline jobs, micro model), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

# series, csv, csv column, horizon, context, holdout, few-shot, fraction, steps, baselines, coverage
BASE = ("synthetic:trend_season", None, "", 16, 64, True, True, 0.1, 5, ["seasonal_naive"], 0.8)


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_forecast_and_mask(client):
    plot, table, reg, status = client.predict(*BASE, api_name="/rose_forecast")
    assert str(plot).endswith((".png", ".webp")) and str(reg).endswith((".png", ".webp"))
    models = [r[0] for r in table["data"]]
    assert models[0] == "ROSE zero-shot" and models[1].startswith("ROSE few-shot") and models[2] == "Seasonal naive"
    assert all(isinstance(r[3], float) for r in table["data"])  # MASE against the held-out truth
    assert "MASE" in status and "Register codes" in status
    view = client.predict("co2", None, "", 0.3, "low", 64, api_name="/rose_mask")
    assert view["plot"].startswith("data:image")


def test_csv_upload_and_bad_input(client, tmp_path):
    good = tmp_path / "demand.csv"
    good.write_text("date,demand\n" + "\n".join(f"2021-01-{d:02d} {h:02d}:00,{(h % 24) + d}"
                                              for d in range(1, 8) for h in range(24)))
    args = list(BASE)
    args[1], args[6] = handle_file(str(good)), False
    _, table, _, status = client.predict(*args, api_name="/rose_forecast")
    assert "demand" in status and len(table["data"]) == 2
    no_time = tmp_path / "no_time.csv"
    no_time.write_text("a,b\n1,2\n3,4\n")
    args[1] = handle_file(str(no_time))
    with pytest.raises(Exception, match="no time column"):
        client.predict(*args, api_name="/rose_forecast")
    with pytest.raises(Exception, match="(?i)horizon|maximum value 96"):
        client.predict(*(BASE[:3] + (500,) + BASE[4:]), api_name="/rose_forecast")
    short = tmp_path / "short.csv"
    short.write_text("date,v\n" + "\n".join(f"2020-01-{d:02d},{d}" for d in range(1, 20)))
    args[1] = handle_file(str(short))
    with pytest.raises(Exception, match="too short"):
        client.predict(*args, api_name="/rose_forecast")
    # the app keeps serving after bad input
    assert client.predict(*BASE[:6], False, *BASE[7:], api_name="/rose_forecast")[3]


def test_pretrain_job(client):
    loss, rows, msg = client.predict(50, "freq_multi", True, api_name="/rose_pretrain")
    assert loss["plot"].startswith("data:image") and "Pre-trained" in msg
    assert {r[0] for r in rows["data"]} >= {"airline", "co2"}

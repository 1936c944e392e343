"""The multinoulli endpoints through gradio_client: a run with brute force, the T sweep, bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

# task, clip, frames, design_points, graph, graph_nodes, blocks, budget, seed,
# T, batch, estimator, draws, rounding, pad, eps, gamma, beta
SMALL_DESIGN = ("design", "bikes", 300, 18, "les_miserables", 500, 3, 2, 0,
                30, 1, "momentum", "slots", 4, "greedy", 0.3, 0, 0)


def test_run_with_brute_force(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    value_plot, priors_plot, view, summary, status = c.predict(
        *SMALL_DESIGN, ["scg", "greedy", "distorted_local_search", "brute_force"], api_name="/multinoulli_run")
    assert value_plot["plot"].startswith("data:image") and priors_plot["plot"].startswith("data:image")
    rows = {r[0]: r for r in summary["data"]}
    assert set(rows) == {"Multinoulli-SCG", "Greedy", "Distorted local search (needs γ, β)", "Brute force (OPT)"}
    assert rows["Brute force (OPT)"][2] == 100.0
    assert rows["Multinoulli-SCG"][2] >= 100 * (1 - 1 / 2.718281828)  # ≥ (1 − 1/e)·OPT
    assert all(r[6] == "yes" for r in rows.values())
    assert rows["Brute force (OPT)"][4] == 15 ** 3
    assert "OPT =" in status and "Multinoulli-SCG used neither" in status
    assert view and str(view).endswith(".png")


def test_sweep(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    plot, status = c.predict("coverage", "bikes", 300, 18, "karate", 500, 3, 1, 0, "momentum", "slots", "greedy",
                             api_name="/multinoulli_sweep")
    assert plot["plot"].startswith("data:image") and "T sweep done" in status


def test_bad_input_is_named(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="Select at least one algorithm"):
        c.predict(*SMALL_DESIGN, [], api_name="/multinoulli_run")
    karate_too_big = ("coverage", "bikes", 300, 18, "karate", 500, 8, 6, 0) + SMALL_DESIGN[9:]
    with pytest.raises(Exception, match="larger than community"):
        c.predict(*karate_too_big, ["scg"], api_name="/multinoulli_run")
    too_many_segments = ("video", "carphone", 300, 18, "karate", 500, 40, 5, 0) + SMALL_DESIGN[9:]
    with pytest.raises(Exception, match="budget"):
        c.predict(*too_many_segments, ["scg"], api_name="/multinoulli_run")
    no_upload = ("video", "upload", 300, 18, "karate", 500, 4, 2, 0) + SMALL_DESIGN[9:]
    with pytest.raises(Exception, match="No video uploaded|uploading a video"):
        c.predict(*no_upload, ["scg"], api_name="/multinoulli_run")
    with pytest.raises(Exception, match="brute force would enumerate"):
        c.predict(*("design", "bikes", 300, 200) + SMALL_DESIGN[4:], ["brute_force"], api_name="/multinoulli_run")
    # The app keeps serving after bad input.
    out = c.predict(*SMALL_DESIGN, ["greedy"], api_name="/multinoulli_run")
    assert "Done" in out[-1]


def test_upload_checks_the_video(inline_app, tmp_path):
    url, _ = inline_app
    c = Client(url, verbose=False)
    fake = tmp_path / "not_a_video.mp4"
    fake.write_bytes(b"this is text, not an MP4 container" * 50)
    with pytest.raises(Exception, match="could not decode|no decodable"):
        c.predict(handle_file(str(fake)), api_name="/multinoulli_upload")
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    with pytest.raises(Exception, match="not a video file|Invalid file type"):
        c.predict(handle_file(str(txt)), api_name="/multinoulli_upload")
    from engines.multinoulli.video import clip_path

    msg, clip = c.predict(handle_file(str(clip_path("carphone"))), api_name="/multinoulli_upload")
    assert "120 decodable frames" in msg and clip == "upload"

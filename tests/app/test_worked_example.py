"""Worked examples (app/worked_example.py): computed once through the job backend, then read from the cache."""
from __future__ import annotations

import json

import pytest

from app import worked_example as we
from app import jobs
from app.jobs import InlineBackend, set_backend
from engines.common.settings import get_settings, reset_settings

PARAMS = dict(env="linear", eta=5.0, horizon=1000, dim=4, arms=5, noise=0.1, beta=1.0, seeds=1,
              reference="uniform", methods=["kl_ucb"])


class CountingBackend(InlineBackend):
    def __init__(self):
        super().__init__()
        self.submitted: list[tuple[str, str]] = []

    def submit(self, method_id, entry, params):
        self.submitted.append((method_id, entry))
        return super().submit(method_id, entry, params)


@pytest.fixture
def backend(tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path))
    reset_settings()
    b = CountingBackend()
    prev = jobs._backend  # the session's inline app shares the module-level backend: put it back
    set_backend(b)
    yield b
    set_backend(prev)
    reset_settings()


def test_computed_once_then_read_from_the_cache(backend):
    res = we.fetch("kl_bandits", "regret_curves", PARAMS)
    assert [c["method"] for c in res["curves"]] == ["kl_ucb"]
    assert backend.submitted == [("kl_bandits", "regret_curves")]
    path = we.cache_path("kl_bandits", "regret_curves", PARAMS)
    assert path.is_relative_to(get_settings().data_dir / "worked_examples" / "kl_bandits")
    assert json.loads(path.read_text()) == res
    # a second page load reads the file: no second job
    assert we.fetch("kl_bandits", "regret_curves", PARAMS) == res
    assert len(backend.submitted) == 1
    # other parameters are another example
    other = dict(PARAMS, eta=6.0)
    assert we.cache_path("kl_bandits", "regret_curves", other) != path


def test_key_follows_the_engine_code(backend, monkeypatch):
    we.fetch("kl_bandits", "regret_curves", PARAMS)
    before = we.cache_path("kl_bandits", "regret_curves", PARAMS)
    monkeypatch.setattr(we, "_code_version", lambda method_id: "0123456789abcdef")
    after = we.cache_path("kl_bandits", "regret_curves", PARAMS)
    assert after != before and "0123456789abcdef" in after.name
    # changed code: computed again, and the result of the old code is dropped
    assert we.cached("kl_bandits", "regret_curves", PARAMS) is None
    we.fetch("kl_bandits", "regret_curves", PARAMS)
    assert len(backend.submitted) == 2 and after.exists() and not before.exists()


def test_a_rejected_example_names_the_field(backend):
    with pytest.raises(we.ExampleUnavailable, match="horizon"):
        we.fetch("kl_bandits", "regret_curves", dict(PARAMS, horizon=-3))
    assert not list((get_settings().data_dir / "worked_examples").rglob("*.json"))


def test_missing_zoo_model_names_the_command(backend):
    why = we.missing_zoo("clip")  # the test profile's micro CLIP is never shipped; this data dir is empty
    assert why is not None and "make models" in why and "zoo/clip" in why
    assert we.banner(why).startswith("⚠️ **The worked example is not available:**")


def test_example_whose_artifacts_were_swept_is_computed_again(backend):
    res = we.fetch("kl_bandits", "regret_curves", PARAMS)
    path = we.cache_path("kl_bandits", "regret_curves", PARAMS)
    # as if the example's job had saved images: its artifact folder exists, the cache names the job
    job_dir = get_settings().artifacts_dir / "examplejob1"
    job_dir.mkdir(parents=True)
    (job_dir / "plot.png").write_bytes(b"png")
    we._job_file(path).write_text("examplejob1")
    assert we.cached("kl_bandits", "regret_curves", PARAMS) == res
    # housekeeping removed the job's folder: the cached result would show missing images, so it is dropped
    from app.housekeeping import sweep_artifacts

    sweep_artifacts(get_settings().artifacts_dir, max_age_s=-1, max_bytes=1e12)
    assert not job_dir.exists()
    assert we.cached("kl_bandits", "regret_curves", PARAMS) is None
    assert not path.exists() and not we._job_file(path).exists()
    again = we.fetch("kl_bandits", "regret_curves", PARAMS)
    assert again["curves"] == res["curves"] and len(backend.submitted) == 2


def test_the_opened_tab_goes_first(backend, monkeypatch):
    import threading

    order, gate = [], threading.Event()

    def compute(method_id, entry, params, path):
        order.append(params["tag"])
        if params["tag"] == "running":
            gate.wait(10)
        return {"tag": params["tag"]}

    monkeypatch.setattr(we, "_compute", compute)
    futs = [we.submit("kl_bandits", "regret_curves", {"tag": "running"})]
    while not order:  # the first example has started
        threading.Event().wait(0.01)
    futs += [we.submit("kl_bandits", "regret_curves", {"tag": "kl"}),
             we.submit("multinoulli", "run", {"tag": "multinoulli"}),
             we.submit("rose", "forecast", {"tag": "rose"})]
    we.promote("rose")  # the visitor opened the ROSE tab
    gate.set()
    assert [f.result(10)["tag"] for f in futs] == ["running", "kl", "multinoulli", "rose"]
    assert order == ["running", "rose", "kl", "multinoulli"]


def test_a_cancelled_example_is_computed_again(backend):
    """A future cancelled before it ran (a closed page used to cancel the shared one) is replaced, not handed
    to every later page load."""
    other = dict(PARAMS, eta=7.0)
    we.submit("kl_bandits", "regret_curves", other).cancel()
    assert we.fetch("kl_bandits", "regret_curves", other, timeout=60)["eta"] == 7.0

"""A corrupt cached model file is detected and rebuilt; if it stays unreadable the error says so clearly."""
from __future__ import annotations

import logging

import pytest

from engines.common.settings import get_settings

# test_corrupt_weights_are_rebuilt trains a micro model twice: make faults; the others stub the build


@pytest.fixture
def zoo_here(tmp_path, monkeypatch):
    monkeypatch.setattr(get_settings(), "data_dir", tmp_path)
    from engines.common import zoo

    return zoo


@pytest.mark.fault
def test_corrupt_weights_are_rebuilt(zoo_here, caplog):
    zoo = zoo_here
    zoo.load("judge_style")  # micro model: trained in seconds
    f = zoo.model_dir("judge_style") / "model.safetensors"
    good = f.stat().st_size
    f.write_bytes(b"\x00not a safetensors file" * 8)  # a torn write / bad disk
    with caplog.at_level(logging.WARNING, logger="paperlab.zoo"):
        judge = zoo.load("judge_style")
    assert "cannot be read" in caplog.text and "rebuilding" in caplog.text
    assert f.stat().st_size == good and judge.classes
    zoo.load("judge_style")  # the rebuilt cache loads as is


def test_unreadable_after_rebuild_is_a_clear_error(zoo_here, monkeypatch, tmp_path):
    import importlib

    from engines.common.zoo import store

    zoo = zoo_here
    mod = importlib.import_module("engines.common.zoo.judges")
    built = []
    monkeypatch.setattr(store, "build", lambda name, cfg, ctx=None: built.append(name) or tmp_path / "m")

    def broken(*_a, **_k):
        raise OSError("input/output error")

    monkeypatch.setattr(mod, "load", broken)
    with pytest.raises(RuntimeError, match="cannot be read even after rebuilding"):
        zoo.load("judge_style")
    assert built == ["judge_style", "judge_style"]  # built (cached), then rebuilt once


@pytest.mark.parametrize("error", [RuntimeError("cannot schedule new futures after interpreter shutdown"),
                                   MemoryError()])
def test_a_failure_that_is_not_damage_keeps_the_files(zoo_here, monkeypatch, tmp_path, error):
    import importlib

    from engines.common.zoo import store

    zoo = zoo_here
    mod = importlib.import_module("engines.common.zoo.judges")
    model = tmp_path / "m"
    model.mkdir()
    monkeypatch.setattr(store, "build", lambda name, cfg, ctx=None: model)

    def failing(*_a, **_k):
        raise error

    monkeypatch.setattr(mod, "load", failing)
    with pytest.raises(type(error)):
        zoo.load("judge_style")
    assert model.is_dir()  # nothing deleted: the files were never the problem

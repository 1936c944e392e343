"""The model release: shipped keys match the default configurations, hashes are verified, a fresh data
directory loads shipped weights without training, and the test profile never touches the release."""
from __future__ import annotations

import json

import pytest
import torch

from engines.common import release, zoo
from engines.common.settings import get_settings, reset_settings
from engines.common.zoo import catalog, judges


@pytest.fixture
def default_profile(monkeypatch):
    """Compute the default profile's cache keys (no training happens under it here)."""
    monkeypatch.setenv("PAPERLAB_PROFILE", "default")
    reset_settings()
    yield
    monkeypatch.undo()  # the profile, and whatever else the test patched (data dir, train functions)
    reset_settings()


def _released(kind: str) -> dict[str, dict]:
    return release.artifacts(kind)


def _shipped_keys(kind: str) -> set[str]:
    """The cache keys the release holds for ``kind`` (its artifact names without the kind)."""
    return {key.split("/", 1)[1] for key in _released(kind)}


def test_every_shipped_file_matches_its_manifest():
    for key in release.artifacts():
        kind, k = key.split("/", 1)
        m = release.verify(kind, k)  # raises ReleaseError on a missing / truncated / changed file
        assert m["key"] == k and m["files"]
    rel = release.read_release()
    if rel["artifacts"]:
        assert rel["version"] >= 1 and rel["bytes"] <= 100e6  # the release stays small enough to clone


def test_default_zoo_configs_hash_to_the_shipped_keys():
    """A change that changes a default model (config, entry version) orphans its release: caught here.
    A refactor that does not (same resolved config, same version) keeps the key."""
    shipped = [key.split("/")[1:] for key in _released("zoo")]
    names = {n for n, _ in shipped}
    for name in names:
        default = catalog.config_hash(name, catalog.entry(name).default.resolved())
        assert [name, default] in shipped, f"the default {name} config hashes to {default}, not a shipped key: " \
            f"retrain and ship it with `make models MODELS=zoo/{name}` (or restore the config)"
    for name, h in shipped:
        m = release.manifest("zoo", f"{name}/{h}")
        cfg = catalog.entry(name).config_cls.model_validate(m["config"])
        assert catalog.config_hash(name, cfg) == h, f"{name}: the manifest's config no longer hashes to its key {h}"
        assert m["entry_version"] == catalog.entry(name).version


def test_object_audio_keys_match_the_shipped_release(default_profile):
    from engines.object_audio import train as T

    shipped = _shipped_keys("object_audio")
    if not shipped:
        pytest.skip("object_audio models are not in this release")
    b, dot = T.default_configs("dot")
    _, add = T.default_configs("additive")
    for d in (T.base_dir(b), T.pretrain_dir(b, dot), T.diffusion_dir(b, dot), T.diffusion_dir(b, add)):
        assert d.name in shipped, f"object_audio's cache key {d.name} is not shipped: `make models MODELS=object_audio`"


def test_l2d_key_matches_the_shipped_release(default_profile):
    from engines.l2d import models
    from engines.l2d import release as l2d_release

    key = l2d_release.key_for(models.TinyConfig())
    assert _shipped_keys("l2d") == {key}, "the default L2D models are not the shipped ones: " + l2d_release.REBUILD


def test_retire_keeps_only_the_rebuilt_artifact(micro_release):
    src = micro_release["src"]
    release.publish("zoo", "judge_object/old", src, config={}, record={}, metrics={}, half=False)
    assert set(release.artifacts("zoo")) == {"zoo/judge_object/old", f"zoo/{micro_release['key']}"}
    before = release.read_release()["bytes"]
    assert release.retire("zoo", micro_release["key"]) == ["judge_object/old"]
    assert set(release.artifacts("zoo")) == {f"zoo/{micro_release['key']}"}
    assert not release.artifact_dir("zoo", "judge_object/old").exists() and micro_release["dir"].exists()
    assert release.read_release()["bytes"] < before


def test_saeuron_key_matches_the_shipped_release(default_profile):
    """The default SAeUron setting's build key (parameters + the text-to-image model's cache key) is shipped: a
    new text-to-image model or changed defaults orphan the SAEs here, not silently on a visitor's page."""
    from engines.saeuron.pipeline import build_dir, resolve_build

    shipped = _shipped_keys("saeuron")
    if not shipped:
        pytest.skip("saeuron's SAEs are not in this release")
    key = build_dir(resolve_build(None)).name
    assert key in shipped, f"saeuron's default build key {key} is not shipped: `make models MODELS=saeuron`"


def test_pde_staggered_tab_surrogates_are_shipped(default_profile):
    """The four shallow-water surrogates the tab's worked example rolls out (seed 0) are in the release."""
    from engines.pde_staggered.config import sizes
    from engines.pde_staggered.models import VARIANTS
    from engines.pde_staggered.training import model_path

    shipped = _shipped_keys("pde_staggered")
    if not shipped:
        pytest.skip("pde_staggered's surrogates are not in this release")
    for v in VARIANTS:
        stem = model_path(v, sizes("swe"), 0, False, False).stem
        assert stem in shipped, f"pde_staggered {v} seed 0 ({stem}) is not shipped: `make models MODELS=pde_staggered`"


def test_test_profile_never_uses_the_release():
    assert get_settings().profile == "test"
    keys = set(release.artifacts())
    for name in zoo.NAMES:
        assert f"zoo/{name}/{zoo.model_dir(name).name}" not in keys


# ----------------------------------------------------------------------------- a private release of a micro model


@pytest.fixture
def micro_release(tmp_path, monkeypatch):
    """A release folder holding the micro object judge, and a fresh (empty) data directory."""
    zoo.build("judge_object")
    src = zoo.model_dir("judge_object")
    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path / "release"))
    h = src.name
    m = release.publish("zoo", f"judge_object/{h}", src, config=catalog.resolve_config("judge_object").model_dump(mode="json"),
                        record={"steps": 8}, metrics={"test_accuracy": 0.5}, half=True, label="micro judge",
                        rebuild="make models MODELS=zoo/judge_object")
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path / "fresh-clone-data"))
    reset_settings()
    yield {"key": f"judge_object/{h}", "dir": tmp_path / "release" / "zoo" / "judge_object" / h, "manifest": m, "src": src}
    monkeypatch.undo()
    reset_settings()


def test_fresh_data_dir_loads_the_shipped_weights_without_training(micro_release, monkeypatch):
    def no_training(*a, **k):
        raise AssertionError("a shipped model must not be trained")

    monkeypatch.setattr(judges, "train", no_training)
    assert not zoo.is_built("judge_object")
    row = {r["name"]: r for r in zoo.status()}["judge_object"]
    assert row["state"] == "release v1 (shipped)" and row["metrics"] == {"test_accuracy": 0.5}
    j = zoo.load("judge_object")
    assert zoo.is_built("judge_object")
    ref = judges.load(micro_release["src"])
    for (k, a), b in zip(ref.state_dict().items(), j.state_dict().values()):
        assert b.dtype == a.dtype, k  # float16 on disk, float32 in memory
        if a.is_floating_point():
            assert torch.allclose(a, b, rtol=1e-3, atol=1e-4), k
    assert micro_release["manifest"]["files"]["model.safetensors"]["stored"] == "float16"
    assert release.installed_from(zoo.model_dir("judge_object"))["release"] == 1
    assert {r["name"]: r for r in zoo.status()}["judge_object"]["state"] == "release v1 (shipped)"


@pytest.mark.parametrize("damage", ["tamper", "truncate", "delete"])
def test_damaged_release_file_is_reported_with_the_rebuild_command(micro_release, damage, monkeypatch):
    monkeypatch.setattr(judges, "train", lambda *a, **k: pytest.fail("must not fall back to training"))
    f = micro_release["dir"] / "model.safetensors"
    blob = bytearray(f.read_bytes())
    if damage == "tamper":
        blob[-3] ^= 0xFF
        f.write_bytes(bytes(blob))
    elif damage == "truncate":
        f.write_bytes(bytes(blob[: len(blob) // 2]))
    else:
        f.unlink()
    with pytest.raises(release.ReleaseError) as e:
        zoo.load("judge_object")
    msg = str(e.value)
    assert "model.safetensors" in msg and "make models MODELS=zoo/judge_object" in msg and "git checkout" in msg
    assert {"tamper": "sha256", "truncate": "bytes", "delete": "missing"}[damage] in msg
    assert not zoo.is_built("judge_object")  # nothing half-installed, no random weights


def test_release_switch_off_trains_instead(micro_release, monkeypatch):
    monkeypatch.setenv("PAPERLAB_RELEASE", "off")
    d = zoo.build("judge_object")
    assert release.installed_from(d) is None and json.loads((d / "zoo.json").read_text())["metrics"]
    assert {r["name"]: r for r in zoo.status()}["judge_object"]["state"] == "built locally"


def test_a_shipped_default_model_installs_into_a_fresh_data_dir_without_training(tmp_path, monkeypatch, default_profile):
    """The real release: the smallest shipped default zoo model loads in an empty data directory, no training."""
    shipped = {key.split("/")[1]: key for key in _released("zoo")}
    name = next((n for n in ("judge_object", "judge_style", "clip") if n in shipped), None)
    if name is None:
        pytest.skip("no default zoo model in this release yet")
    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path / "fresh-clone-data"))
    reset_settings()
    mod = __import__(f"engines.common.zoo.{catalog.entry(name).module}", fromlist=["train"])
    monkeypatch.setattr(mod, "train", lambda *a, **k: pytest.fail("a shipped model must not be trained"))
    assert not zoo.is_built(name) and {r["name"]: r for r in zoo.status()}[name]["state"].startswith("release v")
    model = zoo.load(name)
    assert model is not None and zoo.is_built(name)
    assert release.installed_from(zoo.model_dir(name))["key"] == shipped[name].split("/", 1)[1]


def test_publish_measures_held_out_metrics_and_make_models_compares_them(tmp_path, monkeypatch):
    """``python -m engines.release_models``' zoo path on the micro judge: publish (float16 only when no held-out
    metric moves), re-publish within tolerance, a moved metric reported; list / verify."""
    from engines import release_models as RM
    from engines.common.zoo import heldout

    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path / "release"))
    zoo.build("judge_object")
    assert RM.publish_zoo("judge_object") == []  # nothing to compare with yet
    key = f"judge_object/{zoo.model_dir('judge_object').name}"
    m = release.manifest("zoo", key)
    assert set(m["metrics"]) == {"test_accuracy"} and m["record"]["steps"] == catalog.resolve_config("judge_object").steps
    stored = m["files"]["model.safetensors"].get("stored")
    if stored == "float16":
        assert heldout.compare(m["metrics"], m["metrics_float32"], heldout.HALF_TOLERANCE) == []
    assert RM.publish_zoo("judge_object") == []  # same weights, same numbers
    f = release.artifact_dir("zoo", key) / release.MANIFEST
    mf = json.loads(f.read_text())
    mf["metrics"]["test_accuracy"] += 0.2
    f.write_text(json.dumps(mf))
    assert any("test_accuracy" in p for p in RM.publish_zoo("judge_object"))
    assert RM.main(["verify"]) == 0 and RM.main(["list"]) == 0
    assert RM._expand(["clip", "object_audio"]) == ["zoo/clip", "object_audio"]
    with pytest.raises(SystemExit):
        RM._expand(["dall-e"])

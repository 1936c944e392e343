"""pde_staggered's surrogates in the model release: a shipped cache key installs without training, verified."""
from __future__ import annotations

import pytest
import torch

from engines.common import release
from engines.pde_staggered import training as TR
from engines.pde_staggered.config import sizes


def test_a_shipped_surrogate_loads_without_training_and_damage_is_reported(tmp_path, monkeypatch):
    sz = sizes("swe")
    model, rec = TR.train_variant("p1", sz, seed=0)
    path = TR.model_path("p1", sz, 0, False, False)
    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path / "release"))
    TR.export_for_release(path, tmp_path / "export")
    release.publish("pde_staggered", path.stem, tmp_path / "export", config={}, record={}, metrics={"best_val_loss": rec["best_val"]},
                    half=False, rebuild="make models MODELS=pde_staggered")
    path.unlink()  # a fresh clone: nothing cached
    got, rec2 = TR.load_model("p1", sz, 0)
    assert rec2["best_val"] == rec["best_val"] and path.exists()
    for a, b in zip(model.state_dict().values(), got.state_dict().values()):
        assert torch.equal(a, b)
    path.unlink()
    f = tmp_path / "release" / "pde_staggered" / path.stem / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-8])
    with pytest.raises(release.ReleaseError, match="make models MODELS=pde_staggered"):
        TR.load_model("p1", sz, 0)
    assert not path.exists()

"""The object_audio endpoints through gradio_client (inline jobs, micro models), and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from gradio_client import Client, handle_file


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


@pytest.fixture(scope="module")
def scene(client):
    iid, image, clicks, status = client.predict(3, api_name="/object_audio_scene")
    assert len(iid) == 40 and clicks == "" and "Sounding objects" in status
    from engines.object_audio import images

    kinds, masks = images.scene_info(iid)
    return iid, kinds, masks


def _inside(mask) -> str:
    from scipy import ndimage

    ys, xs = np.nonzero(ndimage.binary_erosion(mask))
    return f"{xs[len(xs) // 2]},{ys[len(ys) // 2]},1"


def test_click_generates_object_and_scene_audio(client, scene):
    iid, kinds, masks = scene
    j = next(k for k, name in enumerate(kinds) if not name.startswith("silent"))
    overlay, audio_obj, audio_whole, figure, status = client.predict(
        iid, _inside(masks[j]), "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    for f in (overlay, figure):
        assert f and str(f).endswith(".png")
    for a in (audio_obj, audio_whole):
        assert str(a).endswith(".wav")
        with open(a, "rb") as fh:
            assert fh.read(4) == b"RIFF"
    assert f"clicked object: {kinds[j]}" in status and "Classifier on the clicked-object clip" in status
    # whole-image mode needs no click
    *_, status = client.predict(iid, "", "flood", "whole", "", 2.0, 5, 0, api_name="/object_audio_generate")
    assert "whole mode" in status
    clicks, _, status = client.predict(iid, api_name="/object_audio_clear")
    assert clicks == "" and "cleared" in status


def test_upload_and_bad_uploads(client, tmp_path):
    from PIL import Image

    ok = tmp_path / "photo.png"
    Image.new("RGB", (300, 200), (40, 120, 200)).save(ok)
    iid, image, clicks, status = client.predict(handle_file(str(ok)), api_name="/object_audio_upload")
    assert len(iid) == 40 and "Uploaded image (300×200)" in status
    bad = tmp_path / "notes.png"
    bad.write_text("hello, not an image")
    with pytest.raises(Exception, match="not an image"):
        client.predict(handle_file(str(bad)), api_name="/object_audio_upload")
    huge = tmp_path / "huge.png"
    Image.new("RGB", (5000, 16)).save(huge)
    with pytest.raises(Exception, match="largest side"):
        client.predict(handle_file(str(huge)), api_name="/object_audio_upload")


def test_bad_clicks_are_named(client, scene):
    iid, kinds, masks = scene
    with pytest.raises(Exception, match="outside the 64×64 image"):
        client.predict(iid, "70,10,1", "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    with pytest.raises(Exception, match="Click on an object"):
        client.predict(iid, "", "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    with pytest.raises(Exception, match="must be 'x, y, label'"):
        client.predict(iid, "10,10", "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    with pytest.raises(Exception, match="only exclude clicks"):
        client.predict(iid, _inside(masks[0])[:-1] + "0", "flood", "mask", "", 2.0, 5, 0,
                       api_name="/object_audio_generate")
    with pytest.raises(Exception, match="Open a scene"):
        client.predict("", "1,1,1", "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    with pytest.raises(Exception, match="needs a prompt"):
        client.predict(iid, "", "flood", "text", "", 2.0, 5, 0, api_name="/object_audio_generate")
    # background clicks generate, but say that the selection makes no sound
    *_, status = client.predict(iid, "0,0,1", "flood", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    assert "mostly background" in status


def test_missing_sam_checkpoint(client, scene, monkeypatch, tmp_path):
    from engines.common.settings import reset_settings

    iid, _, masks = scene
    monkeypatch.setenv("PAPERLAB_SAM_CHECKPOINT", str(tmp_path / "sam_vit_b_01ec64.pth"))
    reset_settings()
    try:
        with pytest.raises(Exception, match="SAM checkpoint not found"):
            client.predict(iid, _inside(masks[0]), "sam", "mask", "", 2.0, 5, 0, api_name="/object_audio_generate")
    finally:
        monkeypatch.delenv("PAPERLAB_SAM_CHECKPOINT")
        reset_settings()

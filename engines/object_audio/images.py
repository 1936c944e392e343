"""Images the tab works on (generated scenes and uploads), stored under the data directory by content hash.

A scene also stores its objects and masks, so results can say which object was clicked.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from engines.common.settings import get_settings

MAX_SIDE = 4096  # larger uploads are refused
WORK_SIDE = 512  # uploads are downscaled to this longest side


class ImageError(ValueError):
    pass


DISPLAY_SIDE = 256  # small images are shown enlarged by an integer factor (nearest neighbour)


def display_scale(shape) -> int:
    return max(1, DISPLAY_SIDE // max(shape[0], shape[1]))


def for_display(image: np.ndarray) -> np.ndarray:
    """The image enlarged by ``display_scale``; clicks on it map back by integer division."""
    s = display_scale(image.shape)
    return np.repeat(np.repeat(image, s, axis=0), s, axis=1) if s > 1 else image


def images_dir() -> Path:
    d = get_settings().data_dir / "object_audio" / "images"
    d.mkdir(parents=True, exist_ok=True)
    return d


def store(image: np.ndarray, kinds: list[str] | None = None, masks: np.ndarray | None = None) -> str:
    from PIL import Image

    img = np.ascontiguousarray(np.asarray(image, np.uint8)[..., :3])
    iid = hashlib.sha1(img.tobytes() + str(img.shape).encode()).hexdigest()
    p = images_dir() / f"{iid}.png"
    if not p.exists():
        Image.fromarray(img).save(p)
    if kinds is not None and masks is not None:
        np.savez_compressed(images_dir() / f"{iid}.npz", masks=np.asarray(masks, bool))
        (images_dir() / f"{iid}.json").write_text(json.dumps({"kinds": list(kinds)}))
    return iid


def load(iid: str) -> np.ndarray:
    from PIL import Image

    if not re.fullmatch(r"[0-9a-f]{40}", iid or ""):
        raise ImageError(f"invalid image id {iid!r}")
    p = images_dir() / f"{iid}.png"
    if not p.exists():
        raise ImageError(f"image {iid[:8]} is not stored here: open a scene or upload the image again")
    return np.asarray(Image.open(p).convert("RGB"))


def scene_info(iid: str) -> tuple[list[str], np.ndarray] | None:
    """(object kinds, visible masks) of a generated scene, None for uploads."""
    j, z = images_dir() / f"{iid}.json", images_dir() / f"{iid}.npz"
    if not j.exists() or not z.exists():
        return None
    return json.loads(j.read_text())["kinds"], np.load(z)["masks"]


def check_upload(path: str | Path, max_mb: float | None = None) -> np.ndarray:
    """Decode an uploaded file as an RGB image or raise ImageError naming the problem."""
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    max_mb = get_settings().max_upload_mb if max_mb is None else max_mb
    size_mb = p.stat().st_size / 1e6
    if size_mb > max_mb:
        raise ImageError(f"the upload is {size_mb:.1f} MB, above the {max_mb:g} MB limit")
    try:
        with Image.open(p) as im:
            w, h = im.size
            if max(w, h) > MAX_SIDE:
                raise ImageError(f"the image is {w}×{h} pixels; the largest side may be {MAX_SIDE}")
            img = im.convert("RGB")
            if max(w, h) > WORK_SIDE:
                s = WORK_SIDE / max(w, h)
                img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
            arr = np.asarray(img)
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as e:
        if isinstance(e, ImageError):
            raise
        raise ImageError(f"the upload {p.name!r} is not an image PIL can read ({type(e).__name__})") from None
    if min(arr.shape[:2]) < 16:
        raise ImageError(f"the image is only {arr.shape[1]}×{arr.shape[0]} pixels; need at least 16×16")
    return arr


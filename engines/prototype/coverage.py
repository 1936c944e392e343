"""What a product's interface cannot express: requests refused by name, never mapped to the nearest part.

Two signals, both checked against the interface's own vocabulary (a word the interface lists — a component
synonym, an operation word, an attribute name, a macro phrase — is never "unsupported" for that product):

* common design vocabulary for settings and parts a parametric model may lack (``UNSUPPORTED``: colour,
  material, texture, corner rounding, wall thickness, moving parts, …);
* an **added part** the product does not have: "add a cup holder", "attach a tray to the seat", "could the
  stool get a back to lean on?" — the object of add / attach / fit / install / include / get a, or a clause that
  is only a noun phrase ("… and a USB port in the base"), when its head noun is not in the interface. A word of
  the common vocabulary compounded with a part the product has and edited ("a thicker seat cushion") is that
  part, not a missing one. Inside a
  multi-clause instruction the whole instruction is then refused (the compiler refuses a program holding an
  ``unsupported`` operation), so nothing half-done reaches the model.
"""
from __future__ import annotations

import re

# Common design vocabulary for settings and parts a parametric model may lack (domain-independent; a word
# counts only when the product's own interface does not list it). Feature name → words.
UNSUPPORTED: dict[str, tuple[str, ...]] = {
    "colour setting": ("colour", "color", "colours", "colors", "paint", "painted", "red", "blue", "green", "yellow",
                       "black", "white", "pink", "purple", "grey", "gray", "brown", "beige", "orange", "golden", "gold",
                       "silver", "copper", "bronze"),
    "material setting": ("material", "materials", "wood", "wooden", "oak", "walnut", "metal", "metallic", "steel",
                         "aluminium", "aluminum", "brass", "chrome", "glass", "plastic", "ceramic", "porcelain",
                         "leather", "fabric", "velvet", "marble", "concrete", "bamboo", "rattan", "cork", "stone",
                         "rubber", "rubberised", "rubberized", "silicone", "non-slip", "linen", "cotton", "wool",
                         "woollen", "canvas", "made of", "made from", "made out of",
                         "iron", "cast iron", "cast-iron", "wrought iron", "titanium", "pewter", "zinc", "tin",
                         "enamel", "enamelled", "stoneware", "earthenware", "terracotta", "resin", "acrylic", "carbon",
                         # thirteenth round: paper and card ("make it out of paper")
                         "paper", "cardboard", "papier-mache", "papier-mâché"),
    "texture or pattern setting": ("texture", "textured", "ribbed", "ribs", "ridges", "ridged", "grooved", "grooves",
                                   "pattern", "patterned", "striped", "stripes", "knurled", "engraved", "engraving",
                                   "logo", "embossed", "matte", "glossy", "shiny", "finish",
                                   # eleventh round: surface treatments
                                   "frosted", "sandblasted", "etched", "tinted", "translucent", "transparent",
                                   "opaque", "polished", "brushed", "satin", "lacquered", "varnished", "glazed"),
    "corner-rounding setting": ("corner", "corners", "rounded", "round off", "rounder", "fillet",
                                "filleted", "chamfer", "chamfered", "bevel", "bevelled", "beveled", "boxy", "boxier",
                                "sharp edges", "softer edges", "edges", "edge"),
    "wall-thickness setting": ("wall", "walls", "walled"),
    "weight setting": ("weight", "weigh", "weighs", "weighted"),
    "moving parts (swivel, folding, adjustable)": ("swivel", "swivelling", "swiveling", "rotate", "rotating", "spin",
                                                   "spinning", "folding", "foldable", "fold", "adjustable", "rocking",
                                                   "rocker", "dimmable", "dimmer", "stackable", "swing", "swings",
                                                   "swinging", "swivels", "pivot", "pivots", "pivoting",
                                                   "aimed", "aimable", "articulated", "telescopic", "retractable",
                                                   "collapsible", "rotates", "spins", "tilting", "tilts", "tilt",
                                                   "adjusts", "gas lift", "mechanism", "hydraulic",
                                                   "flexible", "bendable", "bendy", "gooseneck", "poseable",
                                                   "posable", "hinged", "hinge",
                                                   # eighth round: joints, parts that fold away, levers and knobs
                                                   "jointed", "joint", "joints", "articulating", "folds", "folded",
                                                   "fold-away", "foldaway", "fold-out", "lever", "levers", "knob",
                                                   "knobs", "latch", "crank"),
    "thermal insulation (the model is geometry only)": ("insulated", "insulation", "insulating", "thermal",
                                                         "vacuum-insulated", "keeps drinks hot", "keeps it hot"),
    "brightness setting (the model is geometry only)": ("bright", "brighter", "brightness", "dimmer light"),
    # eighth round: the colour of the light is no geometry either ("a cooler light, 5000 K")
    "light colour setting (the model is geometry only)": ("warmer light", "warm light", "cooler light", "cool light",
                                                          "warm white", "cool white", "daylight", "colour temperature",
                                                          "color temperature", "kelvin"),
    # seventh round: the outline of a round or boxy part is fixed by its model program
    "cross-section shape setting": ("square", "squared", "rectangular", "hexagonal", "octagonal", "triangular", "oval",
                                    "elliptical", "faceted", "cross-section", "cross section"),
    "wings": ("wing", "wings"), "wheels": ("wheel", "wheels", "castor", "castors", "caster", "casters"),
    "lid": ("lid", "lids"), "cushion": ("cushion", "cushions", "upholstery", "padding", "padded", "upholstered"),
    "headrest": ("headrest", "head rest", "head support", "headrests", "neck rest", "neck support", "head cushion"),
    "strap or lanyard": ("strap", "straps", "lanyard", "sling", "carry loop", "carrying loop"),
    "locking or child-proof closure": ("child-proof", "childproof", "child proof", "child-resistant", "child-safe",
                                       "tamper-proof", "tamper-evident", "lockable", "locking"),
    "spout": ("spout", "pouring lip", "pour lip", "pouring edge"),
    # eleventh round: a kind of closure is no geometry the model has (the bottle's neck may be called its spout)
    "closure type (sports cap, flip-top, pump)": ("sports cap", "sport cap", "sports top", "flip cap", "flip-top",
                                                 "flip top", "pull spout", "push-pull", "push pull", "pull-up spout",
                                                 "pump", "dropper",
                                                 "sprayer", "spray nozzle", "nozzle", "stopper"),
    # eleventh round: a part repeated or mirrored ("give it a mirrored handle on the opposite side")
    "second, mirrored part (it has one of each)": ("mirror", "mirrored", "mirroring", "mirror-image", "mirror image",
                                                   "one more on the", "another one on the", "on the far side",
                                                   "on the opposite side", "duplicate", "duplicated"),
    # tenth round: small added features named by their use
    "hanging loop or ring": ("finger ring", "finger loop", "hanging loop", "hanging ring", "hook", "hooks",
                             "carry ring", "key ring"),
    "second light or arm": ("reading light", "second arm", "extra arm", "another arm", "second light", "extra light",
                            "another light", "second lamp", "night light", "nightlight"), "saucer": ("saucer",), "straw": ("straw",),
    "switch": ("switch",), "cord": ("cord", "cable", "plug"), "bulb": ("bulb", "light bulb"),
    "drawer": ("drawer", "drawers"), "clip or mount": ("clip", "clamp", "bracket", "mount", "mounting"), "handle": ("handle", "handles"), "armrests": ("armrest", "armrests"),
    "backrest": ("backrest", "back rest"), "label": ("label", "sticker"),
    "feet pads": ("pad", "pads", "glides", "felt pad", "felt pads", "felt"),
    "holes or cut-outs": ("hole", "holes", "perforated", "perforations", "vent", "vents", "ventilation", "ventilated",
                          "cut-out", "cut-outs", "cutout", "cutouts", "slot", "slots", "notch", "notches"),
    # eighth round: small added features of a part — ledges, pockets, printed or moulded marks
    "ledge or shelf": ("ledge", "ledges", "shelf", "shelves"),
    "pocket": ("pocket", "pockets", "pouch", "pouches"),
    "markings": ("markings", "marks", "measuring marks", "measure marks", "scale marks", "gradations", "graduated",
                 "graduations", "tick marks", "measuring scale"),
}
# Kinds of request whose words describe what a part does or looks like, never a part compounded with a part the
# product has ("the legs fold up" asks for folding; "a thicker seat cushion" is the seat).
NOT_A_COMPOUND = {"moving parts (swivel, folding, adjustable)", "colour setting", "texture or pattern setting",
                  "thermal insulation (the model is geometry only)"}
# An edge named by its place and said without a word of rounding is where a part is edited ("pull its bottom edge
# in a bit"), not a corner-rounding request ("softer edges", "round off the top edge").
PLACE_EDGE = re.compile(r"^(?!.*\b(?:round|rounded|rounder|soft|softer|soften|sharp|sharper|smooth|smoother|chamfer|"
                        r"bevel|fillet))(?=.*\b(?:top|bottom|upper|lower|outer|inner|front|back|rear) edges?\b|"
                        # seventh round: a span "edge to edge" measures across the part, it names no edge
                        r".*\bedge to edge\b)")
# ninth round: where the product is to stand or fit ("too big for the corner", "tucked into an alcove") names no
# corner of the model; "switch to 3 legs" is a verb of change, not the lamp's switch
PLACE_OF_USE = re.compile(r"\b(?:for|in|into|in to|inside|by|beside|near|next to|against) (?:the |a |an |that |this |my |"
                          r"our |your |their )?(?:room's |kitchen's |office's )?(?:corner|alcove|nook|niche|recess)s?\b")
# eleventh round: "the legs felt spindly on the last sample": the verb, not the pads' material
FELT_VERB = re.compile(r"\bfelt (?:too|so|very|a bit|a little|rather|quite|really|slightly|somewhat|kind of|a touch|like|"
                       r"as|[a-z]+ly|[a-z]+y)\b")
SWITCH_VERB = re.compile(r"\bswitch(?:es|ing|ed)?(?: (?:it|them|over|the [a-z]+))? (?=to\b|from\b)")
# A colour temperature in kelvin ("5000 K", "3000k") names the light's colour (eighth round)
KELVIN = re.compile(r"(?<![\w.])\d{4,5}\s?k\b|\bkelvin\b")
COUNT_WORDS = r"(?:second|another|extra|additional|2nd|a pair of|two|three|four|five|six|\d+)"

ADD_VERB = re.compile(r"\b(?:add|adding|attach|attaching|fit|install|include|integrate|mount|get(?= an? )|"
                      r"(?:put|place|stick)(?= an? )|"
                     r"give(?: (?:it|them|the [a-z]+|this [a-z]+|each [a-z]+))?(?= an? ))\b\s+")
# what may follow the verb without naming a part: a number or an amount ("add 2 cm", "add more curve")
NOT_A_PART = re.compile(r"(?:\d|an? (?:(?:tiny |wee |teeny )?bit|little|touch|lot|tad|smidge|hair|(?:good|great) deal)\b|"
                        r"more\b|less\b|some (?:more|extra)\b|extra\b|"
                        r"another \d|(?:one|two|three|four|five|half|a quarter)\b)")
END_OF_PART = re.compile(r"\s+(?:to|on|onto|in|into|at|under|underneath|below|above|for|between|around|along|"
                         r"beside|near|with|so|that|which)\b|$")
ARTICLES = re.compile(r"^(?:an?|the|some|its|it|them|a pair of|pair of)\s+")


# A clause that is only a noun phrase with an indefinite article ("… and a USB port in the base", "a non-slip
# rubber foot") asks for that thing to be there; what may open it besides the article.
BARE_LEAD = re.compile(r"^(?:and |plus |with |also )?")


def bare_part(clause: str) -> str | None:
    """The thing a bare noun-phrase clause asks for ("a usb port in the base" → "usb port"), or None. The
    caller checks that the clause holds no comparative, amount or operation word (then it is an edit: "a
    longer neck", "a 350 ml mug")."""
    body = clause[BARE_LEAD.match(clause).end():]
    m = re.match(r"(?:an?|some) ", body)
    if not m or NOT_A_PART.match(body):  # "a little wider", "some more curve": an amount, not a thing
        return None
    rest = body[m.end():]
    if not rest or NOT_A_PART.match(rest):
        return None
    part = rest[:END_OF_PART.search(rest).start()].strip()
    return part or None


def added_part(clause: str) -> str | None:
    """The part an add-clause asks for ("add a cup holder to the seat" → "cup holder"), or None."""
    m = ADD_VERB.search(clause)
    if not m:
        return None
    rest = clause[m.end():]
    if NOT_A_PART.match(rest):  # "get a bit taller", "add a touch more curve": an amount, not a part
        return None
    rest = ARTICLES.sub("", rest)
    if not rest or NOT_A_PART.match(rest):
        return None
    part = rest[:END_OF_PART.search(rest).start()].strip()
    # eighth round: "could the shade get a height of 24 cm": an attribute's noun with its amount is a value, not a part
    part = re.sub(r"\s+of\s+(?:about |around |roughly )?[-+]?\d.*$", "", part)
    return part or None

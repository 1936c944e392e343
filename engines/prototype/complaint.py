"""Complaints: a statement of what is wrong asks for the opposite change.

Designers often say what bothers them instead of what to do: "the shade is too wide at the bottom" (narrower),
"the legs are splayed too much" (less splay), "the handle isn't thick enough" (thicker), "the backrest
shouldn't be so tall" (shorter), "the handle sticks out 5 mm too far" (5 mm less reach), "the stem is 3 cm too
long" (3 cm shorter). ``rewrite`` turns such a clause into the edit it asks for, keeping its hedge and its
amount ("a bit too tall" → "a bit shorter"); the rest of the parser then reads it like any other edit. A state
without "too" / "enough" ("the seat sits a bit high") stays a statement (context only), and so does a complaint
that another clause of the same instruction answers with its own edit ("the seat is way too low, raise it a
lot": the edit says how much; ``read``).

Nothing here knows a product: the adjectives are the common vocabulary of size and shape.
"""
from __future__ import annotations

import re

# adjective → the comparative that undoes "too <adjective>"
OPPOSITE = {"tall": "shorter", "high": "lower", "low": "higher", "short": "taller", "long": "shorter",
            "wide": "narrower", "narrow": "wider", "broad": "narrower", "thick": "thinner", "thin": "thicker",
            "chunky": "thinner", "bulky": "slimmer", "skinny": "thicker", "slim": "thicker", "slender": "thicker",
            "fat": "slimmer", "deep": "shallower", "shallow": "deeper", "big": "smaller", "large": "smaller",
            "small": "bigger", "tiny": "bigger", "far": "less", "close": "further", "upright": "less upright",
            "reclined": "more upright", "splayed": "less splayed", "curved": "flatter", "flat": "more curved",
            "flared": "less flared", "tapered": "less tapered", "squat": "taller", "stubby": "longer",
            "cramped": "roomier", "tight": "wider", "open": "narrower"}
# adjective → its comparative, for "not <adjective> enough"
MORE = {"tall": "taller", "high": "higher", "low": "lower", "short": "shorter", "long": "longer", "wide": "wider",
        "narrow": "narrower", "broad": "broader", "thick": "thicker", "thin": "thinner", "chunky": "chunkier",
        "slim": "slimmer", "fat": "fatter", "deep": "deeper", "shallow": "shallower", "big": "bigger",
        "large": "larger", "small": "smaller", "far": "further", "close": "closer", "upright": "more upright",
        "reclined": "more reclined", "splayed": "more splayed", "curved": "more curved", "flared": "more flared",
        "tapered": "more tapered", "roomy": "roomier", "sturdy": "sturdier", "stable": "more stable",
        "steady": "steadier", "open": "more open", "flat": "flatter", "bulky": "bulkier", "chubby": "chubbier",
        "stubby": "stubbier", "stumpy": "stumpier"}

# comparative → its adjective ("higher" → "high"), to undo "4 cm longer than we wanted"
BASE = {c: a for a, c in MORE.items() if " " not in c}
# adjectives that are themselves a fault: "the legs look rather flimsy" asks for thicker legs
FAULTS = {"spindly": "thicker", "flimsy": "thicker", "scrawny": "thicker", "weedy": "thicker", "stumpy": "taller",
          "stubby": "longer", "squat": "taller", "lanky": "shorter", "gangly": "shorter", "bulky": "slimmer",
          "clunky": "slimmer", "hulking": "smaller", "oversized": "smaller", "undersized": "bigger", "puny": "bigger",
          "skimpy": "bigger", "cramped": "roomier", "poky": "bigger", "stocky": "slimmer",
          # seventh round: shapes that are a fault by themselves ("the bottle looks rather chubby": slimmer)
          "chubby": "slimmer", "tubby": "slimmer", "pudgy": "slimmer", "portly": "slimmer", "paunchy": "slimmer"}
_ADJ = r"(?P<adj>[a-z]+)"
# the verb of the statement goes with the complaint ("the legs are too bulky" → "the legs slimmer")
_BE = (r"(?:'s|\s+(?:is|are|was|were|looks?|feels?|seems?|sits?|stands?|gets?|comes? out|ends? up|reads?)"
       r"(?:\s+(?:just|still|now|rather|kind of|a little bit))?)?")
_HEDGE = r"(?P<hedge>(?:a (?:little |tiny |wee )?bit|a little|a touch|a tad|slightly|somewhat|way|much|far|a lot|" \
         r"rather|really|very|just|quite|a good deal|way way)\s+)?"
_AMOUNT = r"(?P<amount>[-+]?\d+(?:\.\d+)?\s*[a-z°\"%]*\s+)?"
# eighth round: "too small to grip" (a purpose after "to" is still a complaint; "too close to the wall" is a
# place), and an adverb of discomfort instead of "too" ("awkwardly low")
TOO = re.compile(_BE + r"\s*" + _HEDGE + _AMOUNT + r"(?:too|uncomfortably|awkwardly|annoyingly|overly|excessively|"
                 r"unpleasantly|impractically|ridiculously) " + _ADJ + r"\b(?! to (?:the|a|an|its|their|my|our|this|that)\b)")
TOO_MUCH = re.compile(_BE + r"\s*(?P<verb>[a-z]+(?: (?:out|up|down|in|over|back|forward))?) " + _HEDGE + r"too much\b")
# "the bench takes up too much space": the footprint is too big
TAKES_UP = re.compile(r"\b(?:takes?|taking) up " + _HEDGE + r"too much (?:floor(?: space)?|space|room|desk|table)\b")
# "4 cm longer than we wanted", "a bit wider than we'd like": the amount the other way
THAN_WANTED = re.compile(_BE + r"\s*" + _HEDGE + _AMOUNT + r"(?P<cmp>[a-z]+er) than (?:(?:i|we|you|they)(?:'d| would)? "
                         r"(?:want|wanted|like|need|needed|expected|hoped|planned|asked for)\b(?: (?:it|them))?|"
                         # seventh round: "reclines further than it should", "wider than it needs to be", "taller
                         # than necessary": more than is right, so the amount the other way
                         r"(?:it|they|this|that)(?: really)? (?:should|ought to|needs? to|has to|have to)(?: be)?\b|"
                         r"(?:is |are )?(?:necessary|needed|required)\b)")
# "5 cm more than the shelf allows", "wider than the shelf takes": over what a place allows, so the amount the other way
# (eighth round)
ALLOWS = re.compile(_BE + r"\s*" + _HEDGE + _AMOUNT + r"(?P<cmp>more|[a-z]+er) than (?:the |my |our |your |this |that )?"
                    r"[a-z' ]{1,30}? (?:allows|permits|fits|takes|can take|has room for|leaves room for)\b")
# "on the narrow side": too narrow
ON_THE_SIDE = re.compile(_BE + r"\s*" + _HEDGE + r"on the " + _ADJ + r" side\b")
# "the neck feels a bit short for the body": too short for it
FOR_THE = re.compile(r"(?:'s|\s+(?:is|are|looks?|feels?|seems?|sits?|stands?))\s+" + _HEDGE + _ADJ
                     + r" for (?:the|its|a|an|this|that|my|our|your) [a-z]+\b")
FAULT = re.compile(r"(?:'s|\s+(?:is|are|looks?|feels?|seems?|reads?|appears?))\s+" + _HEDGE + r"(?:kind of |sort of )?(?P<adj>"
                   + "|".join(FAULTS) + r")\b")
# "the base is a tad narrow", "the legs are a bit thin": a hedged state of size said of a part, with no "too", is a
# complaint at that degree (seventh round; without a hedge — "the seat is high" — it stays a statement, and an
# instruction that answers it with its own edit keeps it as context: ``read``).
# (tenth round: "reads" / "appears" of how a part comes across)
HEDGED_STATE = re.compile(r"(?:'s|\s+(?:is|are|looks?|feels?|seems?|reads?|appears?))\s+(?P<hedge>(?:a (?:little |tiny |wee )?bit|a little|"
                          r"a touch|a tad|slightly|somewhat|rather)\s+)" + _ADJ + r"\b(?!\s+(?:for|to|than|as|enough)\b)")
NOT_ENOUGH = re.compile(r"(?:'s not|\s+(?:isn't|aren't|is not|are not|(?:does|do)(?:n't| not) (?:look|feel|seem|sit|"
                        r"stand|stick out|reach)|not))\s+(?:quite\s+)?" + _ADJ + r" enough\b")
NOT_SO = re.compile(r"\s*(?:(?:shouldn't|should not|mustn't|must not|needn't|need not|(?:does|do)(?:n't| not) "
                    r"(?:need|have) to) be|not)\s+(?:so|that|this|as) " + _ADJ + r"\b(?! as\b)")


def rewrite(clause: str) -> str:
    """The edit a complaint asks for ("the shade is too wide at the bottom" → "the shade narrower at the
    bottom"), or the clause unchanged when it is no complaint."""
    def too(m):
        adj = m.group("adj")
        if adj not in OPPOSITE:
            return m.group(0)
        return " " + (m.group("hedge") or "") + (m.group("amount") or "") + OPPOSITE[adj]

    def too_much(m):
        return " " + (m.group("hedge") or "") + "less " + m.group("verb")

    def not_enough(m):
        return " " + MORE[m.group("adj")] if m.group("adj") in MORE else m.group(0)

    def not_so(m):
        return " " + OPPOSITE[m.group("adj")] if m.group("adj") in OPPOSITE else m.group(0)

    def than_wanted(m):
        adj = BASE.get(m.group("cmp"))
        if adj not in OPPOSITE:
            return m.group(0)
        return " " + (m.group("hedge") or "") + (m.group("amount") or "") + OPPOSITE[adj]

    def allows(m):
        adj = "far" if m.group("cmp") == "more" else BASE.get(m.group("cmp"))
        if adj not in OPPOSITE:
            return m.group(0)
        return " " + (m.group("hedge") or "") + (m.group("amount") or "") + OPPOSITE[adj]

    out = TAKES_UP.sub(lambda m: " a smaller footprint", clause)
    out = ALLOWS.sub(allows, out)
    out = THAN_WANTED.sub(than_wanted, out)
    out = ON_THE_SIDE.sub(lambda m: " " + (m.group("hedge") or "") + OPPOSITE[m.group("adj")]
                          if m.group("adj") in OPPOSITE else m.group(0), out)
    out = FOR_THE.sub(lambda m: " " + (m.group("hedge") or "") + OPPOSITE[m.group("adj")]
                      if m.group("adj") in OPPOSITE else m.group(0), out)
    out = FAULT.sub(lambda m: " " + (m.group("hedge") or "") + FAULTS[m.group("adj")], out)
    out = TOO.sub(too, out)
    out = HEDGED_STATE.sub(lambda m: " " + m.group("hedge") + OPPOSITE[m.group("adj")] if m.group("adj") in OPPOSITE
                           else m.group(0), out)
    out = TOO_MUCH.sub(too_much, out)
    out = NOT_ENOUGH.sub(not_enough, out)
    out = NOT_SO.sub(not_so, out)
    return " ".join(out.split())


PRONOUN = re.compile(r"\b(?:it|them|they|this|that|its|their)\b")


def read(clauses: list[str], same_thing=None) -> list[str]:
    """The clauses of one instruction as the parser should read them: each complaint rewritten into the edit it
    asks for, unless another clause that is no complaint edits the same thing (it refers back with a pronoun,
    or ``same_thing(complaint, other)`` says so): then the complaint stays as written, a statement that only
    gives the context of that edit ("the mug is too tall, lower it a bit")."""
    new = [rewrite(c) for c in clauses]
    out = []
    for i, (c, r) in enumerate(zip(clauses, new)):
        answered = r != c and any(
            new[j] == o and (PRONOUN.search(o) or (same_thing is not None and same_thing(c, o)))
            for j, o in enumerate(clauses) if j != i)
        out.append(c if answered else r)
    return out

"""Informal shorthand and dictation (thirteenth round, issue 30).

``language.normalise`` rewrites these before the engineering register is read and an instruction is split into
clauses; nothing here knows a product.

* **Lists in shorthand**: edits separated by " / ", "•", " & ", " + " before a word, or " n " are separate clauses
  ("seat h 40 / seat w 45", "rim thinner & handle bigger"); a unit said once for the whole list ("in mm: …",
  "… — all cm") goes with every unit-less number (the eleventh round's bracket gloss).
* **Abbreviations**: "ht" height, "dia" / "diam" diameter, "btm" bottom, "thk" thickness, "w/o" without, "w/"
  with, "~" about, "approx" about, "lil" little, "rn" right now, "u" you, "pls" / "plz" nothing, "mil" / "mils"
  after a number millimetres.
* **Typos of dimension words**: a word of five letters or more that is no English word (not a whole word of the
  encoder's vocabulary) and one edit (insertion, deletion, substitution or swap of neighbours) away from a
  dimension word is that word ("thicknes", "heigth", "diamter"); real words ("radios", "lengths") are left alone.
* **Dictated numbers**: "four point five" is 4.5, "one point two five" 1.25, "sixteen point five" 16.5; fillers
  set off by commas ("the rim, like, 2 mm thinner") are dropped and "like" before an amount is "about".
* **Colloquial degrees and phrasing**: "tiny bit" / "teeny bit" without the article is a tiny bit ("way more" and
  "loads" were already large); a non-native comparative "more tall of 3 cm" is "taller by 3 cm"; a heading naming
  the whole product ("the whole lamp, height x1.2") is its overall measure; a dimension's letter after its part
  before no number ("seat w and …", "neck h stays") is that dimension.
* **A statement after an edit**: after an edit said with an amount or a comparative, a comma clause that states how
  things are now — a negation ("doesnt fit"), "hardly", "looks", "feels", "tight fit", "right now", a habit ("keeps
  …ing"), what the thing does ("it sags", "they wobble") — and says no amount, comparative or keep of its own is the
  edit's reason and is dropped; a bare number as its subject ("4.5 feels cramped") is the present value, a comparative
  describing people ("taller people") no edit; "…, was 8" after an amount is the old value.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

from .numerals import NUMERAL, ONES, value
from .precision import _UNIT_ALT

# ----------------------------------------------------------------------------- abbreviations
ABBREVIATIONS = [
    (re.compile(r"\bw/o\b"), "without"),
    (re.compile(r"\bw/(?=\s*[a-z])"), "with "),
    (re.compile(r"\s*,?\s*\b(?:pls|plz|pleeze)\b\.?"), ""),
    (re.compile(r"\brn\b"), "right now"),
    (re.compile(r"(?<![\w'.-])u(?![\w'.-])"), "you"),
    (re.compile(r"\bhts?\b\.?"), "height"),
    (re.compile(r"\b(?:dia|diam)\b\.?"), "diameter"),
    (re.compile(r"\bbtm\b"), "bottom"),
    (re.compile(r"\bthk\b"), "thickness"),
    (re.compile(r"\blil\b"), "little"),
    (re.compile(r"\bapprox\b\.?"), "about"),
    # "seat w and leg splay fixed", "neck h stays": a dimension's letter after its part, before no number (the
    # eleventh round read the letter before a number)
    (re.compile(r"(?<=[a-z] )([whd])(?=\s+(?:and|or|both|stays?|fixed|unchanged|same|as is|too)\b|\s*[,;]|\s*$)"),
     lambda m: {"w": "width", "h": "height", "d": "depth"}[m.group(1)]),
    (re.compile(r"~\s*(?=\d)"), "about "),
    # "a tiny bit" was a slight change already; without its article too
    (re.compile(r"(?<!\ba )\b(tiny|teeny|wee|little) bit\b"), r"a \1 bit"),
]
# fillers of speech set off by commas ("the rim, like, 2 mm thinner"); "like" before an amount is about
FILLERS = [(re.compile(r"\s*,\s*(?:like|you know|i guess|kinda|sorta)\s*,\s*"), " "),
           (re.compile(rf"\blike (?=(?:\d|{NUMERAL}\b))"), "about "),
           # "the whole lamp, height x0.9": a heading naming the whole product is its overall measure
           (re.compile(r"^(?:the )?whole (?:thing|piece|product|[a-z]+)\s*[,:]\s*(?=[a-z])"), "overall ")]
# a non-native comparative: "more tall of 3 cm" is 3 cm taller
MORE_ADJ = {"tall": "taller", "high": "higher", "wide": "wider", "thick": "thicker", "deep": "deeper",
            "long": "longer", "short": "shorter", "low": "lower", "thin": "thinner", "narrow": "narrower",
            "big": "bigger", "small": "smaller", "shallow": "shallower", "slim": "slimmer"}
MORE = re.compile(r"\bmore (" + "|".join(MORE_ADJ) + r")\b")
OF_AMOUNT = re.compile(r"\b(" + "|".join(MORE_ADJ.values()) + rf") of (?=[-+]?\d|(?:{NUMERAL})\b)")
_NUM_WORD = rf"(?:\d+(?:\.\d+)?|{NUMERAL})"
MIL = re.compile(rf"\b({_NUM_WORD})\s*mils?\b")

# ----------------------------------------------------------------------------- dictated decimals
_DIGIT_WORD = "|".join(ONES)
DECIMAL = re.compile(rf"\b({NUMERAL}|\d+) point ((?:{_DIGIT_WORD})(?: (?:{_DIGIT_WORD}))*)\b")


def _decimal(m: re.Match) -> str:
    whole = m.group(1)
    w = int(whole) if whole.isdigit() else value(whole)
    if w != int(w):  # "one and a half point five" is no number
        return m.group(0)
    return f"{int(w)}." + "".join(str(ONES[d]) for d in m.group(2).split())


# ----------------------------------------------------------------------------- lists in shorthand
_U = r"(?:" + _UNIT_ALT + r")"
UNIT_HEAD = re.compile(r"^(?:(?:all|values?|numbers?|everything) )?in (" + _U + r")\s*:\s*")
UNIT_TAIL = re.compile(r"\s*[—–-]+\s*(?:all|every(?:thing| one)|values? in|numbers? in) (" + _U + r")\s*\.?$")
SEPARATORS = [
    (re.compile(r"\s*•\s*"), "; "),
    (re.compile(r"\s+/\s+(?=[a-z])"), "; "),
    (re.compile(r"\s+&\s+"), " and "),
    (re.compile(r"\s+\+\s+(?=[a-z])"), "; "),
    (re.compile(r"(?<=[a-z\d%°]) n (?=[a-z])"), " and "),
]


# a separator starts a new edit only when what follows says one (an amount, a sign, a comparative, a keep or a
# verb of change); "rim 2 mm thinner / the old one chipped" is an edit and its reason
EDIT_SIGN = re.compile(r"\d|\b(?:more|less|taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|"
                       r"longer|bigger|smaller|slimmer|keep|kept|stays?|same|unchanged|as is|add|remove|make|set|"
                       r"raise|lower|widen|narrow|drop|no)\b")


# "legs: 4 cm across, 6° splay", "body: 10 cm tall; 4 cm radius": a part named once before a colon goes with each
# item of the list that starts with its amount (a role or source before a colon is left to language.ROLE)
HEAD = re.compile(r"^(?P<head>[a-z]+(?: [a-z]+)?)\s*:\s*(?P<rest>[-+]?\d.*)$")


# an item that is an amount and a dimension only ("4 cm radius", "6° splay", "11 cm tall"); "1 cm bar" names a
# part of its own and is left as it is
ITEM = re.compile(r"[-+]?\d+(?:\.\d+)?\s*(?:" + _UNIT_ALT + r")?\s*(?:height|width|depth|thickness|radius|diameter|"
                  r"splay|tilt|angle|recline|length|capacity|wall|tall|high|wide|deep|thick|across|long|"
                  r"taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|longer|"
                  r"to [-+]?\d|$)\b")


def _heading(t: str) -> str:
    m = HEAD.match(t)
    if not m:
        return t
    from .language import ROLE
    if ROLE.match(m.group("head") + ": ") or m.group("head") in ("in", "all in", "note", "edit", "edits", "change",
                                                                    "changes", "todo", "update", "v", "rev"):
        return t
    head = m.group("head")
    items = re.split(r"(\s*[;,]\s*)", m.group("rest"))
    # the first item keeps its heading as it was said ("seat: 2 cm lower"); the later ones get the part
    return f"{head}: " + "".join(f"{head} {x}" if i % 2 == 0 and i > 0 and ITEM.match(x) else x
                                 for i, x in enumerate(items))


def lists(text: str) -> str:
    t = text
    for pat, rep in SEPARATORS:
        t = pat.sub(lambda m: rep if rep == " and " or EDIT_SIGN.search(re.split(r"[;,.!?]", t[m.end():])[0])
                    else m.group(0), t)
    t = re.sub(r":\s*;\s*", ": ", t)  # "cup: • 12 cm high": the first bullet opens the list
    t = re.sub(r"^\s*;\s*", "", t)
    m = UNIT_HEAD.search(t) or UNIT_TAIL.search(t)
    if m:
        t = (t[:m.start()] + t[m.end():]).strip() + f" (all {m.group(1)})"
    return _heading(t)


# ----------------------------------------------------------------------------- typos
TYPO_TARGETS = ("height", "width", "depth", "thickness", "diameter", "radius", "length", "capacity", "shoulder",
                "backrest", "armrest", "armrests", "footrest", "handle", "bottom")


@lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    """Whole words of the encoder's vocabulary (an English word list); empty when the encoder is not installed."""
    try:
        from .encoder import model_path
        with open(os.path.join(model_path(), "vocab.txt"), encoding="utf-8") as f:
            return frozenset(w.strip() for w in f if w.strip().isalpha())
    except Exception:  # no encoder package: no typo is corrected
        return frozenset()


def _one_edit(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    s, l = (a, b) if len(a) < len(b) else (b, a)
    return any(l[:i] + l[i + 1:] == s for i in range(len(l)))


def _typo(m: re.Match) -> str:
    w = m.group(0)
    english = _english()
    if len(w) < 5 or w in TYPO_TARGETS or not english or w in english \
            or any(w.startswith(t) for t in TYPO_TARGETS):  # "widths", "heights": inflections, not typos
        return w
    hits = [t for t in TYPO_TARGETS if _one_edit(w, t)]
    return hits[0] if len(hits) == 1 else w


def typos(text: str) -> str:
    return re.sub(r"\b[a-z]{5,}\b", _typo, text)


# ----------------------------------------------------------------------------- a statement after an amount
# "cup 11 cm tall, the coffee keeps spilling", "…, the lid doesnt fit rn", "…, hardly any steam escapes": after an
# edit with its own amount, a comma clause that states how things are (a negation, "hardly", "looks", "feels", a
# habit "keep(s) …ing", "right now") and says no amount, comparative or keep of its own is the edit's reason
STATEMENT = re.compile(r"\b(?:tight fit|doesn'?t|don'?t|can'?t|cannot|won'?t|isn'?t|aren'?t|hardly|looks?|feels?|right now|"
                       r"keeps? (?!everything\b|nothing\b|something\b)[a-z]+ing|"
                       # "it flexes when …", "they wobble on …": what the thing does now
                       r"(?:it|they) (?:flex|flexes|wobbles?|rocks?|tips?|tilts?|sags?|bends?|creaks?|slips?|slides?|"
                       r"leaks?|spills?|drips?|topples?|falls? over|digs? in|hurts?))\b")
OWN_EDIT = re.compile(r"\d|\b(?:more|less|taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|"
                      r"longer|bigger|smaller|keep (?:the|it|its|them|everything)|stays?|same|unchanged|as is|"
                      r"remove|add|make|set|"
                      # "but don't change the seat", "can't grow": a negated change is a keep
                      r"chang\w*|grow\w*|shrink\w*|mov\w*|touch\w*|alter\w*|budge\w*|increase\w*|decrease\w*|"
                      r"differ\w*|fixed|kept|hold\w*|remain\w*)\b")
WAS = re.compile(r"\s*[,(]\s*(?:it )?(?:was|used to be|previously|before:?)\s+[-+]?\d+(?:\.\d+)?\s*(?:" + _U
                 + r"(?![\w]))?\s*\)?(?=\s*(?:[,;.!?]|$))")


PEOPLE_CMP = re.compile(r"\b(?:shorter|taller|smaller|bigger|older|younger|heavier|lighter)\s+(?:folks?|people|users?|"
                        r"kids|children|guests|customers|sitters|ones|adults|persons?|men|women)\b")
# an edit said by a comparative or a degree (not only by a number) is an edit a statement after it can explain
CMP_EDIT = re.compile(r"\b(?:up a|down a|taller|shorter|higher|lower|wider|narrower|thicker|thinner|deeper|shallower|longer|bigger|"
                      r"smaller|slimmer)\b")


def informal_reasons(text: str) -> str:
    parts = re.split(r"(,\s*)", text)
    out, amount = [parts[0]], bool(re.search(r"\d", parts[0]) or CMP_EDIT.search(parts[0]))
    for i in range(1, len(parts), 2):
        seg = parts[i + 1]
        # "4.5 feels cramped": a bare number that is the subject of the statement is the present value
        said = re.sub(r"^\s*\d+(?:\.\d+)?\s+(?=(?:looks?|feels?|seems?|is|was)\b)", "", seg)
        # "shorter folks' feet", "taller guests": a comparative that describes people is no edit
        said = PEOPLE_CMP.sub("", said)
        if amount and STATEMENT.search(said) and not OWN_EDIT.search(said):
            continue
        out += [parts[i], seg]
        amount = amount or bool(re.search(r"\d", seg))
    return "".join(out)


def shorthand(text: str) -> str:
    """The instruction with its shorthand, dictated decimals and dimension-word typos said in full (see the module)."""
    t = typos(text)
    for pat, rep in ABBREVIATIONS:
        t = pat.sub(rep, t)
    for pat, rep in FILLERS:
        t = pat.sub(rep, t)
    t = OF_AMOUNT.sub(r"\1 by ", MORE.sub(lambda m: MORE_ADJ[m.group(1)], t))
    t = MIL.sub(lambda m: f"{m.group(1)} mm", t)
    t = DECIMAL.sub(_decimal, t)
    t = lists(t)
    # "7 cm, was 8": the old value is no second amount
    t = WAS.sub("", t) if re.search(r"\d", t) else t
    t = informal_reasons(t)
    return re.sub(r"\s+", " ", t).strip()

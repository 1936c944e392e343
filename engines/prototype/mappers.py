"""Mappers from a designer's words to edits.

* ``InterfaceMapper`` (the method, weight-free): resolves clauses against the interface spec — component
  synonyms, attribute operation words, macro intents — with MiniLM similarity as the fallback for wording
  the spec does not list, hedges → qualitative degree, numbers with units → set / explicit change, "keep X"
  → a keep scope. Emits an interface program; the compiler does the rest.
* ``FlatMapper`` (the "no interface" ablation): the same language machinery and the same encoder over the
  raw parameter names only; it emits a JSON patch of new raw values with generic relative steps and no
  unit conversion, macros, keep scopes or constraints.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from . import complaint, coverage, matching
from . import language as L
from . import position, scope
from .dimensions import (COMPARATIVE_OF, DIAMETER, DIMENSION_PHRASES, DIMENSION_WORDS, OVERALL, OVERALL_DIM, REVERSED,
                         SIZE_PHRASAL, SPANS, UPWARD, VERTICAL, WIDTH_OF, ZERO_STATE)
from .domains import get_domain
from .interface import (AddOp, Adjust, KeepOp, MacroOp, MatchOp, RemoveOp, ScaleOp, SetOp, UnsupportedOp, derived_attrs,
                        settings_listing)

# Positions along a part, as a ratio attribute's description names them ("top radius over foot radius").
POSITION = {"rim": "top", "top": "top", "mouth": "top", "opening": "top", "lip": "top", "foot": "foot",
            "base": "foot", "bottom": "foot"}
GENERIC_STEPS = {"slight": 0.05, "moderate": 0.15, "large": 0.30}  # the old flat baseline: relative, uncalibrated


def calibrated_step(p, mag: str) -> float:
    """|Δ| for a qualitative degree: the parameter's calibrated step, the same rule the interface compiles with
    and the metric scores against (issue 17: a baseline that cannot hit that step by construction is no comparison)."""
    return float(p.steps[("slight", "moderate", "large").index(mag)])
# Verbs and particles of a length taken off or added ("lop a fifth off the stem", "grow the cap by a third").
LENGTH_VERB = re.compile(r"\b(?:off|chop|chopped|lop|lopped|trim|trimmed|cut|shave|shaved|stretch|stretched|extend|"
                         r"extended|lengthen|lengthened|shorten|shortened)\b")
COMPLETELY = re.compile(r"\b(?:altogether|entirely|completely|for good|fully)\b")
STATEMENT = re.compile(r"\b(is|are|looks?|feels?|felt|seems?|sits?|wobbles|tips over|reads|appears)\b")  # (eleventh: "felt")
# Plain adjectives of size that describe a state, not a change, after a statement verb ("it sits high").
ADJECTIVE_STATES = ("high", "low", "tall", "short", "wide", "narrow", "deep", "shallow", "thick", "thin", "big", "small",
                    "long", "large", "broad", "slim", "fat", "chunky", "skinny")
# "armrests which are 35 cm above the seat": a measured state in a relative clause describes the part wanted
# (eighth round)
WANTED_STATE = re.compile(r"\b(?:that|which) (?:is|are|sits?|stands?|reach(?:es)?|rises?)\b")
# an amount alone ("…, 0.5 mm")
AMOUNT_ONLY = re.compile(r"(?:about |around |roughly |just |only )?[-+]?\d+(?:\.\d+)?\s*[a-z°\"]*")
IMPERATIVE = re.compile(r"\b(should|needs?|want|make|be|please|could|can)\b")
TAU_COMPONENT = 0.45  # minimum cosine similarity for an embedding-resolved component
TAU_OPERATION = 0.55
TAU_MACRO = 0.60


@dataclass
class Mapping:
    ops: list = field(default_factory=list)  # interface program (InterfaceMapper)
    patch: dict[str, float] = field(default_factory=dict)  # raw name → value (FlatMapper)
    warnings: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)  # how each clause was read


def _word_in(phrase: str, text: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])", text) is not None


# ninth round: a plain size adjective's direction, where the operation word is a noun ("thick walls")
PLAIN_SIZE = {**{w: "+" for w in ("thick", "tall", "wide", "deep", "big", "broad", "chunky", "heavy-walled")},
              **{w: "-" for w in ("thin", "narrow", "shallow", "slim", "skinny", "slender", "thin-walled")}}
# ninth round: a clause that answers the one before it ("…, so drop it 4 cm")
REASON_NEXT = re.compile(r"(?:so|hence|therefore|thus|which means|so please)\b")
# twelfth round: "…, so staff can carry them", "…, so four fit round a table", "…, so more light reaches the ceiling":
# after an edit, a "so" clause whose subject is people, a count or an amount of something the model does not have says
# what the edit is for; it edits nothing
PURPOSE_NEXT = re.compile(r"so(?: that)? (?:(?:more|less|enough|extra|plenty of) [a-z]+ (?:can|could|will|would|may|"
                          r"reaches?|gets?|fits?|goes|comes|spills?|shines?|falls?|flows?|stays?)\b|(?:staff|people|users|"
                          r"customers|guests|kids|children|visitors|everyone|everybody|nobody|no one|anyone|"
                          r"two|three|four|five|six|seven|eight|ten|twelve|more of them|more of these)\b)")


class InterfaceMapper:
    name = "interface"

    def __init__(self, spec: dict, encoder=None):
        self.spec, self.enc = spec, encoder
        self.attrs = spec["attributes"]
        self.syn = [(s, c) for c, e in spec["components"].items() for s in e["synonyms"]]
        self.opw = [(w, pid, d) for pid, a in self.attrs.items()
                    for d, ws in spec["operations"].get(a["attribute"], {}).items() for w in ws]
        self.macro_phr = [(ph, m["name"]) for m in spec["macros"] for ph in m["phrases"]]
        self.der = derived_attrs(spec)
        from .domains import get_domain

        self.defaults = get_domain(spec["domain"]).defaults()
        self.product_names = {w for w in get_domain(spec["domain"]).title.lower().split()} - {"table", "bar"} | \
            {get_domain(spec["domain"]).title.lower(), spec["domain"]}

    def _is_product(self, synonym: str) -> bool:
        """Is this mention the product itself ("the chair", "this lamp"), not one of its components?"""
        return synonym in self.product_names

    # -- resolution steps
    def _components(self, cl: str) -> list[tuple[str, str]]:
        """Components named lexically in the clause, as (synonym, component), in order of mention.
        Words inside a matched operation phrase ("closer to the body") are not component mentions."""
        for w, _, _ in sorted(self.opw, key=lambda x: -len(x[0])):
            if " " in w and _word_in(w, cl):
                cl = re.sub(r"(?<![\w])" + re.escape(w) + r"(?![\w])", " " * len(w), cl)
        for pat in SPANS.values():
            cl = re.sub(pat, lambda m: " " * len(m.group(0)), cl)
        hits, taken = [], []
        syn = list(self.syn) + self._compound_heads(cl)
        for s, c in sorted(syn, key=lambda x: -len(x[0])):
            # a part named in the singular or the plural ("the leg splay", "two shades")
            form = re.escape(s[:-1]) + "s?" if s.endswith("s") and not s.endswith("ss") else re.escape(s) + "s?"
            m = re.search(r"(?<![\w])" + form + r"(?![\w])", cl)
            if m and not any(a <= m.start() < b for a, b, _ in taken):
                taken.append((m.start(), m.end(), (s, c)))
        return [h for _, _, h in sorted(taken)]

    def _compound_heads(self, cl: str) -> list[tuple[str, str]]:
        """Words of the clause that are the first half of a compound naming a component ("arms" of "armrests"):
        (word, component), for words that are no synonym or operation word of their own."""
        own = {w for s, _ in self.syn for w in s.split()} | {w for w, _, _ in self.opw}
        out = []
        for w in set(re.findall(r"[a-z]+", cl)) - own - L.STOPWORDS:
            head = w[:-1] if w.endswith("s") and len(w) > 3 else w
            if len(head) < 3:
                continue
            comps = {c for s, c in self.syn for x in s.split() if x.startswith(head)
                     and len(x.rstrip("s")) - len(head) >= 4}  # "arm" + "rest(s)", not "should" + "ers"
            if len(comps) == 1:
                out.append((w, comps.pop()))
        return out

    def _embed_component(self, cl: str) -> tuple[str, float] | None:
        if self.enc is None:
            return None
        ops = {w for w, _, _ in self.opw}
        runs = [r for r in L.content_runs(cl, extra_stop=set(L.POSITIVE) | set(L.NEGATIVE) | self.product_names)
                if r not in ops]
        if not runs:
            return None
        R, S = self.enc(runs), self.enc([s for s, _ in self.syn])
        sims = R @ S.T
        i, j = np.unravel_index(int(sims.argmax()), sims.shape)
        return (self.syn[j][1], float(sims[i, j])) if sims[i, j] >= TAU_COMPONENT else None

    def _operation(self, cl: str, comp: str | None) -> tuple[str, str, str] | None:
        """(pid, dir, word) from the spec's operation words, restricted to the component's attributes."""
        cands = [(w, pid, d) for w, pid, d in self.opw if comp is None or self.attrs[pid]["component"] == comp]
        # the product's own name is the product, never an operation word a derived spec's cluster gave it ("a slimmer
        # bottle body": slimmer, not the "bottle" of a height cluster) — seventh round
        hits = [(w, pid, d) for w, pid, d in cands if _word_in(w, cl) and w not in self.product_names]
        if not hits:  # "more recline": the verb or noun of a participle the spec lists ("more reclined") — ninth round
            hits = [(stem, pid, d) for w, pid, d in cands if re.fullmatch(r"[a-z]{4,}ed", w)
                    for stem in (w[:-1], w[:-2]) if _word_in(stem.split()[-1], cl)
                    and re.search(r"\b(?:more|less|extra|some|a bit of|a little)\s+" + re.escape(stem.split()[-1]), cl)]
            hits = [(h[0].split()[-1], h[1], h[2]) for h in hits]
        if not hits:
            return None
        best = max(len(w) for w, _, _ in hits)
        hits = [h for h in hits if len(h[0]) == best]
        pids = {h[1] for h in hits}
        if len(pids) > 1:
            return ("?", ",".join(sorted(pids)), hits[0][0])
        return hits[0][1], hits[0][2], hits[0][0]

    def _embed_operation(self, cl: str, comp: str) -> tuple[str, str] | None:
        """Nearest operation word of the component's attributes to the clause's content runs
        (threshold TAU_OPERATION, or none when the clause has a generic comparative to give the direction)."""
        if self.enc is None:
            return None
        cands = [(w, pid, d) for w, pid, d in self.opw if self.attrs[pid]["component"] == comp]
        syn = {s for s, c in self.syn if c == comp}
        runs = [r for r in L.content_runs(cl) if r not in syn] or [cl]
        if not cands:
            return None
        sims = (self.enc(runs) @ self.enc([w for w, _, _ in cands]).T).max(0)
        k = int(sims.argmax())
        ok = sims[k] >= (0.0 if L.polarity(cl) else TAU_OPERATION)
        return (cands[k][1], cands[k][2]) if ok else None

    def _macro_lexical(self, cl: str) -> tuple[str, str] | None:
        hits = [(ph, n) for ph, n in self.macro_phr if _word_in(ph, cl) and ph not in self.product_names]
        return max(hits, key=lambda h: len(h[0])) if hits else None

    def _macro(self, cl: str) -> str | None:
        if self.enc is None or not self.macro_phr:
            return None
        sims = self.enc([cl])[0] @ self.enc([ph for ph, _ in self.macro_phr]).T
        k = int(sims.argmax())
        return self.macro_phr[k][1] if sims[k] >= TAU_MACRO else None

    def _literal_attribute(self, cl: str) -> str | None:
        """The one attribute of the product that a word of the clause names exactly ("height 12 cm" on a mug: the
        body's height — the handle has a size, not a height), or None when several parts have it."""
        words = set(re.findall(r"[a-z]+", cl))
        if any("_" in a["attribute"] and set(a["attribute"].split("_")) <= words for a in self.attrs.values()):
            return None  # "top radius": a qualified attribute, not the plain one
        hits = [pid for pid, a in self.attrs.items() if a["attribute"] in words and a["kind"] == "float"]
        return hits[0] if len(hits) == 1 else None

    def _own_name(self, cl: str, comp: str | None) -> str | None:
        """An attribute of the part said by its own name ("the tilt") or its participle ("splayed", "tilted")."""
        names = {a["attribute"]: pid for pid, a in self.attrs.items() if a["component"] == comp}
        for attr, pid in names.items():
            if _word_in(attr.replace("_", " "), cl):
                return pid
        for attr, pid in names.items():
            if len(attr) >= 4 and "_" not in attr and re.search(rf"(?<![\w-]){re.escape(attr)}(?:ed|ing)\b", cl):
                return pid
        return None

    def _named_attribute(self, cl: str, comp: str) -> str | None:
        """An attribute named by a dimension word or its own name ("50 cm high", "set the tilt to")."""
        own = self._own_name(cl, comp)
        if own:
            return own
        names = {a["attribute"]: pid for pid, a in self.attrs.items() if a["component"] == comp}
        said = [opts for ph, opts in DIMENSION_PHRASES.items() if _word_in(ph, cl)] + \
               [DIMENSION_WORDS[w] for w in re.findall(r"[a-z]+", cl) if w in DIMENSION_WORDS]
        for options in said:
            for attr in options:
                if attr in names:
                    return names[attr]
        anywhere = {pid for options in said for pid, a in self.attrs.items() if a["attribute"] in options}
        return anywhere.pop() if len(anywhere) == 1 else None

    def _attribute_by_words(self, cl: str, comp: str | None) -> tuple[str, str] | None:
        """(pid, dir) from the shared dimension vocabulary, for a clause no operation word of the interface
        resolved: a phrase naming an attribute ("stick out further" → reach), a word whose direction is
        reversed ("more upright" → less tilt), or a comparative naming its dimension ("a fatter body" → its
        radius, "legs 10% slimmer" → their thickness)."""
        if comp is None:
            return None
        names = {a["attribute"]: pid for pid, a in self.attrs.items() if a["component"] == comp}
        pol = L.polarity(cl)
        for ph, opts in DIMENSION_PHRASES.items():
            if _word_in(ph, cl) and (pid := next((names[a] for a in opts if a in names), None)):
                return pid, pol or "+"
        for w, opts in REVERSED.items():
            if _word_in(w, cl) and (pid := next((names[a] for a in opts if a in names), None)):
                return pid, "+" if re.search(r"\b(less|not as)\b", cl) else "-"
        for w in re.findall(r"[a-z]+", cl):
            cmp = w if w in COMPARATIVE_OF else complaint.MORE.get(w)  # "25% less bulky": bulkier's dimension
            if cmp in COMPARATIVE_OF and (pid := next((names[a] for a in COMPARATIVE_OF[cmp] if a in names), None)):
                return pid, (L.polarity(w) if w == cmp else None) or pol or L.polarity(cmp) or "+"
        return None

    def _vertical(self, cl: str, comp: str | None, op) -> tuple[str, str, str] | None:
        """"seat up a little", "bring the seat down two inches": a bare up / down said of a part that has a
        height moves its height (a derived spec may have linked the particle to another attribute)."""
        m = VERTICAL.search(cl)
        if comp is None or m is None or (op and op[2] not in ("up", "down")):
            return None
        before = re.findall(r"[a-z]+", cl[:m.start()])
        if before and before[-1] in SIZE_PHRASAL:
            return None
        pid = next((p for p, a in self.attrs.items() if a["component"] == comp and a["attribute"] == "height"), None)
        return (pid, "+" if m.group(1) == "up" else "-", m.group(1)) if pid else None

    # -- what the model cannot express, overall dimensions, keep targets
    def _covered(self, phrase: str) -> bool:
        """Does the interface's own vocabulary say this (a component name, an operation word, an attribute
        name, a macro phrase)?"""
        own = [s for s, _ in self.syn] + [w for w, _, _ in self.opw] + [ph for ph, _ in self.macro_phr] + \
              [a["attribute"].replace("_", " ") for a in self.attrs.values()]
        forms = {phrase, phrase[:-1] if phrase.endswith("s") else phrase + "s"}
        return any(_word_in(f, o) for f in forms for o in own)

    def _unsupported(self, cl: str, ahead: bool = False) -> str | None:
        """A setting or part this product's model does not have, named in the clause ("wings", "colour"). ``ahead``:
        the clause is an adjective of a list whose noun comes later ("a smoother, taller neck")."""
        edited = L.polarity(cl) is not None or L.quantity(cl) is not None
        # ninth round: where the product stands ("too big for the corner") and "switch to" as a verb name no setting;
        # a hyphenated name ("gas-lift") is the same words
        cl = coverage.PLACE_OF_USE.sub(" ", coverage.SWITCH_VERB.sub("change to", cl))
        cl = cl + " | " + re.sub(r"(?<=[a-z])-(?=[a-z])", " ", cl) if re.search(r"[a-z]-[a-z]", cl) else cl
        if coverage.KELVIN.search(cl):
            return "light colour setting (the model is geometry only)"  # "about 5000 K" (eighth round)
        for what, words in coverage.UNSUPPORTED.items():
            for w in words:
                if w in ("edge", "edges") and coverage.PLACE_EDGE.search(cl):
                    continue  # "pull its bottom edge in": a place on the part, not its rounding
                if w == "felt" and coverage.FELT_VERB.search(cl):
                    continue  # "it felt flimsy": the verb (eleventh round)
                if _word_in(w, cl) and not self._covered(w) and not (
                        edited and what not in coverage.NOT_A_COMPOUND and self._compound_of_part(w, cl)):
                    return what  # ("the legs fold up" is a moving part, never a compound like "seat cushion")
        fixed = self._fixed_part_removed(cl)
        if fixed:
            return fixed
        for s, c in self._components(cl):
            form = re.escape(s[:-1]) + "s?" if s.endswith("s") else re.escape(s) + "s?"  # "two shades"
            m = re.search(r"(?<![\w])" + coverage.COUNT_WORDS + r"\s+" + form + r"(?![\w])", cl)
            if m and not any(a["component"] == c and a["kind"] == "int" for a in self.attrs.values()):
                return f"setting for the number of {c.replace('_', ' ')} parts (it has one {c})"
        part = coverage.added_part(cl)
        if part and not self._covered(part.split()[-1]) and not self._near_component(part):
            return part  # "add a cup holder": a part this product does not have
        part = coverage.bare_part(cl)
        if part and not edited and not self._operation(cl, None) and not self._macro_lexical(cl) \
                and not self._covered(part.split()[-1]) and not any(_word_in(n, part) for n in self.product_names) \
                and not self._near_component(part) and not (ahead and re.fullmatch(r"[a-z]+er", part)):
            return part  # "… and a USB port in the base": a noun phrase alone asks for the thing (not a comparative
            # before the list's noun: "a smoother, taller neck" — eighth round)
        return None

    def _fixed_part_removed(self, cl: str) -> str | None:
        """A part the product always has, asked to go ("a bottle without a cap", "no base"): the model has no
        setting for leaving it out (only parts with a ``present`` attribute can be added or removed)."""
        for s, c in self._components(cl):
            if self._is_product(s) or f"{c}.present" in self.attrs:
                continue
            if re.search(r"(?:\bwithout|\bno|\b(?:remove|get rid of|take (?:off|away)|lose|ditch|delete|leave out|"
                         r"omit|skip)(?: the| its)?) (?:an? |the |its )?" + re.escape(s) + r"(?![\w])", cl) \
                    and L.quantity(cl) is None:
                return f"setting for leaving out the {c.replace('_', ' ')} (it always has one)"
        return None

    def _compound_of_part(self, word: str, cl: str) -> bool:
        """Is the word the head of a compound with a part the product has ("seat cushion", "seat padding")? Said
        with an edit ("a thicker seat cushion"), the compound is that part."""
        return any(_word_in(f"{s} {word}", cl) for s, _ in self.syn if not self._is_product(s))

    def _near_component(self, phrase: str, tau: float = 0.7) -> bool:
        """Is an unlisted part name close in meaning to one of the product's components ("arms" ~ armrests)? It is
        when it is the first half of a compound the product names ("arms" of "armrests", "foot" of "footrest")."""
        head = phrase.split()[-1] if phrase.split() else phrase
        head = head[:-1] if head.endswith("s") and len(head) > 3 else head
        if len(head) >= 3 and any(w.startswith(head) and len(w.rstrip("s")) - len(head) >= 4
                                  for s, _ in self.syn for w in s.split()):
            return True
        if self.enc is None:
            return False
        sims = self.enc([phrase]) @ self.enc([s for s, _ in self.syn]).T
        return float(sims.max()) >= tau

    def _dimension(self, cl: str) -> str | None:
        for dim, pat in SPANS.items():
            if f"overall.{dim}" in self.der and re.search(pat, cl):
                return f"overall.{dim}"
        for dim, pat in OVERALL_DIM.items():
            if f"overall.{dim}" in self.der and re.search(pat, cl):
                return f"overall.{dim}"
        return None

    def _overall_target(self, cl: str, comps: list) -> str | None:
        """The overall dimension a clause edits or keeps: an 'overall' word, the product's own name when it is
        no component's name ("lower the lamp"), or a capacity word of a product that has a capacity."""
        dim = self._dimension(cl)
        q = L.quantity(cl)
        if q is not None and q.unit == "ml" and "overall.capacity" in self.der:
            return "overall.capacity"
        other_dims = [w for w in re.findall(r"[a-z]+", cl)
                      if w in ("radius", "diameter", "wide", "width", "thick", "thickness", "across", "deep", "depth")]
        if q is not None and not L.is_keep(cl) and not other_dims:  # (a radius at the top is the radius)
            top = position.top_of(cl, {k: v.get("description", "") for k, v in self.der.items()}, dict(self.syn),
                                  self.product_names)
            if top:  # "92 cm to the top of the backrest": the overall height
                return top
        if dim is None and q is not None and q.unit == "cm" and not q.ratio and OVERALL.search(cl) \
                and "overall.height" in self.der and not self._amount_dimension(cl, comps[0][1] if comps else None):
            return "overall.height"  # "the lamp ought to total 36 cm": a length of the whole is its height
        if dim is None:
            return None
        ov_word = OVERALL.search(cl)
        if ov_word and ov_word.group(1) == "altogether" and L.REMOVE.search(cl):
            ov_word = None  # "ditch the footrest altogether": completely, not the whole stool
        vessel = {p.split(".")[0] for p in self.der.get("overall.capacity", {}).get("scale", [])}
        if ov_word or (dim == "overall.capacity" and (not comps or L.quantity(cl) is not None
                                                       or all(c in vessel for _, c in comps))):
            return dim  # ("the cup should take more fluid": the part that holds it, so the capacity)
        if not comps and any(_word_in(n, cl) for n in self.product_names):
            return dim  # "lower the lamp", "make the chair 4 cm shallower": the product, not a part
        return None

    def _scale_op(self, target: str, factor: float, cl: str, out: Mapping):
        """A scale operation, or a refusal (warning, no operation) when the factor leaves nothing positive or is
        absurdly large ("reduce … by 200%" once raised a validation error instead of refusing)."""
        if 0 < factor <= 100:
            return ScaleOp(target=target, factor=factor, said=cl)
        a = self.spec["attributes"].get(target)
        valid = f" (valid range {a['range'][0]:g}–{a['range'][1]:g} {a['unit']})" if a else ""
        what = "zero or negative" if factor <= 0 else f"{factor:g} times its size"
        out.warnings.append(f"“{cl}”: {target} would become {what}, which is impossible{valid}")
        return None

    def _quantity_op(self, target: str, unit: str, q, d: str | None, cl: str, out: Mapping):
        """A number / ratio on a target → set, scale or an explicit change; None (with a warning) if unusable."""
        if q.factor is not None:
            return self._scale_op(target, q.factor, cl, out)
        if q.change is not None:
            d = q.sign or d
            if d is None:
                out.warnings.append(f"“{cl}”: {100 * q.change:g}% more or less?")
                return None
            return self._scale_op(target, 1 + q.change if d == "+" else 1 - q.change, cl, out)
        if q.unit and q.unit != unit:
            out.warnings.append(f"“{cl}”: {target} is measured in {unit}, not {q.unit}")
            return None
        # "30 cm across" → r 15; a target width of a round part is its diameter too ("a base 24 cm wide" → r 12), but a
        # change of width keeps the radius's own amount ("5 mm wider at the foot")
        half = 0.5 if target.endswith("radius") and (DIAMETER.search(cl) or (
            not q.relative and re.search(r"\b(?:wide|width)\b", cl))) else 1.0
        if q.relative and q.value == 0:
            return KeepOp(target=target, said=cl)  # "+0 cm": no change at all, a keep (eleventh round)
        if q.relative:
            d = q.dir or d  # "take 5 mm off": the amount's own direction
            d = ("-" if d == "+" else "+") if q.sign == "-" and d else (q.sign or d or "+")
            u = q.unit or (unit if unit in ("cm", "deg", "ml") else None)
            return Adjust(target=target, dir=d, amount=q.value * half, unit=u, said=cl)
        return SetOp(target=target, value=q.value * half, said=cl)

    def _kept_pairs(self, cl: str) -> list[str]:
        """"without the lamp getting any taller or the shade any shorter": each "<thing> any <comparative>" of a
        negated change keeps that thing's dimension — the product's overall one, or the part's (eighth round)."""
        pairs = re.findall(r"\b(?:the |its )?([a-z]+)(?:'s)?(?: (?:getting|gets|get|becoming|growing|going|ending up))? "
                           r"any (" + scope.COMPARATIVES + r")\b", cl)
        syn, out = dict(self.syn), []
        for word, cmp in pairs:
            if word in self.product_names:
                dim = next((f"overall.{d}" for d, pat in OVERALL_DIM.items()
                            if f"overall.{d}" in self.der and re.search(pat, cmp)), None)
            else:
                c = syn.get(word) or syn.get(word.rstrip("s"))
                dim = next((p for a in COMPARATIVE_OF.get(cmp, ()) for p, x in self.attrs.items()
                            if c and x["component"] == c and x["attribute"] == a), None)
            if dim is None:
                return []
            out.append(dim)
        return out if len(out) > 1 else []

    def _keep_targets(self, cl: str, comps: list, context: dict) -> list[str]:
        pairs = self._kept_pairs(cl)
        if pairs:
            return pairs
        own_top = position.part_top(cl, comps, {pid: (a["component"], a.get("description", ""))
                                                for pid, a in self.attrs.items()})
        if own_top:  # "seat top unchanged": the seat's height (its description names the seat top)
            return [own_top]
        top = position.top_of(cl, {k: v.get("description", "") for k, v in self.der.items()}, dict(self.syn),
                                  self.product_names)
        if top:  # "keep the top of the backrest where it is": the chair's overall height
            return [top]
        ov = self._overall_target(cl, comps)
        if ov:  # "without changing the chair's overall height or the seat": the dimension and the part
            return [ov] + [c for _, c in comps if c not in (ov,)]
        if OVERALL.search(cl) and not self._dimension(cl):
            return ["overall"]
        dim_words = [w for w in re.findall(r"[a-z]+", cl) if w in DIMENSION_WORDS]
        out = []
        for s, c in comps:
            pid = self._named_attribute(cl, c) if dim_words else None
            if pid is None and position.qualifiers(re.findall(r"[a-z]+", cl)) and (nq := self._noun_attribute(cl, c)) \
                    and "_" in self.attrs[nq]["attribute"]:
                pid = nq  # "bottom opening unchanged": the bottom radius, not the whole shade (eleventh round)
            if pid is None and c == context.get("component"):
                # "a thinner handle, but keep its loop as it is": a word for the part that is being edited,
                # which one of its settings' descriptions names ("vertical span of the handle loop"), keeps that
                # setting, not the whole part (eighth round)
                pid = self._described(s, c)
            out.append(pid if pid and self.attrs[pid]["component"] == c else c)
        if not out and (dim_words or re.search(r"\bcount\b", cl)):  # (eleventh round: "…, count unchanged")
            c = context.get("component") or context.get("kept_component")
            pid = self._named_attribute(cl, c) if c else None
            if pid and self.attrs[pid]["component"] == c:
                out = [pid]
            elif (dim := self._dimension(cl)) is not None:
                out = [dim]
        if not out and (c := context.get("component") or context.get("kept_component")) \
                and position.qualifiers(re.findall(r"[a-z]+", cl)) and (nq := self._noun_attribute(cl, c)) \
                and "_" in self.attrs[nq]["attribute"]:
            out = [nq]  # "…; bottom opening unchanged" after an edit of the shade: its bottom radius (eleventh round)
        if not out and re.search(r"\b(?:it|them|they)\b", cl):
            out = self._kept_comparatives(cl, context.get("component"))
        return out

    def _kept_comparatives(self, cl: str, comp: str | None) -> list[str]:
        """"without making it any taller or wider": each comparative of a negated change names a kept dimension — of
        the part in context when it has it, else of the whole product (seventh round)."""
        out = []
        for w in re.findall(r"[a-z]+", cl):
            if w not in COMPARATIVE_OF or not L.polarity(w):
                continue
            pid = next((p for p, a in self.attrs.items() if comp and a["component"] == comp
                        and a["attribute"] in COMPARATIVE_OF[w]), None)
            dim = pid or next((f"overall.{d}" for d, pat in OVERALL_DIM.items()
                               if f"overall.{d}" in self.der and re.search(pat, w)), None)
            if dim and dim not in out:
                out.append(dim)
        return out

    def _noun_attribute(self, cl: str, comp: str | None) -> str | None:
        """An attribute named by its noun ("the walls", "the neck height"): of the named component, or of the
        only component that has it."""
        nouns = {"height", "width", "depth", "thickness", "radius", "tilt", "splay", "span", "curvature", "wall",
                 "walls", "reach", "angle", "taper", "diameter", "length", "curve", "size", "lean", "bow"}
        words = re.findall(r"[a-z]+", cl)
        said = [w for w in words if w in nouns]
        places = position.qualifiers(words)  # "near its upper edge": the top
        qual = [pid for pid, a in self.attrs.items() if "_" in a["attribute"] and (comp is None or a["component"] == comp)
                and (a["attribute"].split("_")[0] in words or a["attribute"].split("_")[0] in places)
                and (a["attribute"].split("_")[-1] in words
                     or any(a["attribute"].split("_")[-1] in WIDTH_OF.get(w, ()) for w in words))]
        if not qual and any(w in WIDTH_OF or w.startswith("widen") for w in words):
            # a position without its own attribute name: the attribute whose description is that position's
            # radius ("let the cup widen toward the top" → the mug's taper, "top radius over foot radius"; "a
            # wider mouth at the rim": the rim is the top)
            qual = [pid for pid, a in self.attrs.items() if (comp is None or a["component"] == comp)
                    and "_" not in a["attribute"]
                    and any(a["description"].startswith(f"{w} radius") or
                            (w in POSITION and a["unit"] == "ratio" and a["description"].startswith(f"{POSITION[w]} radius"))
                            for w in words)]
        if len(qual) == 1:  # "wider at the bottom" → bottom_radius
            return qual[0]
        if comp is not None and not said and any(w in ("thick", "thicker", "thin", "thinner") for w in words) and \
                not any(a["component"] == comp and a["attribute"] in ("thickness", "wall") for a in self.attrs.values()):
            # a part without a thickness setting: a disc-like one (a base, a cap) is thin in its height, a slender round
            # one (a bottle's neck) in its radius (eighth round)
            r, h = f"{comp}.radius", f"{comp}.height"
            slender = r in self.attrs and h in self.defaults and 2 * self.defaults.get(r, 0) < self.defaults[h]
            said = ["radius"] if slender else ["height"]
        if not said:
            return None
        names = [DIMENSION_WORDS.get(w, (w,)) for w in said]
        score = {pid: sum(a["attribute"] in opts for opts in names) for pid, a in self.attrs.items()
                 if comp is None or a["component"] == comp}
        best = max(score.values(), default=0)
        cands = [pid for pid, n in score.items() if n == best and n > 0]
        return cands[0] if len(cands) == 1 else None  # "wall thickness": the wall (both nouns), not a thickness

    AMOUNT_DIMENSION = re.compile(r"\d(?:[\d.]*)\s*(?:[a-z°\"]+\s+)?(?:in\s+)?(tall|high|long|wide|thick|deep|across|"
                                  r"diameter|radius|width|height|depth|thickness|edge to edge|side to side)\b")

    def _amount_dimension(self, cl: str, comp: str | None) -> str | None:
        """The attribute named by the dimension word right after an amount ("a base 24 cm wide", "the legs ought to be
        4 cm thick", "the shade's top at 14 cm diameter"): it says what is measured, whatever operation word the clause also
        has. A round part's width or diameter is its radius; a position word picks among qualified radii."""
        m = self.AMOUNT_DIMENSION.search(L.spell_out(cl))
        if comp is None or m is None:
            return None
        opts = DIMENSION_WORDS.get(m.group(1), (m.group(1),))
        mine = {pid: a["attribute"] for pid, a in self.attrs.items() if a["component"] == comp}
        for opt in opts:
            exact = [pid for pid, attr in mine.items() if attr == opt]
            if exact:
                return exact[0]
            qualified = [pid for pid, attr in mine.items() if attr.endswith("_" + opt)]
            if qualified:
                places = position.qualifiers(re.findall(r"[a-z]+", cl))
                named = [pid for pid in qualified if mine[pid].split("_")[0] in places]
                return named[0] if len(named) == 1 else None
        return None

    def _other_part_attribute(self, cl: str, comp: str | None) -> str | None:
        """An attribute noun that the part in context lacks and exactly one other part has ("a narrower seat and
        a bit less splay": the legs' splay, not the seat's)."""
        if comp is None or self._noun_attribute(cl, comp):
            return None
        pid = self._noun_attribute(cl, None)
        return pid if pid and self.attrs[pid]["component"] != comp else None

    # -- one clause
    def _presence(self, cl: str, comp: str | None, out: Mapping) -> bool:
        """Add or remove a component that can be present or absent ("give it armrests", "no footrest") — unless
        the clause names one of its attributes ("have the handle reach out further")."""
        if comp and f"{comp}.present" in self.attrs and L.REMOVE.search(cl) and COMPLETELY.search(cl) \
                and L.quantity(cl) is None:
            out.ops.append(RemoveOp(target=comp, said=cl))  # "drop the footrest altogether": gone, not lower
            return True
        if not comp or f"{comp}.present" not in self.attrs or self._operation(cl, comp) or \
                self._noun_attribute(cl, comp):
            return False
        if L.REMOVE.search(cl):
            out.ops.append(RemoveOp(target=comp, said=cl))
            return True
        if L.ADD.search(cl) and not L.quantity(cl):
            out.ops.append(AddOp(target=comp, said=cl))
            return True
        return False

    def clause(self, cl: str, out: Mapping, context: dict) -> None:
        if re.fullmatch(r"(?:(?:an?|the|this|that|my|our|your) )?(?:" + "|".join(map(re.escape, self.product_names))
                        + r")s?", cl):
            out.trace.append(f"“{cl}” → the product itself (no edit)")  # "a bottle with a shorter neck": the subject
            return
        comps = self._components(cl)
        product = [h for h in comps if self._is_product(h[0])]  # "the chair" is the product, not its seat
        comps = [h for h in comps if not self._is_product(h[0])]
        own = self._operation(cl, None)
        if not comps and not product and context.get("ahead") and not L.is_keep(cl) and not self._macro_lexical(cl) \
                and not OVERALL.search(cl) and not re.search(r"\b(it|them|they)\b", cl) \
                and not self._noun_attribute(cl, None) \
                and not context.get("noun_first") \
                and not (context.get("component") and L.quantity(cl) is not None
                         and self._amount_dimension(cl, context["component"])) \
                and not (L.quantity(cl) is not None and self._literal_attribute(cl)) \
                and not (own and own[0] != "?" and self.attrs[own[0]]["component"] != context["ahead"]
                         and not self._operation(cl, context["ahead"])):
            # "a longer, narrower neck": the adjective's noun comes later — but not after a clause that named its
            # own part first ("body a bit shorter and wider": the body), nor for an operation word only another
            # part has ("five legs, splayed a little more, and a thinner seat": the legs' splay); "thicker walls
            # and a slimmer handle": the walls
            comps = [("", context["ahead"])]
        ctx_c = context.get("component") or context.get("kept_component")  # "keep the shade's height and its top radius"
        bare_noun = bool(re.fullmatch(r"(?:the |its |their )?[a-z]+(?: [a-z]+)?", cl)) and bool(ctx_c) and \
            bool(self._noun_attribute(cl, ctx_c))  # "same splay and thickness": the thickness
        if context.get("keeping") and not L.is_keep(cl) and L.polarity(cl) is None and not L.quantity(cl) \
                and (not self._operation(cl, None) or bare_noun) and not self._macro_lexical(cl) and (comps or bare_noun):
            cl = "keep " + cl  # "keep the overall height and the backrest", "same splay and thickness"
        if not L.is_keep(cl) and (zp := self._zero_state(cl, comps[0][1] if comps else context.get("component"))):
            out.ops.append(SetOp(target=zp, value=0.0, said=cl))  # "a perfectly flat backrest": no curve (tenth round)
            out.trace.append(f"“{cl}” → set {zp} 0 (a plain adjective of none)")
            return
        if not L.is_keep(cl) and (nm := re.search(r"\b(?:no|zero) (?:(?:outward|inward|backward|forward|sideways|"
                                                   r"visible) )?([a-z]+)(?: at all| whatsoever)?\b", cl)) \
                and nm.group(1) in DIMENSION_WORDS and (c0 := comps[0][1] if comps else context.get("component")) \
                and (pid := self._noun_attribute(nm.group(1), c0)) and self.attrs[pid]["kind"] == "float" \
                and self.attrs[pid]["unit"] != "ratio":
            out.ops.append(SetOp(target=pid, value=0.0, said=cl))  # "no splay at all on the legs": none (eighth round)
            out.trace.append(f"“{cl}” → set {pid} 0 (none of it)")
            return
        if not re.match(r"(?:keep|leave|hold)\b", cl) and (mo := self._match(cl, context)) is not None:
            out.ops.append(mo)  # "as deep as the backrest is tall": read from another setting (tenth)
            out.trace.append(f"“{cl}” → match {mo.target} = {mo.factor:g} × {mo.source}")
            return
        if not L.is_keep(cl) and (o := self._ratio_between(cl) or self._ratio_toward(cl, comps)) is not None:
            out.ops.append(o)
            out.trace.append(f"“{cl}” → {o.op} {o.target} (a ratio of two positions)")
            return
        if not L.is_keep(cl):
            context["keeping"] = False
            what = self._unsupported(cl, ahead=bool(comps) and comps[0][0] == "" and context.get("ahead") == comps[0][1])
            if what:
                out.ops.append(UnsupportedOp(what=what, said=cl))
                out.trace.append(f"“{cl}” → unsupported: {what}")
                return
            ov = self._overall_target(cl, comps)
            if ov and self._macro_lexical(cl) and L.quantity(cl) is None and not OVERALL.search(cl):
                ov = None  # a named intent ("cast a wider pool of light", "hold more") is the macro's
            if ov:
                self._overall_clause(cl, ov, out)
                return
            if not comps and product and self._embed_component(cl) is None:
                comps = product  # nothing else names a part: the product's name stands for its main part
        else:
            context["keeping"] = True
            if scope.keeps_the_rest(cl):  # "leave everything else as it is": nothing edited may be kept
                out.trace.append(f"“{cl}” → keep the rest (only the named edits change anything)")
                return
            targets = self._keep_targets(cl, comps, context)
            if targets and not targets[0].startswith("overall"):
                context["kept_component"] = targets[0].split(".")[0]
            if targets:
                for t in targets:
                    out.ops.append(KeepOp(target=t, said=cl))
                out.trace.append(f"“{cl}” → keep {', '.join(targets)}")
                return
        if not comps and not L.is_keep(cl) and L.quantity(cl) is not None and (lit := self._literal_attribute(cl)) \
                and not (context.get("component") and self._noun_attribute(cl, context["component"])):
            comps = [("", self.attrs[lit]["component"])]  # "height 12 cm, reach 3.5 cm" on a mug: the body's height
        if not comps and not context.get("component") and not L.is_keep(cl) and AMOUNT_ONLY.fullmatch(L.spell_out(cl)) \
                and out.ops \
                and isinstance(out.ops[-1], Adjust) and out.ops[-1].amount is None and out.ops[-1].target in self.attrs \
                and (q0 := L.quantity(cl)) is not None and not q0.relative and not q0.ratio \
                and q0.unit == self.attrs[out.ops[-1].target]["unit"]:
            last = out.ops.pop()  # "thinner walls, 0.5 mm": the amount after an edit without one (eighth round)
            out.ops.append(SetOp(target=last.target, value=q0.value, said=f"{last.said}, {cl}"))
            out.trace.append(f"“{cl}” → set {last.target} (the amount of the edit before)")
            return
        if comps and not L.is_keep(cl):
            context["component"] = comps[0][1]
        elif not comps and context.get("component"):
            q = L.quantity(cl)
            other = self._other_part_attribute(cl, context["component"])
            head = re.fullmatch(r"(?:an? )?[-+]?\d+(?:\.\d+)?\s*(?:[a-z°\"]+\s+)?([a-z]+)", L.spell_out(cl)) \
                if q is not None and not q.ratio else None
            if head and head.group(1) not in DIMENSION_WORDS and self._described(head.group(1), context["component"]):
                # "the handle 6 cm tall, a 1.2 cm bar": a word for a piece of the part in context that one of its settings'
                # descriptions names ("thickness of the handle bar") — that setting, not the edit before (eleventh)
                comps = [(head.group(1), context["component"])]
                other = None
            if comps:
                pass
            elif other:  # "a narrower seat and a bit less splay": the part that has the splay
                comps = [("", self.attrs[other]["component"])]
            elif q is not None and not q.relative and out.ops and isinstance(out.ops[-1], (Adjust, SetOp)) \
                    and not self._operation(cl, None) and not self._noun_attribute(cl, context["component"]) \
                    and not self.AMOUNT_DIMENSION.search(L.spell_out(cl)) \
                    and not self._own_name(cl, context["component"]) \
                    and (q.unit is None or out.ops[-1].target not in self.attrs
                         or q.unit == self.attrs[out.ops[-1].target]["unit"]):
                # (eighth round: not "…, splayed at 6°" — its own attribute, named by its participle or its unit)
                # "lower the seat to counter height, 60 cm" (not "neck 6 cm tall and 3 cm across": its own measure)
                last = out.ops.pop()
                if isinstance(last, Adjust) and last.amount is None and not q.ratio and q.value > 0 \
                        and re.search(r"\b(?:more|less|extra|further|another)\b", last.said or "") \
                        and not re.search(r"\b(?:to|at)\b", cl) and last.target in self.attrs \
                        and (q.unit is None or q.unit == self.attrs[last.target]["unit"]):
                    # "more tilt on the backrest, 3 degrees": how much more, not a target (seventh round)
                    out.ops.append(Adjust(target=last.target, dir=last.dir, amount=q.value, unit=q.unit,
                                          said=f"{last.said}, {cl}"))
                    return
                out.ops.append(SetOp(target=last.target, value=q.value, said=f"{last.said}, {cl}"))
                return
            if not comps and not other and (re.search(r"\b(it|them|they|this|that)\b", cl) or not self._operation(cl, None) or
                              self._operation(cl, None)[0] == "?" or
                              (context.get("joined") and self._noun_attribute(cl, context["component"])) or
                              (q is not None and self._amount_dimension(cl, context["component"]))):
                # pronoun or ellipsis: the last named component ("armrests please, 28 cm high": the armrests' height)
                comps = [("", context["component"])]
        if not L.is_keep(cl) and STATEMENT.search(scope.FACTOR_COMPARED.sub(" ", cl)) and not IMPERATIVE.search(cl) \
                and not self._macro_lexical(cl) \
                and self._states(cl) and not (L.quantity(cl) is not None and WANTED_STATE.search(cl)):
            # "the seat is way too low, raise it", "the seat sits a bit high": context
            out.trace.append(f"“{cl}” → statement (context only)")
            return
        if L.is_keep(cl):
            for _, c in comps or ([(None, e[0])] if (e := self._embed_component(cl)) else []):
                out.ops.append(KeepOp(target=c, said=cl))
            out.trace.append(f"“{cl}” → keep {', '.join(c for _, c in comps) or '?'}")
            return
        comp = comps[0][1] if comps else None
        if self._presence(cl, comp, out):
            return
        op = self._operation(cl, comp)
        if op and op[0] != "?" and op[2] and (
                re.search(r"\b(?:less|fewer|not as much|not so much)\s+" + re.escape(op[2]) + r"(?![\w])", cl) or
                re.search(r"(?<![\w])" + re.escape(op[2]) + r"(?:\s+(?:a little|a bit|a touch|a tad|slightly|much|a lot|"
                          r"far|way|somewhat|even|rather))?\s+less\b(?!\s+than)", cl) or
                # "splayed a couple of degrees less": the amount between the word and "less" (ninth round)
                re.search(r"(?<![\w])" + re.escape(op[2]) + r"\s+(?:by\s+)?(?:an?|a couple of|a few|[\d.]+|one|two|three|"
                          r"four|five)\s*(?:more\s+)?(?:degrees?|°|deg|cm|mm|inch(?:es)?|millimet(?:re|er)s?|"
                          r"centimet(?:re|er)s?)\s+less\b(?!\s+than)", cl)):
            # "less splay", "splayed slightly less": the operation word, negated
            op = (op[0], "-" if op[1] == "+" else "+", op[2])
        if comp and (v := self._vertical(cl, comp, op)) and not self._noun_attribute(cl, comp):
            op = v  # "seat up a little": the seat's height, not a word the clusters gave to its thickness
        if comp and (u := UPWARD.search(cl)) and not self._noun_attribute(cl, comp) and \
                (h := next((p for p, a in self.attrs.items() if a["component"] == comp and a["attribute"] == "height"), None)):
            op = (h, "-" if u.group(1).startswith("down") else "+", u.group(1))  # "stretch the mug upward": its height
        if comp and (mv := position.move_out(cl)) and not self._noun_attribute(cl, comp) and \
                (r := next((p for p, a in self.attrs.items() if a["component"] == comp and a["attribute"] == "reach"), None)):
            op = (r, mv, "")  # "pull the handle out by 5 mm", "push the handle in a little": its reach
        if comp and op and op[0] != "?" and any(_word_in(ph, cl) for ph in DIMENSION_PHRASES):
            byw = self._attribute_by_words(cl, comp)
            if byw and byw[0] != op[0]:
                op = (byw[0], byw[1], "")  # "make the handle stick out further": its reach, not its size
        if op and op[0] != "?" and self.attrs[op[0]]["unit"] == "ratio" and \
                (io := re.search(r"\b(in|inwards?|out|outwards?)\b(?! (?:the|a|an|its|their)\b)", cl)):
            op = (op[0], "+" if io.group(1).startswith("out") else "-", "")  # "taper the cup in a bit"
        noun = self._noun_attribute(cl, comp if comps else None)
        if noun and op and op[0] == "?" and noun in op[1].split(","):
            # "widen the shade toward its upper edge": the position picks one of the attributes the word is shared by
            op = (noun, next((d for w, p, d in self.opw if p == noun and w == op[2]), L.polarity(cl) or "+"), op[2])
        if noun and (op is None or op[0] != noun) and (op or L.polarity(cl) or L.quantity(cl)) \
                and not (op and op[0] == "?" and noun in op[1].split(",")):
            # "thinner walls": the wall, not the handle's thickness; "bring the leg splay down": the splay named by
            # its noun wins over an operation word several attributes share
            if op and op[0] != "?" and op[2] not in position.QUALIFIER:
                d = op[1]
            else:  # "open out more near the lower rim": "lower" names the place, not the direction
                d = L.polarity(" ".join(w for w in cl.split() if w not in position.QUALIFIER)) or L.polarity(cl)
            comp, op = self.attrs[noun]["component"], (noun, d, "")
        span = next(((d, sm.group(0)) for d, pat in SPANS.items() if d != "height" and (sm := re.search(pat, cl))), None)
        if comp and span and (op is None or op[0] != "?") and (L.polarity(cl) or op) and \
                (sp := next((p for p, a in self.attrs.items() if a["component"] == comp and a["attribute"] == span[0]),
                            None)):
            # "a roomier seat from front to back": the span names the dimension, whatever intent or other
            # attribute the comparative would reach (seventh round)
            op = (sp, L.polarity(cl) or op[1], span[1])
        if op and op[0] == "?" and comp is None:  # ambiguous operation word: find the component by similarity
            e = self._embed_component(cl)
            if e:
                comp = e[0]
                op = self._operation(cl, comp)
        if op and op[0] == "?":
            out.warnings.append(f"“{cl}”: did you mean " + " or ".join(op[1].split(",")) + "?")
            return
        macro = self._macro_lexical(cl)
        if macro and (op is None or len(macro[0]) > len(op[2])):
            rest = cl.replace(macro[0], " ")
            d = "-" if re.search(r"\b(less|not as)\b", rest) else "+"
            out.ops.append(MacroOp(name=macro[1], dir=d, mag=L.magnitude(cl)[0], said=cl))
            out.trace.append(f"“{cl}” → macro {macro[1]}")
            return
        if comp is None and op:
            comp = self.attrs[op[0]]["component"]
        q = L.quantity(cl)
        if comp is None and not op:
            macro = self._macro(cl)
            if macro:
                d = "-" if re.search(r"\b(less|not as)\b", cl) else "+"
                out.ops.append(MacroOp(name=macro, dir=d, mag=L.magnitude(cl)[0], said=cl))
                out.trace.append(f"“{cl}” → macro {macro}")
                return
            e = self._embed_component(cl)
            comp = e[0] if e else None
            if comp is None:
                out.warnings.append(f"“{cl}”: found nothing of the {self.spec['domain']} this refers to")
                return
            if self._presence(cl, comp, out):
                return
        if q is not None:
            pid = self._amount_dimension(cl, comp) or (op[0] if op else self._named_attribute(cl, comp))
            rev = [pid_ for w, opts in REVERSED.items() if _word_in(w, cl) for pid_, a in self.attrs.items()
                   if a["component"] == comp and a["attribute"] in opts]
            if rev and (pid is None or self.attrs[pid]["attribute"] not in REVERSED.get("upright", ())):
                pid = rev[0]  # "legs 2° more upright": their splay, whatever else "legs" names
            if pid is None and (byw := self._attribute_by_words(cl, comp)):
                pid = byw[0]  # "legs: 10% slimmer": their thickness
            if pid is not None and q.unit and not q.ratio and self.attrs[pid]["unit"] == "count" and \
                    (byw := self._attribute_by_words(cl, comp)) and self.attrs[byw[0]]["unit"] == q.unit:
                pid = byw[0]  # "the legs could be 5 mm slimmer": the comparative's dimension, not the count
            if pid is not None and q.unit and not q.ratio and self.attrs[pid]["unit"] == "count":
                # "a 7° lean on the legs": an amount in a unit is never a count — the part's only
                # attribute measured in that unit (eighth round)
                same = [p for p, a in self.attrs.items() if a["component"] == comp and a["unit"] == q.unit]
                pid = same[0] if len(same) == 1 else pid
            if pid is not None and q.unit and not q.ratio and self.attrs[pid]["unit"] not in (q.unit, "count"):
                # "raise the backrest to 15 degrees": the unit said names the part's only attribute measured in it
                same = [p for p, a in self.attrs.items() if a["component"] == comp and a["unit"] == q.unit]
                pid = same[0] if len(same) == 1 else pid
            if pid is None and q.unit and q.unit != "cm" and not q.ratio:
                # "lean the backrest back another 4°": the part's only attribute measured in that unit
                same = [p for p, a in self.attrs.items() if a["component"] == comp and a["unit"] == q.unit]
                pid = same[0] if len(same) == 1 else None
            last = out.ops[-1] if out.ops else None
            if pid is None and comps and comps[0][0] == "" and isinstance(last, Adjust) and last.amount is None \
                    and last.target in self.attrs and self.attrs[last.target]["component"] == comp and q.relative \
                    and not q.ratio and q.unit == self.attrs[last.target]["unit"]:
                pid = last.target  # "the seat is wider than it needs to be, take 4 cm off": the width (seventh round)
            if pid is None and (dsc := next((d for s_, c_ in comps if c_ == comp and (d := self._described(s_, comp))),
                                            None)) and (q.ratio or q.unit in (None, self.attrs[dsc]["unit"])):
                pid = dsc  # "the handle's loop at 6.5 cm": the setting the word for the part describes (eighth round)
            floats = [p for p, a in self.attrs.items() if a["component"] == comp and a["kind"] == "float"]
            if pid is None and len(floats) == 1 and (q.ratio or q.unit in (None, self.attrs[floats[0]]["unit"])):
                pid = floats[0]  # "grow the cap by a third": the cap has one measure (seventh round)
            if pid is None and ((q.unit == "cm" and not q.ratio) or (q.ratio and LENGTH_VERB.search(cl))):
                # "seat to 48 cm", "add 5 cm to the stem", "shave 2 mm off the cap": a length said of a part
                # without an attribute is how high it is (a target, or a change of its height); so is a share taken
                # off or added ("lop a fifth off the stem"); a part without a height has a size ("give it a 5 cm
                # handle") — seventh round
                sized = any(re.search(r"\d\s*(?:[a-z°\"]+\s+)?(?:[a-z]+\s+)?" + re.escape(s) + r"s?\b", L.spell_out(cl))
                            for s, c in self.syn if c == comp)  # "a 5 cm handle": the amount describes the part
                pid = next((p for attr in (("height", "size") if sized else ("height",)) for p, a in self.attrs.items()
                            if a["component"] == comp and a["attribute"] == attr), None)
            if pid is None:
                out.warnings.append(f"“{cl}”: which attribute of the {comp} should be {q.raw_value:g}?")
                return
            a = self.attrs[pid]
            d = self._direction(cl, op) if op and op[0] == pid else L.polarity(cl)
            for w, opts in REVERSED.items():  # "tilt the backrest 4° more upright": 4° less tilt
                if _word_in(w, cl) and a["attribute"] in opts:
                    d = "+" if re.search(r"\b(less|not as)\b", cl) else "-"
            o = self._quantity_op(pid, a["unit"], q, d, cl, out)
            if o is not None:
                if isinstance(o, Adjust) and a["unit"] == "count":
                    o.unit = None
                out.ops.append(o)
                out.trace.append(f"“{cl}” → {o.op} {pid}")
            return
        mag = L.magnitude(cl)[0]
        if op is None:
            byw = self._attribute_by_words(cl, comp)
            named = self._own_name(cl, comp) if L.polarity(cl) else None  # "legs splayed a bit less": the splay
            e = byw or ((named, L.polarity(cl)) if named else None) or self._embed_operation(cl, comp)
            if e is None:
                pol = L.polarity(cl)
                pid = self._named_attribute(cl, comp)
                if pid is None or pol is None:
                    said = " ".join(r for r in L.content_runs(cl) if r not in {x for x, c in self.syn if c == comp})
                    said = (said or cl)[:50]
                    out.warnings.append(f"“{cl}”: the {self.spec['domain']} has no setting for “{said}” on the "
                                        f"{comp}; it has: {settings_listing(self.spec)}")
                    out.trace.append(f"“{cl}” → no such setting")
                    return
                e = (pid, pol)
            op = (e[0], e[1] if byw else (L.polarity(cl) or e[1]), "")  # "more upright": less tilt
        if self.attrs[op[0]]["kind"] == "bool":
            out.ops.append((AddOp if op[1] == "+" else RemoveOp)(target=comp, said=cl))
            return
        d = self._direction(cl, op)
        out.ops.append(Adjust(target=op[0], dir=d, mag=mag, said=cl))
        out.trace.append(f"“{cl}” → {op[0]} {d} {mag}")

    def _overall_clause(self, cl: str, target: str, out: Mapping) -> None:
        d = self.der[target]
        pol = L.polarity(cl)
        if target == "overall.capacity" and pol is None and re.search(r"\bhold\b", cl):
            pol = "+"
        q = L.quantity(cl)
        if q is not None:
            op = self._quantity_op(target, d["unit"], q, pol, cl, out)
            if op is not None:
                out.ops.append(op)
                out.trace.append(f"“{cl}” → {op.op} {target}")
            return
        if pol is None:
            out.warnings.append(f"“{cl}”: should the {target.replace('.', ' ')} grow or shrink?")
            return
        out.ops.append(Adjust(target=target, dir=pol, mag=L.magnitude(cl)[0], said=cl))
        out.trace.append(f"“{cl}” → {target} {pol}")

    def _match(self, cl: str, context: dict):
        """A value read from another setting (``matching.read``) resolved against the interface: the edited part's
        attribute (its noun, else the dimension word of the comparison) and the read part's; None unless both
        resolve to different settings in the same unit (tenth round)."""
        r = matching.read(L.spell_out(cl))
        if r is None:
            return None
        mine = [c for s, c in self._components(r.target) if not self._is_product(s)] or \
            ([context["component"]] if context.get("component") else [])
        parts = [c for s, c in self._components(r.source) if not self._is_product(s)] or \
            (mine[:1] if r.source_dim is None or position.qualifiers(re.findall(r"[a-z]+", r.source)) else [])
        # ("… until it matches the top opening", "the top opening as wide as its bottom one": the same part)
        if not parts or not mine:
            return None

        def attribute(words: str, comp: str, dim: str | None) -> str | None:
            pid = self._noun_attribute(words, comp) or (self._named_attribute(dim, comp) if dim else None)
            return pid if pid and self.attrs[pid]["component"] == comp and self.attrs[pid]["kind"] == "float" else None
        tgt, src = attribute(r.target, mine[0], r.target_dim), attribute(r.source, parts[0], r.source_dim)
        if tgt is None or src is None or tgt == src or self.attrs[tgt]["unit"] != self.attrs[src]["unit"]:
            return None
        return MatchOp(target=tgt, source=src, factor=r.factor, said=cl)

    def _zero_state(self, cl: str, comp: str | None) -> str | None:
        """The attribute a plain adjective of none names on the part ("a perfectly flat backrest": its curvature), when the
        clause says no amount and no direction of its own (tenth round)."""
        if comp is None or L.quantity(cl) is not None or L.polarity(cl) is not None:
            return None
        words = re.findall(r"[a-z]+", cl)
        names = {x for s, _ in self.syn for x in s.split()} | {x + "s" for s, _ in self.syn for x in s.split()}
        for i, w in enumerate(words):
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt is not None and nxt not in ZERO_STATE and nxt not in names and nxt not in L.STOPWORDS | {"please"}:
                continue  # "vertical slats": the adjective of another thing, not of the part
            for attr in ZERO_STATE.get(w, ()):
                pid = f"{comp}.{attr}"
                if pid in self.attrs and self.attrs[pid]["kind"] == "float" and self.attrs[pid]["range"][0] <= 0:
                    return pid
        return None

    def _ratio_between(self, cl: str):
        """"the rim 10% wider than the foot": one position of a part compared with another is a ratio attribute
        whose description is "<top> radius over <foot> radius" — a target value (1.1), not a scaled radius."""
        m = re.search(r"\b([a-z]+)(?: is| be| should be| ends up)?(?: about| around| roughly)? ([^ ]+ ?(?:%|percent|per cent)|"
                      r"an? (?:half|third|quarter|fifth|tenth)) (wider|narrower|bigger|smaller|broader) than "
                      r"(?:the |its |at the )?([a-z]+)\b", cl)
        q = L.quantity(cl)
        if m is None:  # "a rim wider than its foot": the ratio's direction, no amount
            m2 = re.search(r"\b([a-z]+)(?: is| be| should be| ends up)? (wider|narrower|bigger|smaller|broader) than "
                           r"(?:the |its |at the )?([a-z]+)\b", cl)
            if m2 is None or q is not None:
                return None
            found = self._radius_ratio(m2.group(1), m2.group(3))
            if found is None:
                return None
            pid, a_on_top = found
            up = m2.group(2) in ("wider", "bigger", "broader")
            return Adjust(target=pid, dir="+" if up == a_on_top else "-", mag=L.magnitude(cl)[0], said=cl)
        if q is None or q.change is None:
            return None
        found = self._radius_ratio(m.group(1), m.group(4))
        if found is None:
            return None
        pid, a_on_top = found
        r = 1 + q.change if m.group(3) in ("wider", "bigger", "broader") else 1 - q.change
        return SetOp(target=pid, value=r if a_on_top else 1 / r, said=cl)

    def _ratio_toward(self, cl: str, comps: list):
        """"a cup that widens toward its foot": widening or narrowing toward one position of a part whose ratio
        attribute is described "<top> radius over <foot> radius" moves that ratio — up when the numerator's position
        widens or the denominator's narrows (seventh round)."""
        m = position.TOWARD_PLACE.search(cl)
        if m is None or L.quantity(cl) is not None or POSITION.get(m.group(2)) is None:
            return None
        place = POSITION[m.group(2)]
        named = {c for _, c in comps}
        for pid, a in self.attrs.items():
            d = re.match(r"(\w+) radius over (\w+) radius", a.get("description", ""))
            if a["unit"] != "ratio" or d is None or (named and a["component"] not in named):
                continue
            num, den = POSITION.get(d.group(1)), POSITION.get(d.group(2))
            if place not in (num, den):
                continue
            widen = not re.match(r"narrow|taper", m.group(1))
            if re.search(r"\b(?:less|not as|not so)\b", cl):
                widen = not widen  # "a little less flare toward the rim"
            return Adjust(target=pid, dir="+" if widen == (place == num) else "-", mag=L.magnitude(cl)[0], said=cl)
        return None

    def _radius_ratio(self, word_a: str, word_b: str) -> tuple[str, bool] | None:
        """The ratio attribute described "<x> radius over <y> radius" whose two positions are those the words name
        ("rim", "foot"), and whether ``word_a``'s position is its numerator; None when there is none."""
        a, b = POSITION.get(word_a), POSITION.get(word_b)
        if not a or not b or a == b:
            return None
        for pid, attr in self.attrs.items():
            d = re.match(r"(\w+) radius over (\w+) radius", attr.get("description", ""))
            if attr["unit"] == "ratio" and d and {POSITION.get(d.group(1)), POSITION.get(d.group(2))} == {a, b}:
                return pid, POSITION.get(d.group(1)) == a
        return None

    def _bare_mention(self, cl: str, heading: bool = False) -> bool:
        """A clause that only names parts or an overall dimension, with no edit of its own (no direction, amount,
        operation word, intent, addition or removal): before a keep clause it is one of the kept things. ``heading``:
        before an amount it names what the amount edits, and the whole product ("the bottle as a whole") counts too."""
        cl = re.sub(r"^with ", "", cl)  # "…, with the lamp's overall height and the base radius left alone" (eighth round)
        op = self._operation(cl, None)
        if heading and op and (any(_word_in(op[2], s) for s, _ in self.syn) or op[2] in DIMENSION_WORDS):
            op = None  # "each leg, …": an operation word that only names the part (or a dimension) is no edit
        if L.is_keep(cl) or L.polarity(cl) is not None or L.quantity(cl) is not None or op \
                or self._macro_lexical(cl) or L.ADD.search(cl) or L.REMOVE.search(cl) or self._unsupported(cl):
            return False
        names = {w for s, _ in self.syn for w in re.findall(r"[a-z]+", s)} | self.product_names | L.STOPWORDS | \
            {w[:-1] for s, _ in self.syn for w in re.findall(r"[a-z]+s", s) if heading} | \
            {"height", "width", "depth", "thickness", "radius", "tilt", "splay", "curvature", "wall", "walls", "reach",
             "taper", "diameter", "length", "size", "capacity", "volume", "footprint", "overall", "whole", "total",
             "lean", "bow", "angle", "count", "number", "every", "each", "opening", "openings",  # (eleventh round)
             "entire", "both", "and", "or", "s", "top", "bottom"}
        if any(w not in names for w in re.findall(r"[a-z]+", cl)):
            return False  # "recline the backrest": an edit verb the vocabulary does not list
        comps = [c for s, c in self._components(cl) if not self._is_product(s)]
        # "…, its height and bow stay as they are": attribute nouns alone, of the part in context (eighth round)
        nouns = [w for w in re.findall(r"[a-z]+", cl) if (w in DIMENSION_WORDS or w == "count") and w not in L.STOPWORDS]
        return bool(comps) or bool(OVERALL.search(cl) and (self._dimension(cl) or heading)) or bool(nouns)

    @staticmethod
    def _direction(cl: str, op) -> str:
        """The direction of an operation: its word's, unless that word says no direction of its own (a derived
        spec's cluster may hold a noun: "base plate 12 mm thicker") and a comparative adjective of the clause does."""
        if op[2] and (L.polarity(op[2]) is not None or op[2] in COMPARATIVE_OF):
            return op[1]
        # a comparative that names a place ("its lower edge", "the upper half") gives no direction
        place = re.sub(r"\b(?:lower|upper)\s+(?:edge|rim|part|half|end|opening|section|side|lip)s?\b", " ", cl)
        cmp = [w for w in re.findall(r"[a-z]+", place) if w in COMPARATIVE_OF and L.polarity(w)]
        if not cmp and not L.polarity(cl):  # "thick walls": a plain size adjective beside a noun (ninth round)
            plain = {PLAIN_SIZE[w] for w in re.findall(r"[a-z]+", place) if w in PLAIN_SIZE}
            if len(plain) == 1:
                return plain.pop()
        return L.polarity(cmp[0]) if len({L.polarity(w) for w in cmp}) == 1 else op[1]

    def _states(self, cl: str) -> bool:
        """Does a clause with a statement verb only describe a state? It does when no operation word of the
        interface occurs, or when the only one is a plain adjective that gives no direction ("the seat sits a bit
        high") and no amount is said."""
        op = self._operation(cl, None)
        return op is None or (op[2] in ADJECTIVE_STATES and L.quantity(cl) is None)

    def _same_part(self, a: str, b: str) -> bool:
        """Do two clauses name a common part?"""
        return bool({c for _, c in self._components(a)} & {c for _, c in self._components(b)})

    def map(self, text: str) -> Mapping:
        """The instruction's interface program. Never raises on text input (eleventh round): an internal error while
        reading it — once a "+/- 0" built an adjust of amount 0, which the program's own validation rejected — is a
        refusal with a message, and nothing is changed."""
        try:
            return self._map(text)
        except Exception as e:  # noqa: BLE001 — any failure to read the text is the user's refusal, not a crash
            return _unreadable(text, e)

    def _map(self, text: str) -> Mapping:
        out, context = Mapping(), {}
        # "a handleless mug": a part's name fused with "-less" is the part left out (eighth round; "handle-less" is
        # the language's rule)
        text = L.normalise(text)
        for s in {s for s, _ in self.syn if re.fullmatch(r"[a-z]{3,}", s)}:
            text = re.sub(rf"\b{s}less\b", f"without {s}", text)
            # twelfth round: "a handle-free version", "footrest free": a part of the product said to be free is left out
            text = re.sub(rf"\b(?:an? )?{s}[- ]free\b", f"without {s}", text)
        for w in set(re.findall(r"[a-z]+", text)):  # "an armchair": the product with a part it can have (ninth round)
            pn = next((n for n in self.product_names if w.endswith(n) and len(w) - len(n) >= 3), None)
            lead = w[:-len(pn)] if pn else ""
            parts = {c for s, c in self.syn if pn and s.split()[0].startswith(lead) and f"{c}.present" in self.attrs}
            if len(parts) == 1:
                text = re.sub(rf"\b(?:an? |the )?{w}\b", f"a {pn} with {next(iter(parts))}", text)
        text = self._radii(text)
        cls = complaint.read(L.clauses(text), self._same_part)  # "the shade is too wide": make it narrower
        for i, cl in enumerate(cls):
            context["ahead"] = None
            for later in cls[i + 1:]:  # "lower, wider, slightly deeper seat": the list's noun comes at its end
                if L.is_keep(later):
                    break
                nxt = self._components(later)
                if nxt:
                    context["ahead"] = nxt[0][1]
                    break
            context["joined"] = i > 0
            # the previous clause named its part before its comparative ("body a bit shorter, and wider")
            prev = cls[i - 1] if i else ""
            pc = [m for m in self._components(prev) if not self._is_product(m[0])]
            pw = L.find_phrase(prev, L.POSITIVE + L.NEGATIVE)
            context["noun_first"] = bool(pc) and (pw is None or prev.find(pc[0][0]) < pw[1]) and \
                not L.is_keep(prev)
            if complaint.rewrite(cl) != cl and L.quantity(cl) is None:
                # a complaint another clause answers with its own edit ("…too upright; recline it by 6°"):
                # context only, never an edit of its own (eighth round)
                out.trace.append(f"“{cl}” → complaint answered by another clause (context only)")
                named = [c for s, c in self._components(cl) if not self._is_product(s)]
                if named:
                    context["component"] = named[0]  # what the answer's "it" refers to
                continue
            if i > 0 and PURPOSE_NEXT.match(cl) and not re.search(r"\d", cl) and not L.is_keep(cl) and out.ops:
                out.trace.append(f"“{cl}” → what the edit before is for (context only)")  # (twelfth round)
                continue
            if i + 1 < len(cls) and PURPOSE_NEXT.match(cls[i + 1]) and not re.search(r"\d", cls[i + 1]):
                pass  # twelfth round: the clause before a purpose is the request, not a reason
            elif i + 1 < len(cls) and REASON_NEXT.match(cls[i + 1]) and not L.is_keep(cl) and L.quantity(cl) is None \
                    and ((self._operation(cls[i + 1], None) and not self._operation(cl, None)) or (
                        # eleventh round: "our tester likes her thighs level, so seat depth 40 cm": the answer says its
                        # own amount, and the reason gives no direction of its own
                        L.quantity(cls[i + 1]) is not None and L.polarity(cl) is None and not self._macro_lexical(cl)
                        and not L.ADD.search(cl) and not L.REMOVE.search(cl))):
                # "guests can't reach the bar, so lower it 3 cm": the reason before "so" is context only; the
                # part named last is what the answer's "it" refers to (ninth round)
                out.trace.append(f"“{cl}” → the reason for the next clause (context only)")
                named = [c for s, c in self._components(cl) if not self._is_product(s)]
                if named:
                    context["component"] = named[-1]
                continue
            if i + 1 < len(cls) and not L.is_keep(cls[i + 1]) and not cl.startswith("with ") \
                    and self._bare_mention(cl, heading=True) and (
                    re.match(r"(?:about |around |roughly |just |exactly |minus |plus )?[-+]?\d", cls[i + 1])
                    or any(re.match(p, cls[i + 1]) for p in SPANS.values())):
                # "each leg, 3 mm thicker", "the bottle as a whole, 2 cm taller", "the handle, 4 mm further out": the
                # part (or dimension) named first, the amount after a comma — one edit
                # (eleventh round)
                cls[i + 1] = f"{cl} {cls[i + 1]}"
                out.trace.append(f"“{cl}” → names what the next clause edits")
                continue
            nxt = i + 1
            while nxt + 1 < len(cls) and not L.is_keep(cls[nxt]) and self._bare_mention(cls[nxt]):
                nxt += 1  # "its height, width and depth stay fixed": a list of kept things (ninth round)
            if nxt < len(cls) and L.is_keep(cls[nxt]) and self._bare_mention(cl):
                cl = "keep " + re.sub(r"^with ", "", cl)  # "the overall height and the seat height both stay the same"
            self.clause(cl, out, context)
        restated = {o.target: o for o in out.ops if isinstance(o, (ScaleOp, SetOp))}
        out.ops = [o for o in out.ops if not (
            isinstance(o, Adjust) and o.amount is None and (r := restated.get(o.target)) is not None
            and (isinstance(r, SetOp) or (r.factor > 1) == (o.dir == "+")))]
        # ("a beefier stem: a third thicker": the heading's step gives way to the amount after the
        # colon — eighth round)
        seen, ops = {}, []
        for o in out.ops:  # the same edit said twice ("it wobbles, make it more stable") counts once
            key = (o.op, getattr(o, "target", None) or getattr(o, "name", None), getattr(o, "dir", None))
            if key not in seen:
                seen[key] = o
                ops.append(o)
            elif isinstance(o, Adjust) and o.amount is not None and isinstance(seen[key], Adjust) \
                    and seen[key].amount is None:
                # "the backrest is taller than necessary, 5 cm less": the complaint's direction, then its
                # amount — the restated amount wins (seventh round)
                ops[ops.index(seen[key])] = o
                seen[key] = o
            elif getattr(o, "mag", "moderate") != "moderate" and getattr(seen[key], "amount", None) is None \
                    and hasattr(seen[key], "mag"):
                seen[key].mag = o.mag  # "longer neck, a lot longer": the restated degree wins
        out.ops = self._implied_additions(ops)
        return out

    RADII = re.compile(r"\b(?:both |all |the |its |their )*radii\b(?: of (?:the |its |their )?([a-z]+))?")

    def _radii(self, text: str) -> str:
        """"widen both radii of the shade by 1 cm": the clause said once of each radius of the part (its top and its
        bottom radius), so each gets the edit (eighth round)."""
        m = self.RADII.search(text)
        if m is None:
            return text
        syn = dict(self.syn)
        comp = syn.get(m.group(1) or "") or syn.get((m.group(1) or "").rstrip("s"))
        def radii(c):
            return [a["attribute"] for a in self.attrs.values() if a["component"] == c
                    and a["attribute"].endswith("radius") and a["kind"] == "float"]
        if comp is None:
            many = [c for c in self.spec["components"] if len(radii(c)) > 1]
            comp = many[0] if len(many) == 1 else None
        if comp is None or len(radii(comp)) < 2:
            return text
        start = max(text.rfind(c, 0, m.start()) for c in ",;:") + 1
        end = min([i for i in (text.find(c, m.end()) for c in ",;") if i >= 0] or [len(text)])
        name = m.group(1) if m.group(1) and comp in (syn.get(m.group(1)), syn.get(m.group(1).rstrip("s"))) else comp
        parts = [text[start:end].replace(m.group(0), f"the {name} {r.replace('_', ' ')}") for r in radii(comp)]
        return text[:start] + " and ".join(p.strip() for p in parts) + text[end:]

    def _described(self, said: str, comp: str) -> str | None:
        """The one setting of a part whose description names the word said for the part ("the handle loop": "vertical
        span of the handle loop"), when that word is not the part's own name (eighth round)."""
        if not said or _word_in(comp, said) or said == comp:
            return None
        named = [p for p, a in self.attrs.items() if a["component"] == comp and a["kind"] == "float"
                 and _word_in(said, a.get("description", ""))]
        return named[0] if len(named) == 1 else None

    def _implied_additions(self, ops: list) -> list:
        """Setting an attribute of a part that can be absent asks for the part ("arms at 22 cm": add the armrests,
        then set their height), unless the instruction removes it."""
        out, named = [], {o.target for o in ops if isinstance(o, (AddOp, RemoveOp))}
        for o in ops:
            if isinstance(o, (SetOp, Adjust, ScaleOp)) and o.target in self.attrs:
                comp = self.attrs[o.target]["component"]
                if f"{comp}.present" in self.attrs and comp not in named and self.attrs[o.target]["kind"] != "bool":
                    out.append(AddOp(target=comp, said=o.said))
                    named.add(comp)
            out.append(o)
        return out


def _unreadable(text: str, e: Exception) -> Mapping:
    """A refusal for an instruction the mapper could not read (no operation; the message says so and names the
    internal reason briefly)."""
    why = " ".join(str(e).split())[:160]
    return Mapping(warnings=[f"“{' '.join(text.split())[:80]}”: could not be read as an edit, so nothing was changed "
                             f"(please rephrase; internal reason: {type(e).__name__}: {why})"],
                   trace=[f"unreadable: {type(e).__name__}"])


class FlatMapper:
    """The same machinery over raw parameter names (no hierarchy, synonyms, macros or units).

    Degrees ("slightly", "much") become the parameter's calibrated step, as in the interface, so the comparison
    measures targeting and structure, not a magnitude rule the baseline could never match."""

    name = "flat"

    def __init__(self, domain: str, encoder):
        self.d = get_domain(domain)
        self.enc = encoder
        self.raw = [p.raw for p in self.d.params]
        # The model program's parameter table: raw name and its one-line description (no hierarchy,
        # synonyms, operation words, macros, units or calibrated steps).
        self.names = [f"{p.raw}: {p.description}" for p in self.d.params]

    def _target(self, cl: str) -> int:
        """Raw parameter whose name best matches the clause: embedding similarity of the clause and its
        content runs to the name, plus the share of the name's words that occur in the clause."""
        runs = [cl] + L.content_runs(cl)
        sims = (self.enc(runs) @ self.enc(self.names).T).max(0)
        words = set(re.findall(r"[a-z]+", cl))
        lex = np.array([np.mean([w in words for w in re.findall(r"[a-z]+", r)]) for r in self.raw])
        return int((sims + 0.5 * lex).argmax())

    def map(self, text: str, state: dict[str, float] | None = None) -> Mapping:
        try:
            return self._map(text, state)
        except Exception as e:  # noqa: BLE001 — never a crash on text input (eleventh round)
            return _unreadable(text, e)

    def _map(self, text: str, state: dict[str, float] | None = None) -> Mapping:
        state = dict(state or self.d.defaults())
        out = Mapping()
        for cl in complaint.read(L.clauses(text)):
            if L.is_keep(cl):
                continue
            p = self.d.params[self._target(cl)]
            cur = out.patch.get(p.raw, state[p.id])
            q = L.quantity(cl)
            pol = L.polarity(cl)
            if q is not None and q.factor is not None:
                val = cur * q.factor
            elif q is not None and q.change is not None:
                val = cur * (1 - q.change if (q.sign or pol) == "-" else 1 + q.change)
            elif q is not None:  # raw numbers: the flat list has no units
                val = cur + (q.raw_value if pol != "-" else -q.raw_value) if q.relative else q.raw_value
            elif p.kind == "bool":
                val = 0.0 if (L.REMOVE.search(cl) or pol == "-") else 1.0
            else:
                step = calibrated_step(p, L.magnitude(cl)[0])
                val = cur + (step if (pol or "+") == "+" else -step)
                if p.kind == "int":
                    val = cur + np.sign(val - cur) * max(1.0, round(abs(val - cur)))
            out.patch[p.raw] = float(val)
            out.trace.append(f"“{cl}” → {p.raw} = {val:.3g}")
        return out


def units(text: str) -> list[str]:
    """Every string a mapper may embed for this instruction (to encode a whole benchmark in one batch)."""
    out = []
    cls = L.clauses(text)
    for cl in list(dict.fromkeys(cls + complaint.read(cls))):
        out += [cl] + L.content_runs(cl) + L.content_runs(cl, extra_stop=set(L.POSITIVE) | set(L.NEGATIVE))
    return out

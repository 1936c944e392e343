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

from . import language as L
from .domains import get_domain
from .interface import AddOp, Adjust, KeepOp, MacroOp, RemoveOp, SetOp

DIMENSION_WORDS = {"high": ("height", "size"), "tall": ("height", "size"), "height": ("height", "size"),
                   "wide": ("width", "radius"), "width": ("width",), "deep": ("depth",), "depth": ("depth",),
                   "thick": ("thickness", "wall"), "thickness": ("thickness", "wall"), "radius": ("radius",),
                   "tilt": ("tilt",), "recline": ("tilt",), "angle": ("tilt", "splay"), "splay": ("splay",),
                   "span": ("size",), "size": ("size",), "curve": ("curvature",), "curvature": ("curvature",),
                   "wall": ("wall",), "legs": ("count",), "legged": ("count",), "reach": ("reach",)}
GENERIC_STEPS = {"slight": 0.05, "moderate": 0.15, "large": 0.30}  # the old flat baseline: relative, uncalibrated


def calibrated_step(p, mag: str) -> float:
    """|Δ| for a qualitative degree: the parameter's calibrated step, the same rule the interface compiles with
    and the metric scores against (issue 17: a baseline that cannot hit that step by construction is no comparison)."""
    return float(p.steps[("slight", "moderate", "large").index(mag)])
STATEMENT = re.compile(r"\b(is|are|looks?|feels?|seems?|wobbles|tips over)\b")
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


class InterfaceMapper:
    name = "interface"

    def __init__(self, spec: dict, encoder=None):
        self.spec, self.enc = spec, encoder
        self.attrs = spec["attributes"]
        self.syn = [(s, c) for c, e in spec["components"].items() for s in e["synonyms"]]
        self.opw = [(w, pid, d) for pid, a in self.attrs.items()
                    for d, ws in spec["operations"].get(a["attribute"], {}).items() for w in ws]
        self.macro_phr = [(ph, m["name"]) for m in spec["macros"] for ph in m["phrases"]]

    # -- resolution steps
    def _components(self, cl: str) -> list[tuple[str, str]]:
        """Components named lexically in the clause, as (synonym, component), in order of mention.
        Words inside a matched operation phrase ("closer to the body") are not component mentions."""
        for w, _, _ in sorted(self.opw, key=lambda x: -len(x[0])):
            if " " in w and _word_in(w, cl):
                cl = re.sub(r"(?<![\w])" + re.escape(w) + r"(?![\w])", " " * len(w), cl)
        hits, taken = [], []
        for s, c in sorted(self.syn, key=lambda x: -len(x[0])):
            m = re.search(r"(?<![\w])" + re.escape(s) + r"(?![\w])", cl)
            if m and not any(a <= m.start() < b for a, b, _ in taken):
                taken.append((m.start(), m.end(), (s, c)))
        return [h for _, _, h in sorted(taken)]

    def _embed_component(self, cl: str) -> tuple[str, float] | None:
        if self.enc is None:
            return None
        ops = {w for w, _, _ in self.opw}
        runs = [r for r in L.content_runs(cl, extra_stop=set(L.POSITIVE) | set(L.NEGATIVE)) if r not in ops]
        if not runs:
            return None
        R, S = self.enc(runs), self.enc([s for s, _ in self.syn])
        sims = R @ S.T
        i, j = np.unravel_index(int(sims.argmax()), sims.shape)
        return (self.syn[j][1], float(sims[i, j])) if sims[i, j] >= TAU_COMPONENT else None

    def _operation(self, cl: str, comp: str | None) -> tuple[str, str, str] | None:
        """(pid, dir, word) from the spec's operation words, restricted to the component's attributes."""
        cands = [(w, pid, d) for w, pid, d in self.opw if comp is None or self.attrs[pid]["component"] == comp]
        hits = [(w, pid, d) for w, pid, d in cands if _word_in(w, cl)]
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
        hits = [(ph, n) for ph, n in self.macro_phr if _word_in(ph, cl)]
        return max(hits, key=lambda h: len(h[0])) if hits else None

    def _macro(self, cl: str) -> str | None:
        if self.enc is None or not self.macro_phr:
            return None
        sims = self.enc([cl])[0] @ self.enc([ph for ph, _ in self.macro_phr]).T
        k = int(sims.argmax())
        return self.macro_phr[k][1] if sims[k] >= TAU_MACRO else None

    def _named_attribute(self, cl: str, comp: str) -> str | None:
        """An attribute named by a dimension word or its own name ("50 cm high", "set the tilt to")."""
        names = {a["attribute"]: pid for pid, a in self.attrs.items() if a["component"] == comp}
        for attr, pid in names.items():
            if _word_in(attr.replace("_", " "), cl):
                return pid
        said = [DIMENSION_WORDS[w] for w in re.findall(r"[a-z]+", cl) if w in DIMENSION_WORDS]
        for options in said:
            for attr in options:
                if attr in names:
                    return names[attr]
        anywhere = {pid for options in said for pid, a in self.attrs.items() if a["attribute"] in options}
        return anywhere.pop() if len(anywhere) == 1 else None

    # -- one clause
    def clause(self, cl: str, out: Mapping, context: dict) -> None:
        comps = self._components(cl)
        if comps and not L.is_keep(cl):
            context["component"] = comps[0][1]
        elif not comps and context.get("component"):
            q = L.quantity(cl)
            if q is not None and not q.relative and out.ops and isinstance(out.ops[-1], (Adjust, SetOp)) \
                    and not self._operation(cl, None):  # "lower the seat to counter height, 60 cm"
                last = out.ops.pop()
                out.ops.append(SetOp(target=last.target, value=q.value, said=f"{last.said}, {cl}"))
                return
            if re.search(r"\b(it|them|they|this|that)\b", cl) or not self._operation(cl, None) or \
                    self._operation(cl, None)[0] == "?":  # pronoun or ellipsis: the last named component
                comps = [("", context["component"])]
        if not L.is_keep(cl) and STATEMENT.search(cl) and not IMPERATIVE.search(cl) and not self._operation(cl, None) \
                and not self._macro_lexical(cl):  # "the seat is way too low": context, not an edit
            out.trace.append(f"“{cl}” → statement (context only)")
            return
        if L.is_keep(cl):
            for _, c in comps or ([(None, e[0])] if (e := self._embed_component(cl)) else []):
                out.ops.append(KeepOp(target=c, said=cl))
            out.trace.append(f"“{cl}” → keep {', '.join(c for _, c in comps) or '?'}")
            return
        comp = comps[0][1] if comps else None
        if comp and f"{comp}.present" in self.attrs and not self._operation(cl, comp):
            if L.REMOVE.search(cl):
                out.ops.append(RemoveOp(target=comp, said=cl))
                return
            if L.ADD.search(cl) and not L.quantity(cl):
                out.ops.append(AddOp(target=comp, said=cl))
                return
        op = self._operation(cl, comp)
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
        if q is not None:
            pid = op[0] if op else self._named_attribute(cl, comp)
            if pid is None:
                out.warnings.append(f"“{cl}”: which attribute of the {comp} should be {q.raw_value:g}?")
                return
            a = self.attrs[pid]
            unit = q.unit or (a["unit"] if a["unit"] in ("cm", "deg", "count") else None)
            if q.unit and q.unit != a["unit"]:
                out.warnings.append(f"“{cl}”: {pid} is measured in {a['unit']}, not {q.unit}")
                return
            if q.relative:
                d = op[1] if op else (L.polarity(cl) or "+")
                out.ops.append(Adjust(target=pid, dir=d, amount=q.value, unit=unit if unit != "count" else None, said=cl))
            else:
                out.ops.append(SetOp(target=pid, value=q.value, said=cl))
            return
        mag = L.magnitude(cl)[0]
        if op is None:
            e = self._embed_operation(cl, comp)
            if e is None:
                pol = L.polarity(cl)
                pid = self._named_attribute(cl, comp)
                if pid is None or pol is None:
                    out.warnings.append(f"“{cl}”: understood the {comp}, but not what should change")
                    return
                e = (pid, pol)
            op = (e[0], L.polarity(cl) or e[1], "")
        if self.attrs[op[0]]["kind"] == "bool":
            out.ops.append((AddOp if op[1] == "+" else RemoveOp)(target=comp, said=cl))
            return
        out.ops.append(Adjust(target=op[0], dir=op[1], mag=mag, said=cl))
        out.trace.append(f"“{cl}” → {op[0]} {op[1]} {mag}")

    def map(self, text: str) -> Mapping:
        out, context = Mapping(), {}
        for cl in L.clauses(text):
            self.clause(cl, out, context)
        seen, ops = set(), []
        for o in out.ops:  # the same edit said twice ("it wobbles, make it more stable") counts once
            key = (o.op, getattr(o, "target", None) or getattr(o, "name", None), getattr(o, "dir", None))
            if key not in seen:
                seen.add(key)
                ops.append(o)
        out.ops = ops
        return out


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
        state = dict(state or self.d.defaults())
        out = Mapping()
        for cl in L.clauses(text):
            if L.is_keep(cl):
                continue
            p = self.d.params[self._target(cl)]
            cur = out.patch.get(p.raw, state[p.id])
            q = L.quantity(cl)
            pol = L.polarity(cl)
            if q is not None:
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
    for cl in L.clauses(text):
        out += [cl] + L.content_runs(cl) + L.content_runs(cl, extra_stop=set(L.POSITIVE) | set(L.NEGATIVE))
    return out

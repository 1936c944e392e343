"""The labelled instruction set: template-generated paraphrases plus hand-written free-form instructions.

Every instruction has its gold edit set over ``component.attribute`` targets, gap tags (plain, lexical,
precision, abstraction, multi, keep, structure), its source (``template`` or ``hand``), its split (``dev``
or the held-out ``test``) and its mention annotations (surface form → component / operation / macro),
which are the hand labels the induced specification is scored against.

``python -m engines.prototype.dataset`` regenerates ``data/instructions_{dev,test}.jsonl`` (seeded).
Test-only surface forms of ``data/designer_vocab.yaml`` never appear in the dev split.
"""
from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path

import yaml

from .domains import DOMAINS, Domain

DATA = Path(__file__).resolve().parent / "data"
PER_DOMAIN = {"dev": 62, "test": 62}  # template-generated instructions per domain and split

SLIGHT_ADJ = ["a bit ", "slightly ", "a touch ", "a little ", "a tad "]
LARGE_ADJ = ["much ", "a lot ", "way ", "far ", "significantly "]
SLIGHT_VERB = [" a bit", " slightly", " a little", " just a touch"]
LARGE_VERB = [" a lot", " significantly", " considerably", " dramatically"]
TEST_SLIGHT = ["marginally ", "a smidge "]
TEST_LARGE = ["drastically ", "hugely "]
ADJ_FRAMES = ["make the {c} {a}", "the {c} should be {a}", "I'd like the {c} {a}", "can you make the {c} {a}",
              "please make the {c} {a}", "I want the {c} to be {a}"]
VERB_FRAMES = ["{v} the {c}{h}", "please {v} the {c}{h}", "could you {v} the {c}{h}"]
KEEP_FRAMES = ["{x}, but keep the {k} as is", "{x} without touching the {k}", "leave the {k} alone and {x}",
               "{x}; don't change the {k}", "{x} but do not change the {k}"]
MACRO_FRAMES = ["make the {d} {h}{m}", "I want the {d} to be {h}{m}", "can you make it {h}{m}",
                "make it {h}{m}", "the {d} should {m}", "I'd like it to {m}"]
JOIN = [" and ", ", and ", ", then ", "; also "]


@lru_cache(maxsize=1)
def vocab() -> dict:
    return yaml.safe_load((DATA / "designer_vocab.yaml").read_text())


def _pick(rng, common: list, test_only: list, split: str, p_test: float = 0.5) -> tuple[str, bool]:
    if split == "test" and test_only and rng.random() < p_test:
        return rng.choice(test_only), True
    return rng.choice(common), False


class Generator:
    def __init__(self, domain: Domain, split: str, seed: int):
        self.d, self.split = domain, split
        self.rng = random.Random(f"{domain.name}/{split}/{seed}")
        self.v = vocab()
        self.dv = self.v["domains"][domain.name]

    # -- pieces
    def comp_form(self, comp: str) -> tuple[str, bool]:
        e = self.dv["components"][comp]
        return _pick(self.rng, e["forms"], e.get("test_only", []), self.split, 0.45)

    def hedge(self, kind: str) -> tuple[str, str]:
        r = self.rng.random()
        if r < 0.35:
            lst = SLIGHT_ADJ if kind == "adj" else SLIGHT_VERB
            if self.split == "test" and kind == "adj" and self.rng.random() < 0.3:
                lst = TEST_SLIGHT
            return "slight", self.rng.choice(lst)
        if r < 0.7:
            lst = LARGE_ADJ if kind == "adj" else LARGE_VERB
            if self.split == "test" and kind == "adj" and self.rng.random() < 0.3:
                lst = TEST_LARGE
            return "large", self.rng.choice(lst)
        return "moderate", self.rng.choice(["", "", "noticeably "] if kind == "adj" else ["", "", " noticeably"])

    def editable(self) -> list:
        return [p for p in self.d.params if p.kind == "float" and p.attribute in self.v["attributes"]
                and not (p.component == "armrests" and self.d.defaults().get("armrests.present", 1) < 0.5)]

    def adjust_clause(self, p, direction=None) -> dict:
        rng = self.rng
        direction = direction or rng.choice("+-")
        av = self.v["attributes"][p.attribute][direction]
        comp, c_unseen = self.comp_form(p.component)
        kind = "adj" if rng.random() < 0.6 else "verb"
        t_only = av.get("test_only", {}).get(kind, [])
        phrase, o_unseen = _pick(rng, av[kind], t_only, self.split, 0.4)
        mag, h = self.hedge(kind)
        if kind == "adj":
            text = rng.choice(ADJ_FRAMES).format(c=comp, a=h + phrase)
        else:
            text = rng.choice(VERB_FRAMES).format(v=phrase, c=comp, h=h)
        canonical = comp == p.component and phrase == av["adj"][0]
        tags = {"plain"} if canonical and not h.strip() else set()
        if not canonical:
            tags.add("lexical")
        if mag != "moderate":
            tags.add("precision")
        return {"text": text, "edits": [{"target": p.id, "dir": direction, "mag": mag}], "tags": tags,
                "mentions": [{"text": comp, "label": f"component:{p.component}"},
                             {"text": phrase, "label": f"op:{p.attribute}{direction}"}],
                "unseen": c_unseen or o_unseen}

    def number_clause(self, p) -> dict:
        rng = self.rng
        comp, unseen = self.comp_form(p.component)
        span = p.hi - p.lo
        relative = rng.random() < 0.5
        unit_words = {"cm": ["cm", "cm", "mm", "inches"], "deg": ["degrees", "°"]}[p.unit]
        uw = rng.choice(unit_words)
        scale = {"cm": 1, "mm": 10, "inches": 1 / 2.54, "degrees": 1, "°": 1}[uw]
        q = 0.5 if span * scale > 10 else 0.1
        d, val, amt_u = None, None, 0.0
        for _ in range(50):
            if relative:
                amt_u = round(rng.uniform(0.08, 0.3) * span * scale / q) * q
                if uw == "mm":
                    amt_u = round(amt_u)
                if amt_u <= 0:
                    continue
                d = rng.choice("+-")
                val = p.default + (amt_u / scale if d == "+" else -amt_u / scale)
            else:
                amt_u = round(rng.uniform(p.lo + 0.1 * span, p.hi - 0.1 * span) * scale / q) * q
                if uw == "mm":
                    amt_u = round(amt_u)
                val = amt_u / scale
                d = "+" if val > p.default else "-"
            if p.lo <= val <= p.hi and abs(val - p.default) > 0.05 * span:
                break
        else:
            return self.adjust_clause(p)
        n = f"{round(amt_u, 2):g}"
        u = "°" if uw == "°" else f" {uw}"
        if relative:
            adj = self.v["attributes"][p.attribute][d]["adj"][0]
            generic = {"+": ["taller", "higher", "wider", "thicker", "deeper", "more"],
                       "-": ["shorter", "lower", "narrower", "thinner", "less"]}[d]
            if adj.split()[0] in generic:
                text = f"make the {comp} {n}{u} {adj}"
            else:
                verb = self.v["attributes"][p.attribute][d]["verb"][0]
                text = f"{verb} the {comp} by {n}{u}"
        else:
            dim = self.v["dimension"].get(p.attribute, "")
            if dim and rng.random() < 0.5:
                text = f"make the {comp} {n}{u} {dim}".strip()
            else:
                text = f"set the {comp} {p.attribute.replace('_', ' ')} to {n}{u}"
        return {"text": text, "edits": [{"target": p.id, "dir": d, "value": round(val, 4)}],
                "tags": {"precision"}, "mentions": [{"text": comp, "label": f"component:{p.component}"}],
                "unseen": unseen}

    def macro_clause(self) -> dict:
        rng = self.rng
        m = rng.choice(self.dv["macros"])
        phrase, unseen = _pick(rng, m["phrases"], m.get("test_only", []), self.split, 0.5)
        frames = [f for f in MACRO_FRAMES if ("{h}" in f) == (phrase.split()[0] in ("sturdier", "roomier", "more", "steadier", "sleeker", "leaner", "less", "easier", "comfier", "daintier", "classier"))]
        frame = rng.choice(frames or MACRO_FRAMES)
        mag, h = self.hedge("adj") if "{h}" in frame else ("moderate", "")
        text = frame.format(d=self.d.title.lower().split()[-1], h=h, m=phrase)
        return {"text": text, "edits": [{"target": t, "dir": d, "mag": mag} for t, d in m["edits"]],
                "tags": {"abstraction"} | ({"precision"} if mag != "moderate" else set()),
                "mentions": [{"text": phrase, "label": f"macro:{m['phrases'][0]}"}], "unseen": unseen}

    def structure_clause(self) -> dict | None:
        """add / remove a component, or change a count."""
        rng = self.rng
        d = self.d
        opts = [p for p in d.params if p.kind in ("bool", "int")]
        if not opts:
            return None
        p = rng.choice(opts)
        comp, unseen = self.comp_form(p.component)
        if p.kind == "bool":
            on = p.default < 0.5
            frames = (["add {c}", "give it {c}", "put {c} on it", "I want {c} on it"] if on else
                      ["remove the {c}", "get rid of the {c}", "take off the {c}", "drop the {c}"])
            text = rng.choice(frames).format(c=comp)
            return {"text": text, "edits": [{"target": p.id, "dir": "+" if on else "-", "value": 1.0 if on else 0.0}],
                    "tags": {"structure"}, "mentions": [{"text": comp, "label": f"component:{p.component}"}],
                    "unseen": unseen}
        n = rng.choice([k for k in range(int(p.lo), int(p.hi) + 1) if k != p.default])
        word = {3: "three", 4: "four", 5: "five"}[n]
        text = rng.choice([f"give it {n} {comp}", f"use {word} {comp}", f"make it a {n}-legged {d.name}"])
        return {"text": text, "edits": [{"target": p.id, "dir": "+" if n > p.default else "-", "value": float(n)}],
                "tags": {"structure", "precision"}, "mentions": [], "unseen": unseen}

    # -- instructions
    def one(self) -> dict:
        r = self.rng.random()
        eds = self.editable()
        if r < 0.38:
            return self.adjust_clause(self.rng.choice(eds))
        if r < 0.48:
            return self.number_clause(self.rng.choice([p for p in eds if p.unit in ("cm", "deg")]))
        if r < 0.60:
            return self.macro_clause()
        if r < 0.66:
            return self.structure_clause() or self.adjust_clause(self.rng.choice(eds))
        if r < 0.85:
            p1, p2 = self.rng.sample(eds, 2)
            a, b = self.adjust_clause(p1), self.adjust_clause(p2)
            if p1.component == p2.component and self.rng.random() < 0.5:
                return self.one()
            return {"text": a["text"] + self.rng.choice(JOIN) + b["text"], "edits": a["edits"] + b["edits"],
                    "tags": a["tags"] | b["tags"] | {"multi"}, "mentions": a["mentions"] + b["mentions"],
                    "unseen": a["unseen"] or b["unseen"]}
        p = self.rng.choice(eds)
        a = self.adjust_clause(p)
        others = [c for c in self.d.components if c != p.component and c in self.dv["components"]]
        k = self.rng.choice(others)
        kf, unseen = self.comp_form(k)
        text = self.rng.choice(KEEP_FRAMES).format(x=a["text"], k=kf)
        return {"text": text, "edits": a["edits"], "tags": a["tags"] | {"keep"},
                "mentions": a["mentions"] + [{"text": kf, "label": f"component:{k}"}], "unseen": a["unseen"] or unseen}


def feasible(domain: Domain, edits: list[dict]) -> bool:
    """Gold edits must compile from the default state without refusals or constraint side effects."""
    from .interface import Adjust, SetOp, compile_program
    from .specs import hand_spec

    ops = [SetOp(target=e["target"], value=e["value"]) if "value" in e else
           Adjust(target=e["target"], dir=e["dir"], mag=e["mag"]) for e in edits]
    if len({e["target"] for e in edits}) < len(edits):
        return False
    res = compile_program(hand_spec(domain.name), domain.defaults(), ops)
    return res.ok and not res.notes


def generate(seed: int = 0) -> dict[str, list[dict]]:
    out = {"dev": [], "test": []}
    seen: set[str] = set()
    for split in ("dev", "test"):
        for name, dom in DOMAINS.items():
            g = Generator(dom, split, seed)
            k = 0
            while k < PER_DOMAIN[split]:
                ins = g.one()
                key = ins["text"].lower()
                if key in seen or not feasible(dom, ins["edits"]):
                    continue
                seen.add(key)
                k += 1
                out[split].append({"id": f"{split}-{name}-{k:03d}", "domain": name, "text": ins["text"],
                                   "edits": ins["edits"], "tags": sorted(ins["tags"]), "source": "template",
                                   "split": split, "unseen_wording": ins["unseen"], "mentions": ins["mentions"]})
    hand = yaml.safe_load((DATA / "hand_instructions.yaml").read_text())
    counters: dict[str, int] = {}
    for h in hand:
        counters[h["split"]] = counters.get(h["split"], 0) + 1
        if not feasible(DOMAINS[h["domain"]], h["edits"]):
            raise ValueError(f"hand-written instruction is infeasible from the default model: {h['text']!r}")
        out[h["split"]].append({"id": f"{h['split']}-hand-{counters[h['split']]:03d}", "domain": h["domain"],
                                "text": h["text"], "edits": h["edits"], "tags": sorted(h["tags"]),
                                "source": "hand", "split": h["split"], "unseen_wording": h["split"] == "test",
                                "mentions": h.get("mentions", [])})
    return out


def load(split: str, domain: str | None = None) -> list[dict]:
    """The bundled instructions of one split ('dev' or 'test'), optionally of one domain."""
    if split not in ("dev", "test"):
        raise ValueError(f"unknown split {split!r}")
    rows = [json.loads(l) for l in (DATA / f"instructions_{split}.jsonl").read_text().splitlines() if l.strip()]
    return [r for r in rows if domain is None or r["domain"] == domain]


def main() -> None:
    data = generate()
    for split, rows in data.items():
        (DATA / f"instructions_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(split, len(rows), "instructions,", sum(r["source"] == "hand" for r in rows), "hand-written")


if __name__ == "__main__":
    main()

"""LLM mappers: the interface (or the flat parameter list) as the closed output space of a language model.

* Local (default, offline): SmolLM2-135M-Instruct from the zoo. The prompt lists the domain's vocabulary
  (interface: components with synonyms, attributes with operation words, macros; flat: the raw parameter
  table) and few-shot examples from the dev split; for every clause the model *chooses* the edit among the
  closed set of well-typed options by log-likelihood (constrained decoding to the grammar). Degrees,
  numbers, units and "keep" scopes come from the shared language machinery.
* OpenAI-compatible endpoint (``PAPERLAB_PROTOTYPE_LLM_ENDPOINT`` + ``PAPERLAB_PROTOTYPE_LLM_MODEL``, paper
  scale): the model writes the whole JSON program (or patch); it is parsed and type-checked against the
  spec, and on a schema error the error is sent back for a repair, up to ``retries`` times.
"""
from __future__ import annotations

import json
import os
import re
import urllib.request
from functools import lru_cache

from . import language as L
from .domains import get_domain
from .interface import (AddOp, Adjust, KeepOp, MacroOp, ProgramError, RemoveOp, ScaleOp, SetOp, UnsupportedOp,
                        check_program, derived_attrs, parse_program)
from .mappers import Mapping

N_SHOTS = 8


def interface_vocabulary(spec: dict) -> str:
    lines = []
    for c, e in spec["components"].items():
        attrs = []
        for pid in e["attributes"]:
            a = spec["attributes"][pid]
            ws = spec["operations"].get(a["attribute"], {})
            hint = "; ".join(f"{d} " + ", ".join(ws[d][:3]) for d in ("+", "-") if ws.get(d))
            attrs.append(f"{pid} [{a['unit']}]" + (f" ({hint})" if hint else ""))
        lines.append(f"- {c} (also: {', '.join(e['synonyms'][:4])}): " + "; ".join(attrs))
    for m in spec["macros"]:
        lines.append(f"- macro '{m['name']}' ({', '.join(m['phrases'][:3])}) = "
                     + ", ".join(f"{e['target']} {e['dir']}" for e in m["edits"]))
    return "\n".join(lines)


def flat_vocabulary(domain: str) -> str:
    return "\n".join(f"- {p.raw}: {p.description}" for p in get_domain(domain).params)


def _option_text(o, flat: bool, domain) -> str:
    if isinstance(o, Adjust):
        return f"{domain.by_id[o.target].raw if flat else o.target} {o.dir}"
    if isinstance(o, AddOp):
        return f"{domain.by_id[o.target + '.present'].raw} +" if flat else f"add {o.target}"
    if isinstance(o, RemoveOp):
        return f"{domain.by_id[o.target + '.present'].raw} -" if flat else f"remove {o.target}"
    if isinstance(o, MacroOp):
        return f"macro {o.name}"
    if isinstance(o, SetOp):
        return f"{domain.by_id[o.target].raw if flat else o.target} {'+' if o.value >= domain.by_id[o.target].default else '-'}"
    return ""


@lru_cache(maxsize=16)
def few_shots(domain: str, flat: bool) -> str:
    """Single-clause dev instructions of the domain with their gold edit, as worked examples."""
    from . import dataset

    d = get_domain(domain)
    rows = [r for r in dataset.load("dev", domain) if len(L.clauses(r["text"])) == 1 and len(r["edits"]) == 1
            and "value" not in r["edits"][0]]
    shots = []
    for r in rows[:: max(1, len(rows) // N_SHOTS)][:N_SHOTS]:
        e = r["edits"][0]
        tgt = d.by_id[e["target"]].raw if flat else e["target"]
        shots.append(f"Instruction: {r['text']}\nEdit: {tgt} {e['dir']}")
    return "\n\n".join(shots)


def options(spec: dict, domain: str, flat: bool) -> list[tuple[str, object]]:
    """The closed set of typed choices: (text the model scores, what it means)."""
    d = get_domain(domain)
    out = []
    for p in d.params:
        name = p.raw if flat else p.id
        if p.kind == "bool" and not flat:
            out += [(f"add {p.component}", ("add", p.component)), (f"remove {p.component}", ("remove", p.component))]
        else:
            out += [(f"{name} +", ("adjust", p.id, "+")), (f"{name} -", ("adjust", p.id, "-"))]
    if not flat:
        out += [(f"macro {m['name']}", ("macro", m["name"])) for m in spec["macros"]]
    return out


class LocalChooser:
    """Grammar-constrained greedy decoding: the prompt prefix (vocabulary + examples) is encoded once and
    its key/value cache reused; after the clause, each step may only emit a token that continues one of
    the closed options (a token trie), so the output is always a well-typed edit."""

    def __init__(self):
        from engines.common.zoo.smollm2 import load_smollm2

        self.model, self.tok = load_smollm2("cpu")
        self.prefixes: dict[str, object] = {}

    def _prefix(self, prefix: str):
        import torch

        if prefix not in self.prefixes:
            ids = self.tok(prefix, return_tensors="pt").input_ids
            with torch.no_grad():
                self.prefixes[prefix] = (ids.shape[1], self.model(ids, use_cache=True).past_key_values)
        return self.prefixes[prefix]

    def choose(self, prefix: str, clause: str, opts: list[str]) -> int:
        import copy

        import torch

        n_prefix, cache = self._prefix(prefix)
        cache = copy.deepcopy(cache)
        ids = self.tok(clause, add_special_tokens=False, return_tensors="pt").input_ids
        toks = [self.tok(" " + o, add_special_tokens=False).input_ids for o in opts]
        alive = list(range(len(opts)))
        seq: list[int] = []
        with torch.no_grad():
            logits = self.model(ids, past_key_values=cache, use_cache=True).logits[0, -1]
            while True:
                done = [i for i in alive if len(toks[i]) == len(seq)]
                going = [i for i in alive if len(toks[i]) > len(seq)]
                if done and not going or len(alive) == 1:
                    return (done or alive)[0]
                allowed = sorted({toks[i][len(seq)] for i in going})
                nxt = allowed[int(torch.argmax(logits[allowed]))]
                if done and float(torch.log_softmax(logits, -1)[nxt]) < -5.0:
                    return done[0]  # ending here is likelier than any continuation
                seq.append(nxt)
                alive = [i for i in going if toks[i][len(seq) - 1] == nxt]
                logits = self.model(torch.tensor([[nxt]]), past_key_values=cache, use_cache=True).logits[0, -1]


@lru_cache(maxsize=1)
def local_chooser() -> LocalChooser:
    return LocalChooser()


# ----------------------------------------------------------------------------- the interface program as a grammar

NUM = r'#"-?[0-9]{1,4}(\\.[0-9]{1,3})?"'


def _alts(words) -> str:
    return " | ".join(json.dumps(w) for w in words)


def program_grammar(spec: dict) -> str:
    """KBNF grammar (engines/zapformat) of the interface's typed program in its compact text form, e.g.
    `` adjust backrest.height + slight; keep seat``: every target, component, macro, direction, degree and
    number slot is typed, so a constrained decoder can only write well-typed programs of this product."""
    attrs, comps = spec["attributes"], spec["components"]
    der = list(derived_attrs(spec))
    num = [p for p, a in attrs.items() if a["kind"] != "bool"] + der
    present = [c for c in comps if f"{c}.present" in attrs]
    rules = [f'start ::= " " op ( "; " op )* "\\n";',
             'op ::= adjust | change | set | scale | keep | unsupported' + (" | add | remove" if present else "")
             + (" | macro" if spec["macros"] else "") + ";",
             f"target ::= {_alts(num)};", 'dir ::= "+" | "-";', 'mag ::= "slight" | "moderate" | "large";',
             f"num ::= {NUM};",
             'adjust ::= "adjust " target " " dir " " mag;', 'change ::= "change " target " " dir " " num;',
             'set ::= "set " target " " num;', 'scale ::= "scale " target " x" num;',
             f"keep ::= \"keep \" ({_alts(list(comps) + list(attrs) + der + ['overall'])});",
             'unsupported ::= "unsupported " #"[a-z][a-z -]{1,30}";']
    if present:
        rules += [f'add ::= "add " ({_alts(present)});', f'remove ::= "remove " ({_alts(present)});']
    if spec["macros"]:
        rules.append(f'macro ::= "macro " ({_alts([m["name"] for m in spec["macros"]])}) " " dir " " mag;')
    return "\n".join(rules)


def parse_compact(spec: dict, text: str) -> list:
    """The compact program text → typed interface operations (ProgramError on anything ill-typed)."""
    ops = []
    for part in [p.strip() for p in text.strip().split(";") if p.strip()]:
        w = part.split()
        try:
            k = w[0]
            if k == "adjust":
                ops.append(Adjust(target=w[1], dir=w[2], mag=w[3]))
            elif k == "change":
                ops.append(Adjust(target=w[1], dir=w[2], amount=abs(float(w[3]))))
            elif k == "set":
                ops.append(SetOp(target=w[1], value=float(w[2])))
            elif k == "scale":
                ops.append(ScaleOp(target=w[1], factor=float(w[2].lstrip("x"))))
            elif k == "keep":
                ops.append(KeepOp(target=w[1]))
            elif k == "add":
                ops.append(AddOp(target=w[1]))
            elif k == "remove":
                ops.append(RemoveOp(target=w[1]))
            elif k == "macro":
                name = " ".join(w[1:-2])
                ops.append(MacroOp(name=name, dir=w[-2], mag=w[-1]))
            elif k == "unsupported":
                ops.append(UnsupportedOp(what=" ".join(w[1:]) + " setting"))
            else:
                raise ProgramError(f"unknown operation {k!r}")
        except (IndexError, ValueError) as e:
            raise ProgramError(f"ill-formed operation “{part}”: {e}") from None
    check_program(spec, ops)
    return ops


def interface_shots(spec: dict) -> str:
    """Worked examples built from the interface itself (its names, words, units and ranges), one per
    operation kind — no corpus needed, so a new product gets a prompt as soon as it has a spec."""
    attrs, comps = spec["attributes"], spec["components"]
    shots = []
    floats = [p for p, a in attrs.items() if a["kind"] == "float"]
    for i, pid in enumerate(floats[:3]):
        a = attrs[pid]
        ws = spec["operations"].get(a["attribute"], {})
        d = "+-"[i % 2]
        word = (ws.get(d) or [("bigger" if d == "+" else "smaller")])[0]
        hedge, mag = [("a bit ", "slight"), ("", "moderate"), ("much ", "large")][i % 3]
        shots.append((f"make the {a['component']} {hedge}{word}", f"adjust {pid} {d} {mag}"))
    pid = floats[0]
    a = attrs[pid]
    syn = a["component"]
    attr = a["attribute"].replace("_", " ")
    lo, hi = a["range"]
    v = round((lo + hi) / 2)
    shots += [(f"set the {syn} {attr} to {v} {a['unit']}", f"set {pid} {v}"),
              (f"make the {syn} {attr} 2 {a['unit']} less", f"change {pid} - 2"),
              (f"make the {syn} 20% bigger", f"scale {pid} x1.2"),
              (f"halve the {syn} {attr}", f"scale {pid} x0.5")]
    der = derived_attrs(spec)
    if "overall.height" in der:
        shots.append((f"make the whole {spec['domain']} a bit taller", "adjust overall.height + slight"))
    other = [c for c in comps if c != a["component"]]
    if other and len(floats) > 1:
        p2 = floats[-2]
        w2 = (spec["operations"].get(attrs[p2]["attribute"], {}).get("+") or ["bigger"])[0]
        keep = next(c for c in comps if c != attrs[p2]["component"])
        shots.append((f"make the {attrs[p2]['component']} {w2} but keep the {keep} as is",
                      f"adjust {p2} + moderate; keep {keep}"))
    if "overall.width" in der:
        shots.append((f"shorten it but keep the overall width", f"adjust {pid} - moderate; keep overall.width"))
    shots += [("paint it blue", "unsupported colour"), ("add wheels", "unsupported wheels")]
    return "\n\n".join(f"Instruction: {t}\nProgram: {p}" for t, p in shots)


class ProgramDecoder:
    """SmolLM2 writes the whole interface program under the grammar (zapformat's Earley-based logits mask):
    every token it emits keeps the text a prefix of a well-typed program, so the output always parses."""

    def __init__(self):
        from engines.common.zoo.smollm2 import load_smollm2
        from engines.zapformat.generation import _vocab_for

        self.model, self.tok = load_smollm2("cpu")
        self.vocab = _vocab_for(self.tok)

    def decode(self, prompt: str, grammar: str, max_new_tokens: int = 48) -> str:
        import torch

        from engines.zapformat.generation import GrammarLogitsProcessor
        from engines.zapformat.masks import ConstrainedEngine

        program = ConstrainedEngine.build(grammar, self.vocab).program
        enc = self.tok(prompt, return_tensors="pt")
        n = enc["input_ids"].shape[1]
        proc = GrammarLogitsProcessor(program, self.vocab, 1, n)
        eos = self.tok.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, logits_processor=[proc],
                                      pad_token_id=eos, eos_token_id=eos)
        return self.tok.decode(out[0, n:], skip_special_tokens=True)


@lru_cache(maxsize=1)
def program_decoder() -> ProgramDecoder:
    return ProgramDecoder()


class LLMMapper:
    def __init__(self, domain: str, spec: dict, flat: bool = False, chooser=None, endpoint: str | None = None,
                 model: str | None = None, retries: int = 2):
        self.domain, self.spec, self.flat = domain, spec, flat
        self.d = get_domain(domain)
        self.endpoint = endpoint if endpoint is not None else os.environ.get("PAPERLAB_PROTOTYPE_LLM_ENDPOINT", "")
        self.model_name = model or os.environ.get("PAPERLAB_PROTOTYPE_LLM_MODEL", "")
        self.retries = retries
        self._chooser = chooser
        vocab = flat_vocabulary(domain) if flat else interface_vocabulary(spec)
        what = "raw parameters" if flat else "interface (component.attribute, add/remove, macro)"
        self.header = (f"You edit a parametric {self.d.title.lower()} model. Its {what}:\n{vocab}\n\n"
                       f"Map each instruction to one edit: a target and + (increase) or - (decrease).\n\n"
                       f"{few_shots(domain, flat)}\n\n")

    # -- local, constrained choice per clause
    def map(self, text: str, state: dict[str, float] | None = None) -> Mapping:
        if self.endpoint:
            return self.map_remote(text, state)
        if not self.flat:
            return self.map_program(text)
        chooser = self._chooser or local_chooser()
        opts = options(self.spec, self.domain, self.flat)
        state = dict(state or self.d.defaults())
        out = Mapping()
        for cl in L.clauses(text):
            if L.is_keep(cl):
                if not self.flat:
                    for c, e in self.spec["components"].items():
                        if any(L.find_phrase(cl, [s]) for s in e["synonyms"]):
                            out.ops.append(KeepOp(target=c, said=cl))
                continue
            k = chooser.choose(self.header, f"Instruction: {cl}\nEdit:", [o for o, _ in opts])
            kind = opts[k][1]
            out.trace.append(f"“{cl}” → {opts[k][0]}")
            q, mag = L.quantity(cl), L.magnitude(cl)[0]
            if self.flat:
                self._flat_edit(kind, cl, q, mag, state, out)
            elif kind[0] in ("add", "remove"):
                out.ops.append((AddOp if kind[0] == "add" else RemoveOp)(target=kind[1], said=cl))
            elif kind[0] == "macro":
                out.ops.append(MacroOp(name=kind[1], mag=mag, said=cl))
            else:
                pid, d = kind[1], kind[2]
                a = self.spec["attributes"][pid]
                if q is not None and (q.unit in (None, a["unit"])):
                    out.ops.append(Adjust(target=pid, dir=d, amount=q.value, said=cl) if q.relative
                                   else SetOp(target=pid, value=q.value, said=cl))
                else:
                    out.ops.append(Adjust(target=pid, dir=d, mag=mag, said=cl))
        return out

    def program_prompt(self, text: str) -> str:
        return (f"You edit a parametric {self.d.title.lower()} model through its interface:\n"
                f"{interface_vocabulary(self.spec)}\n"
                + (f"- overall: " + "; ".join(f"{k} [{v['unit']}]" for k, v in derived_attrs(self.spec).items()) + "\n"
                   if derived_attrs(self.spec) else "")
                + "Write the program: adjust TARGET +/- slight|moderate|large; change TARGET +/- AMOUNT; "
                  "set TARGET VALUE; scale TARGET xFACTOR; keep PART; add/remove PART; macro NAME +/- DEGREE; "
                  "unsupported WHAT (for anything the model has no setting for). Separate operations with ';'.\n\n"
                f"{interface_shots(self.spec)}\n\nInstruction: {text.strip()}\nProgram:")

    def map_program(self, text: str) -> Mapping:
        """The local LLM writes the interface program itself, constrained by the program's grammar."""
        dec = self._chooser if isinstance(self._chooser, ProgramDecoder) or hasattr(self._chooser, "decode") \
            else program_decoder()
        out = Mapping()
        reply = dec.decode(self.program_prompt(text), program_grammar(self.spec))
        out.trace.append(f"program: {reply.strip()}")
        try:
            out.ops = parse_compact(self.spec, reply)
        except ProgramError as e:  # only when generation stopped at the token limit mid-operation
            out.warnings.append(f"the model gave no complete program ({e}); nothing was changed")
        for o in out.ops:
            o.said = text[:200]
        return out

    def _flat_edit(self, kind, cl, q, mag, state, out: Mapping) -> None:
        from .mappers import calibrated_step

        pid, d = kind[1], kind[2]
        p = self.d.by_id[pid]
        cur = out.patch.get(p.raw, state[pid])
        if q is not None:
            val = cur + (q.raw_value if d == "+" else -q.raw_value) if q.relative else q.raw_value
        elif p.kind == "bool":
            val = 1.0 if d == "+" else 0.0
        else:
            step = calibrated_step(p, mag)
            val = cur + (step if d == "+" else -step)
        out.patch[p.raw] = float(val)

    # -- OpenAI-compatible endpoint: the model writes the program, we validate and ask for repairs
    def map_remote(self, text: str, state: dict[str, float] | None = None) -> Mapping:
        schema = ('a JSON object {"raw_name": new_value, ...}' if self.flat else
                  'a JSON list of operations, e.g. [{"op": "adjust", "target": "backrest.height", "dir": "+", '
                  '"mag": "slight"}, {"op": "keep", "target": "seat"}]; ops: adjust(target, dir, mag: '
                  'slight|moderate|large, or amount+unit), set(target, value), add/remove/keep(target: component), '
                  'macro(name, dir, mag)')
        messages = [{"role": "system", "content": self.header + f"Answer with {schema} and nothing else."},
                    {"role": "user", "content": text}]
        out = Mapping()
        for attempt in range(self.retries + 1):
            reply = self._chat(messages)
            try:
                if self.flat:
                    patch = json.loads(_json_block(reply))
                    if not isinstance(patch, dict) or not all(k in self.d.by_raw for k in patch):
                        raise ProgramError("the patch must map raw parameter names to numbers")
                    out.patch = {k: float(v) for k, v in patch.items()}
                else:
                    ops = parse_program(_json_block(reply))
                    check_program(self.spec, ops)
                    out.ops = ops
                return out
            except (ProgramError, ValueError, TypeError) as e:
                out.warnings.append(f"attempt {attempt + 1}: {e}")
                messages += [{"role": "assistant", "content": reply},
                             {"role": "user", "content": f"That is invalid: {e}. Answer again with valid JSON only."}]
        out.warnings.append("the model gave no valid program; nothing was changed")
        return out

    def _chat(self, messages: list[dict]) -> str:
        body = json.dumps({"model": self.model_name, "messages": messages, "temperature": 0}).encode()
        req = urllib.request.Request(self.endpoint.rstrip("/") + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "none")})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())["choices"][0]["message"]["content"]


def _json_block(reply: str) -> str:
    m = re.search(r"```(?:json)?\s*(.*?)```", reply, re.S)
    return m.group(1) if m else reply.strip()

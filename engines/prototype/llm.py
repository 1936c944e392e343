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
from .interface import AddOp, Adjust, KeepOp, MacroOp, ProgramError, RemoveOp, SetOp, check_program, parse_program
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

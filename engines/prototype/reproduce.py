"""``make reproduce METHOD=prototype``: measure the issue's claims and the spec's acceptance checks.

All accuracy numbers are on the held-out test split, which development never looked at.
"""
from __future__ import annotations

import json
import statistics
import time

import numpy as np

from engines.common.results import RESULTS_DIR, Report

LLM_PER_DOMAIN = 4  # SmolLM2 on 2 shared CPU cores: a seeded subset of the test split


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def heldout_ari(domain: str, enc) -> tuple[float, int]:
    """ARI of the induced (dev) clusters on held-out instructions, embeddings only.

    Every hand-labelled mention of the test split is assigned to the dev cluster whose MiniLM centroid is
    nearest (cosine); no edit trace enters (traces are what the induction used as features on dev, and a
    test instruction has none). Returns (ARI against the hand labels, number of labelled test mentions)."""
    from sklearn.metrics import adjusted_rand_score

    from . import dataset
    from .specification import gold_mention_labels
    from .specs import get_spec

    clusters = [c for c in get_spec(domain, "induced")["induction"]["clusters"] if c["members"]]
    cent = []
    for c in clusters:
        v = np.asarray(enc(c["members"]), float)
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        m = v.mean(0)
        cent.append(m / np.linalg.norm(m))
    cent = np.stack(cent)
    gold = gold_mention_labels([r for r in dataset.load("test") if r["domain"] == domain])
    texts = sorted(gold)
    x = np.asarray(enc(texts), float)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    assign = (x @ cent.T).argmax(1)
    return float(adjusted_rand_score([gold[t] for t in texts], assign.tolist())), len(texts)


def main():
    from . import dataset
    from .benchmark import run_benchmark
    from .domains import DOMAINS
    from .encoder import get_encoder
    from .plots import error_figure, gap_figure
    from .specification import specify
    from .specs import get_spec
    from .studio import interpret, realise

    rep = Report("prototype", "Prompt-to-prototype (Shi et al., ICML 2025)")

    # Claims 1 and 3: embedding mappers on the whole test split.
    emb = run_benchmark({"split": "test", "mappers": ["interface", "flat"], "spec_sources": ["induced", "hand"]})
    res = json.loads(emb.model_dump_json())
    runs = {(r["mapper"], r["spec_source"]): r for r in res["runs"]}
    iface, hand, flat = runs[("interface", "induced")], runs[("interface", "hand")], runs[("flat", "raw")]
    gain = iface["overall"]["exact"] - flat["overall"]["exact"]
    rep.claim("Embedding mapper (MiniLM): interface beats raw parameters by ≥ 10 points exact match, "
              "with a lower unintended-edit rate",
              "interface improves targeted control (abstract; no number recovered)",
              f"exact {_pct(iface['overall']['exact'])} vs {_pct(flat['overall']['exact'])} (+{100 * gain:.1f} pts); "
              f"unintended {_pct(iface['overall']['over'])} vs {_pct(flat['overall']['over'])} (n={res['n']})",
              gain >= 0.10 and iface["overall"]["over"] < flat["overall"]["over"])
    ratio = iface["overall"]["exact"] / max(hand["overall"]["exact"], 1e-9)
    rep.claim("Automatically specified interface reaches ≥ 90% of the hand-written spec's exact match",
              "automated domain specification (abstract)",
              f"{_pct(iface['overall']['exact'])} vs {_pct(hand['overall']['exact'])} = {100 * ratio:.0f}%", ratio >= 0.9)
    lex = iface["by_tag"].get("lexical", {}).get("exact", 0.0)
    rep.claim("Spec acceptance 3: interface exact match ≥ 70% on the lexical subset",
              "—", f"{_pct(lex)} (n={int(iface['by_tag'].get('lexical', {}).get('n', 0))})", lex >= 0.70)
    rep.figure(gap_figure(res), "gaps", "Exact edit-set match per gap type on the held-out test split (embedding mappers).")
    rep.figure(error_figure(res), "errors", "Over- and under-specification per mapper (test split).")

    # Claim 2: LLM mappers (SmolLM2-135M, grammar-constrained) on a seeded test subset.
    t = time.perf_counter()
    llm = run_benchmark({"split": "test", "mappers": ["llm_interface", "llm_flat"], "spec_sources": ["induced"],
                         "limit": LLM_PER_DOMAIN})
    lres = json.loads(llm.model_dump_json())
    lr = {r["mapper"]: r for r in lres["runs"]}
    li, lf = lr["llm_interface"], lr["llm_flat"]
    lgain = li["overall"]["exact"] - lf["overall"]["exact"]
    rep.claim("LLM mapper (SmolLM2-135M, offline): interface beats raw parameters by ≥ 10 points exact match, "
              "with a lower unintended-edit rate",
              "interface as an auxiliary module for LLMs (abstract)",
              f"exact {_pct(li['overall']['exact'])} vs {_pct(lf['overall']['exact'])} (+{100 * lgain:.1f} pts); "
              f"unintended {_pct(li['overall']['over'])} vs {_pct(lf['overall']['over'])} "
              f"(n={lres['n']}, {time.perf_counter() - t:.0f} s)",
              lgain >= 0.10 and li["overall"]["over"] < lf["overall"]["over"])

    # Claim 4: every executed interface program yields valid, watertight geometry within ranges.
    from .benchmark import execute, make_mapper

    enc = get_encoder()
    n_valid = n_exec = 0
    for r in dataset.load("test"):
        dom = DOMAINS[r["domain"]]
        spec = get_spec(r["domain"], "induced")
        after = execute("interface", make_mapper("interface", r["domain"], spec, enc), spec, r["text"], dom.defaults())
        if after != dom.defaults():
            n_exec += 1
            n_valid += realise(dom, after)[0].valid
    rng = np.random.default_rng(0)
    n_samp = ok_samp = 0
    times = []
    for dom in DOMAINS.values():
        for _ in range(100):
            st = {p.id: float(rng.uniform(p.lo, p.hi)) if p.kind == "float" else float(rng.integers(p.lo, p.hi + 1))
                  for p in dom.params}
            if not all(rel.holds(st) for rel in dom.relations):
                continue
            t0 = time.perf_counter()
            ok_samp += realise(dom, st)[0].valid
            times.append(time.perf_counter() - t0)
            n_samp += 1
    rep.claim("Every executed program yields valid, watertight geometry within the declared ranges",
              "—", f"{n_valid}/{n_exec} executed test programs; {ok_samp}/{n_samp} random in-range models "
              f"(build+union median {1000 * statistics.median(times):.0f} ms)",
              n_valid == n_exec and ok_samp == n_samp)

    # Claim 5: round trip (interpret + rebuild + export GLB/STL) ≤ 2 s on CPU with the embedding mapper.
    texts = [("chair", "make the backrest taller and a bit more reclined, keep the seat as is"),
             ("lamp", "make the shade much taller without touching the stem"), ("mug", "take off the handle"),
             ("bottle", "make it more slender and graceful"), ("stool", "give it three legs")]
    interpret({"domain": "chair", "instruction": "make the seat wider"})  # warm: MiniLM loaded once per process
    rt = []
    for d, tx in texts * 2:
        t0 = time.perf_counter()
        interpret({"domain": d, "instruction": tx})
        rt.append(time.perf_counter() - t0)
    rep.claim("Instruction round trip (interpret + rebuild + export) ≤ 2 s on CPU, embedding mapper",
              "—", f"median {statistics.median(rt):.2f} s, max {max(rt):.2f} s over {len(rt)} (shared 2-core machine, warm)",
              max(rt) <= 2.0)

    # Spec acceptance 4: domain specification quality and determinism.
    q = {d: get_spec(d, "induced")["induction"]["quality"] for d in DOMAINS}
    ari = statistics.mean(v["ari"] for v in q.values())
    cov = statistics.mean(v["coverage"] for v in q.values())
    again = specify(dataset.load("dev"), enc)
    same = all(again[d][k] == get_spec(d, "induced")[k] for d in DOMAINS for k in ("components", "operations", "macros"))
    held = {d: heldout_ari(d, enc) for d in DOMAINS}
    h_ari = statistics.mean(a for a, _ in held.values())
    rep.claim("Spec acceptance 4 on held-out instructions: the test split's hand-labelled mentions, assigned to the "
              "induced (dev) clusters by MiniLM nearest centroid without edit traces, ARI ≥ 0.6 vs hand labels; "
              "≥ 90% of parameters linked; deterministic",
              "—", f"held-out ARI {h_ari:.2f} (per domain " + ", ".join(f"{d} {a:.2f} (n={n})" for d, (a, n) in held.items())
              + f"); coverage {_pct(cov)}; same result on a re-run: {same}", h_ari >= 0.6 and cov >= 0.9 and same)
    rep.reported("In-sample clustering quality (the dev mentions the induction clustered, with the dev edit traces "
                 "among its features)", "—",
                 f"ARI {ari:.2f} (per domain " + ", ".join(f"{d} {v['ari']:.2f}" for d, v in q.items()) + ")")

    # Spec acceptance 2: compiler locality.
    from .interface import Adjust, compile_program

    loc_ok = loc_n = 0
    for dom in DOMAINS.values():
        spec = get_spec(dom.name, "hand")
        base = dom.build(dom.defaults())
        for p in dom.params:
            if p.kind != "float":
                continue
            c = compile_program(spec, dom.defaults(), [Adjust(target=p.id, dir="+", mag="slight")])
            if not c.ok:
                continue
            changed = {ch.target for ch in c.changes}
            other = dom.build(c.state)
            reach = set().union(*(dom.reached_by(t) for t in changed))
            same_geo = all(np.array_equal(a.vertices, b.vertices) for comp in base.parts if comp not in reach
                           for a, b in zip(base.parts[comp], other.parts.get(comp, [])))
            loc_n += 1
            loc_ok += changed <= {p.id} | {n.split(" ")[0] for n in c.notes} and same_geo
    rep.claim("Spec acceptance 2: a single-target program changes only that parameter (and constraint dependents); "
              "components neither named nor attached to it keep identical geometry (IoU = 1)", "—", f"{loc_ok}/{loc_n} single-edit programs",
              loc_ok == loc_n)

    lines = ["## Detail", "", "| mapper | exact | unintended | missed | target F1 | direction | magnitude | "
             "unseen-wording exact | s/instruction |", "|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"] + lres["runs"]:
        o = r["overall"]
        lines.append(f"| {r['label']} | {_pct(o['exact'])} | {_pct(o['over'])} | {_pct(o['under'])} | {o['f1']:.2f} | "
                     f"{_pct(o['direction'])} | {_pct(o['magnitude'])} | {_pct(r['unseen_wording'].get('unseen', 0))} | "
                     f"{r['seconds_per_instruction']:.2f} |")
    lines += ["", f"Embedding rows: all {res['n']} test instructions; SmolLM2 rows: {lres['n']} "
              f"({LLM_PER_DOMAIN} per domain, seeded). All figures are this project's CPU-scale measurements on its own "
              "instruction set; the paper's tables could not be read, so no number above is the paper's.",
              "", "Domain specification quality (dev corpus): " + "; ".join(
                  f"{d}: {v['clusters']} clusters, ARI {v['ari']:.2f}, purity {v['purity']:.2f}, coverage {_pct(v['coverage'])}"
                  for d, v in q.items())]
    rep.section("\n".join(lines))
    (RESULTS_DIR / "prototype_benchmark.json").write_text(json.dumps({"embedding": res, "llm": lres}, indent=1))
    for name in reversed(HELDOUT_SETS):  # issue 30: the newest held-out set's first run is the claim
        heldout_section(rep, enc, name)
    fresh_section(rep, enc)  # issue 30: the former fresh set, now a development set (reported, not claimed)
    return rep.write()


# ----------------------------------------------------------------------------- issue 30: fresh designer phrasing

FRESH_MAPPERS = [("interface", "induced"), ("interface", "hand"), ("flat", "induced"), ("llm_interface", "induced"),
                 ("llm_flat", "induced")]
FRESH_BEGIN, FRESH_END = "<!-- fresh-set:begin -->", "<!-- fresh-set:end -->"
DEV_TITLE = "Development set: issue 30's former fresh set (no longer held-out)"


def fresh_section(rep: Report, enc, mappers=FRESH_MAPPERS) -> dict:
    """All mappers on the fresh test set of issue 30 (data/instructions_fresh.yaml, never used for tuning):
    two claims (the default setup ≥ 85 %; refusals 100 % right on impossible and unsupported requests) and a
    per-kind table."""
    from . import fresh
    from .params import MAPPER_LABELS

    runs = []
    for kind, src in mappers:
        r = fresh.run(kind, src, enc)
        r["label"] = MAPPER_LABELS[kind] + (f" — {src} spec" if kind in ("interface", "llm_interface") else "")
        runs.append(r)
    default = runs[0]
    n_ref = default["n_refuse"]
    rep.reported("Issue 30, development set (the former fresh set; no longer held-out): the default setup "
                 "(interface + MiniLM, derived spec) does the right thing (direction, locality and refusal judged "
                 "automatically)", "—",
                 f"{_pct(default['accuracy'])} of {default['n']} (parser failures first seen on this set were fixed "
                 "during development, so this is not a held-out figure: its first untouched run gave 89.7%, hand spec "
                 "88.2%; the claim is judged on the held-out set above)")
    rep.reported("Issue 30, development set: refusals right on impossible and unsupported requests, and false "
                 "refusals", "—",
                 f"{_pct(default['refusal_correct'])} of {n_ref} refusal items; {default['false_refusals']} false refusals")
    kinds = list(default["n_by_kind"])
    lines = [f"## {DEV_TITLE}", "",
             f"{default['n']} instructions written for issue 30 (`engines/prototype/data/instructions_fresh.yaml`, kept "
             "apart from the development corpus), every product and every failure kind. **No longer held-out**: parser "
             "failures first seen on it were fixed during development, so its figures are reported, not claimed (the "
             "issue's claim is judged on the held-out set). Each instruction starts from the default "
             "model and is judged on the executed outcome by `engines/prototype/fresh.py`: direction (and the stated "
             "amount), locality (nothing else changes except constraint dependents and the parts the stated "
             "distribution / solving rule moves) and refusal (model unchanged, message shown).", "",
             *_kind_table(runs, kinds, default["n_by_kind"])]
    fails = [f"- *{r['label']}*: “{o['text']}” ({o['domain']}) — {o['why']}" for r in runs[:2] for o in r["rows"]
             if not o["ok"]]
    if not any(k.startswith("llm") for k, _ in mappers):
        lines += ["", "SmolLM2-135M rows: **not measured in this run** (section-only refresh on the shared 2-core "
                  "machine; `make reproduce METHOD=prototype` measures them on the whole set)."]
    lines += ["", "The SmolLM2-135M interface row writes the whole program through the project's grammar-constrained "
              "decoder (engines/zapformat; the program grammar is built from the interface, the few-shot prompt too); "
              "its output always parses, but with 135 M parameters it rarely picks the right operation — reported as "
              "measured. The flat rows have no notion of overall dimensions, keep constraints or refusals.", "",
              "Misses of the interface rows: " + ("none." if not fails else ""), *fails]
    rep.section("\n".join(lines))
    (RESULTS_DIR / "prototype_fresh.json").write_text(json.dumps(runs, indent=1))
    return {"runs": runs}


def refresh_fresh_section() -> None:
    """``python -m engines.prototype.reproduce fresh``: measure only the fresh-set section and splice it into
    docs/results/prototype.md (between markers), leaving the rest of the page as its last full run wrote it."""
    from .encoder import get_encoder

    t0 = time.perf_counter()
    rep = Report("prototype", "Prompt-to-prototype (Shi et al., ICML 2025)")
    import os

    with_llm = os.environ.get("PAPERLAB_PROTOTYPE_FRESH_LLM", "") == "1"
    fresh_section(rep, get_encoder(), FRESH_MAPPERS if with_llm else [m for m in FRESH_MAPPERS if not m[0].startswith("llm")])
    table = ["| claim | paper | ours | result |", "|---|---|---|---|"] + [
        f"| {r.claim} | {r.paper} | {r.ours} | {r.verdict} |" for r in rep.rows]
    body = rep.sections[-1].replace(f"## {DEV_TITLE}", "", 1).strip()
    block = "\n".join([FRESH_BEGIN, f"## {DEV_TITLE}", "",
                       f"Measured by `python -m engines.prototype.reproduce fresh` on {time.strftime('%Y-%m-%d')} in "
                       f"{time.perf_counter() - t0:.0f} s (this section only; a full `make reproduce METHOD=prototype` "
                       "adds these rows to the claims table above).", "", *table, "", body, FRESH_END])
    path = RESULTS_DIR / "prototype.md"
    text = _drop_unmarked(path.read_text(encoding="utf-8"), f"## {DEV_TITLE}\n", FRESH_BEGIN)
    if FRESH_BEGIN in text:
        text = text[:text.index(FRESH_BEGIN)].rstrip() + "\n\n" + block + text[text.index(FRESH_END) + len(FRESH_END):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


def _drop_unmarked(text: str, head: str, begin: str) -> str:
    """Remove a section a full run wrote without section markers (``head`` up to the next section or marker), so
    that a section-only refresh does not leave the old copy beside the new one."""
    i = 0
    while (i := text.find(head, i)) != -1:
        if text[:i].rstrip().endswith(begin):  # the marked copy: keep it
            i += len(head)
            continue
        nxt = [j for j in (text.find("\n## ", i + len(head)), text.find("\n<!-- ", i + len(head))) if j != -1]
        j = min(nxt) if nxt else len(text)
        text = text[:i] + text[j:].lstrip("\n")
    return text


# ----------------------------------------------------------------------------- issue 30: the held-out sets

# Held-out sets in the order they were written. The newest one with a recorded first run carries issue 30's
# claims; an older one is reported as a *former* held-out set (its first run stays on the page, but failures
# seen on it were fixed afterwards, so it is no longer held-out).
HELDOUT_SETS = ("heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8",
                "heldout9", "heldout10", "heldout11", "heldout12",
                "heldout13", "heldout14")
SET_NUMBER = {name: k for k, name in enumerate(HELDOUT_SETS, 1)}
# A set's heading while it carries the claims (or awaits its first run), and once it is a former held-out set.
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
            "twelfth", "thirteenth", "fourteenth")
_NO = {name: "" if k == 1 else f" {k}" for name, k in SET_NUMBER.items()}  # the first set's headings have no number
CLAIM_TITLES = {name: f"Held-out designer-phrasing set{_NO[name]} (issue 30; frozen before its first run)"
                for name in HELDOUT_SETS}
FORMER_TITLES = {name: f"Former held-out set{_NO[name]} (issue 30's {ORDINALS[SET_NUMBER[name] - 1]} held-out set; "
                       "no longer held-out)" for name in HELDOUT_SETS}
# Label errors found in a held-out set after its first run (a wrong expectation, not a parser failure): each
# one is listed here and printed on the results page; the first run's outcomes are re-judged with the
# corrected label. A parser failure is never listed here: it stays a failure of the first run.
LABEL_FIXES: dict[str, list[dict]] = {name: [] for name in HELDOUT_SETS}  # {"text", "was", "now", "why"}
# Attempts at a first run that produced no figure (what stopped them; the parser was not changed after them).
ABORTED_ATTEMPTS = {**{name: [] for name in HELDOUT_SETS}, "heldout": [
    "2026-12-02 15:09 UTC: the harness stopped at the default mapper's exception on “reduce the cap height by "
    "200%” (it built a scale operation with factor −1, which the typed program rejects: pydantic ValidationError) "
    "before any mapper's figures were printed or recorded. The harness (`fresh.run`) now records a mapper "
    "exception as that row's failure — not a refusal — and the rerun, with the parser unchanged, is the first run.",
]}
# When a set was written, as the claim row says it (sets 2–6: before the previous set's failures were fixed).
WRITTEN_BEFORE_FIXES = "written after the previous held-out set's first run and before its failures were fixed"
WRITTEN = {"heldout7": "written after the sixth round's fixes of sets 5 and 6, before any further parser change"}
# What happened to a former held-out set after its first run.
AFTERWARDS = {"heldout": (
    "Its first run (below) was the claim until the second held-out set was written. The parser failures seen at "
    "that first run were then fixed (quantities read as targets instead of changes, dropped signs, numbers in "
    "words, diameters, keep clauses, the product's own name, an unsupported clause inside a multi-clause "
    "instruction), so the set is **no longer held-out**: its current figures are development figures. The "
    "second set was written and frozen before those fixes."),
    "heldout2": (
    "Its first run (below) was the claim until the third held-out set had its first run. The parser failures seen "
    "at that first run were then fixed (amounts taken off — “take 5 mm off” —, a signed change after a colon, "
    "“zero”, “across” as a diameter, comparatives naming their dimension, up / down of a part, “widen” and "
    "“floor space” as overall width, negated changes with “any”, “without … taking up”, “with the same”, "
    "“everything else”, an added part without an add verb, “get a …”, materials, a part's compound — “seat "
    "cushion” —, the separated particle of “take the footrest off”, the hedges “a good deal” / “a tiny bit”, an "
    "adjective list's noun at its end, a bare length on a part as its height), so the set is **no longer "
    "held-out**: its current figures are development figures. The third set was written and frozen before "
    "those fixes."),
    "heldout3": (
    "Its first run (below) was the claim until the fourth held-out set had its first run. The parser failures seen "
    "at that first run were then fixed in the fourth round (a distance to the floor as a height, a bare length "
    "added to or taken off a part as its height, “plus 2 mm” as a sign, “with” opening a clause — “with "
    "armrests”, “with a felt pad” —, “by the same amount”, “cap included” as an overall measure, a ratio of two "
    "positions — “the rim 10% wider than the foot” —, denied changes — “shouldn't change”, “can't change” — and "
    "“keeps its height” / “just as much” as keep clauses, a list of kept things before “both stay the same”, a "
    "handle's “taller” as its size, “less” before an operation word, a moving part said of a part, “give … a X”, "
    "leaving out a part the product always has), so the set is **no longer held-out**: its current figures are "
    "development figures. The fourth set was written and frozen before those fixes."),
    "heldout4": (
    "Its first run (below) was the claim until the fifth held-out set had its first run. The parser failures seen "
    "at that first run were then fixed in the fifth round (complaints — “too wide”, “splayed too much”, “isn't "
    "thick enough”, “shouldn't be so tall”, “5 mm too far” — as the opposite change, unless another clause answers "
    "them; a state without “too” as context; the only attribute measured in a unit — “another 4°” —; a part named "
    "in the singular or plural; an attribute named by its noun over a shared operation word; a diameter of a part "
    "with a radius; “to an 11 cm radius” as a target; “twice as long as it is now” as no keep; a bare attribute "
    "noun in a keep list; “upward” as height; a kept diameter as the overall width; “put a …”, holes, “made of” "
    "and more materials; the first half of a compound part name — “arms” —; a position word for a ratio attribute "
    "— “a wider mouth at the rim” —; setting an attribute of an absent part adds it; “flatter” / “curvier”; "
    "“both X and Y”; an edge named by its place; an adjective list's noun not borrowed after a clause that named "
    "its own part), so the set is **no longer held-out**: its current figures are development figures. The fifth "
    "set was written and frozen before those fixes."),
    "heldout5": (
    "Its first run (below) was the claim until the sixth held-out set had its first run. The sixth set was written "
    "and frozen after set 5's first run and before any fix of its failures, and its first run measured the same "
    "(fifth-round) parser. The failures of set 5's first run were then fixed in the sixth round (the top of a part "
    "as the overall dimension that ends there, a place — “lower edge” — picking the bottom radius, a part moved out "
    "or in as its reach, the dimension word after an amount naming the attribute, a target width of a round part as "
    "its diameter, “N more degrees”, “a further N”, “take N out of”, “hold the …” / “held” / “so it still …” as "
    "keeps, “size” in a keep list, “-less” as a removal, a trailing “less” and “more upright” with an amount, an "
    "attribute noun of another part, an amount with its own dimension continuing the part in context, the product's "
    "name before a dimension, a kept dimension solved through an edit given only a direction, “plumper”, moving parts "
    "and insulation), so the set is **no longer held-out**: its current figures are development figures. One miss "
    "remains, a label conflict (“somewhat” is slight in the degree dictionary, the label says moderate)."),
    "heldout6": (
    "Its first run (below) measured the fifth round's parser — the code of set 5's first run — and was issue 30's "
    "claim until the seventh held-out set (written and frozen after the sixth round) had its first run. The failures of that first run were then fixed in the second part of the sixth round (complaints worded "
    "as “N cm higher than I want”, “on the thin side”, “tall for the bottle”, fault adjectives; “lose N”; "
    "“quadruple”; the unit naming the attribute; the top of a part as a target; a length “in total”; “X and all”; "
    "“by the same”; capacity words of the vessel; removal “altogether”; two positions compared; a ratio taken in or "
    "out; keep forms; clips, mounts, tilt and colours refused by name), so the set is **no longer held-out** either: "
    "its current figures below are development figures; the held-out figure for the sixth round's parser is the "
    "seventh set's first run."),
    "heldout7": (
    "Its first run (below) measured the sixth round's parser and was issue 30's claim until the eighth held-out set "
    "(written after set 7's first run and frozen before the seventh round, by an author who wrote no earlier set and no "
    "parser rule) had its first run. The failures of set 7's first run were then fixed in the seventh round (a verb of "
    "removal with “from” and a share taken off as decreases, “from X to Y”, “multiply … by”, “a full centimetre”, a "
    "negative value after an attribute's noun and a colon; complaints “further than it should” and hedged states "
    "without “too”; keep forms — “no wider overall”, “neither … nor … may change”, “no more and no less”, “locked”, a "
    "part's top, the comparatives of a negated change —; a heading before a colon, a span joining the previous measure, "
    "“edge to edge”, “at its widest”, a radius pulled in or pushed out, narrowing toward one position; the product's "
    "name as no operation word; a count never taking a length, a part with one measure, a bare amount after “more X”; "
    "iron, flexible parts, head supports, straps, child-proof caps and cross-section shapes refused by name), so the "
    "set is **no longer held-out**: its current figures below are development figures; the held-out figure for the "
    "seventh round's parser is the eighth set's first run."),
    "heldout8": (
    "Its first run (below) measured the seventh round's parser and was issue 30's claim until the ninth held-out set "
    "(written after set 8's first run and frozen before the eighth round, by an author who wrote no earlier set and no "
    "parser rule) had its first run. The failures of set 8's first run were then fixed in the eighth round (units "
    "hyphenated to a number, “Ø”, percentages in words, “N in <measure>” after a verb of change, “give X a <measure> of "
    "N”, an amount in a unit never a count, “lean” and “bow”, “no <attribute> at all”, “tripod”, “<part>less”; "
    "complaints with an adverb of discomfort, “too X to …”, “more than the <place> allows”, who a change is for, a "
    "complaint answered by another clause as context only; “in all”, “from base to cap”, the top of the product, "
    "“take up more floor”; keep lists of attribute nouns, “<thing> any <comparative>” pairs, “holds the same”, “as "
    "much as now”; “X and Y both / each …”, “N wide by M deep”, “with it”, both radii, a heading's step giving way to "
    "its amount; a slender part's “thinner” as its radius, a measured state in a relative clause, an amount alone "
    "after an edit; joints, folding, levers, light colour, cut-outs, ledges, pockets and markings refused by name), so "
    "the set is **no longer held-out**: its current figures below are development figures; the held-out figure for "
    "the eighth round's parser is the ninth set's first run."),
    "heldout9": (
    "Its first run (below) measured the eighth round's parser and was issue 30's claim until the tenth held-out set "
    "(written after set 9's first run and frozen before the ninth round, by an author who wrote no earlier set and no "
    "parser rule) had its first run. The failures of set 9's first run were then fixed in the ninth round (a role or "
    "source before a colon or dash, a parenthetical gloss, a reason before “so”; “a foot” as a length, “shave off N”, "
    "“bring it in N”, “add <part> N cm up”, “a couple of”, “N more inches”, “N instead of M”, “<word> N less”; “a "
    "fraction”; “more recline”, “thick walls”, “an armchair”; “X and Y: N apiece”, a dash before a keep, keep lists of "
    "three nouns; “across” of the whole; a place of use, “switch to” and hyphenated names in refusals), so the set is "
    "**no longer held-out**: its current figures below are development figures; the held-out figure for the ninth "
    "round's parser is the tenth set's first run."),
    "heldout10": (
    "Its first run (below) measured the ninth round's parser and was issue 30's claim until the eleventh held-out set "
    "(written after set 10's first run and frozen before the tenth round, by an author who wrote no earlier set and no "
    "parser rule) had its first run. The failures of set 10's first run were then fixed in the tenth round (numbers in "
    "words of any size before a unit, “an inch and a half”, any fraction's numerator, “half as much again”; a sized "
    "place the product must fit as a reference measure; values read from another setting (“as deep as the backrest "
    "is tall”, “half the height of the stem”: the program's match operation); viewpoints, scene-setting comparisons "
    "and list markers dropped; a degree shared by a list, “X and Y, N shorter each”; “pinch in”, “tighten”, "
    "“somewhere to rest their elbows”, a flat or vertical part; a pouring lip, finger ring, hook and second arm "
    "refused by name), so the set is **no longer held-out**: its current figures below are development figures; the "
    "held-out figure for the tenth round's parser is the eleventh set's first run."),
    "heldout11": (
    "Its first run (below) measured the tenth round's parser and was issue 30's claim until the twelfth held-out set "
    "(written after set 11's first run and frozen before the eleventh round, by an author who wrote no earlier set and "
    "no parser rule) had its first run. The failures of set 11's first run were then fixed in the eleventh round (no "
    "mapper path raises on text input: an internal error is a refusal with a message, and “± 0” / “+0 cm” is a keep; "
    "the engineering register — letter abbreviations W / D / H / R, Ø, arrows, a unit glossed in brackets, “x1.5”, "
    "“incl.”, “from N up to M”, “minus 10%”; corrections inside a sentence, the last value winning; comparisons with "
    "the current build; a reason after an edit no longer read as a missing part; a part named before a comma and an "
    "amount; “frosted”, closure types and mirrored parts refused by name), so the set is **no longer held-out**: its "
    "current figures below are development figures; the held-out figure for the eleventh round's parser is the "
    "twelfth set's first run."),
    "heldout12": (
    "Its first run (below) measured the eleventh round's parser and was issue 30's claim until the thirteenth held-out "
    "set (written after set 12's first run and frozen before the twelfth round, by an author who wrote no earlier set "
    "and no parser rule) had its first run. The failures of set 12's first run were then fixed in the twelfth round "
    "(tickets, reviews and feedback before or after a request read as its reason, numbers included; polite frames — "
    "“would it be possible to …”, “could we perhaps …” — read as the request; a place's or container's size before a "
    "request with its own amount read as the reason, so the edit's number wins; US fluid ounces; “handle-free”, "
    "“take it off” as removals; “arms to push themselves up on” as armrests; a “so …” purpose after an edit), so the "
    "set is **no longer held-out**: its current figures below are development figures; the held-out figure for the "
    "twelfth round's parser is the thirteenth set's first run."),
    "heldout13": (
    "Its first run (below) measured the twelfth round's parser and was issue 30's claim until the fourteenth held-out "
    "set (written after set 13's first run and frozen before the thirteenth round, by an author who wrote no earlier "
    "set and no parser rule) had its first run. The failures of set 13's first run were then fixed in the thirteenth "
    "round (shorthand lists of edits separated by “/”, “•”, “&”, “+” or “n”, with a unit said once for the list; "
    "abbreviations — “ht”, “dia”, “btm”, “w/o”, “~”, “N mil”; typos one letter away from a dimension or part word; "
    "dictated decimals, “four point five”; “tiny bit”, “more tall of 3 cm”; a statement after an edit read as its "
    "reason; paper and cardboard refused as materials), so the set is **no longer held-out**: its current figures "
    "below are development figures; the held-out figure for the thirteenth round's parser is the fourteenth set's "
    "first run.")}


def _heldout_record_path(name: str = "heldout"):
    from .fresh import DATA

    return DATA / f"{name}_first_run.json"


def _recorded(name: str) -> bool:
    return _heldout_record_path(name).exists()


def _next_unrun() -> str | None:
    """The oldest held-out set whose first run is not yet recorded (what ``heldout-first-run`` runs)."""
    return next((n for n in HELDOUT_SETS if not _recorded(n)), None)


def heldout_first_run(name: str | None = None) -> None:
    """``python -m engines.prototype.reproduce heldout-first-run [SET] [--no-page]``: the one and only first run
    of every mapper on a frozen held-out set. It records each row's raw outcome (refused, message, changed
    parameters) in ``data/<SET>_first_run.json`` with the set's sha256 and the code's commit; the results page
    judges the issue's claim on this record. Refuses to run again once the record exists."""
    import datetime
    import subprocess

    from . import fresh
    from .encoder import get_encoder

    name = name or _next_unrun()
    if name is None:
        raise SystemExit("every held-out set has had its first run; a new figure needs a new set, frozen first")
    path = _heldout_record_path(name)
    if path.exists():
        raise SystemExit(f"{path} exists: the {name} set has had its first run (the claim stays that run's)")
    rows = fresh.load(name)
    enc = get_encoder()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "engines/prototype"], capture_output=True,
                           text=True).stdout.strip()
    t0 = time.perf_counter()
    runs = []
    for kind, src in FRESH_MAPPERS:
        r = fresh.run(kind, src, enc, rows=rows)
        print(f"{kind} / {src}: {_pct(r['accuracy'])} of {r['n']}, refusals {_pct(r['refusal_correct'])}, "
              f"{r['false_refusals']} false refusals ({r['seconds_per_instruction']:.2f} s/instruction)", flush=True)
        runs.append({"mapper": kind, "spec_source": src, "seconds_per_instruction": r["seconds_per_instruction"],
                     "accuracy": r["accuracy"],
                     "outcomes": [{k: o[k] for k in ("text", "ok", "why", "refused", "message", "error", "changed")}
                                  for o in r["rows"]]})
    rec = {"set": "engines/prototype/data/" + fresh.SETS[name], "sha256": fresh.set_digest(name),
           "n": len(rows), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "commit": commit, "uncommitted_engine_changes": dirty.splitlines(),
           "seconds": round(time.perf_counter() - t0), "runs": runs}
    path.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def heldout_first_results(name: str = "heldout") -> tuple[dict, list[dict]]:
    """A set's recorded first run, re-judged against the set's current labels: (record, per-mapper summaries).
    Raises when the set's instructions changed, or when a verdict changed without a documented label fix."""
    from . import fresh

    rec = json.loads(_heldout_record_path(name).read_text(encoding="utf-8"))
    rows = list(fresh.load(name))
    fixed = {f["text"] for f in LABEL_FIXES[name]}
    out = []
    for run in rec["runs"]:
        if [o["text"] for o in run["outcomes"]] != [r["text"] for r in rows]:
            raise ValueError(f"the {name} set's instructions changed after its first run; a new set needs a new run")
        s = fresh.summarise(run["mapper"], run["spec_source"], rows, run["outcomes"], run["seconds_per_instruction"])
        for o, first in zip(s["rows"], run["outcomes"]):
            if o["ok"] != first["ok"] and o["text"] not in fixed:
                raise ValueError(f"verdict of {o['text']!r} changed since the first run without a documented label fix")
        out.append(s)
    return rec, out


def _label(kind: str, src: str) -> str:
    from .params import MAPPER_LABELS

    return MAPPER_LABELS[kind] + (f" — {src} spec" if kind in ("interface", "llm_interface") else "")


def _kind_table(runs: list[dict], kinds: list[str], n_by_kind: dict) -> list[str]:
    lines = ["| mapper | right | direction | locality | refusals right | false refusals | "
             + " | ".join(f"{k} (n={n_by_kind[k]})" for k in kinds) + " | s/instruction |",
             "|---" * (7 + len(kinds)) + "|"]
    for r in runs:
        lines.append(f"| {r['label']} | {_pct(r['accuracy'])} | {_pct(r['direction'])} | {_pct(r['locality'])} | "
                     f"{_pct(r['refusal_correct'])} | {r['false_refusals']} | "
                     + " | ".join(_pct(r["by_kind"].get(k, 0.0)) for k in kinds)
                     + f" | {r['seconds_per_instruction']:.2f} |")
    return lines


def _claimed_set() -> str:
    """The newest held-out set whose first run is recorded carries issue 30's claims (the newest set while none
    is recorded); an older set is a former held-out set, a newer one awaits its first run."""
    recorded = [n for n in HELDOUT_SETS if _recorded(n)]
    return recorded[-1] if recorded else HELDOUT_SETS[-1]


def _is_former(name: str) -> bool:
    return HELDOUT_SETS.index(name) < HELDOUT_SETS.index(_claimed_set())


def heldout_title(name: str) -> str:
    return FORMER_TITLES[name] if _is_former(name) else CLAIM_TITLES[name]


def heldout_section(rep: Report, enc, name: str | None = None) -> dict:
    """A held-out set's section. The newest set (``_claimed_set``) carries issue 30's claims, judged on its
    recorded first run (all mappers); an older one is reported as a former held-out set. Both add a
    re-measurement of the embedding mappers with the current code (informational: a later parser fix shows
    there, never in a first-run figure)."""
    from . import fresh

    name = name or _claimed_set()
    claimed = name == _claimed_set()
    title = heldout_title(name)
    k = SET_NUMBER[name]
    begin, end = f"<!-- {name}-set:begin -->", f"<!-- {name}-set:end -->"
    claim_acc = (f"Issue 30, held-out designer-phrasing set {k} ({WRITTEN.get(name, WRITTEN_BEFORE_FIXES)}, frozen "
                 "before its first run): the default setup "
                 "(interface + MiniLM, derived spec) does the right thing on ≥ 85% (direction, locality and refusal "
                 "judged automatically), at the first run")
    claim_ref = (f"Issue 30, held-out set {k}: refusals are 100% right on impossible and unsupported requests (model "
                 "unchanged, message shown), and nothing expressible is refused, at the first run")
    if not _heldout_record_path(name).exists():
        why = f"no first run recorded (python -m engines.prototype.reproduce heldout-first-run {name})"
        if claimed:
            rep.not_measured(claim_acc, "—", why)
            rep.not_measured(claim_ref, "—", why)
        rep.section("\n".join([begin, f"## {title}", "", f"Not measured: {why}.", end]))
        return {}
    rec, first = heldout_first_results(name)
    for r in first:
        r["label"] = _label(r["mapper"], r["spec_source"])
    default = first[0]
    when = f"first run {rec['date']}, code {rec['commit'][:7]}"
    rows = list(fresh.load(name))
    current = []
    for kind, src in [m for m in FRESH_MAPPERS if not m[0].startswith("llm")]:
        r = fresh.run(kind, src, enc, rows=rows)
        r["label"] = _label(kind, src)
        current.append(r)
    if claimed:
        rep.claim(claim_acc, "—", f"{_pct(default['accuracy'])} of {default['n']} ({when}; hand spec "
                  f"{_pct(first[1]['accuracy'])})", default["accuracy"] >= 0.85)
        rep.claim(claim_ref, "—", f"{_pct(default['refusal_correct'])} of {default['n_refuse']} refusal items; "
                  f"{default['false_refusals']} false refusals ({when})",
                  default["refusal_correct"] == 1.0 and default["false_refusals"] == 0)
    else:
        rep.reported(f"Issue 30, {title.split(' (')[0].lower()} (no longer held-out: failures seen at its first run "
                     "were fixed afterwards): the default setup does the right thing", "—",
                     f"first run {_pct(default['accuracy'])} of {default['n']} ({when}; refusals "
                     f"{_pct(default['refusal_correct'])}, {default['false_refusals']} false refusals); current code "
                     f"{_pct(current[0]['accuracy'])} (refusals {_pct(current[0]['refusal_correct'])}, "
                     f"{current[0]['false_refusals']} false refusals; a development figure)")
    kinds = list(default["n_by_kind"])
    same = all([o["ok"] for o in c["rows"]] == [o["ok"] for o in f["rows"]] for c, f in zip(current, first))
    changed_set = rec["sha256"] != fresh.set_digest(name)
    lines = [begin, f"## {title}", "",
             f"{default['n']} instructions (`{rec['set']}`), written for issue 30 in designers' own phrasing, covering "
             "every product and every failure kind of the issue. The set was committed (frozen) before any mapper had "
             "read it; its labels were checked only by compiling one hand-written interface program per row (the "
             f"`program` field; no mapper sees it). The first run ({rec['date']}, code {rec['commit'][:7]}, "
             f"{rec['seconds']} s; record "
             f"`engines/prototype/data/{name}_first_run.json`, each row's raw outcome) is judged with the same judge "
             "as the development set (`engines/prototype/fresh.py`: direction and the stated amount, locality, "
             "refusal)." + (" **It carries issue 30's claims.**" if claimed else ""), ""]
    if _is_former(name) or (claimed and name in AFTERWARDS):
        lines += [AFTERWARDS[name], ""]
    lines += [*([f"Aborted attempt, {a}" for a in ABORTED_ATTEMPTS[name]] + [""] if ABORTED_ATTEMPTS[name] else []),
              "### First run" + (" (the claim)" if claimed else " (no longer held-out afterwards)" if _is_former(name)
                                 else ""), "",
              *_kind_table(first, kinds, default["n_by_kind"]), "", "### Label fixes after the first run", ""]
    if LABEL_FIXES[name]:
        lines += [f"- “{f['text']}”: expected {f['was']} → {f['now']} — {f['why']}" for f in LABEL_FIXES[name]]
        lines += ["", "The first run's outcomes are re-judged with the corrected labels (no mapper was re-run)."]
    else:
        lines += ["None: every label is as frozen" + (" (the set file differs from the recorded digest only "
                                                       "outside its labels)" if changed_set else "") + "."]
    lines += ["", "### Re-measured with the current code (informational, not the claim)", ""]
    if same:
        lines += ["The embedding rows re-measured by this run give the same verdict on every instruction as the "
                  "first run. The SmolLM2 rows are the first run's (minutes on the shared 2-core machine)."]
    else:
        lines += ["The parser changed after the first run (failures seen on this set may have been fixed for users); "
                  "these rows show the current code. **The first-run figures above stay the first run's.** SmolLM2 "
                  "rows are not re-measured.", "", *_kind_table(current, kinds, default["n_by_kind"])]
    fails = [f"- *{r['label']}*: “{o['text']}” ({o['domain']}, {o['kind']}) — {o['why']}"
             + (f" [message: {o['message'][:160]}]" if o["message"] else "") for r in first[:2] for o in r["rows"]
             if not o["ok"]]
    named = [f"- “{o['text']}” ({o['domain']}): {o['message'][:200]}" for r, o in zip(rows, default["rows"])
             if o["kind"] == "unsupported" and r.get("refuse") and o["refused"] and o["message"]]
    lines += ["", "Misses of the interface rows at the first run: " + ("none." if not fails else ""), *fails]
    if not same:
        now = [f"- *{r['label']}*: “{o['text']}” ({o['domain']}, {o['kind']}) — {o['why']}"
               for r in current[:2] for o in r["rows"] if not o["ok"]]
        lines += ["", "Misses of the interface rows with the current code: " + ("none." if not now else ""), *now]
    lines += ["", "Unsupported requests as the default setup refused them at the first run (the message names what "
              "is missing and what the model has):", *named, end]
    rep.section("\n".join(lines))
    (RESULTS_DIR / f"prototype_{name}.json").write_text(json.dumps({"first_run": first, "current": current}, indent=1))
    return {"first": first, "current": current}


def _splice(text: str, name: str, block: str) -> str:
    """Replace a held-out set's section in the page: between its markers, else under its (older) heading up to
    the next section, else insert it before the development-set section."""
    begin, end = f"<!-- {name}-set:begin -->", f"<!-- {name}-set:end -->"
    if begin in text:
        return text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    for title in (heldout_title(name), CLAIM_TITLES[name], FORMER_TITLES[name]):
        head = f"## {title}\n"
        if head in text:
            i = text.index(head)
            nxt = [j for j in (text.find("\n## ", i + len(head)), text.find(FRESH_BEGIN, i)) if j != -1]
            j = min(nxt) if nxt else len(text)
            return text[:i] + block + "\n\n" + text[j:].lstrip("\n")
    if FRESH_BEGIN in text:
        i = text.index(FRESH_BEGIN)
        return text[:i] + block + "\n\n" + text[i:]
    return text.rstrip() + "\n\n" + block + "\n"


def refresh_heldout_sections() -> None:
    """``python -m engines.prototype.reproduce heldout``: measure only the held-out sets' sections (the newest
    set's first run judged as issue 30's claims, the former set's first run and current figures) and splice
    them into docs/results/prototype.md, leaving the rest of the page as its last full run wrote it."""
    from .encoder import get_encoder

    enc = get_encoder()
    path = RESULTS_DIR / "prototype.md"
    text = path.read_text(encoding="utf-8")
    for name in reversed(HELDOUT_SETS):  # newest first, as the full page orders them
        t0 = time.perf_counter()
        rep = Report("prototype", "Prompt-to-prototype (Shi et al., ICML 2025)")
        heldout_section(rep, enc, name)
        table = ["| claim | paper | ours | result |", "|---|---|---|---|"] + [
            f"| {r.claim} | {r.paper} | {r.ours} | {r.verdict} |" for r in rep.rows]
        body = rep.sections[-1]
        head = f"## {heldout_title(name)}"
        begin, end = f"<!-- {name}-set:begin -->", f"<!-- {name}-set:end -->"
        inner = body[len(begin):body.rindex(end)].strip().replace(head, "", 1).strip()
        block = "\n".join([begin, head, "", f"Measured by `python -m engines.prototype.reproduce heldout` on "
                            f"{time.strftime('%Y-%m-%d')} in {time.perf_counter() - t0:.0f} s (this section only; "
                            "a full `make reproduce METHOD=prototype` puts these rows into the claims table above, "
                            "which may still show the rows of its last full run).", "", *table, "", inner, end])
        if name != _claimed_set():
            text = _splice(text, name, block)
        else:
            text = _splice(text, name, block) if f"<!-- {name}-set:begin -->" in text else \
                _insert_before_former(text, block)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


def _insert_before_former(text: str, block: str) -> str:
    """The claimed set's section goes first among the held-out sections (before the first other set's section
    on the page)."""
    claimed = _claimed_set()
    found = [text.index(a) for n in HELDOUT_SETS if n != claimed
             for a in (f"<!-- {n}-set:begin -->", f"## {CLAIM_TITLES[n]}\n", f"## {FORMER_TITLES[n]}\n") if a in text]
    if found:
        i = min(found)
        return text[:i] + block + "\n\n" + text[i:]
    return _splice(text, claimed, block)


if __name__ == "__main__":
    import sys

    cmd = sys.argv[1:]
    if cmd == ["fresh"]:
        refresh_fresh_section()
    elif cmd == ["heldout"]:
        refresh_heldout_sections()
    elif cmd[:1] == ["heldout-first-run"]:
        names = [c for c in cmd[1:] if not c.startswith("--")]
        heldout_first_run(*(names[:1] or [None]))
        if "--no-page" not in cmd:  # then regenerate the held-out sections of the page (section-only)
            refresh_heldout_sections()
    else:
        main()

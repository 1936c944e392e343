"""Automated domain specification: derive a domain's interface vocabulary from its model program and a
corpus of designer instructions paired with their modelling traces (the dev split only).

1. Mentions: content runs of every clause (language.content_runs) — candidate component names,
   operation words and intent phrases.
2. Embedding: MiniLM, PCA to a few dimensions (fitted per domain), standardised.
3. Clustering: a Dirichlet-process mixture of Gaussians sampled as in the AutoDSL reference code
   (Shi et al., ACL 2024; ``DSL_design/algorithm/DPMM.py``): all points start in one cluster; in every
   sweep each point joins cluster k with weight N_k/(N−1+α)·N(x | μ_k, Σ_k) or a new cluster with weight
   α/(N−1+α); clusters are re-fitted from their members after the sweep and empty ones dropped.
4. Linking: each cluster is linked to the model program by the traces of the instructions its members
   occur in (which component / which attribute-direction / which multi-edit set they co-occur with),
   plus MiniLM similarity to the program's component and attribute names as a prior. Component clusters
   become synonym sets, operation clusters become attribute operation words, intent clusters become
   macros (abstraction layer) whose edits are the traces' majority edit set.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np

from . import language as L
from .domains import DOMAINS, Domain
from .interface import build_spec

INDUCTION_STOP = {"want", "like", "i'd", "should", "could", "would", "set", "please", "can", "make", "give",
                  "put", "need", "needs", "needed", "feels", "feel", "looks", "look", "is", "are", "use"}


def mentions_of(text: str, max_n: int = 3) -> list[str]:
    """Candidate mentions: the 1–3-grams of every clause's content runs ("back support loftier" gives
    "back support", "loftier", …); "more"/"less" only as a first word."""
    out = []
    for cl in L.clauses(text):
        if L.is_keep(cl):
            continue
        for run in L.content_runs(cl, extra_stop=INDUCTION_STOP, keep={"more", "less"}):
            w = run.split()
            for n in range(1, min(max_n, len(w)) + 1):
                for i in range(len(w) - n + 1):
                    g = w[i:i + n]
                    if g[-1] in ("more", "less") or any(x in ("more", "less") for x in g[1:]):
                        continue
                    if len(" ".join(g)) > 2:
                        out.append(" ".join(g))
    return out


# ----------------------------------------------------------------------------- DPMM (AutoDSL weighting)


class Gaussian:
    """A cluster: full covariance of its members + λI (AutoDSL), or λI alone (``spherical``)."""

    def __init__(self, x: np.ndarray, regular: float, spherical: bool = False):
        self.n = len(x)
        self.mu = x.mean(0)
        d = x.shape[1]
        cov = np.cov(x.T, bias=True) if self.n > 1 and not spherical else np.zeros((d, d))
        cov = cov + regular * np.eye(d)
        self.prec = np.linalg.inv(cov)
        self.logdet = np.linalg.slogdet(cov)[1]
        self.d = d

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        z = x - self.mu
        return -0.5 * (np.einsum("ij,jk,ik->i", z, self.prec, z) + self.logdet + self.d * np.log(2 * np.pi))


def dpmm(x: np.ndarray, alpha: float, regular: float, sweeps: int, seed: int,
         new_cluster: str = "predictive") -> np.ndarray:
    """Cluster labels of the rows of ``x`` (deterministic for a seed).

    ``new_cluster="autodsl"`` reproduces the reference code exactly: the new-cluster weight is
    α/(N−1+α) alone and every point that picks it lands in one shared new cluster, fitted after the sweep.
    ``"predictive"`` (default) multiplies that weight by the prior predictive density N(x | x̄, S + λI)
    of the base measure, opens a singleton immediately (the textbook collapsed sampler) and gives every
    cluster the shared spherical covariance λI, which makes the choice independent of the feature scale.
    """
    rng = np.random.default_rng(seed)
    n = len(x)
    label = np.zeros(n, int)
    log_new = np.log(alpha / (n - 1 + alpha))
    if new_cluster == "predictive":
        base = Gaussian(x, regular)  # N(x̄, S + λI): the base measure's prior predictive
        log_new = log_new + base.logpdf(x)
    else:
        log_new = np.full(n, log_new)
    if new_cluster == "autodsl":
        clusters = [Gaussian(x, regular)]
        for _ in range(sweeps):
            K = len(clusters)
            logp = np.stack([c.logpdf(x) + np.log(c.n / (n - 1 + alpha)) for c in clusters], 1)
            for i in rng.permutation(n):
                lw = np.append(logp[i], log_new[i])
                w = np.exp(lw - lw.max())
                label[i] = rng.choice(K + 1, p=w / w.sum())
            clusters, new = [], np.zeros(n, int)
            for k in range(K + 1):
                idx = np.flatnonzero(label == k)
                if len(idx):
                    new[idx] = len(clusters)
                    clusters.append(Gaussian(x[idx], regular))
            label = new
        return label
    members: dict[int, set[int]] = {0: set(range(n))}
    fits = {0: Gaussian(x, regular, spherical=True)}
    nxt = 1
    for _ in range(sweeps):
        for i in rng.permutation(n):
            k0 = int(label[i])
            members[k0].discard(i)
            if members[k0]:
                fits[k0] = Gaussian(x[sorted(members[k0])], regular, spherical=True)
            else:
                del members[k0], fits[k0]
            ks = list(fits)
            lw = np.array([fits[k].logpdf(x[i:i + 1])[0] + np.log(len(members[k]) / (n - 1 + alpha)) for k in ks]
                          + [log_new[i]])
            w = np.exp(lw - lw.max())
            j = rng.choice(len(ks) + 1, p=w / w.sum())
            k = ks[j] if j < len(ks) else nxt
            if k == nxt:
                members[k], nxt = set(), nxt + 1
            members[k].add(i)
            fits[k] = Gaussian(x[sorted(members[k])], regular, spherical=True)
            label[i] = k
    _, label = np.unique(label, return_inverse=True)
    return label


def features(vecs: np.ndarray, dim: int) -> np.ndarray:
    z = vecs - vecs.mean(0)
    u, s, vt = np.linalg.svd(z, full_matrices=False)
    f = z @ vt[:dim].T
    return f / (f.std(0) + 1e-9)


def trace_profile(domain: Domain, mentions: list[str], occ: dict) -> np.ndarray:
    """Where each mention acts in the modelling traces: its distribution over edited components and over
    (attribute, direction) — the command-side half of the features, so that "taller" and "shorter"
    (neighbours in embedding space) separate."""
    comps = domain.components
    ops = sorted({(p.attribute, d) for p in domain.params for d in "+-"})
    out = np.zeros((len(mentions), len(comps) + len(ops)))
    for i, m in enumerate(mentions):
        for o in occ[m]:
            for e in o["edits"]:
                p = domain.by_id[e["target"]]
                out[i, comps.index(p.component)] += 1
                out[i, len(comps) + ops.index((p.attribute, e["dir"]))] += 1
        out[i] /= max(len(occ[m]), 1)
    return out


# ----------------------------------------------------------------------------- linking


def _entropy_share(c: Counter, total: int) -> tuple[object, float]:
    if not c:
        return None, 0.0
    lab, k = c.most_common(1)[0]
    return lab, k / max(total, 1)


def specify_domain(domain: Domain, rows: list[dict], encoder, alpha: float = 1.0, regular: float = 0.3,
                   dim: int = 8, sweeps: int = 5, seed: int = 0, prior: float = 0.3,
                   new_cluster: str = "predictive", trace_weight: float = 4.0) -> dict:
    """Induce the lexical layer of one domain; returns {"lexicon", "clusters", "mentions", "labels"}."""
    occ: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        cls = [c for c in L.clauses(r["text"]) if not L.is_keep(c)]
        # Align clauses with the trace in order when they correspond one to one (a trace records the
        # commands in the order the designer asked for them); otherwise the evidence stays unaligned.
        aligned = len(cls) == len(r["edits"]) and len(cls) > 1
        for i, cl in enumerate(cls):
            edits = [r["edits"][i]] if aligned else r["edits"]
            for m in mentions_of(cl):
                occ[m].append({"edits": edits, "single_clause": aligned or len(cls) == 1})
    mentions = sorted(occ)
    vecs = encoder(mentions)
    label = dpmm(np.hstack([features(vecs, dim), trace_weight * trace_profile(domain, mentions, occ)]),
                 alpha, regular, sweeps, seed, new_cluster)

    comp_names = domain.components
    attr_names = sorted({p.attribute for p in domain.params})
    comp_anchor = encoder([c.replace("_", " ") for c in comp_names])
    attr_anchor = encoder([a.replace("_", " ") for a in attr_names])
    clusters, lexicon = [], {"components": defaultdict(lambda: {"synonyms": []}),
                             "operations": defaultdict(lambda: defaultdict(list)), "macros": []}
    macro_groups: dict[tuple, list[str]] = defaultdict(list)
    def votes(members: list[str]) -> tuple[Counter, Counter, Counter, int]:
        comp_votes, op_votes, macro_votes, n = Counter(), Counter(), Counter(), 0
        for m in members:
            single = [o for o in occ[m] if o["single_clause"]]
            for o in single or occ[m]:  # multi-clause traces are unaligned: use them only as a last resort
                n += 1
                comp_votes.update({e["target"].split(".")[0] for e in o["edits"]})
                op_votes.update({(domain.by_id[e["target"]].attribute, e["dir"]) for e in o["edits"]})
                if o["single_clause"] and len(o["edits"]) >= 2:
                    macro_votes[tuple(sorted((e["target"], e["dir"]) for e in o["edits"]))] += 1
        return comp_votes, op_votes, macro_votes, n

    for k in range(label.max() + 1):
        members = [mentions[i] for i in np.flatnonzero(label == k)]
        cent = vecs[label == k].mean(0)
        comp_votes, op_votes, macro_votes, n = votes(members)
        c_lab, c_share = _entropy_share(comp_votes, n)
        o_lab, o_share = _entropy_share(op_votes, n)
        m_lab, m_share = _entropy_share(macro_votes, n)
        c_sim = float((comp_anchor @ cent).max()) / max(np.linalg.norm(cent), 1e-9)
        a_sim = float((attr_anchor @ cent).max()) / max(np.linalg.norm(cent), 1e-9)
        # One clause that always causes several edits is an intent (abstraction layer): macro first.
        # An operation word is the more specific reading (it implies its component), so it wins ties;
        # MiniLM similarity to the program's names only breaks near-ties of the two shares.
        if m_share >= 0.5:
            kind = "macro"
        elif abs(o_share - c_share) < 1e-9:
            kind = "operation"
        else:
            kind = "operation" if o_share + prior * a_sim > c_share + prior * c_sim else "component"
        link = {"component": c_lab, "operation": o_lab, "macro": m_lab}[kind]
        share = {"component": c_share, "operation": o_share, "macro": m_share}[kind]
        if link is None or share < 0.5:
            kind, link = "unlinked", None
        # A member enters the lexicon only when its own traces agree with its cluster's link.
        agree = []
        for m in members:
            cv, ov, mv, _ = votes([m])
            own = {"component": cv, "operation": ov, "macro": mv}.get(kind)
            top = own.most_common(2) if own else []
            if top and top[0][0] == link and (len(top) == 1 or top[0][1] > top[1][1]):  # a strict majority
                agree.append(m)
        clusters.append({"id": int(k), "members": members, "kind": kind,
                         "link": list(link) if isinstance(link, tuple) else link, "support": n,
                         "confidence": round(share, 3), "lexicon": agree})
        if kind == "component":
            lexicon["components"][link]["synonyms"] += agree
        elif kind == "operation":
            lexicon["operations"][link[0]][link[1]] += agree
        elif kind == "macro":
            macro_groups[link] += agree
    for edits, phrases in macro_groups.items():
        lexicon["macros"].append({"name": max(phrases, key=lambda p: len(occ[p])), "phrases": sorted(phrases),
                                  "edits": [{"target": t, "dir": d} for t, d in edits]})
    lexicon = {"components": {k: dict(v) for k, v in lexicon["components"].items()},
               "operations": {a: dict(v) for a, v in lexicon["operations"].items()}, "macros": lexicon["macros"]}
    return {"lexicon": lexicon, "clusters": clusters, "mentions": mentions, "labels": label.tolist()}


def gold_mention_labels(rows: list[dict]) -> dict[str, str]:
    """Hand labels of surface forms (from the instruction set's mention annotations)."""
    votes: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        for m in r.get("mentions", []):
            votes[m["text"].lower()][m["label"]] += 1
    return {t: c.most_common(1)[0][0] for t, c in votes.items()}


def quality(domain: Domain, result: dict, rows: list[dict]) -> dict:
    """ARI / purity of the induced clusters against hand labels, and coverage of the model program."""
    from sklearn.metrics import adjusted_rand_score

    gold = gold_mention_labels(rows)
    pairs = [(gold[m], lab) for m, lab in zip(result["mentions"], result["labels"]) if m in gold]
    ari = adjusted_rand_score([g for g, _ in pairs], [c for _, c in pairs]) if len(pairs) > 1 else 0.0
    by_c: dict[int, Counter] = defaultdict(Counter)
    for g, c in pairs:
        by_c[c][g] += 1
    purity = sum(c.most_common(1)[0][1] for c in by_c.values()) / max(len(pairs), 1)
    lx = result["lexicon"]
    covered = [p.id for p in domain.params
               if p.component in lx["components"] and (p.kind == "bool" or p.attribute in lx["operations"]
                                                      or p.kind == "int")]
    return {"ari": float(ari), "purity": float(purity), "labelled_mentions": len(pairs),
            "coverage": len(covered) / len(domain.params), "clusters": len(result["clusters"])}


MACHINERY = set(L.POSITIVE) | set(L.NEGATIVE) | {"add", "drop", "remove", "take", "get", "rid", "put", "give",
                                                  "without", "no", "low", "high"}


def clean(lexicon: dict, domain: Domain, other_names: set[str] = frozenset()) -> dict:
    """Separate the layers: a component name contains no operation word or machinery word, an operation
    word contains no component name and no attribute name (those are read as named attributes)."""
    comp_words = {s for e in lexicon["components"].values() for s in e["synonyms"]} | set(domain.components) \
        | set(other_names)
    attr_names = {p.attribute.replace("_", " ") for p in domain.params}
    op_words = {w for ds in lexicon["operations"].values() for ws in ds.values() for w in ws}

    def has(phrase: str, parts) -> bool:
        return any(L.find_phrase(phrase, [x]) for x in parts if x != phrase)

    comps = {c: {"synonyms": sorted({s for s in e["synonyms"] if s not in MACHINERY and not has(s, op_words)})}
             for c, e in lexicon["components"].items()}
    ops = {a: {d: sorted({w for w in ws if w not in attr_names and not has(w, comp_words | attr_names)})
               for d, ws in ds.items()} for a, ds in lexicon["operations"].items()}
    return {"components": comps, "operations": ops, "macros": lexicon["macros"]}


def specify(rows: list[dict], encoder, domains: list[str] | None = None, on_progress=None, **kw) -> dict:
    """Induced interface spec per domain (JSON-able), with its clusters and quality. Operation words are
    attribute-level vocabulary, so they are pooled over the domains whose model programs share the
    attribute; component names and macros stay per domain."""
    names = domains or list(DOMAINS)
    results = {}
    for i, name in enumerate(names):
        dom = DOMAINS[name]
        dr = [r for r in rows if r["domain"] == name]
        results[name] = (specify_domain(dom, dr, encoder, **kw), dr)
        if on_progress:
            on_progress((i + 1) / len(names), f"{name}: {len(results[name][0]['clusters'])} clusters")
    pooled: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for res, _ in results.values():
        for a, ds in res["lexicon"]["operations"].items():
            for d, ws in ds.items():
                pooled[a][d] |= set(ws)
    all_names = {s for res, _ in results.values() for e in res["lexicon"]["components"].values()
                 for s in e["synonyms"]} | {c for d in DOMAINS.values() for c in d.components}
    out = {}
    for name, (res, dr) in results.items():
        dom = DOMAINS[name]
        attrs = {p.attribute for p in dom.params if p.kind != "bool"}
        lex = dict(res["lexicon"], operations={a: {d: sorted(ws) for d, ws in ds.items()}
                                               for a, ds in pooled.items() if a in attrs})
        lex = clean(lex, dom, all_names)
        res["lexicon"] = lex
        spec = build_spec(dom, lex, source="induced")
        spec["induction"] = {"clusters": res["clusters"], "quality": quality(dom, res, dr),
                             "corpus": len(dr), "settings": kw}
        out[name] = spec
    return out


def main() -> None:
    """Regenerate data/induced_specs.json from the dev split (deterministic)."""
    from . import dataset
    from .encoder import get_encoder
    from .specs import INDUCED

    specs = specify(dataset.load("dev"), get_encoder())
    INDUCED.write_text(json.dumps(specs, indent=1))
    for name, s in specs.items():
        print(name, s["induction"]["quality"])


if __name__ == "__main__":
    main()


def run_specify(params, ctx=None):
    """Entry point: induce the interface from the dev corpus with the given DPMM settings (the bundled
    data/induced_specs.json is the default-settings result); returns clusters, quality and the spec."""
    from engines.common.context import LocalContext, Subprogress
    from engines.common.params import validate

    from . import dataset
    from .encoder import get_encoder
    from .params import SpecifyParams

    p = validate(SpecifyParams, params)
    ctx = ctx or LocalContext()
    ctx.progress(0.02, "loading MiniLM and the dev corpus")
    kw = p.model_dump(exclude={"domains"})
    specs = specify(dataset.load("dev"), get_encoder(), list(p.domains), on_progress=Subprogress(ctx, 0.05, 0.95), **kw)
    ref = ctx.artifacts.save_json("induced_specs.json", specs)
    ctx.progress(1.0, "done")
    return SpecifyResult(specs=specs, artifact=ref)


from pydantic import BaseModel as _BaseModel  # noqa: E402


class SpecifyResult(_BaseModel):
    specs: dict
    artifact: str

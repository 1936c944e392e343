"""Entry points: ``craft`` (one poison for one query: craft, inject, query before/after, remove) and
``benchmark`` (the paper's class-wise protocol for PE-B / PE-S / PE-C, optionally with a defence)."""
from __future__ import annotations

import threading
import time

import numpy as np
from pydantic import BaseModel

from engines.common.context import LocalContext, Subprogress
from engines.common.params import validate

from .attack import aux_neighbours, craft_images, make_poison, poison_text, target_embedding
from .generator import contains, correct, load_reader
from .knowledge import Corpus, build_corpus
from .params import BenchmarkParams, CraftParams, SystemParams
from .pipeline import VLRag
from .retriever import Retriever

_lock = threading.Lock()
_systems: dict = {}


class BadInput(ValueError):
    """A user input that cannot be used (the message names it)."""


def _small() -> bool:
    from engines.common.settings import get_settings

    return get_settings().profile == "test"


def load_system(dataset: str, seed: int, progress=None):
    """(retriever, corpus, knowledge-base image vectors, auxiliary image vectors), cached per process."""
    from engines.common import zoo
    from engines.common.zoo.catalog import external_source

    key = (dataset, seed, _small(), external_source("clip") or "zoo")
    with _lock:
        if key not in _systems:
            zc = zoo.load("clip", ctx=progress, shared=True)
            retr = Retriever(zc)
            corpus = build_corpus(dataset, seed, _small())
            _systems[key] = (retr, corpus, retr.image_vectors(corpus.kb_images), retr.image_vectors(corpus.aux_images))
        return _systems[key]


def build_rag(p: SystemParams, retr: Retriever, corpus: Corpus, kb_iv: np.ndarray, defended: bool = True) -> VLRag:
    if not defended:
        return VLRag(retr, corpus, p.k, kb_image_vecs=kb_iv)
    return VLRag(retr, corpus, p.k, p.purification, p.instruction_filter, p.consistency_filter, p.consistency_z,
                 kb_image_vecs=kb_iv)


def load_image(path: str, size: int) -> np.ndarray:
    """An uploaded image as uint8 (size, size, 3); a clear message when it is not an image."""
    from pathlib import Path

    from PIL import Image, UnidentifiedImageError

    if not Path(path).is_file():
        raise BadInput(f"image_path: no such file {Path(path).name!r}")
    try:
        with Image.open(path) as im:
            im.load()
            img = im.convert("RGB").resize((size, size), Image.BICUBIC)
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise BadInput(f"image_path: {Path(path).name!r} is not an image PIL can read ({type(e).__name__})") from None
    return np.asarray(img, dtype=np.uint8)


# ----------------------------------------------------------------------------- craft


class CraftResult(BaseModel):
    variant: str
    dataset: str
    question: str
    target_answer: str
    generator: str
    query_label: str  # the query's class (zero-shot label for an upload)
    poison_text: str
    epsilon: float
    linf: int
    cos_start: float
    cos_best: float
    cos_final: float
    best_step: int
    trace: list[float]
    aux_used: int
    accepted: bool
    refused_reason: str
    rank_unoptimised: int
    rank: int  # the poison's rank for the target query (0 = not indexed)
    before: dict  # ids, texts, labels, distances, answer, correct, target
    after: dict
    eval: dict  # other same-class queries: n, top1, topk, asr
    fingerprint_before: str
    fingerprint_after_remove: str
    removed_exact: bool
    index_backend: str
    kb_size: int
    filtered_clean: int
    artifacts: dict
    elapsed_s: float


def _retrieval(rag: VLRag, ids, dists, answer: str, names: list[str], target: str, poison_entry: int = -1) -> dict:
    return dict(ids=[int(i) for i in ids], texts=[rag.texts[i] for i in ids],
                labels=[rag.corpus.classes[rag.labels[i]] if rag.labels[i] >= 0 else "poison" for i in ids],
                distances=[float(d) for d in dists], poison=[int(i) == poison_entry for i in ids],
                answer=answer, correct=correct(answer, names), target=contains(answer, target))


def craft(params: CraftParams | dict, ctx=None) -> CraftResult:
    p = validate(CraftParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    retr, corpus, kb_iv, aux_iv = load_system(p.dataset, p.seed, Subprogress(ctx, 0.0, 0.15))
    question = p.question or corpus.question
    if p.image_path:
        origin = load_image(p.image_path, corpus.query_images.shape[1])
        label = None
    else:
        if p.query_index >= len(corpus.query_images):
            raise BadInput(f"query_index: {p.query_index} is out of range; the {p.dataset} query set has "
                           f"{len(corpus.query_images)} images (0-{len(corpus.query_images) - 1})")
        origin = corpus.query_images[p.query_index]
        label = int(corpus.query_labels[p.query_index])
    ctx.progress(0.15, "building the knowledge base")
    rag = build_rag(p, retr, corpus, kb_iv)
    zs = int(rag.zero_shot(origin[None])[0])
    label = zs if label is None else label
    names = corpus.answer_names(label)
    reader = load_reader(p.generator)
    gen_kw = dict(max_new_tokens=p.max_new_tokens, fmt=p.chat_format, cancelled=ctx.cancelled)
    qv = rag.query_vectors(origin[None], question)
    d0, i0 = rag.retrieve(qv)
    ctx.progress(0.2, "answering without the poison")
    a0 = rag.answer(reader, i0, [zs], question, **gen_kw)[0]
    before = _retrieval(rag, i0[0], d0[0], a0, names, p.target_answer)
    fp0 = rag.index.fingerprint()
    # rank of the unoptimised pair (i₀, t_p): where the poison would land without the image optimisation
    tp = poison_text(question, p.target_answer, p.template)
    e0 = retr.fused(origin[None], [tp])
    rank0 = int(1 + (rag.index.distances(qv)[0] < float(((qv[0] - e0[0]) ** 2).sum())).sum())
    ctx.check_cancelled()
    poison = make_poison(retr, p.variant, origin, question, p.target_answer, p.epsilon, p.steps, p.step_fraction,
                         aux_iv, p.aux_number, Subprogress(ctx, 0.25, 0.7), ctx.cancelled, p.template)
    ing = rag.ingest(poison.image, poison.text)
    after, rank, ev = dict(before), 0, dict(n=0, top1=0.0, topk=0.0, asr=0.0)
    if ing.accepted:
        d1, i1 = rag.retrieve(qv)
        rank = int(rag.index.rank_of(qv, ing.entry)[0])
        ctx.progress(0.75, "answering with the poison in the knowledge base")
        a1 = a0 if np.array_equal(i1, i0) else rag.answer(reader, i1, [zs], question, **gen_kw)[0]
        after = _retrieval(rag, i1[0], d1[0], a1, names, p.target_answer, ing.entry)
        others = [j for j in corpus.class_queries(label) if p.image_path or j != p.query_index][: p.eval_queries]
        if others:
            ov = rag.query_vectors(corpus.query_images[others], question)
            ranks = rag.index.rank_of(ov, ing.entry)
            _, oi = rag.retrieve(ov)
            ozs = rag.zero_shot(corpus.query_images[others])
            hit = (oi == ing.entry).any(1)
            ctx.progress(0.85, f"testing the poison on {len(others)} other queries of the class")
            ans = rag.answer(reader, oi[hit], ozs[hit], question, **gen_kw) if hit.any() else []
            ev = dict(n=len(others), top1=float((ranks == 1).mean()), topk=float(hit.mean()),
                      asr=float(sum(contains(a, p.target_answer) for a in ans) / len(others)))
        rag.remove_last()
    fp1 = rag.index.fingerprint()
    arts = _craft_artifacts(ctx, rag, poison, before, after, p.epsilon)
    ctx.progress(1.0, "done")
    return CraftResult(
        variant=p.variant, dataset=p.dataset, question=question, target_answer=p.target_answer,
        generator=reader.label, query_label=corpus.classes[label], poison_text=poison.text, epsilon=p.epsilon,
        linf=poison.linf, cos_start=poison.cos_start, cos_best=poison.cos_best, cos_final=poison.cos_final,
        best_step=poison.best_step, trace=poison.trace, aux_used=len(poison.aux_ids), accepted=ing.accepted,
        refused_reason=ing.reason, rank_unoptimised=rank0, rank=rank, before=before, after=after, eval=ev,
        fingerprint_before=fp0, fingerprint_after_remove=fp1, removed_exact=fp0 == fp1,
        index_backend=rag.index.backend, kb_size=rag.index.ntotal, filtered_clean=rag.filtered_clean,
        artifacts=arts, elapsed_s=time.perf_counter() - t0)


def _craft_artifacts(ctx, rag: VLRag, poison, before: dict, after: dict, epsilon: float) -> dict:
    a = ctx.artifacts
    diff = poison.image.astype(np.float32) - poison.origin.astype(np.float32)
    amp = np.clip(127.5 + diff * (127.5 / max(epsilon, 1.0)), 0, 255).astype(np.uint8)
    out = dict(origin=a.save_image("query.png", poison.origin), poison=a.save_image("poison.png", poison.image),
               perturbation=a.save_image("perturbation.png", amp), before=[], after=[])
    for key, r in (("before", before), ("after", after)):
        for j, i in enumerate(r["ids"]):
            img = poison.image if r["poison"][j] else rag.images[i]
            out[key].append(a.save_image(f"{key}_{j}.png", img))
    return out


# ----------------------------------------------------------------------------- benchmark


class BenchmarkResult(BaseModel):
    dataset: str
    question: str
    target_answer: str
    template: str
    generator: str
    k: int
    classes: list[str]
    eval_number: int
    clean: dict  # acc, target_rate, recall, precision (and the same with the defence)
    variants: list[dict]  # variant, top1, topk, asr, acc, median_rank, cos_final, linf, per_class, removed_exact
    defended: list[dict]
    defence: dict
    consistency: dict  # variant -> asr ≤ topk + clean target + 0.02
    removed_exact: bool
    index_backend: str
    timings: dict
    elapsed_s: float


def _split_queries(corpus: Corpus, n_classes: int, eval_number: int, seed: int):
    rng = np.random.default_rng(seed + 1234)  # official scripts seed 1234
    crafts, held = [], []
    for c in range(n_classes):
        qi = corpus.class_queries(c)
        if len(qi) < 2:
            raise BadInput(f"class {corpus.classes[c]!r} has {len(qi)} queries: need one to craft on and one to test")
        perm = rng.permutation(qi)
        crafts.append(int(perm[0]))
        held.append(perm[1:1 + eval_number])
    return crafts, held


def craft_batch(retr, corpus, aux_iv, variant, crafts, question, p) -> tuple[np.ndarray, str, dict]:
    """Poison images for the crafting sample of every class at once (the optimisation is per image)."""
    text = poison_text(question, p.target_answer, p.template)
    origins = corpus.query_images[crafts]
    qiv = retr.image_vectors(origins)
    if variant == "pe_c":
        targets = np.stack([target_embedding(retr, question, aux_iv[aux_neighbours(v, aux_iv, p.aux_number)]) for v in qiv])
    else:
        targets = np.stack([target_embedding(retr, question, v[None]) for v in qiv])
    steps = 0 if variant == "pe_b" else p.steps
    imgs, info = craft_images(retr, origins, text, targets, p.epsilon if steps else 0.0, steps, p.step_fraction)
    info["linf"] = np.abs(imgs.astype(int) - origins.astype(int)).reshape(len(imgs), -1).max(1)
    return imgs, text, info


def _evaluate(rag, reader, variant, imgs, text, crafts, held, question, p, clean, ctx) -> dict:
    """Inject each class's poison, query the class's held-out queries, answer, remove the poison."""
    corpus = rag.corpus
    fp = rag.index.fingerprint()
    per_class, ranks, asr, acc, exact, refused, in_ctx = [], [], [], [], True, 0, []
    for c, (img, hq) in enumerate(zip(imgs, held)):
        ing = rag.ingest(img, text)
        rows_clean = clean["ids"][c]
        if not ing.accepted:
            refused += 1
            r = np.full(len(hq), rag.index.ntotal + 1)
            ids = rows_clean
        else:
            qv = clean["qv"][c]
            r = rag.index.rank_of(qv, ing.entry)
            _, ids = rag.retrieve(qv)
        answers = list(clean["answers"][c]) if clean["answers"] is not None else None
        if answers is not None:
            changed = [j for j in range(len(hq)) if not np.array_equal(ids[j], rows_clean[j])]
            if changed:
                new = rag.answer(reader, ids[changed], clean["zs"][c][changed], question, p.max_new_tokens,
                                 cancelled=ctx.cancelled, fmt=p.chat_format)
                for j, a in zip(changed, new):
                    answers[j] = a
            s = [contains(a, p.target_answer) for a in answers]
            if ing.accepted:
                in_ctx += [si for si, row in zip(s, ids) if ing.entry in row]
            k = [correct(a, corpus.answer_names(c)) for a in answers]
            asr += s
            acc += k
        if ing.accepted:
            rag.remove_last()
        exact &= rag.index.fingerprint() == fp
        ranks += list(r)
        per_class.append(dict(cls=corpus.classes[c], top1=float((r == 1).mean()), topk=float((r <= p.k).mean()),
                              asr=float(np.mean(s)) if answers is not None else None,
                              median_rank=float(np.median(r))))
        ctx.check_cancelled()
    ranks = np.array(ranks)
    return dict(variant=variant, top1=float((ranks == 1).mean()), topk=float((ranks <= p.k).mean()),
                asr=float(np.mean(asr)) if asr else None, acc=float(np.mean(acc)) if acc else None,
                median_rank=float(np.median(ranks)), mean_rank=float(ranks.mean()), refused=refused,
                retrieved_n=len(in_ctx), asr_given_retrieved=float(np.mean(in_ctx)) if in_ctx else None,
                per_class=per_class, removed_exact=bool(exact))


def _clean_run(rag, reader, held, question, p, ctx) -> dict:
    corpus = rag.corpus
    qv, ids, zs, answers = [], [], [], [] if not p.retrieval_only else None
    for c, hq in enumerate(held):
        v = rag.query_vectors(corpus.query_images[hq], question)
        _, i = rag.retrieve(v)
        z = rag.zero_shot(corpus.query_images[hq])
        qv.append(v)
        ids.append(i)
        zs.append(z)
        if answers is not None:
            answers.append(rag.answer(reader, i, z, question, p.max_new_tokens, cancelled=ctx.cancelled, fmt=p.chat_format))
    labels = np.concatenate([np.full(len(h), c) for c, h in enumerate(held)])
    rec, prec = rag.recall(np.concatenate(ids), labels)
    out = dict(qv=qv, ids=ids, zs=zs, answers=answers, recall=rec, precision=prec)
    if answers is not None:
        flat = [a for row in answers for a in row]
        out["acc"] = float(np.mean([correct(a, corpus.answer_names(int(y))) for a, y in zip(flat, labels)]))
        out["target_rate"] = float(np.mean([contains(a, p.target_answer) for a in flat]))
    return out


def _public(clean: dict) -> dict:
    return {k: v for k, v in clean.items() if k not in ("qv", "ids", "zs", "answers")}


def benchmark(params: BenchmarkParams | dict, ctx=None) -> BenchmarkResult:
    p = validate(BenchmarkParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    timings = {}
    retr, corpus, kb_iv, aux_iv = load_system(p.dataset, p.seed, Subprogress(ctx, 0.0, 0.1))
    question = corpus.question
    n_classes = min(p.classes, len(corpus.classes))
    crafts, held = _split_queries(corpus, n_classes, p.eval_number, p.seed)
    rag = build_rag(p, retr, corpus, kb_iv, defended=False)
    fp_start = rag.index.fingerprint()
    reader = None if p.retrieval_only else load_reader(p.generator)
    ctx.progress(0.1, "clean system: retrieval and answers without poison")
    t = time.perf_counter()
    clean = _clean_run(rag, reader, held, question, p, ctx)
    timings["clean_s"] = time.perf_counter() - t
    drag = build_rag(p, retr, corpus, kb_iv) if p.compare_defence else None
    dclean = _clean_run(drag, reader, held, question, p, ctx) if drag is not None else None
    variants, defended, poisons = [], [], {}
    for vi, v in enumerate(p.variants):
        t = time.perf_counter()
        ctx.progress(0.15 + 0.8 * vi / len(p.variants), f"{v}: crafting {n_classes} poisons")
        imgs, text, info = craft_batch(retr, corpus, aux_iv, v, crafts, question, p)
        timings[f"{v}_craft_s"] = time.perf_counter() - t
        t = time.perf_counter()
        ctx.progress(0.15 + 0.8 * (vi + 0.3) / len(p.variants), f"{v}: injecting and querying")
        row = _evaluate(rag, reader, v, imgs, text, crafts, held, question, p, clean, ctx)
        row.update(cos_start=float(np.mean(info["cos_start"])), cos_final=float(np.mean(info["cos_final"])),
                   linf=int(info["linf"].max()))
        timings[f"{v}_eval_s"] = time.perf_counter() - t
        variants.append(row)
        poisons[v] = imgs
        if drag is not None:
            ctx.progress(0.15 + 0.8 * (vi + 0.65) / len(p.variants), f"{v}: against the defence")
            defended.append(_evaluate(drag, reader, v, imgs, text, crafts, held, question, p, dclean, ctx))
    if p.verify_removal and reader is not None:
        ctx.progress(0.97, "answering the clean queries again on the restored index")
        getattr(reader, "_memo", {}).clear()  # regenerate: no answer is reused from before the attack
        after = _clean_run(rag, reader, held, question, p, ctx)
        same = all(np.array_equal(a, b) for a, b in zip(after["ids"], clean["ids"]))
        clean["after_removal"] = dict(acc=after["acc"], target_rate=after["target_rate"], same_retrieval=bool(same),
                                      index_restored=rag.index.fingerprint() == fp_start)
    cons = {}
    if not p.retrieval_only:
        for r in variants:
            cons[r["variant"]] = dict(asr=r["asr"], bound=r["topk"] + clean["target_rate"],
                                      ok=bool(r["asr"] <= r["topk"] + clean["target_rate"] + 0.02))
    dinfo = dict(purification=p.purification, instruction_filter=p.instruction_filter,
                 consistency_filter=p.consistency_filter, clean=_public(dclean) if dclean else None,
                 filtered_clean=drag.filtered_clean if drag is not None else 0)
    ctx.progress(1.0, "done")
    return BenchmarkResult(
        dataset=p.dataset, question=question, target_answer=p.target_answer, template=p.template,
        generator="none (retrieval only)" if reader is None else reader.label, k=p.k,
        classes=corpus.classes[:n_classes], eval_number=p.eval_number, clean=_public(clean), variants=variants,
        defended=defended, defence=dinfo, consistency=cons,
        removed_exact=all(r["removed_exact"] for r in variants + defended), index_backend=rag.index.backend,
        timings=timings, elapsed_s=time.perf_counter() - t0)


__all__ = ["craft", "benchmark", "CraftResult", "BenchmarkResult", "BadInput"]

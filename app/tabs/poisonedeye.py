"""Tab: PoisonedEye — one poisoned image-text pair hijacks a vision-language RAG system.

Run standalone with ``python -m app.tabs.poisonedeye`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.common.settings import get_settings
from engines.poisonedeye.params import (DATASET_LABELS, GENERATOR_LABELS, MAX_EPSILON, PURIFICATION_LABELS,
                                        TARGET_ANSWER, TEMPLATE_LABELS, VARIANT_LABELS)

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "poisonedeye"
VARIANT_CHOICES = [(v, k) for k, v in VARIANT_LABELS.items()]
DATASET_CHOICES = [(v, k) for k, v in DATASET_LABELS.items()]
GENERATOR_CHOICES = [(v, k) for k, v in GENERATOR_LABELS.items()]
PURIFICATION_CHOICES = [(v, k) for k, v in PURIFICATION_LABELS.items()]
TEMPLATE_CHOICES = [(v, k) for k, v in TEMPLATE_LABELS.items()]

INTRO = (
    "**PoisonedEye (ICML 2025) claims that a single poisoned image-text pair, added to the knowledge base of a "
    "retrieval-augmented vision-language model, gets retrieved for a target query — or for every query of a "
    "target class — and makes the model give the attacker's answer.** Click an example below, then "
    "**Craft & inject poison**: the tab optimises the poison image under an L∞ budget, inserts the pair, shows "
    "what is retrieved and answered before and after, and removes the poison again (the index returns bit for bit)."
)
DETAILS = (
    "System: knowledge base of captioned images, fused embedding e(i, t) = n(n(E_I(i)) + n(E_T(t))) from the zoo's "
    "tiny CLIP, exact flat-L2 index, top-k pairs handed to the generator. The generator is SmolLM2-135M-Instruct "
    "(offline, text only: every image reaches it as the retriever's zero-shot label) or a rule-based reader that is "
    "**not a language model** and always obeys an instruction in its context (an upper bound on inducibility). "
    "PE-B keeps the query image and adds the injection text; PE-S optimises the image towards the target query's "
    "embedding; PE-C towards the centroid of the attacker's nearest auxiliary images of the class. The attack only "
    "ever runs against this project's own knowledge base."
)


def _paths(refs) -> list:
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    root = get_settings().artifacts_dir
    return [str(resolve(root, r)) for r in refs]


def _gallery(res: dict, key: str) -> list:
    r = res[key]
    out = []
    for j, (path, text, lab, d, poison) in enumerate(zip(_paths(res["artifacts"][key]), r["texts"], r["labels"],
                                                         r["distances"], r["poison"])):
        tag = "☠ POISON" if poison else lab
        out.append((path, f"#{j + 1} {tag} (cos {1 - d / 2:.3f}): {text[:90]}"))
    return out


def summary(res: dict) -> str:
    b, a, ev = res["before"], res["after"], res["eval"]
    lines = [f"**{VARIANT_LABELS[res['variant']]}** on a *{res['query_label']}* query — question: “{res['question']}”, "
             f"target answer “{res['target_answer']}”, generator: {res['generator']}."]
    if not res["accepted"]:
        lines.append(f"🛡 The knowledge base **refused the poison**: {res['refused_reason']}.")
    else:
        lines.append(f"Poison rank for the target query: **{res['rank']}** (unoptimised pair: {res['rank_unoptimised']}); "
                     f"fused cosine to the target {res['cos_start']:.3f} → {res['cos_final']:.3f} "
                     f"(best step {res['best_step']}); ‖δ‖∞ = {res['linf']}/255 ≤ ε = {res['epsilon']:g}/255 on the saved PNG.")
    lines.append(f"Answer **before**: “{b['answer']}” ({'correct' if b['correct'] else 'not the class'}).  \n"
                 f"Answer **after**: “{a['answer']}” — "
                 + ("**attack succeeded** (target answer in the output)." if a["target"] else "target answer not produced."))
    if ev["n"]:
        lines.append(f"On {ev['n']} other queries of the class: poison top-1 {ev['top1']:.0%}, top-k {ev['topk']:.0%}, "
                     f"attack success {ev['asr']:.0%}.")
    lines.append(f"Poison removed; index restored bit for bit: **{res['removed_exact']}** "
                 f"({res['index_backend']}, {res['kb_size']} entries). {res['elapsed_s']:.1f} s.")
    return "  \n".join(lines)


def defaults() -> dict:
    """Tab defaults; the test profile's are cheap (few steps, the rule reader: no LLM to convert)."""
    if get_settings().profile == "test":
        return dict(steps=20, generator="rule", eval_queries=3)
    return dict(steps=100, generator="smollm2", eval_queries=10)


def craft_params(dataset, query_index, image, question, target, variant, epsilon, steps, k, aux_number, template,
                 generator, purification, instr, consist, eval_queries) -> dict:
    return dict(dataset=dataset, query_index=int(query_index), image_path=image or "", question=question or "",
                target_answer=(target or "").strip() or TARGET_ANSWER, variant=variant, epsilon=float(epsilon),
                steps=int(steps), k=int(k), aux_number=int(aux_number), template=template, generator=generator,
                purification=purification, instruction_filter=bool(instr), consistency_filter=bool(consist),
                eval_queries=int(eval_queries))


def example() -> dict:
    """The worked example shown on arrival: the first example row (digits, query 3, PE-S, ε 8) with the tab's
    defaults."""
    d = defaults()
    return craft_params("digits", 3, None, "", TARGET_ANSWER, "pe_s", 8, d["steps"], 3, 60, "paper", d["generator"],
                        "none", False, False, d["eval_queries"])


def render_craft(res: dict) -> tuple:
    """Query/poison/perturbation images, the cosine trace and the retrieval galleries before and after."""
    from engines.poisonedeye.plots import cosine_trace

    images = list(zip(_paths([res["artifacts"][n] for n in ("origin", "poison", "perturbation")]),
                      ["query image i₀", f"poison image i_p ({res['variant']})",
                       f"perturbation ×{127.5 / max(res['epsilon'], 1):.0f}"]))
    return images, cosine_trace(res), _gallery(res, "before"), _gallery(res, "after")


def run_craft(dataset, query_index, image, question, target, variant, epsilon, steps, k, aux_number, template,
              generator, purification, instr, consist, eval_queries, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "craft", craft_params(dataset, query_index, image, question, target, variant, epsilon,
                                                  steps, k, aux_number, template, generator, purification, instr,
                                                  consist, eval_queries))
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    yield job.id, *render_craft(res), summary(res)


def run_benchmark(dataset, variants, classes, eval_number, epsilon, steps, k, aux_number, template, generator,
                  retrieval_only, purification, instr, consist, progress=gr.Progress()):
    from engines.poisonedeye.plots import benchmark_bars, benchmark_table

    if not variants:
        raise gr.Error("Choose at least one variant.", title="Nothing selected")
    defence = purification != "none" or instr or consist
    params = dict(dataset=dataset, variants=list(variants), classes=int(classes), eval_number=int(eval_number),
                  epsilon=float(epsilon), steps=int(steps), k=int(k), aux_number=int(aux_number), template=template,
                  generator=generator, retrieval_only=bool(retrieval_only), purification=purification,
                  instruction_filter=bool(instr), consistency_filter=bool(consist), compare_defence=bool(defence))
    job = JobRun(METHOD_ID, "benchmark", params)
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    res = job.wait(progress)
    c = res["clean"]
    msg = (f"Clean system: recall@{res['k']} {c['recall']:.0%}"
           + (f", accuracy {c['acc']:.0%}, target-answer rate {c['target_rate']:.0%}" if "acc" in c else "")
           + f". Generator: {res['generator']}. Every poison removed exactly: **{res['removed_exact']}**. "
           f"{res['elapsed_s']:.0f} s.")
    if res["consistency"]:
        ok = all(v["ok"] for v in res["consistency"].values())
        msg += f"  \nASR ≤ top-k retrieval + clean target rate (+2 points) for every variant: **{ok}**."
    yield job.id, benchmark_table(res), benchmark_bars(res), msg


def build() -> None:
    from engines.poisonedeye.plots import TABLE_HEADERS

    gr.Markdown(INTRO)
    d = defaults()
    with gr.Accordion("How the system and the attack work", open=False):
        gr.Markdown(DETAILS)
    job_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            dataset = gr.Radio(DATASET_CHOICES, value="digits", label="Knowledge base and queries", elem_id="poisonedeye_dataset")
            query_index = gr.Number(3, precision=0, minimum=0, maximum=100_000, label="Target query (index in the held-out query set)",
                                    elem_id="poisonedeye_query")
            image = gr.Image(type="filepath", label="…or upload a query image (overrides the index)", height=140,
                             sources=["upload"], elem_id="poisonedeye_upload")
            question = gr.Textbox("", max_length=200, label="Question (empty = the dataset's question)",
                                  placeholder="What digit is shown in this image?")
            target = gr.Textbox(TARGET_ANSWER, max_length=60, label="Attacker's target answer A*")
            variant = gr.Radio(VARIANT_CHOICES, value="pe_s", label="Variant", elem_id="poisonedeye_variant")
            epsilon = gr.Slider(1, MAX_EPSILON, value=8, step=1, label="ε: L∞ budget in 8-bit levels (paper: 8/255)")
            steps = gr.Slider(0, 300, value=d["steps"], step=10, label="Sign-gradient steps (paper: 100)")
            with gr.Accordion("Retriever, generator and defences", open=False):
                k = gr.Slider(1, 10, value=3, step=1, label="Retrieved pairs k (paper: 3)")
                aux_number = gr.Slider(2, 200, value=60, step=1, label="PE-C: auxiliary images searched (paper: 60)")
                template = gr.Radio(TEMPLATE_CHOICES, value="paper", label="Injection text t_p")
                generator = gr.Radio(GENERATOR_CHOICES, value=d["generator"], label="Generator")
                purification = gr.Dropdown(PURIFICATION_CHOICES, value="none", label="Defence: purify KB images at ingestion")
                instr = gr.Checkbox(False, label="Defence: instruction filter on KB texts")
                consist = gr.Checkbox(False, label="Defence: image-text consistency filter")
                eval_queries = gr.Slider(0, 30, value=d["eval_queries"], step=1, label="Also test the poison on this many same-class queries")
            with gr.Row():
                run = gr.Button("Craft & inject poison", variant="primary", elem_id="poisonedeye_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="attack status", elem_id="poisonedeye_status")
        with gr.Column(scale=2):
            images = gr.Gallery(label="Query, poison and amplified perturbation", columns=3, height=220,
                                elem_id="poisonedeye_images")
            trace = gr.Plot(label="Fused cosine per step", show_label=False, elem_id="poisonedeye_trace")
            before = gr.Gallery(label="Retrieved before injection (rank, class, cosine, text)", columns=5, height=200,
                                elem_id="poisonedeye_before")
            after = gr.Gallery(label="Retrieved after injection (the poison is marked ☠)", columns=5, height=200,
                               elem_id="poisonedeye_after")
    gr.Examples([["digits", 3, "pe_s", 8], ["digits", 40, "pe_c", 8], ["digits", 3, "pe_b", 8], ["minicanvas", 5, "pe_c", 16]],
                inputs=[dataset, query_index, variant, epsilon], label="Attacks to try (then press Craft & inject poison)")

    with gr.Accordion("Class-wise benchmark: PE-B vs PE-S vs PE-C on held-out queries (job)", open=False):
        gr.Markdown("Per class the attacker crafts one poison on one query and the system answers held-out queries of "
                    "the same class (the paper's protocol). Any defence chosen above is also evaluated.")
        with gr.Row():
            variants = gr.CheckboxGroup(VARIANT_CHOICES, value=["pe_b", "pe_s", "pe_c"], label="Variants")
            classes = gr.Slider(1, 10, value=10, step=1, label="Classes")
            eval_number = gr.Slider(1, 30, value=20, step=1, label="Held-out queries per class")
            retrieval_only = gr.Checkbox(False, label="Retrieval only (skip the generator)")
            bench = gr.Button("Run class-wise benchmark", elem_id="poisonedeye_bench")
        bench_status = gr.Markdown(label="benchmark status", elem_id="poisonedeye_bench_status")
        table = gr.Dataframe(headers=TABLE_HEADERS, interactive=False, label="Per variant", elem_id="poisonedeye_table")
        bars = gr.Plot(label="Retrieval and attack success", show_label=False, elem_id="poisonedeye_bars")

    ev = run.click(run_craft, [dataset, query_index, image, question, target, variant, epsilon, steps, k, aux_number,
                               template, generator, purification, instr, consist, eval_queries],
                   [job_id, images, trace, before, after, status], api_name="poisonedeye_craft")
    worked_example.on_load(METHOD_ID, "craft", example(), render_craft, [images, trace, before, after], status,
                           done=lambda r: "**Worked example** (the first attack below; press **Craft & inject poison** "
                                          "to run your own).  \n" + summary(r),
                           missing=lambda: worked_example.missing_zoo("clip"), cancel_on=[run.click])
    ev2 = bench.click(run_benchmark, [dataset, variants, classes, eval_number, epsilon, steps, k, aux_number, template,
                                      generator, retrieval_only, purification, instr, consist],
                      [job_id, table, bars, bench_status], api_name="poisonedeye_benchmark")
    stop.click(cancel_job, job_id, status, cancels=[ev, ev2], api_name="poisonedeye_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

"""Tab: FedAG — federated domain-knowledge infusion into a frozen CLIP with per-domain adapters.

Run standalone with ``python -m app.tabs.fedag`` (inline jobs).
"""
from __future__ import annotations

import gradio as gr

from engines.fedag.params import BENCHMARK_DOMAINS, DOMAIN_LABELS, METHOD_LABELS

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "fedag"
DOMAIN_CHOICES = [(v, k) for k, v in DOMAIN_LABELS.items()]
BASELINE_CHOICES = [(METHOD_LABELS[k], k) for k in ("fedclip", "fedavg", "zeroshot")]

INTRO = (
    "**FedAG (ICML 2025) claims that a frozen foundation model can absorb the domain knowledge of private silos: "
    "one small gating adapter per domain learns from the clients' models by distillation on server-side synthetic "
    "data (weighted by client-estimated quality), and an attention network routes every test image — even from a "
    "domain no client holds — to the right adapters, beating a single FedAvg adapter (FedCLIP) and zero-shot CLIP "
    "in- and out-of-domain.** Click **Preview domains** to see the silos and the server's synthetic data, then "
    "**Run federation** (about a minute): per-round curves, the accuracy table, quality scores, and, for any test "
    "image, the attention over the adapters."
)
DETAILS = (
    "Each client holds one visual domain of scikit-learn digits (disjoint images) and trains a small CNN; raw "
    "images never leave it (every upload is checked). The server keeps the zoo's tiny CLIP frozen, one gate "
    "A_i(z) = softmax(W₂ tanh(W₁ z)) per in-domain on its image features, and g(s) = ReLU(w·s + b) for the "
    "attention α = softmax over adapters. Per round: clients train, score the server's synthetic samples against "
    "their class prototypes (q), upload weights + q; the server distils client → adapters (teacher logits × q), "
    "trains the attention with the own-domain regulariser λ·Σ max_j(α_j − α_own), distils adapters → clients, and "
    "each client merges θ ← m·θ_local + (1−m)·θ_distilled. Synthetic data: deformed digits from the public pool "
    "no silo holds, with 20% deliberately wrong samples. Measured claims: docs/results/fedag.md."
)


def sizes(n_domains: int) -> dict:
    """Silo size and adapter initialisation of the tab's federations (preview, run and worked example): the
    benchmark's 350 real images per domain (fewer with five domains, ``default_images_per_domain``) and the code's
    20 initialisation epochs; the test profile's 100 images and 3 epochs (its micro CLIP shows nothing more with
    the full sizes, and the suite waits for every run)."""
    from engines.common.settings import get_settings
    from engines.fedag.params import default_images_per_domain

    n = default_images_per_domain(n_domains)
    return dict(images_per_domain=min(n, 100), init_epochs=3) if get_settings().profile == "test" else \
        dict(images_per_domain=n)


def example() -> dict:
    """The worked example: the tab's defaults (4 domains, blur held out, 10 rounds, λ 0.1, m 0.9, all baselines);
    the test profile runs 2 rounds on smaller silos (``sizes``)."""
    from engines.common.settings import get_settings

    rounds = 2 if get_settings().profile == "test" else 10
    return dict(domains=list(BENCHMARK_DOMAINS), held_out="blur", clients_per_domain=1, rounds=rounds, lam=0.1,
                momentum=0.9, kd_alpha=0.5, quality=True, corruption=0.2, baselines=["fedclip", "fedavg", "zeroshot"],
                seed=0, **sizes(len(BENCHMARK_DOMAINS)))


def _path(ref: str) -> str:
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, ref))


def preview(domains, held_out="blur", corruption=0.2, seed=0):
    """The silos' images and the server's synthetic samples exactly as a federation with these settings builds
    them: the same ``FederationParams`` (image counts, split, generator), public pool, corruption share and seed
    (``domains.synthetic_sets``, which ``build_setup`` calls too). No model: in the web process."""
    import os

    import numpy as np
    from pydantic import ValidationError

    from engines.fedag.domains import real_domains, synthetic_sets
    from engines.fedag.params import GENERATOR_LABELS, SD_DIR_SETTING, FederationParams

    domains = list(domains or [])
    if not domains:
        raise gr.Error("Choose at least one domain.", title="Empty silos")
    try:
        p = FederationParams(domains=domains, held_out=held_out, corruption=float(corruption), seed=int(seed),
                             **sizes(len(domains)))
    except ValidationError as e:
        raise gr.Error("; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors()),
                       title="Invalid settings") from None
    real = real_domains(list(p.domains), p.images_per_domain, p.split_seed)
    sd_dir = os.environ.get(SD_DIR_SETTING, "").strip()
    syn = {} if sd_dir else dict(zip(p.in_domains, synthetic_sets(p)))

    def big(x):
        return (np.kron(x, np.ones((4, 4, 1))) * 255).round().astype(np.uint8)

    items = []
    for d in p.domains:
        if d == p.held_out:
            items += [(big(real[d].test_x[j]), f"{DOMAIN_LABELS[d]}: held-out test image (no client holds it)")
                      for j in range(3)]
            continue
        items += [(big(real[d].train_x[j]), f"{DOMAIN_LABELS[d]}: client image") for j in range(3)]
        for j in range(3 if d in syn else 0):
            tag = " (corrupted)" if syn[d].corrupted[j] else ""
            items.append((big(syn[d].x[j]), f"{DOMAIN_LABELS[d]}: synthetic '{syn[d].y[j]}'{tag}"))
    gen = (f"the Stable Diffusion pipeline of {SD_DIR_SETTING}, generated when the federation runs (they appear "
           "here with their quality scores after the run)" if sd_dir else GENERATOR_LABELS[p.generator])
    return items, (f"{len(p.domains)} domain(s): 3 client images per in-domain (private, shown only here), 3 test "
                   f"images of the held-out {DOMAIN_LABELS[p.held_out]}, and the first 3 of each in-domain's "
                   f"{p.synthetic_per_domain} server-side synthetic samples ({p.corruption:.0%} deliberately wrong, "
                   f"seed {p.seed}): {gen}.")


def run_federation(domains, held_out, clients, rounds, lam, momentum, kd_alpha, quality, corruption, baselines,
                   seed, progress=gr.Progress()):
    from engines.common.figures import subplots

    params = dict(domains=list(domains or []), held_out=held_out, clients_per_domain=int(clients),
                  **sizes(len(domains or [])),
                  rounds=int(rounds), lam=float(lam), momentum=float(momentum), kd_alpha=float(kd_alpha),
                  quality=bool(quality), corruption=float(corruption), baselines=list(baselines or []),
                  seed=int(seed))
    job = JobRun(METHOD_ID, "federate", params)
    yield job.id, None, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    pts = []
    for ev in job.stream(progress):
        if ev.preview and "round" in ev.preview:
            pts.append(ev.preview)
            fig, ax = subplots(figsize=(5, 3), layout="constrained")
            ax.plot([p["round"] for p in pts], [p["in"] for p in pts], "o-", color="tab:red", label="FedAG in-domain")
            ax.plot([p["round"] for p in pts], [p["ood"] for p in pts], "s--", color="tab:red", label="FedAG held-out")
            ax.set_ylim(0, 1)
            ax.set_xlabel("communication round")
            ax.legend(fontsize=7)
            yield job.id, None, fig, gr.skip(), gr.skip(), gr.skip(), gr.skip(), ev.message
    res = job.result
    yield job.id, *render(res), summary(res)


def summary(res: dict) -> str:
    fed = res["table"][0]
    others = ", ".join(f"{r['method']} {r['ood']:.1%}" for r in res["table"][1:])
    return (f"Held out **{DOMAIN_LABELS[res['held_out']]}**: FedAG out-of-domain **{fed['ood']:.1%}**"
            + (f" ({others})" if others else "") + f"; in-domain {fed['in']:.1%} (one2one {fed['in_one2one']:.1%}). "
            f"Quality AUROC clean vs corrupted {res['quality']['auroc']:.2f}. Privacy: {res['privacy']['uploads']} "
            f"uploads of weights + scores checked, raw images sent: {res['privacy']['raw_images']}. "
            f"{res['elapsed_s']:.0f} s.")


def render(res: dict) -> tuple:
    """The federation's result state, per-round curves, table, quality histogram and synthetic samples."""
    from engines.fedag.plots import alpha_heatmap, curves, quality_hist, table_rows

    gallery = [(_path(g["image"]), g["caption"]) for g in res["synthetic"]]
    return res, curves(res), table_rows(res), quality_hist(res), alpha_heatmap(res), gallery


def attention(res, domain, index):
    from engines.fedag.plots import attention_bars

    if not res:
        raise gr.Error("Run a federation first.", title="No federation yet")
    ex = [e for e in res["examples"] if e["domain"] == domain]
    if not ex:
        raise gr.Error(f"{domain!r} is not a domain of the last federation.", title="Unknown domain")
    e = ex[min(int(index), len(ex) - 1)]
    names = [DOMAIN_LABELS[d] for d in res["in_domains"]]
    where = "held-out domain (no client has it)" if e["held_out"] else "in-domain"
    text = (f"{where} image, label **{e['label']}**, FedAG predicts **{e['pred']}**. α: "
            + ", ".join(f"{n} {a:.2f} (says {p})" for n, a, p in zip(names, e["alpha"], e["adapter_pred"])))
    return _path(e["image"]), attention_bars(res, e), text


def build() -> None:
    from engines.fedag.plots import TABLE_HEADERS

    gr.Markdown(INTRO)
    with gr.Accordion("How the federation works", open=False):
        gr.Markdown(DETAILS)
    job_id = gr.State(None)
    result = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            domains = gr.CheckboxGroup(DOMAIN_CHOICES, value=list(BENCHMARK_DOMAINS), label="Silos: one domain each",
                                       elem_id="fedag_domains")
            held_out = gr.Radio(DOMAIN_CHOICES, value="blur", label="Held-out domain (no client holds it)",
                                elem_id="fedag_held_out")
            rounds = gr.Slider(1, 30, value=10, step=1, label="Communication rounds (paper: 10)", elem_id="fedag_rounds")
            lam = gr.Slider(0, 2, value=0.1, step=0.05, label="λ: attention regulariser (paper: 0.1; 0 = ablation)")
            momentum = gr.Slider(0, 1, value=0.9, step=0.05, label="m: momentum merge, weight of the local model (paper: 0.9)")
            with gr.Accordion("More settings", open=False):
                clients = gr.Slider(1, 3, value=1, step=1, label="Clients per domain")
                kd_alpha = gr.Slider(0, 1, value=0.5, step=0.05, label="KD α: KL weight vs cross-entropy (paper: 0.5)")
                quality = gr.Checkbox(True, label="Quality-weighted teachers (off = q ≡ 1 ablation)")
                corruption = gr.Slider(0, 0.8, value=0.2, step=0.05, label="Share of corrupted synthetic samples")
                baselines = gr.CheckboxGroup(BASELINE_CHOICES, value=["fedclip", "fedavg", "zeroshot"],
                                             label="Baselines (same silos and budget)")
                seed = gr.Number(0, precision=0, minimum=0, maximum=2**31 - 1, label="Seed")
            with gr.Row():
                prev = gr.Button("Preview domains", elem_id="fedag_preview")
                run = gr.Button("Run federation", variant="primary", elem_id="fedag_run")
                stop = gr.Button("Stop", variant="stop")
            status = gr.Markdown(label="federation status", elem_id="fedag_status")
        with gr.Column(scale=2):
            samples = gr.Gallery(label="Domains: client images and server synthetic samples", columns=6, height=230,
                                 elem_id="fedag_samples")
            plot = gr.Plot(label="Accuracy per round", show_label=False, elem_id="fedag_curves")
            table = gr.Dataframe(headers=TABLE_HEADERS, interactive=False, label="In- and out-of-domain accuracy",
                                 wrap=True, elem_id="fedag_table")
            with gr.Row():
                qplot = gr.Plot(label="Quality scores of synthetic samples", show_label=False, elem_id="fedag_quality")
                heat = gr.Plot(label="Mean attention per test domain and adapter", show_label=False,
                               elem_id="fedag_heatmap")
            with gr.Row():
                with gr.Column(scale=1):
                    ex_domain = gr.Radio(DOMAIN_CHOICES, value="blur", label="Test image: domain")
                    ex_index = gr.Slider(0, 11, value=0, step=1, label="Test image: index")
                    show = gr.Button("Show attention", elem_id="fedag_show")
                ex_image = gr.Image(label="Test image", height=140, interactive=False, elem_id="fedag_image", scale=1)
                ex_plot = gr.Plot(label="Attention over the adapters", show_label=False, elem_id="fedag_attention",
                                  scale=2)
            ex_text = gr.Markdown(label="attention of the chosen image", elem_id="fedag_attention_text")

    prev.click(preview, [domains, held_out, corruption, seed], [samples, status], api_name="fedag_preview")
    ev = run.click(run_federation, [domains, held_out, clients, rounds, lam, momentum, kd_alpha, quality, corruption,
                                    baselines, seed],
                   [job_id, result, plot, table, qplot, heat, samples, status], api_name="fedag_run")
    worked_example.on_load(METHOD_ID, "federate", example(), render, [result, plot, table, qplot, heat, samples], status,
                           done=lambda r: "**Worked example** (the default settings; press **Run federation** to run "
                                          "your own, **Show attention** to inspect a test image).  \n" + summary(r),
                           missing=lambda: worked_example.missing_zoo("clip"), cancel_on=[run.click])
    show.click(attention, [result, ex_domain, ex_index], [ex_image, ex_plot, ex_text], api_name="fedag_attention")
    stop.click(cancel_job, job_id, status, cancels=[ev], api_name="fedag_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)

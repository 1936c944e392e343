"""Entry points: solve one problem (interactive job), the accuracy-vs-steps benchmark, the real-model path."""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from engines.common.context import JobContext, LocalContext
from engines.common.params import ParamError, validate
from engines.common.threads import torch_threads

from . import task
from .params import ADAPTIVE, BenchmarkParams, SolveParams


def _ctx(ctx: JobContext | None) -> JobContext:
    return ctx if ctx is not None else LocalContext()


def _label_for(p: SolveParams, task_name: str):
    if p.task_label == "none":
        return None
    return task.TASKS.index(task_name if p.task_label == "auto" else p.task_label)


def _pca(points: np.ndarray, anchors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project latents and token embeddings on the two principal axes of the token embeddings."""
    mu = anchors.mean(0)
    _, _, vt = np.linalg.svd(anchors - mu, full_matrices=False)
    return (points - mu) @ vt[:2].T, (anchors - mu) @ vt[:2].T


def solve(params, ctx: JobContext | None = None) -> dict:
    """One problem: the base answer, the L2D answer at the chosen setting (with NFE per token, top-5
    probabilities across ODE time, latent trajectory), the answers per step count, the t = 0 check."""
    import torch

    from . import release
    from .flow import main_pass
    from .solvers import DecodeOptions, generate

    p = validate(SolveParams, params)
    ctx = _ctx(ctx)
    try:
        a, b, c, task_name = task.parse_problem(p.problem)
    except task.ProblemError as e:
        raise ParamError("SolveParams", [str(e)]) from None
    t0 = time.perf_counter()
    with torch_threads(1):
        ctx.progress(0.05, "loading the models")
        bundle = release.load()
        model, flow, ad = bundle.base, bundle.flow, bundle.adapter
        prompt = torch.tensor([task.encode(task.prompt_text(a, b, c, task_name))])
        truth = task.answer_text(task.answer_of(a, b, c, task_name))
        label = _label_for(p, task_name)
        labels = None if label is None else torch.tensor([label])
        # w = 1 is exactly the conditional model (identity tested): skip the unconditional evaluations then
        guid = p.guidance if labels is not None and p.guidance != 1.0 else None
        opt = DecodeOptions(p.steps, p.solver, p.tolerance, guid, p.estimator, p.temperature, p.seed, trace=True)
        n_ans = task.ANSWER_LEN
        out, traces = generate(model, ad, flow, prompt, n_ans, opt, labels)
        answer = task.decode(out[0])
        base_out, _ = generate(model, ad, None, prompt, n_ans, DecodeOptions(steps=1))
        base_answer = task.decode(base_out[0])
        ctx.progress(0.4, "answers per step count")
        rows = []
        for n in p.compare_steps:
            solver = p.solver if p.solver not in ADAPTIVE else "midpoint"
            o, tr = generate(model, ad, flow, prompt, n_ans, replace(opt, steps=n, solver=solver, trace=False), labels)
            rows.append({"steps": n, "solver": solver if n > 1 else "base LM", "answer": task.decode(o[0]),
                         "nfe": int(sum(t.nfe for t in tr)), "correct": task.decode(o[0]) == truth})
        if p.solver in ADAPTIVE:
            rows.append({"steps": 0, "solver": f"{p.solver} tol {p.tolerance:g}", "answer": answer,
                         "nfe": int(sum(t.nfe for t in traces)), "correct": answer == truth})
        # Preservation check: the L2D logits at t = 0 (random latents) against the base logits, along the base
        # model's own greedy answer, so that the t = 0 argmax reproduces ``base_answer`` exactly when they agree
        ctx.progress(0.8, "t = 0 check")
        seq = torch.cat([prompt, base_out], 1)
        main = main_pass(model, ad, seq)
        P = task.PROMPT_LEN
        q_pos = torch.arange(P - 1, P - 1 + n_ans)[None]
        g = torch.Generator().manual_seed(p.seed)
        x = torch.randn(1, n_ans, flow.fc.flow_dim, generator=g) * flow.fc.noise_rescaling
        with torch.no_grad():
            l0 = flow(ad, main, q_pos, x, torch.zeros(1, n_ans), labels[:, None].expand(1, n_ans) if labels is not None else None)
        base_logits = main.logits[:, P - 1:P - 1 + n_ans]
        t0_delta = float((l0 - base_logits).abs().max())
        t0_answer = task.decode(l0[0].argmax(-1))
        # Trajectory view: top-5 per evaluation and 2-D PCA of the latent path, per answer token
        table = flow.flow_table(ad).detach().numpy()
        digits = []
        for k, tr in enumerate(traces):
            lat = np.stack([v[0].numpy() for v in tr.latents]) if tr.latents else np.zeros((0, table.shape[1]))
            path, anchors = _pca(lat, table) if len(lat) else (np.zeros((0, 2)), _pca(table[:1], table)[1])
            digits.append({"position": k, "token": answer[k], "truth": truth[k], "nfe": tr.nfe, "times": tr.times,
                           "top5": [[[task.VOCAB[i], p_] for i, p_ in ev[0]] for ev in tr.top],
                           "path": path.tolist(), "anchors": anchors.tolist()})
    ctx.progress(1.0, "done")
    return {"problem": task.prompt_text(a, b, c, task_name), "task": task_name, "truth": truth,
            "answer": answer, "correct": answer == truth, "base_answer": base_answer,
            "base_correct": base_answer == truth, "steps": p.steps, "solver": p.solver, "tolerance": p.tolerance,
            "guidance": guid, "label": None if label is None else task.TASKS[label],
            "nfe_per_token": [tr.nfe for tr in traces], "by_steps": rows, "digits": digits,
            "t0_max_abs_diff": t0_delta, "t0_answer": t0_answer, "t0_equals_base": t0_answer == base_answer,
            "vocab": task.VOCAB, "model": bundle.source, "elapsed_s": time.perf_counter() - t0}


def benchmark(params, ctx: JobContext | None = None) -> dict:
    """Accuracy vs steps per fixed solver (mean of seeds), adaptive NFE vs tolerance, guidance sweep,
    base / LoRA / self-consistency rows, on held-out test problems."""
    import torch

    from . import models, release
    from .solvers import DecodeOptions

    p = validate(BenchmarkParams, params)
    ctx = _ctx(ctx)
    t_start = time.perf_counter()
    from engines.common.settings import get_settings

    micro = get_settings().profile == "test"
    if micro:  # the test profile shrinks the data: a handful of problems, the shortest grids
        p = p.model_copy(update={"n_problems": min(p.n_problems, 24), "n_adaptive": min(p.n_adaptive, 3),
                                 "steps": p.steps[:3], "seeds": 1, "guidance": p.guidance[:2],
                                 "tolerances": p.tolerances[:2]})
    sc_ks = (1, 4) if micro else (1, 4, 16)
    with torch_threads(1):
        bundle = release.load()
        model, flow = bundle.base, bundle.flow
        test = task.sample(p.n_problems, 2, "test")
        jobs = len(p.solvers) * len(p.steps) * p.seeds + len(p.adaptive) * len(p.tolerances) + len(p.guidance) + 3
        done = [0]

        def tick(msg: str):
            done[0] += 1
            ctx.progress(min(0.99, done[0] / jobs), msg)
            ctx.check_cancelled()

        curves = {}
        base_acc, _ = models.exact_match(model, None, test, DecodeOptions(steps=1), labels=False)
        for solver in p.solvers:
            accs, nfes, stds = [], [], []
            for n in p.steps:
                per_seed = []
                for s in range(p.seeds if n > 1 else 1):
                    acc, _ = models.exact_match(model, flow, test, DecodeOptions(steps=n, solver=solver, seed=100 * s))
                    per_seed.append(acc)
                    tick(f"{solver} N = {n}, seed {s}: {acc:.1%}")
                accs.append(float(np.mean(per_seed)))
                stds.append(float(np.std(per_seed)))
                nfes.append(models.exact_match.last_nfe if n > 1 else 0.0)
            curves[solver] = {"steps": list(p.steps), "acc": accs, "std": stds, "nfe_per_token": nfes}
        adaptive = {}
        sub = {k: v[:p.n_adaptive] for k, v in test.items()}
        for solver in p.adaptive:
            rows = []
            for tol in p.tolerances:
                t1 = time.perf_counter()
                acc, correct = models.exact_match(model, flow, sub, DecodeOptions(solver=solver, tolerance=tol),
                                                  batch_size=1)
                per = models.exact_match.last_nfe_per_problem
                rho = _spearman(per, sub["carries"])
                rows.append({"tolerance": tol, "acc": acc, "nfe_per_token": float(per.mean()),
                             "spearman_nfe_carries": rho, "seconds": time.perf_counter() - t1,
                             "nfe_by_carries": {int(k): float(per[sub["carries"] == k].mean())
                                                for k in np.unique(sub["carries"])}})
                tick(f"{solver} tol {tol:g}: {acc:.1%}, NFE/token {per.mean():.1f}")
            adaptive[solver] = rows
        guidance = []
        for w in p.guidance:  # one noise seed (each evaluation runs both branches)
            acc = models.exact_match(model, flow, test, DecodeOptions(steps=8, guidance=w))[0]
            guidance.append({"w": w, "acc": acc})
            tick(f"guidance w = {w}: {acc:.1%}")
        no_label = models.exact_match(model, flow, test, DecodeOptions(steps=8), labels=False)[0]
        baselines = {"base": base_acc}
        if p.baselines:
            if bundle.lora is not None:
                baselines["lora"] = models.exact_match(bundle.lora, None, test, DecodeOptions(steps=1), labels=False)[0]
                baselines["lora_params"] = bundle.manifest.get("training", {}).get("lora", {}).get("params")
            tick("LoRA")
            val = task.sample(min(300, p.n_problems), 1, "val")  # the temperature is tuned on validation
            temps = (0.5, 1.0)
            best_t = max(temps, key=lambda T: models.self_consistency(model, val, 4, T))
            baselines["sc_temperature"] = best_t
            baselines["self_consistency"] = {k: models.self_consistency(model, test, k, best_t) for k in sc_ks}
            tick("self-consistency")
        # time of one problem at N = 8 (midpoint), batch 1, one thread
        one = {k: v[:20] for k, v in test.items()}
        t1 = time.perf_counter()
        models.exact_match(model, flow, one, DecodeOptions(steps=8), batch_size=1)
        per_problem_s = (time.perf_counter() - t1) / len(one["a"])
    ctx.progress(1.0, "done")
    return {"n_problems": p.n_problems, "curves": curves, "adaptive": adaptive, "guidance": guidance,
            "guidance_no_label_acc": no_label, "baselines": baselines, "l2d_params": flow.n_params(),
            "seconds_per_problem_n8": per_problem_s, "model": bundle.source,
            "elapsed_s": time.perf_counter() - t_start}


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)

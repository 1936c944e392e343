"""Entry point ``federate``: one leave-one-domain-out federation, FedAG and the chosen baselines on the same
silos, with per-round curves, the in/out-of-domain table, attention weights per test image and quality scores.
"""
from __future__ import annotations

import time

import numpy as np

from engines.common.context import JobContext, Subprogress

from .params import DOMAIN_LABELS, METHOD_LABELS, FederationParams

EXAMPLES_PER_DOMAIN = 12


def _threads() -> None:
    import torch

    torch.set_num_threads(min(2, torch.get_num_threads()))


def federate(p: FederationParams, ctx: JobContext) -> dict:
    import torch

    from . import drivers as dr
    from .federation import auroc, build_setup

    _threads()
    t0 = time.perf_counter()
    ctx.progress(0.0, "loading the frozen CLIP and building the silos")
    s = build_setup(p, progress=Subprogress(ctx, 0.0, 0.1), cancelled=ctx.cancelled)
    ctx.check_cancelled()
    methods = ["fedag", *p.baselines]
    span = 0.85 / len(methods)
    history: dict[str, list] = {}
    curves: dict[str, list] = {}

    def sub(k: int, name: str):
        def f(frac: float, msg: str) -> None:
            ctx.progress(0.1 + span * (k + frac), msg)
            ctx.check_cancelled()
        return f

    fed = None
    for k, m in enumerate(methods):
        if m == "fedag":
            def prog(frac: float, msg: str, h: dict | None = None, _k=k) -> None:
                ctx.progress(0.1 + span * (_k + frac), f"FedAG {msg}",
                             {"round": h["round"], "in": h["in"], "ood": h["ood"]} if h else None)
                ctx.check_cancelled()
            fed = dr.run_fedag(s, progress=prog, cancelled=ctx.cancelled)
            history[m] = fed["history"]
        elif m == "fedclip":
            history[m] = dr.run_fedclip(s, sub(k, m), ctx.cancelled)["history"]
        elif m == "fedavg":
            history[m] = dr.run_fedavg(s, sub(k, m), ctx.cancelled)["history"]
        else:
            history[m] = dr.run_zeroshot(s)["history"]
        ctx.check_cancelled()
    for m, h in history.items():
        curves[m] = [{k: round(float(v), 4) for k, v in r.items() if k in ("round", "in", "ood", "in_one2one")} for r in h]
    table = []
    for m in methods:
        last = history[m][-1]
        table.append({"method": METHOD_LABELS[m], "in": last["in"], "in_one2one": last.get("in_one2one"),
                      "ood": last["ood"], "val_in": last["val_in"], "val_ood": last["val_ood"]})

    # attention for test images, quality scores of the last round
    server = fed["server"]
    examples, alpha_mean = [], {}
    with torch.no_grad():
        for d in p.domains:
            v = s.eval_sets["test"][d]
            comb, a, sl = server.combined(v["z"])
            alpha_mean[d] = a.mean(1).tolist()
            for j in range(min(EXAMPLES_PER_DOMAIN, len(v["y"]))):
                ref = ctx.artifacts.save_image(f"test_{d}_{j}.png", np.kron(v["x"][j], np.ones((4, 4, 1))))
                examples.append({"domain": d, "held_out": d == p.held_out, "image": ref, "label": int(v["y"][j]),
                                 "alpha": [round(float(x), 4) for x in a[:, j]],
                                 "adapter_pred": [int(x) for x in sl[:, j].argmax(1)],
                                 "pred": int(comb[j].argmax())})
    q_clean, q_bad = [], []
    for q, syn in zip(fed["quality"], s.synthetic):
        q_clean += q[~syn.corrupted].round(4).tolist()
        q_bad += q[syn.corrupted].round(4).tolist()
    gallery = []
    for i, (d, syn) in enumerate(zip(s.in_domains, s.synthetic)):
        for j in range(4):
            ref = ctx.artifacts.save_image(f"syn_{d}_{j}.png", np.kron(syn.x[j], np.ones((4, 4, 1))))
            qj = float(fed["quality"][i][j]) if fed["quality"] else float("nan")
            gallery.append({"image": ref, "caption": f"{DOMAIN_LABELS[d]} synthetic '{int(syn.y[j])}'"
                            f"{' (corrupted)' if syn.corrupted[j] else ''}, q = {qj:.2f}"})
    log = fed["channel"]
    ctx.progress(1.0, "done")
    return {
        "in_domains": s.in_domains, "held_out": p.held_out, "table": table, "curves": curves,
        "alpha_mean": alpha_mean, "examples": examples, "synthetic": gallery,
        "quality": {"clean": q_clean, "corrupted": q_bad, "auroc": auroc(np.array(q_clean), np.array(q_bad))},
        "privacy": {"uploads": len(log), "bytes": int(sum(e["bytes"] for e in log)), "raw_images": 0},
        "params": p.model_dump(mode="json"), "elapsed_s": time.perf_counter() - t0,
    }

"""The paper-scale path: an L2D path on a real frozen LM (SmolLM2-135M-Instruct offline by default).

The same ``FlowPath`` code as the tiny setting, with the official sizes (d_f = 256, σ = 64, FlowToLM and
timestep modulation 256 wide, LoRA rank 32 on the q/o/MLP copies, lr 1e-4). Larger bases by
configuration: ``model_id`` (or ``PAPERLAB_LLM_MODEL``) names a hub id or a local folder of a Llama /
Qwen2 / GPT-2 layout (``meta-llama/Llama-3.2-1B-Instruct``, ``Qwen/Qwen2.5-1.5B-Instruct``, …).
Trained here on the addition task (prompts through the model's own tokenizer); runs on the ``gpu`` queue.
"""
from __future__ import annotations

import time

import numpy as np

from engines.common.context import JobContext, LocalContext, cancellable_layers
from engines.common.params import validate

from . import task
from .params import RealModelParams

INSTRUCTION = "Compute "


def encode_batch(tok, problems: dict) -> tuple[list[list[int]], list[list[int]]]:
    """Prompt ids and answer ids per problem (answer tokenised in the context of its prompt)."""
    P, A = [], []
    for a, b, c, t in zip(problems["a"], problems["b"], problems["c"], problems["task"]):
        name = task.TASKS[int(t)]
        prompt = INSTRUCTION + task.prompt_text(a, b, c, name)
        full = tok(prompt + task.answer_text(task.answer_of(a, b, c, name)), add_special_tokens=False)["input_ids"]
        pid = tok(prompt, add_special_tokens=False)["input_ids"]
        if full[:len(pid)] != pid:  # the boundary merged: keep the full tokenisation's split
            pid = full[:len(pid)]
        P.append(pid)
        A.append(full[len(pid):])
    return P, A


def _uniform(P, A):
    """Indices of the problems whose prompt and answer lengths are the most common ones (no padding needed)."""
    keys = [(len(p), len(a)) for p, a in zip(P, A)]
    vals, counts = np.unique(np.array(keys), axis=0, return_counts=True)
    best = tuple(vals[counts.argmax()])
    return [i for i, k in enumerate(keys) if k == best], best


def real_model(params, ctx: JobContext | None = None) -> dict:
    import torch

    from engines.common.threads import torch_threads
    from engines.common.zoo.smollm2 import load_smollm2

    from .flow import Adapter, FlowConfig, FlowPath, freeze, main_pass
    from .models import _lr, l2d_loss
    from .solvers import DecodeOptions, generate

    p = validate(RealModelParams, params)
    ctx = ctx if ctx is not None else LocalContext()
    t0 = time.perf_counter()
    ctx.progress(0.02, "loading the frozen language model")
    model, tok = load_smollm2(model_id=p.model_id or None)
    name = p.model_id or getattr(model.config, "_name_or_path", "") or "SmolLM2-135M-Instruct"
    freeze(model)
    adapter = Adapter(model)
    fc = FlowConfig(flow_dim=p.flow_dim, noise_rescaling=64.0, flow_to_lm_hidden=256, freq_dim=256, cond_dim=256,
                    lora_rank=p.lora_rank, lora_alpha=float(p.lora_rank), num_classes=len(task.TASKS))
    torch.manual_seed(p.seed)
    flow = FlowPath(adapter, fc)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    opt = torch.optim.AdamW(flow.parameters(), lr=p.lr)
    gen = torch.Generator().manual_seed(p.seed)
    rng = np.random.default_rng(p.seed)
    losses = []
    # On a CPU worker one training step of the 135M base takes 10-20 s on a busy machine: the decoder
    # layers check the flag, so a Stop ends a step within one layer of its forward pass.
    with torch_threads(2), cancellable_layers(model, ctx.cancelled):
        for step in range(p.train_steps):
            ctx.check_cancelled()
            pr = task.sample(4 * p.batch, int(rng.integers(2**31)), "train")
            P, A = encode_batch(tok, pr)
            idx, (lp, la) = _uniform(P, A)
            idx = idx[:p.batch]
            ids = torch.tensor([P[i] + A[i] for i in idx])
            lab = torch.from_numpy(pr["task"][idx])
            for g in opt.param_groups:
                g["lr"] = _lr(step, p.train_steps, p.lr, warmup=min(100, max(1, p.train_steps // 10)))
            flow.train()
            loss, _, _ = l2d_loss(model, adapter, flow, ids, lab, gen, prompt_len=lp)
            ctx.check_cancelled()  # the backward pass takes about twice the forward's time
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            ctx.progress(0.05 + 0.75 * (step + 1) / p.train_steps, f"L2D step {step + 1}: loss {losses[-1]:.3f}")
        flow.eval()
        identical = all(torch.equal(before[k], v) for k, v in model.state_dict().items())
        test = task.sample(4 * p.n_eval, 2, "test")
        P, A = encode_batch(tok, test)
        idx, (lp, la) = _uniform(P, A)
        idx = idx[:p.n_eval]
        prompts = torch.tensor([P[i] for i in idx])
        truth = torch.tensor([A[i] for i in idx])
        lab = torch.from_numpy(test["task"][idx])
        acc, examples = {}, [{"prompt": INSTRUCTION + task.prompt_text(test["a"][i], test["b"][i], test["c"][i],
                                                                       task.TASKS[test["task"][i]]), "answers": {}}
                             for i in idx[:3]]
        for j, n in enumerate(p.steps):
            out, _ = generate(model, adapter, flow, prompts, la, DecodeOptions(steps=n), lab)
            acc[str(n)] = float((out == truth).all(1).float().mean())
            for e, row in zip(examples, out[:3]):
                e["answers"][f"N={n}"] = tok.decode(row.tolist())
            ctx.progress(0.8 + 0.15 * (j + 1) / len(p.steps), f"N = {n}: exact match {acc[str(n)]:.1%}")
        main = main_pass(model, adapter, torch.cat([prompts[:2], truth[:2]], 1))
        q = torch.arange(lp - 1, lp - 1 + la)[None].expand(2, -1)
        with torch.no_grad():
            l0 = flow(adapter, main, q, torch.randn(2, la, fc.flow_dim) * fc.noise_rescaling, torch.zeros(2, la))
        delta = float((l0 - main.logits[:, lp - 1:lp - 1 + la]).abs().max())
    ctx.progress(1.0, "done")
    return {"model": name, "base_params": sum(v.numel() for v in model.parameters()), "l2d_params": flow.n_params(),
            "train_steps": p.train_steps, "losses": losses, "final_loss": float(np.mean(losses[-10:])),
            "base_bit_identical": identical, "t0_max_abs_diff": delta, "n_eval": len(idx), "acc": acc,
            "examples": examples, "prompt_tokens": lp, "answer_tokens": la, "elapsed_s": time.perf_counter() - t0}

"""DPSDP on a real chat model, small: the refinement tree sampled from π_ref (the prompted model), the DP value
targets and preference pairs of the tiny pipeline (``dp.q_targets``, ``dp.rank_pairs``), and DPO steps on a
LoRA adapter of the actor (``peft``), π_ref being the same model with the adapter switched off.

On CPU: SmolLM2-135M-Instruct, a handful of built-in word problems, K = M = 2, a few steps (minutes). At
paper scale the same code runs on a GPU worker with a larger instruct model (``PAPERLAB_LLM_MODEL``, a local
folder) and MATH/GSM8K-style data (``PAPERLAB_DPSDP_PROBLEMS``, a JSONL file of problem/answer).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from engines.common.context import JobCancelled, JobContext, LocalContext, Subprogress
from engines.common.params import validate

from . import dp
from . import word_problems as wp
from .chat import ChatPolicy, Reply
from .llm_params import LoraParams

Progress = Callable[[float, str], None]
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


@dataclass
class ChatTree:
    """K first answers per problem, K feedbacks per answer, M refinements per feedback (T > 0, from π_ref)."""
    problems: list[wp.WordProblem]
    a0: list[list[Reply]]  # [N][K]
    fb: list[list[list[Reply]]]  # [N][K][K]
    a2: list[list[list[list[Reply]]]]  # [N][K][K][M]
    correct0: np.ndarray  # [N, K]
    correct2: np.ndarray  # [N, K, K, M]

    @property
    def targets(self):
        return dp.q_targets(self.correct0, self.correct2)


def _chunks(n: int, size: int):
    return [range(s, min(n, s + size)) for s in range(0, n, size)]


def sample_chat_tree(actor, critic, problems: list[wp.WordProblem], k: int, m: int, temperature: float, seed: int,
                     progress: Progress, cancelled: Callable[[], bool], chunk: int = 8) -> ChatTree:
    """Roll in from the restart states (the problems) with π_ref and sample the tree's three levels."""
    N = len(problems)
    a0, fb, a2 = [None] * N, [None] * N, [None] * N
    for i, sl in enumerate(_chunks(N, chunk)):
        if cancelled():
            raise JobCancelled("stopped")
        xs = [problems[n].text for n in sl]
        ans = actor.reply([wp.actor_messages(x) for x in xs], temperature, seed + 3 * i, k, cancelled)
        progress((sl.start + 0.1 * len(sl)) / N, f"problems {sl.start + 1}-{sl.stop}/{N}: {k} first answers each")
        fbs = critic.reply([wp.critic_messages(x, a.text) for x, row in zip(xs, ans) for a in row], temperature,
                           seed + 3 * i + 1, k, cancelled)
        progress((sl.start + 0.3 * len(sl)) / N, f"problems {sl.start + 1}-{sl.stop}/{N}: {k} feedbacks per answer")
        refs = actor.reply([wp.refine_messages(x, a.text, f.text) for j, (x, row) in enumerate(zip(xs, ans))
                            for b, a in enumerate(row) for f in fbs[j * k + b]], temperature, seed + 3 * i + 2, m,
                           cancelled)
        for j, n in enumerate(sl):
            a0[n] = ans[j]
            fb[n] = [fbs[j * k + b] for b in range(k)]
            a2[n] = [[refs[(j * k + b) * k + f] for f in range(k)] for b in range(k)]
        progress(sl.stop / N, f"sampled the refinement tree of {sl.stop}/{N} problems ({k} answers × {k} feedbacks "
                              f"× {m} refinements each)")

    def right(r: Reply, p: wp.WordProblem) -> bool:
        return bool(wp.is_correct(wp.parse_answer(r.text)[0], p.truth))

    c0 = np.array([[right(r, p) for r in a0[n]] for n, p in enumerate(problems)], bool)
    c2 = np.array([[[[right(r, p) for r in fr] for fr in ar] for ar in a2[n]] for n, p in enumerate(problems)], bool)
    return ChatTree(problems, a0, fb, a2, c0.reshape(N, k), c2.reshape(N, k, k, m))


@dataclass
class ChatPair:
    kind: str  # "answer" | "refine" (actor), "feedback" (critic)
    prompt: list[int]
    chosen: Reply
    rejected: Reply
    gap: float


def chat_pairs(tree: ChatTree, prompt_ids: Callable[[list[dict]], list[int]], margin: float,
               limit: int) -> list[ChatPair]:
    """Pairs at the three kinds of state, ranked by the DP targets exactly as ``dp.dpsdp_pairs`` ranks the tiny
    tree's (a state reached twice is one state, identical candidates merged, gap ≥ margin, ≤ limit per state)."""
    qa, qf, qr = tree.targets
    N, K = tree.correct0.shape
    out: list[ChatPair] = []

    def add(kind, messages, cands: list[Reply], q: list[float]):
        if len(cands) < 2:
            return
        for i, j, gap in dp.rank_pairs([c.text for c in cands], q, margin, limit):
            out.append(ChatPair(kind, prompt_ids(messages), cands[i], cands[j], gap))

    for n, p in enumerate(tree.problems):
        x = p.text
        add("answer", wp.actor_messages(x), tree.a0[n], qa[n].tolist())
        by_answer: dict[str, list[int]] = {}
        for a in range(K):
            by_answer.setdefault(tree.a0[n][a].text, []).append(a)
        for text, same in by_answer.items():
            add("feedback", wp.critic_messages(x, text), [f for b in same for f in tree.fb[n][b]],
                [float(v) for b in same for v in qf[n, b]])
            by_fb: dict[str, list[tuple[int, int]]] = {}
            for b in same:
                for e in range(K):
                    by_fb.setdefault(tree.fb[n][b][e].text, []).append((b, e))
            for fb_text, cells in by_fb.items():
                add("refine", wp.refine_messages(x, text, fb_text), [r for b, e in cells for r in tree.a2[n][b][e]],
                    [float(v) for b, e in cells for v in qr[n, b, e]])
    return out


# ----------------------------------------------------------------------------- DPO on a LoRA adapter


def sequence_logprobs(model, prompts: list[list[int]], responses: list[list[int]]):
    """log π(response | prompt) summed over the response tokens, for prompts and responses of any length."""
    import torch

    dev = next(model.parameters()).device
    seqs = [p + r for p, r in zip(prompts, responses)]
    width = max(len(s) for s in seqs)
    ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs], device=dev)
    attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=dev)
    target = torch.zeros_like(ids, dtype=torch.float)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        target[i, len(p):len(p) + len(r)] = 1.0  # the response tokens
    logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
    lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None])[..., 0]
    return (lp * target[:, 1:]).sum(1)


def attach_lora(model, rank: int, adapter: str = "actor"):
    """The model wrapped with a fresh LoRA adapter (B = 0: the wrapped model equals π_ref at the start)."""
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    targets = [t for t in LORA_TARGETS if t in names] or ["c_attn", "c_proj"]  # Llama/Qwen/Mistral; GPT-2
    cfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=targets, bias="none")
    return get_peft_model(model, cfg, adapter_name=adapter)


def _pair_tensors(model, pairs: list[ChatPair], idx):
    prompts = [pairs[i].prompt for i in idx]
    pc = sequence_logprobs(model, prompts, [pairs[i].chosen.ids for i in idx])
    pr = sequence_logprobs(model, prompts, [pairs[i].rejected.ids for i in idx])
    return pc, pr


def dpo_lora(model, pairs: list[ChatPair], steps: int, batch: int, lr: float, beta: float, nll_weight: float,
             seed: int, progress: Progress, cancelled: Callable[[], bool]) -> dict:
    """DPO (``models.dpo_loss``, trl's sigmoid loss) on the adapter's weights only; π_ref = adapter disabled.

    Returns the DPO loss over all pairs before and after the steps and the per-step curve."""
    import torch

    from engines.common.context import cancellable_layers

    from .models import dpo_loss

    if not pairs:
        raise ValueError("no preference pairs: every candidate at every state had the same DP value (all right or "
                         "all wrong); try more problems, larger K/M or a higher temperature")
    every = range(len(pairs))
    with torch.no_grad(), model.disable_adapter(), cancellable_layers(model, cancelled):
        model.eval()
        refs = [_pair_tensors(model, pairs, [i]) for i in every]
    rc = torch.cat([r[0] for r in refs])
    rr = torch.cat([r[1] for r in refs])

    def full_loss() -> float:
        with torch.no_grad(), cancellable_layers(model, cancelled):
            model.eval()
            vals = [dpo_loss(*_pair_tensors(model, pairs, [i]), rc[i:i + 1], rr[i:i + 1], beta)[0] for i in every]
        return float(torch.cat(vals).mean())

    before = full_loss()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)
    order: list[int] = []
    curve = []
    model.train()
    for step in range(steps):
        if cancelled():
            raise JobCancelled("stopped")
        while len(order) < batch:
            order += rng.permutation(len(pairs)).tolist()
        idx, order = order[:batch], order[batch:]
        with cancellable_layers(model, cancelled):
            pc, pr = _pair_tensors(model, pairs, idx)
        loss, margin = dpo_loss(pc, pr, rc[idx], rr[idx], beta)
        total = loss.mean()
        if nll_weight:
            n_tok = torch.tensor([max(1, len(pairs[i].chosen.ids)) for i in idx], dtype=pc.dtype, device=pc.device)
            total = total - nll_weight * (pc / n_tok).mean()
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        curve.append({"step": step + 1, "loss": float(loss.detach().mean()), "margin": float(margin.detach().mean())})
        progress((step + 1) / steps, f"DPO step {step + 1}/{steps} on the actor's LoRA adapter: loss "
                                     f"{curve[-1]['loss']:.4f}, reward margin {curve[-1]['margin']:+.3f}")
    after = full_loss()
    return {"loss_before": before, "loss_after": after, "log2": math.log(2), "curve": curve, "steps": steps,
            "pairs": len(pairs), "trainable_params": int(sum(p.numel() for p in trainable))}


def run_job(policy: ChatPolicy, problems: list[wp.WordProblem], p: LoraParams, progress: Progress,
            cancelled: Callable[[], bool]) -> tuple[dict, object]:
    """Tree → DP targets → pairs → LoRA DPO on the actor. ``policy.model`` must be private to this job (the
    adapter is injected into it); returns the record and the adapted (peft) model."""
    t0 = time.perf_counter()
    tree = sample_chat_tree(policy, policy, problems, p.k, p.m, p.temperature, p.seed,
                            lambda f, m: progress(0.6 * f, m), cancelled)
    pairs = chat_pairs(tree, policy.prompt_ids, p.margin, p.pairs_per_state)
    qa, qf, _ = tree.targets
    rec: dict = {"tree": {"problems": len(problems), "a0_correct": float(tree.correct0.mean()),
                          "refine_correct": float(tree.correct2.mean()), "mean_q_answer": float(qa.mean()),
                          "mean_q_feedback": float(qf.mean()),
                          "pairs": {k: sum(q.kind == k for q in pairs) for k in ("answer", "feedback", "refine")}}}
    actor_pairs = [q for q in pairs if q.kind in ("answer", "refine")]
    progress(0.6, f"{len(actor_pairs)} actor pairs ({rec['tree']['pairs']}); attaching a rank-{p.rank} LoRA adapter")
    model = attach_lora(policy.model, p.rank)
    rec["dpo"] = dpo_lora(model, actor_pairs, p.steps, p.batch, p.lr, p.beta, p.nll_weight, p.seed,
                          lambda f, m: progress(0.62 + 0.36 * f, m), cancelled)
    rec["examples"] = [{"kind": q.kind, "gap": q.gap, "chosen": q.chosen.text[:300], "rejected": q.rejected.text[:300]}
                       for q in actor_pairs[:4]]
    rec["seconds"] = time.perf_counter() - t0
    return rec, model


def lora_train(params, ctx: JobContext | None = None) -> dict:
    """Entry point: the DPSDP LoRA job (a private copy of the zoo model; the adapter saved as an artifact)."""
    import copy

    from engines.common.settings import get_settings
    from engines.common.threads import torch_threads
    from engines.common.zoo.smollm2 import load_smollm2

    p = validate(LoraParams, params)
    ctx = ctx if ctx is not None else LocalContext()
    s = get_settings()
    if p.source == "file":
        if not s.dpsdp_problems:
            raise ValueError("source: 'file' needs PAPERLAB_DPSDP_PROBLEMS, a JSONL file of problem/answer rows")
        problems = wp.load_problems(s.dpsdp_problems, p.n_problems)
    else:
        problems = wp.builtin_problems()[:p.n_problems]
    with torch_threads(2):
        ctx.progress(0.01, "loading the chat model")
        model, tok = load_smollm2(s.resolved_device())
        policy = ChatPolicy(copy.deepcopy(model), tok, p.max_new_tokens)  # the cached model stays adapter-free
        rec, peft_model = run_job(policy, problems, p, Subprogress(ctx, 0.03, 0.98), ctx.cancelled)
    folder = ctx.artifacts.path("actor_lora")
    peft_model.save_pretrained(folder)
    rec["adapter"] = f"{ctx.artifacts.job_id}/actor_lora" if hasattr(ctx.artifacts, "job_id") else str(folder)
    rec["model"] = s.llm_model or "SmolLM2-135M-Instruct (zoo)"
    rec["params"] = p.model_dump()
    ctx.progress(1.0, f"done: DPO loss on the actor's pairs {rec['dpo']['loss_before']:.4f} → "
                      f"{rec['dpo']['loss_after']:.4f}")
    return rec

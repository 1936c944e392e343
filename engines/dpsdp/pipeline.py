"""The tiny DPSDP pipeline (spec §4): pretrain the actor → SFT actor and critic (π_ref) → sample the
refinement tree and its DP value targets → DPO both models against π_ref. Also the ablations that
train: naive-DPO pairs (no DP targets) and the single-agent variant (one model for both roles).
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch

from engines.common.context import JobCancelled

from . import dp, refine, task
from .config import TinyConfig
from .models import clone, dpo_loss, generate, make_model, mask_of, n_params, response_logprob, supervised

Progress = Callable[[float, str], None]


def _sub(progress: Progress, a: float, b: float) -> Progress:
    return lambda f, m: progress(a + (b - a) * min(1.0, max(0.0, f)), m)


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long)


def first_turn_data(problems) -> tuple[torch.Tensor, torch.Tensor]:
    xs = [task.problem_text(*p) for p in problems]
    return (_t([task.actor_prompt(x) for x in xs]),
            _t([task.encode(task.solution_text(*p)) for p in problems]))


def first_turn_accuracy(actor, problems) -> float:
    return float(refine.run(actor, None, problems, 1).correct[:, 0].mean())


def sft_data(actor, problems, seed: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """SFT demonstrations (spec §4 step 2): one sampled a₀ per problem (T = 1) with the oracle's feedback.

    ``critic``: (x, a₀) → oracle feedback; ``refine``: (x, a₀, oracle feedback) → the right scratchpad."""
    g = torch.Generator().manual_seed(seed)
    xs = [task.problem_text(*p) for p in problems]
    truths = [task.solution_text(*p) for p in problems]
    a0 = generate(actor, _t([task.actor_prompt(x) for x in xs]), task.ANSWER_LEN, 1.0, g)
    fb = [task.response_ids(task.oracle_feedback(task.decode(a), t), task.FEEDBACK_LEN) for a, t in zip(a0, truths)]
    return {
        "critic": (_t([task.critic_prompt(x, a.tolist()) for x, a in zip(xs, a0)]), _t(fb)),
        "refine": (_t([task.refine_prompt(x, a.tolist(), f) for x, a, f in zip(xs, a0, fb)]),
                   _t([task.encode(t) for t in truths])),
    }


def train_dpo(model, pairs: dict[str, dp.PairSet], cfg: TinyConfig, progress: Progress,
              cancelled: Callable[[], bool], label: str, seed: int) -> dict:
    """DPO (spec §1 step 5) against a frozen copy of the model (π_ref), over every state type's pairs."""
    ref = clone(model).eval()
    groups = [ps for ps in pairs.values() if len(ps)]
    if not groups:
        return {"pairs": 0, "steps": 0, "curve": []}
    with torch.no_grad():
        refs = [(torch.cat([response_logprob(ref, ps.prompts[s:s + 1024], ps.chosen[s:s + 1024])
                            for s in range(0, len(ps), 1024)]),
                 torch.cat([response_logprob(ref, ps.prompts[s:s + 1024], ps.rejected[s:s + 1024])
                            for s in range(0, len(ps), 1024)])) for ps in groups]
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.dpo_lr, weight_decay=0.0)
    batches = []
    for _ in range(cfg.dpo_epochs):
        for gi, ps in enumerate(groups):
            perm = rng.permutation(len(ps))
            batches += [(gi, perm[s:s + cfg.dpo_batch]) for s in range(0, len(ps), cfg.dpo_batch)]
    order = rng.permutation(len(batches))
    curve, hist = [], []
    model.train()
    for step, b in enumerate(order):
        if cancelled():
            raise JobCancelled("stopped")
        gi, idx = batches[b]
        ps, (rc, rr) = groups[gi], refs[gi]
        idx = torch.from_numpy(idx)
        pc = response_logprob(model, ps.prompts[idx], ps.chosen[idx])
        pr = response_logprob(model, ps.prompts[idx], ps.rejected[idx])
        loss, margin = dpo_loss(pc, pr, rc[idx], rr[idx], cfg.beta)
        total = dpo = loss.mean()
        if cfg.nll_weight:  # RPO-style: the chosen response's NLL per token keeps its likelihood from sinking
            total = total - cfg.nll_weight * (pc / mask_of(ps.chosen[idx]).sum(1)).mean()
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        hist.append((dpo.item(), margin.mean().item(), (margin > 0).float().mean().item(),
                     (cfg.beta * (pc - rc[idx])).mean().item()))
        if (step + 1) % 25 == 0 or step + 1 == len(order):
            h = np.mean(hist[-25:], 0)
            curve.append({"step": step + 1, "loss": float(h[0]), "margin": float(h[1]), "reward_acc": float(h[2]),
                          "chosen_reward": float(h[3])})
            progress((step + 1) / len(order), f"{label} DPO step {step + 1}/{len(order)}: loss {h[0]:.3f}, "
                                              f"reward margin {h[1]:.2f}, pair accuracy {h[2]:.0%}")
    model.eval()
    return {"pairs": {ps.kind: len(ps) for ps in groups}, "steps": len(order), "curve": curve,
            "beta": cfg.beta, "lr": cfg.dpo_lr, "epochs": cfg.dpo_epochs, "nll_weight": cfg.nll_weight}


def build(cfg: TinyConfig, progress: Progress, cancelled: Callable[[], bool] = lambda: False,
          variants: tuple[str, ...] = ("naive", "single")) -> tuple[dict, dict, dict]:
    """Every model of one seed: ``models`` (role → GPT2LMHeadModel), training ``records``, a tree ``preview``."""
    t0, c0 = time.perf_counter(), time.process_time()
    seed = cfg.seed
    train = task.sample(max(cfg.n_pool, cfg.n_sft + cfg.n_dp), seed, "train")
    val = task.sample(cfg.n_val, seed, "val")
    rec: dict = {}
    # 1. pretrain the actor on problem → scratchpad (deliberately short)
    base = make_model(cfg, seed)
    rec["pretrain"] = supervised(base, [first_turn_data(train)], cfg.pretrain_steps, cfg.batch, cfg.lr, seed,
                                 _sub(progress, 0.0, 0.12), cancelled, "pretrain actor",
                                 lambda: first_turn_accuracy(base, val), eval_every=max(1, cfg.pretrain_steps // 6))
    rec["params"] = n_params(base)
    # 2. SFT: the references π_ref (actor: first turn + refinement given oracle feedback; critic: the oracle's feedback)
    sft = sft_data(base, train[:cfg.n_sft], seed + 1)
    ref_actor, ref_critic = clone(base), clone(base)
    first = first_turn_data(train[:cfg.n_sft])  # keeps the first-turn skill (refinement-only SFT erased it)
    rec["sft_actor"] = supervised(ref_actor, [first, sft["refine"]], cfg.sft_steps, cfg.batch, cfg.sft_lr, seed + 2,
                                  _sub(progress, 0.12, 0.24), cancelled, "SFT actor")
    rec["sft_critic"] = supervised(ref_critic, [sft["critic"]], cfg.sft_steps, cfg.batch, cfg.sft_lr, seed + 3,
                                   _sub(progress, 0.24, 0.36), cancelled, "SFT critic")
    # 3. the DPSDP tree from restart states (training problems not used by SFT), DP targets, pairs
    dp_problems = train[cfg.n_sft:cfg.n_sft + cfg.n_dp]
    tree = dp.sample_tree(ref_actor, ref_critic, dp_problems, cfg.k_answers, cfg.m_refine, seed + 4,
                          _sub(progress, 0.36, 0.5), cancelled)
    pairs = dp.dpsdp_pairs(tree, cfg.margin, cfg.pairs_per_state)
    qa, qf, _ = tree.targets
    rec["tree"] = {"problems": len(dp_problems), "a0_correct": float(tree.correct0.mean()),
                   "refine_correct": float(tree.correct2.mean()), "mean_q_answer": float(qa.mean()),
                   "mean_q_feedback": float(qf.mean()), "pairs": {k: len(v) for k, v in pairs.items()}}
    # 4. DPO for both roles
    actor, critic = clone(ref_actor), clone(ref_critic)
    actor_pairs = {k: v for k, v in pairs.items() if k in ("answer", "refine")}
    rec["dpo_actor"] = train_dpo(actor, actor_pairs, cfg, _sub(progress, 0.5, 0.62), cancelled, "actor", seed + 5)
    rec["dpo_critic"] = train_dpo(critic, {k: v for k, v in pairs.items() if k == "feedback"}, cfg,
                                  _sub(progress, 0.62, 0.7), cancelled, "critic", seed + 6)
    models = {"ref_actor": ref_actor, "ref_critic": ref_critic, "dpsdp_actor": actor, "dpsdp_critic": critic}
    models["base"] = base
    if "naive" in variants:  # ablation: the unofficial rule (wrong a₀ rejected, a correct refinement chosen)
        naive = clone(ref_actor)
        npairs = dp.naive_pairs(tree, cfg.pairs_per_state)
        rec["naive_actor"] = train_dpo(naive, npairs, cfg, _sub(progress, 0.7, 0.76), cancelled, "naive actor", seed + 7)
        models["naive_actor"] = naive
    if "single" in variants:  # ablation: one model plays both roles (role tokens tell them apart); its SFT has
        # the pair's total budget (2 × sft_steps)
        single = clone(base)
        rec["sft_single"] = supervised(single, [first, sft["refine"], sft["critic"]], 2 * cfg.sft_steps, cfg.batch,
                                       cfg.sft_lr, seed + 8, _sub(progress, 0.76, 0.86), cancelled, "SFT single agent")
        models["single_ref"] = clone(single)
        stree = dp.sample_tree(single, single, dp_problems, cfg.k_answers, cfg.m_refine, seed + 9,
                               _sub(progress, 0.86, 0.93), cancelled)
        rec["dpo_single"] = train_dpo(single, dp.dpsdp_pairs(stree, cfg.margin, cfg.pairs_per_state), cfg,
                                      _sub(progress, 0.93, 1.0), cancelled, "single agent", seed + 10)
        models["single"] = single
    rec["wall_seconds"] = time.perf_counter() - t0
    rec["cpu_seconds"] = time.process_time() - c0
    rec["threads"] = torch.get_num_threads()
    progress(1.0, f"pipeline done in {rec['wall_seconds']:.0f} s")
    return models, rec, dp.preview(tree, 0, cfg.margin, cfg.pairs_per_state)

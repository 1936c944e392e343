"""DPSDP's training data: the refinement tree sampled from π_ref, its dynamic-programming value targets,
and the preference pairs ranked by them (spec §1 steps 1-4, §4 step 3).

The tree is the paper's shallow one (answer → feedback → refinement) rolled in with π_ref from restart
states (training problems): per problem K first answers a₀ ~ π_a(·|x); per a₀, K feedbacks
f ~ π_c(·|x, a₀); per feedback, M refinements a₂ ~ π_a(·|x, a₀, f). Value targets, backwards in time:

    Q(x, a₀, f, a₂) = 𝟙[a₂ correct]                        (last actor turn)
    Q(x, a₀, f)     = mean over the M refinements of Q(·, a₂)   (critic turn)
    Q(x, a₀)        = 𝟙[a₀ correct] + mean over the K feedbacks of Q(·, f)   (first actor turn)

At every state, candidates with the same text are merged (their Q estimates averaged) and pairs
(a⁺, a⁻) with Q(a⁺) − Q(a⁻) ≥ margin are kept, largest gaps first, at most ``limit`` per state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from engines.common.context import JobCancelled

from . import task
from .models import generate


def rank_pairs(texts: list[str], q: list[float], margin: float, limit: int) -> list[tuple[int, int, float]]:
    """Preference pairs at one state: (index of a⁺, index of a⁻, Q gap), over the distinct texts.

    Identical texts are one candidate (the first index stands for it, Q = the mean of their estimates);
    pairs need gap ≥ margin; the largest gaps come first (ties: lower indices first); at most ``limit``.
    """
    first: dict[str, int] = {}
    vals: dict[str, list[float]] = {}
    for i, (t, v) in enumerate(zip(texts, q)):
        first.setdefault(t, i)
        vals.setdefault(t, []).append(float(v))
    cand = [(first[t], float(np.mean(v))) for t, v in vals.items()]
    pairs = [(i, j, qi - qj) for i, qi in cand for j, qj in cand if qi - qj >= margin - 1e-12]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs[:limit]


def q_targets(correct0: np.ndarray, correct2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The DP value targets of a tree: ``correct0`` [N, K] (a₀ correct), ``correct2`` [N, K, K, M]."""
    q_refine = correct2.astype(float)
    q_feedback = q_refine.mean(-1)
    q_answer = correct0.astype(float) + q_feedback.mean(-1)
    return q_answer, q_feedback, q_refine


@dataclass
class Tree:
    problems: list[tuple]
    xs: list[str]
    truths: list[str]
    a0: torch.Tensor  # [N, K, ANSWER_LEN]
    fb: torch.Tensor  # [N, K, K, FEEDBACK_LEN]
    a2: torch.Tensor  # [N, K, K, M, ANSWER_LEN]
    correct0: np.ndarray
    correct2: np.ndarray

    @property
    def targets(self):
        return q_targets(self.correct0, self.correct2)


def correct_of(tokens: torch.Tensor, truths: list[str]) -> np.ndarray:
    """𝟙[final answer right] per answer; ``tokens`` [N, ..., ANSWER_LEN], ``truths`` per problem."""
    N = tokens.shape[0]
    flat = tokens.reshape(N, -1, tokens.shape[-1])
    out = np.zeros(flat.shape[:2], bool)
    for n in range(N):
        want = task.final_answer(truths[n])
        for j in range(flat.shape[1]):
            out[n, j] = task.final_answer(task.decode(flat[n, j])) == want
    return out.reshape(tokens.shape[:-1])


def sample_tree(actor, critic, problems: list[tuple], k: int, m: int, seed: int,
                progress: Callable[[float, str], None], cancelled: Callable[[], bool], chunk: int = 256) -> Tree:
    """Roll in with π_ref from the restart states (the problems) and sample the three levels (T = 1)."""
    g = torch.Generator().manual_seed(seed)
    xs = [task.problem_text(*p) for p in problems]
    truths = [task.solution_text(*p) for p in problems]
    N, A, F = len(xs), task.ANSWER_LEN, task.FEEDBACK_LEN
    a0 = torch.zeros(N, k, A, dtype=torch.long)
    fb = torch.zeros(N, k, k, F, dtype=torch.long)
    a2 = torch.zeros(N, k, k, m, A, dtype=torch.long)
    for s in range(0, N, chunk):
        if cancelled():
            raise JobCancelled("stopped")
        sl = range(s, min(N, s + chunk))
        p0 = torch.tensor([task.actor_prompt(xs[n]) for n in sl for _ in range(k)])
        ans = generate(actor, p0, A, 1.0, g).view(len(sl), k, A)
        pc = torch.tensor([task.critic_prompt(xs[n], ans[i, j].tolist()) for i, n in enumerate(sl) for j in range(k)
                           for _ in range(k)])
        f = generate(critic, pc, F, 1.0, g).view(len(sl), k, k, F)
        pr = torch.tensor([task.refine_prompt(xs[n], ans[i, j].tolist(), f[i, j, l].tolist())
                           for i, n in enumerate(sl) for j in range(k) for l in range(k) for _ in range(m)])
        r = generate(actor, pr, A, 1.0, g).view(len(sl), k, k, m, A)
        a0[s:s + len(sl)], fb[s:s + len(sl)], a2[s:s + len(sl)] = ans, f, r
        progress(min(N, s + chunk) / N, f"sampled the refinement tree of {min(N, s + chunk)}/{N} problems "
                                        f"({k} answers × {k} feedbacks × {m} refinements each)")
    return Tree(problems, xs, truths, a0, fb, a2, correct_of(a0, truths), correct_of(a2, truths))


def _texts(t: torch.Tensor) -> list[str]:
    return [" ".join(map(str, row.tolist())) for row in t]  # exact tokens (EOS/pad included) as the key


@dataclass
class PairSet:
    """Preference pairs of one state type: prompts of one length, chosen and rejected responses."""
    kind: str
    prompts: torch.Tensor
    chosen: torch.Tensor
    rejected: torch.Tensor
    gaps: torch.Tensor

    def __len__(self) -> int:
        return len(self.prompts)


def _stack(kind, rows) -> PairSet | None:
    if not rows:
        return None
    p, c, r, g = zip(*rows)
    return PairSet(kind, torch.tensor(p), torch.stack(c), torch.stack(r), torch.tensor(g, dtype=torch.float))


def dpsdp_pairs(tree: Tree, margin: float, limit: int) -> dict[str, PairSet]:
    """Pairs at the three kinds of state, ranked by the DP targets: the actor's first answer (``answer``),
    the critic's feedback (``feedback``), the actor's refinement (``refine``)."""
    qa, qf, qr = tree.targets
    N, K = tree.correct0.shape
    rows: dict[str, list] = {"answer": [], "feedback": [], "refine": []}
    seen_c, seen_r = set(), set()
    for n in range(N):
        x = tree.xs[n]
        for i, j, gap in rank_pairs(_texts(tree.a0[n]), qa[n].tolist(), margin, limit):
            rows["answer"].append((task.actor_prompt(x), tree.a0[n, i], tree.a0[n, j], gap))
        for a in range(K):
            ans = tree.a0[n, a].tolist()
            key = (n, tuple(ans))  # the same state reached twice is one state (its candidates merged)
            if key not in seen_c:
                seen_c.add(key)
                same = [b for b in range(K) if tree.a0[n, b].tolist() == ans]
                fbs = torch.cat([tree.fb[n, b] for b in same])
                q = np.concatenate([qf[n, b] for b in same]).tolist()
                for i, j, gap in rank_pairs(_texts(fbs), q, margin, limit):
                    rows["feedback"].append((task.critic_prompt(x, ans), fbs[i], fbs[j], gap))
            for f in range(K):
                fbt = tree.fb[n, a, f].tolist()
                key = (n, tuple(ans), tuple(fbt))
                if key in seen_r:
                    continue
                seen_r.add(key)
                same = [(b, e) for b in range(K) for e in range(K)
                        if tree.a0[n, b].tolist() == ans and tree.fb[n, b, e].tolist() == fbt]
                refs = torch.cat([tree.a2[n, b, e] for b, e in same])
                q = np.concatenate([qr[n, b, e] for b, e in same]).tolist()
                for i, j, gap in rank_pairs(_texts(refs), q, margin, limit):
                    rows["refine"].append((task.refine_prompt(x, ans, fbt), refs[i], refs[j], gap))
    return {k: ps for k, v in rows.items() if (ps := _stack(k, v)) is not None}


def naive_pairs(tree: Tree, limit: int) -> dict[str, PairSet]:
    """The unofficial reimplementation's rule (no DP targets): at refinement states whose a₀ is wrong,
    chosen = a correct refinement, rejected = the wrong first answer itself; the critic gets no pairs."""
    rows = []
    N, K = tree.correct0.shape
    for n in range(N):
        for a in range(K):
            if tree.correct0[n, a]:
                continue
            for f in range(K):
                good = [r for r in range(tree.correct2.shape[-1]) if tree.correct2[n, a, f, r]]
                for r in good[:limit]:
                    rows.append((task.refine_prompt(tree.xs[n], tree.a0[n, a].tolist(), tree.fb[n, a, f].tolist()),
                                 tree.a2[n, a, f, r], tree.a0[n, a], 1.0))
    ps = _stack("refine", rows)
    return {} if ps is None else {"refine": ps}


def preview(tree: Tree, n: int, margin: float, limit: int) -> dict:
    """One training problem's tree with its Q values and which candidates were chosen/rejected (the tab)."""
    qa, qf, qr = tree.targets
    K = tree.correct0.shape[1]
    a_pairs = rank_pairs(_texts(tree.a0[n]), qa[n].tolist(), margin, limit)
    answers = []
    for a in range(K):
        f_pairs = rank_pairs(_texts(tree.fb[n, a]), qf[n, a].tolist(), margin, limit)
        feedback = []
        for f in range(K):
            r_pairs = rank_pairs(_texts(tree.a2[n, a, f]), qr[n, a, f].tolist(), margin, limit)
            feedback.append({
                "text": task.decode(tree.fb[n, a, f]), "q": float(qf[n, a, f]),
                "chosen": any(p[0] == f for p in f_pairs), "rejected": any(p[1] == f for p in f_pairs),
                "refinements": [{"text": task.decode(tree.a2[n, a, f, r]), "correct": bool(tree.correct2[n, a, f, r]),
                                 "chosen": any(p[0] == r for p in r_pairs), "rejected": any(p[1] == r for p in r_pairs)}
                                for r in range(tree.correct2.shape[-1])]})
        answers.append({"text": task.decode(tree.a0[n, a]), "correct": bool(tree.correct0[n, a]), "q": float(qa[n, a]),
                        "chosen": any(p[0] == a for p in a_pairs), "rejected": any(p[1] == a for p in a_pairs),
                        "feedback": feedback})
    return {"problem": tree.xs[n], "truth": tree.truths[n], "answers": answers, "margin": margin}

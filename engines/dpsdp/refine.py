"""The inference protocol (spec §1): the actor answers, the critic gives feedback on the latest answer,
the actor refines, for several rounds; the final answer is the majority vote over the actor's answers.

Markovian state: the actor conditions on (x, last answer, last feedback), the critic on (x, last answer).
The critic can be the learned model, the programmatic ``oracle`` (the ceiling) or a model prompted in
the same Markovian way; ``markovian=False`` feeds the whole history instead (ablation).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from . import task
from .models import generate


def majority(finals: list[int | None]) -> int | None:
    """Majority vote over parsed final answers; unparsable ones (None) are excluded; ties break toward the
    latest answer among the tied ones; None when nothing parsed."""
    votes = Counter(f for f in finals if f is not None)
    if not votes:
        return None
    top = max(votes.values())
    return next(f for f in reversed(finals) if f is not None and votes[f] == top)


@dataclass
class Transcript:
    xs: list[str]
    truths: list[str]
    answers: list[list[str]]  # [problem][turn] actor answers (text)
    feedback: list[list[str]]  # [problem][turn-1] critic messages (text)

    @property
    def correct(self) -> np.ndarray:
        """[N, T] 𝟙[the turn's final answer is right]."""
        return np.array([[task.final_answer(a) == task.final_answer(t) for a in ans]
                         for ans, t in zip(self.answers, self.truths)], bool).reshape(len(self.xs), -1)

    @property
    def finals(self) -> list[list[int | None]]:
        return [[task.final_answer(a) for a in ans] for ans in self.answers]


def _batches(problems: list[tuple]) -> tuple[list[str], list[str], list[list[int]]]:
    """Problem texts, true scratchpads, and the problem indices grouped by prompt length (one batch each)."""
    xs = [task.problem_text(*p) for p in problems]
    groups: dict[int, list[int]] = {}
    for i, x in enumerate(xs):
        groups.setdefault(len(x), []).append(i)
    return xs, [task.solution_text(*p) for p in problems], list(groups.values())


def _check(cancelled) -> None:
    if cancelled is not None and cancelled():
        from engines.common.context import JobCancelled

        raise JobCancelled("stopped")


def run(actor, critic, problems: list[tuple], turns: int, temperature: float = 0.0, seed: int = 0,
        critic_mode: str = "model", markovian: bool = True, cancelled=None) -> Transcript:
    """``turns`` actor answers per problem (1 first answer + turns − 1 refinements), batched per prompt length."""
    g = torch.Generator().manual_seed(seed)
    xs, truths, groups = _batches(problems)
    answers: list[list[str]] = [[] for _ in xs]
    feedback: list[list[str]] = [[] for _ in xs]
    for idx in groups:
        gx = [xs[i] for i in idx]
        ans = generate(actor, torch.tensor([task.actor_prompt(x) for x in gx]), task.ANSWER_LEN, temperature, g)
        history: list[list[tuple[list[int], list[int]]]] = [[] for _ in idx]
        for k, i in enumerate(idx):
            answers[i].append(task.decode(ans[k]))
        for _ in range(turns - 1):
            _check(cancelled)
            if critic_mode == "oracle":
                fb = torch.tensor([task.response_ids(task.oracle_feedback(task.decode(a), truths[i]), task.FEEDBACK_LEN)
                                   for a, i in zip(ans, idx)])
            else:
                fb = generate(critic, torch.tensor([task.critic_prompt(x, a.tolist()) for x, a in zip(gx, ans)]),
                              task.FEEDBACK_LEN, temperature, g)
            for k in range(len(idx)):
                history[k].append((ans[k].tolist(), fb[k].tolist()))
            if markovian:
                prompts = [task.refine_prompt(x, a.tolist(), f.tolist()) for x, a, f in zip(gx, ans, fb)]
            else:
                prompts = [task.history_prompt(x, h) for x, h in zip(gx, history)]
            ans = generate(actor, torch.tensor(prompts), task.ANSWER_LEN, temperature, g)
            for k, i in enumerate(idx):
                feedback[i].append(task.decode(fb[k]))
                answers[i].append(task.decode(ans[k]))
    return Transcript(xs, truths, answers, feedback)


def self_consistency(actor, problems: list[tuple], samples: int, temperature: float, seed: int,
                     cancelled=None) -> Transcript:
    """The equal-compute baseline: ``samples`` independent first answers per problem (no critic)."""
    g = torch.Generator().manual_seed(seed)
    xs, truths, groups = _batches(problems)
    answers: list[list[str]] = [[] for _ in xs]
    for idx in groups:
        _check(cancelled)
        p0 = torch.tensor([task.actor_prompt(xs[i]) for i in idx for _ in range(samples)])
        out = generate(actor, p0, task.ANSWER_LEN, temperature, g).view(len(idx), samples, -1)
        for k, i in enumerate(idx):
            answers[i] = [task.decode(a) for a in out[k]]
    return Transcript(xs, truths, answers, [[] for _ in xs])


def metrics(tr: Transcript) -> dict:
    """p1@t_k, m1@t_k, pass@t_k for k = 1..T, and per-turn flip rates (correct→incorrect, incorrect→correct)."""
    c = tr.correct
    finals = tr.finals
    truth = [task.final_answer(t) for t in tr.truths]
    T = c.shape[1]
    m1 = [float(np.mean([majority(f[:k]) == t for f, t in zip(finals, truth)])) for k in range(1, T + 1)]
    unparsable = float(np.mean([[f is None for f in row] for row in finals]))
    return {
        "n": int(c.shape[0]), "turns": T,
        "p1": [float(x) for x in c.mean(0)],
        "m1": m1,
        "pass": [float(c[:, :k].any(1).mean()) for k in range(1, T + 1)],
        "c2i": [float((c[:, k - 1] & ~c[:, k]).mean()) for k in range(1, T)],
        "i2c": [float((~c[:, k - 1] & c[:, k]).mean()) for k in range(1, T)],
        "unparsable": unparsable,
    }

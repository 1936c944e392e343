"""The real-model path: a chat model (SmolLM2-135M-Instruct from the zoo, or ``PAPERLAB_LLM_MODEL``) prompted
as actor and critic on word problems (spec §1's inference protocol with an instruct LLM).

The actor answers, the critic checks the latest answer (where the error is, then a verdict), the actor
refines from (problem, previous answer, feedback) only, for T turns; the final answer is the majority vote
over the actor's answers, unparsable ones left out (``refine.majority``, the tiny pipeline's vote).

    python -m engines.dpsdp.chat measure [turns]   # p1@t1 vs m1@tT on the built-in word problems
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from . import word_problems as wp
from .llm_params import LLM_LABEL, ChatParams
from .refine import majority


@dataclass
class Reply:
    text: str
    ids: list[int]  # the generated tokens (up to and including the end-of-turn token when it came)


class ChatPolicy:
    """One chat model in one role: the prompt's token ids through its chat template, and batched sampling."""

    def __init__(self, model, tok, max_new_tokens: int = 160, max_rows: int = 32):
        self.model, self.tok, self.max_new_tokens = model, tok, max_new_tokens
        self.max_rows = max_rows  # sequences per generate call (bounds the KV cache of a large tree level)
        self.eos = tok.eos_token_id
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else self.eos

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        text = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def reply(self, conversations: list[list[dict]], temperature: float = 0.0, seed: int = 0, n: int = 1,
              cancelled: Callable[[], bool] | None = None) -> list[list[Reply]]:
        """``n`` replies per conversation (left-padded batches of ≤ ``max_rows``; greedy at temperature 0)."""
        import torch

        from engines.common.context import cancellable_generate

        prompts = [self.prompt_ids(c) for c in conversations for _ in range(n)]  # row i * n + j
        dev = next(self.model.parameters()).device
        kw = dict(do_sample=temperature > 0, max_new_tokens=self.max_new_tokens, pad_token_id=self.pad)
        if temperature > 0:
            kw.update(temperature=temperature, top_k=0, top_p=1.0)
        torch.manual_seed(seed)
        gens: list[list[int]] = []
        for s in range(0, len(prompts), self.max_rows):
            part = prompts[s:s + self.max_rows]
            width = max(len(p) for p in part)
            ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in part], device=dev)
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in part], device=dev)
            out = cancellable_generate(self.model, cancelled, input_ids=ids, attention_mask=mask, **kw)
            gens += [row[width:].tolist() for row in out]
        res: list[list[Reply]] = []
        for i in range(len(conversations)):
            row = []
            for j in range(n):
                gen = gens[i * n + j]
                if self.eos in gen:
                    gen = gen[:gen.index(self.eos) + 1]
                row.append(Reply(self.tok.decode(gen, skip_special_tokens=True).strip(), gen))
            res.append(row)
        return res


@dataclass
class ChatTranscript:
    problem: wp.WordProblem
    answers: list[str] = field(default_factory=list)  # [turn] the actor's answers
    feedback: list[str] = field(default_factory=list)  # [turn - 1] the critic's messages

    @property
    def finals(self) -> list:
        return [wp.parse_answer(a)[0] for a in self.answers]


def refine_loop(actor: ChatPolicy, critic: ChatPolicy, problems: list[wp.WordProblem], turns: int,
                temperature: float = 0.0, seed: int = 0, cancelled: Callable[[], bool] | None = None,
                progress: Callable[[float, str], None] | None = None) -> list[ChatTranscript]:
    """a₀ ~ π_a(·|x); then per turn f ~ π_c(·|x, a) and a ~ π_a(·|x, a, f) — Markovian, batched over problems."""
    say = progress or (lambda f, m: None)
    out = [ChatTranscript(p) for p in problems]
    xs = [p.text for p in problems]
    steps = 2 * turns - 1
    say(0.0, "the actor answers")
    ans = [r[0].text for r in actor.reply([wp.actor_messages(x) for x in xs], temperature, seed, cancelled=cancelled)]
    for t, a in zip(out, ans):
        t.answers.append(a)
    for k in range(1, turns):
        say((2 * k - 1) / steps, f"turn {k + 1}/{turns}: the critic checks the answer")
        fb = [r[0].text for r in critic.reply([wp.critic_messages(x, a) for x, a in zip(xs, ans)], temperature,
                                             seed + 2 * k - 1, cancelled=cancelled)]
        say(2 * k / steps, f"turn {k + 1}/{turns}: the actor refines")
        ans = [r[0].text for r in actor.reply([wp.refine_messages(x, a, f) for x, a, f in zip(xs, ans, fb)],
                                              temperature, seed + 2 * k, cancelled=cancelled)]
        for t, f, a in zip(out, fb, ans):
            t.feedback.append(f)
            t.answers.append(a)
    say(1.0, "done")
    return out


def load_policy(max_new_tokens: int) -> tuple[ChatPolicy, str]:
    """SmolLM2-135M-Instruct from the zoo (offline), or the model ``PAPERLAB_LLM_MODEL`` names; both roles."""
    from engines.common.settings import get_settings
    from engines.common.zoo.smollm2 import load_smollm2

    s = get_settings()
    model, tok = load_smollm2(s.resolved_device())
    return ChatPolicy(model, tok, max_new_tokens), (s.llm_model or "SmolLM2-135M-Instruct (zoo)")


def transcript_of(tr: ChatTranscript) -> dict:
    """Per turn: the answer, how it was parsed, its correctness, the feedback and its verdict, the running majority."""
    truth = tr.problem.truth
    finals = tr.finals
    turns = []
    for k, ans in enumerate(tr.answers):
        final, how = wp.parse_answer(ans)
        running = majority(finals[:k + 1])
        fb = tr.feedback[k - 1] if k else None
        turns.append({"turn": k + 1, "answer": ans, "empty": not ans.strip(), "final": final, "parsed": how,
                      "correct": wp.is_correct(final, truth), "feedback": fb,
                      "verdict": wp.parse_verdict(fb) if k else None, "majority": running,
                      "majority_correct": wp.is_correct(running, truth) if running is not None else
                      (None if truth is None else False)})
    unparsable = sum(f is None for f in finals)
    return {"problem": tr.problem.text, "truth": truth, "truth_source": tr.problem.source, "turns": turns,
            "majority": turns[-1]["majority"], "majority_correct": turns[-1]["majority_correct"],
            "unparsable": unparsable, "empty": sum(t["empty"] for t in turns),
            "votes": {str(f): finals.count(f) for f in dict.fromkeys(f for f in finals if f is not None)}}


def transcript(params, ctx: JobContext | None = None) -> dict:
    """Entry point: one problem, the prompted actor-critic loop (the tab's SmolLM2 choice)."""
    from engines.common.context import Subprogress
    from engines.common.threads import torch_threads

    p = validate(ChatParams, params)
    ctx = ctx if ctx is not None else LocalContext()
    problem = wp.check_problem(p.problem, p.expected)
    t0 = time.perf_counter()
    with torch_threads(2):
        ctx.progress(0.02, "loading SmolLM2-135M-Instruct")
        policy, source = load_policy(p.max_new_tokens)
        (tr,) = refine_loop(policy, policy, [problem], p.turns, p.temperature, p.seed, ctx.cancelled,
                            Subprogress(ctx, 0.1, 1.0))
    return {**transcript_of(tr), "variant": "smollm2", "variant_label": LLM_LABEL, "model": source,
            "temperature": p.temperature, "markovian": True, "elapsed_s": time.perf_counter() - t0}


def metrics(transcripts: list[ChatTranscript]) -> dict:
    """p1@t_k, m1@t_k, pass@t_k per turn, flips and the share of unparsable answers (problems with a known truth)."""
    import numpy as np

    rows = [t for t in transcripts if t.problem.truth is not None]
    c = np.array([[bool(wp.is_correct(f, t.problem.truth)) for f in t.finals] for t in rows], bool)
    T = c.shape[1]
    m1 = [float(np.mean([bool(wp.is_correct(majority(t.finals[:k]), t.problem.truth)) for t in rows]))
          for k in range(1, T + 1)]
    return {"n": len(rows), "turns": T, "p1": [float(x) for x in c.mean(0)], "m1": m1,
            "pass": [float(c[:, :k].any(1).mean()) for k in range(1, T + 1)],
            "c2i": [float((c[:, k - 1] & ~c[:, k]).mean()) for k in range(1, T)],
            "i2c": [float((~c[:, k - 1] & c[:, k]).mean()) for k in range(1, T)],
            "unparsable": float(np.mean([[f is None for f in t.finals] for t in rows])),
            "marked": float(np.mean([[wp.parse_answer(a)[1] == "marked" for a in t.answers] for t in rows]))}


def measure(turns: int = 5, max_new_tokens: int = 160, temperature: float = 0.0) -> dict:
    """The built-in word problems, greedy, T turns (the figure in docs/methods/dpsdp.md)."""
    from engines.common.threads import torch_threads

    t0 = time.perf_counter()
    with torch_threads(2):
        policy, source = load_policy(max_new_tokens)
        trs = refine_loop(policy, policy, wp.builtin_problems(), turns, temperature, 0,
                          progress=lambda f, m: print(f"{f:4.0%} {m}", flush=True))
    return {**metrics(trs), "model": source, "max_new_tokens": max_new_tokens, "temperature": temperature,
            "seconds": time.perf_counter() - t0,
            "transcripts": [transcript_of(t) for t in trs]}


if __name__ == "__main__":
    import json
    import sys

    if len(sys.argv) < 2 or sys.argv[1] != "measure":
        sys.exit(__doc__)
    res = measure(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    print(json.dumps({k: v for k, v in res.items() if k != "transcripts"}, indent=1))
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            json.dump(res, f, indent=1)

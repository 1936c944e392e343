"""The tiny verifiable task (spec §4): two-step arithmetic ``a±b±c`` with a scratchpad answer.

An answer is the two partial results, zero-padded to three digits: ``47+58-26`` → ``105;079``
(a+b = 105, then 105-26 = 79); the final answer is the number after ``;``. Feedback is the critic's
generative message: its own worked check of the problem, ``=``, then the verdict ``OK``, or ``E`` + position
k (0-6) + the digit it believes belongs there (``105;079=E57`` = "I get 105;079, so digit 5 of the answer
should be 7"). The critic reasons before it judges (the paper's critic writes its analysis, then a
verdict): a one-token verdict would have to verify all seven digits in a single step, which the tiny
model cannot (an SFT-ed verdict-only critic said OK to 25-30 % of right answers). The programmatic
oracle writes the true scratchpad and names the first wrong digit (the stand-in for the paper's
stronger-model feedback).

Every message is a character sequence over one small vocabulary with role tokens: ``<A>`` starts the
actor's first answer, ``<C>`` the critic's feedback, ``<R>`` the actor's refinement.
"""
from __future__ import annotations

import re

import numpy as np

PAD, BOS, EOS, A, C, R = 0, 1, 2, 3, 4, 5
SPECIAL = ["<pad>", "<s>", "</s>", "<A>", "<C>", "<R>"]
CHARS = "0123456789+-=;OKE"
VOCAB = SPECIAL + list(CHARS)
_IDX = {ch: i + len(SPECIAL) for i, ch in enumerate(CHARS)}
ANSWER_LEN = 7  # ddd;ddd
FEEDBACK_LEN = 11  # "ddd;ddd=OK</s>" or "ddd;ddd=Ekd"
POSITIONS = 128  # the tiny GPT-2's context
HISTORY_TURNS = 5  # the full-history ablation's last refinement prompt + answer must fit in POSITIONS
SPLITS = {"train": 0, "val": 1, "test": 2, "ood": 3}
_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*([+-])\s*(\d{1,3})\s*([+-])\s*(\d{1,3})\s*=?\s*$")
_ANSWER = re.compile(r"^(\d{3});(\d{3})$")
_FEEDBACK = re.compile(r"^(\d{3};\d{3})=(OK|E[0-6]\d)$")


class ProblemError(ValueError):
    pass


def encode(text: str) -> list[int]:
    return [_IDX[ch] for ch in text]


def decode(ids) -> str:
    """Characters of ``ids`` up to the first EOS (role/pad tokens dropped)."""
    out = []
    for i in ids:
        i = int(i)
        if i == EOS:
            break
        if i >= len(SPECIAL):
            out.append(VOCAB[i])
    return "".join(out)


def solve(a: int, op1: str, b: int, op2: str, c: int) -> tuple[int, int]:
    s1 = a + b if op1 == "+" else a - b
    return s1, s1 + c if op2 == "+" else s1 - c


def problem_text(a: int, op1: str, b: int, op2: str, c: int) -> str:
    """Canonical form: numbers below 100 zero-padded to two digits, so in-distribution prompts share one length."""
    return f"{a:02d}{op1}{b:02d}{op2}{c:02d}"


def solution_text(a: int, op1: str, b: int, op2: str, c: int) -> str:
    s1, s2 = solve(a, op1, b, op2, c)
    return f"{s1:03d};{s2:03d}"


def parse_problem(text: str) -> tuple[int, str, int, str, int]:
    m = _PROBLEM.match(text or "")
    if not m:
        raise ProblemError(f"{text!r:.60} is not a problem of the form a+b-c (three whole numbers below 1000 joined "
                           "by + or -), e.g. 47+58-26")
    a, op1, b, op2, c = int(m[1]), m[2], int(m[3]), m[4], int(m[5])
    s1, s2 = solve(a, op1, b, op2, c)
    if not (0 <= s1 <= 999 and 0 <= s2 <= 999):
        raise ProblemError(f"{problem_text(a, op1, b, op2, c)}: both partial results must lie in 0-999 "
                           f"(here {s1} and {s2}); the scratchpad has three digits per step")
    return a, op1, b, op2, c


def final_answer(answer: str) -> int | None:
    """The number after ``;`` of a well-formed answer, else None (unparsable: excluded from the vote)."""
    m = _ANSWER.match(answer)
    return int(m[2]) if m else None


def valid_feedback(fb: str) -> bool:
    return bool(_FEEDBACK.match(fb))


def verdict(fb: str) -> str | None:
    """The verdict of a feedback message (``OK`` or ``E`` k d), None when the message is malformed."""
    m = _FEEDBACK.match(fb)
    return m[2] if m else None


def judge(answer: str, check: str) -> str:
    """``OK`` when ``answer`` equals the ``check`` scratchpad, else its first wrong digit and the check's one."""
    if answer == check:
        return "OK"
    for k, (x, y) in enumerate(zip(answer.ljust(ANSWER_LEN, "?"), check)):
        if x != y and y != ";":
            return f"E{k}{y}"
        if x != y:  # the separator is missing: point at the digit after it
            return f"E{k + 1}{check[k + 1]}"
    return "OK"


def oracle_feedback(answer: str, truth: str) -> str:
    """The oracle's message: the true scratchpad as its check, then the verdict on ``answer``."""
    return f"{truth}={judge(answer, truth)}"


def sample(n: int, seed: int, split: str = "train") -> list[tuple[int, str, int, str, int]]:
    """``n`` problems of a split (disjoint by construction: the problem's hash decides its split).

    Numbers have two digits (OOD: a three-digit first operand); both partial results stay in 0-999.
    """
    rng = np.random.default_rng([seed, SPLITS[split], 7])
    out: list[tuple[int, str, int, str, int]] = []
    want = SPLITS[split] if split != "ood" else None
    while len(out) < n:
        a = int(rng.integers(100, 1000)) if split == "ood" else int(rng.integers(10, 100))
        b, c = (int(x) for x in rng.integers(10, 100, 2))
        op1, op2 = ("+" if x else "-" for x in rng.integers(0, 2, 2))
        s1, s2 = solve(a, op1, b, op2, c)
        if not (0 <= s1 <= 999 and 0 <= s2 <= 999):
            continue
        if want is not None and split_of(a, op1, b, op2, c) != want:
            continue
        out.append((a, op1, b, op2, c))
    return out


def split_of(a: int, op1: str, b: int, op2: str, c: int) -> int:
    """0 train, 1 val, 2 test: a fixed hash of the problem (80/10/10), so the splits never overlap."""
    h = (a * 1_000_003 + b * 10_007 + c * 101 + (op1 == "+") * 7 + (op2 == "+") * 3) % 10
    return 0 if h < 8 else (1 if h == 8 else 2)


# ----------------------------------------------------------------------------- the three prompts (Markovian)
# Messages travel as the exact tokens the model emitted (ANSWER_LEN / FEEDBACK_LEN of them, EOS and padding
# included), so every prompt of a batch of same-length problems has the same length.


def actor_prompt(x: str) -> list[int]:
    """The actor's first turn: s₀ = (x)."""
    return [BOS, *encode(x + "="), A]


def critic_prompt(x: str, answer: list[int]) -> list[int]:
    """The critic sees only (x, last answer)."""
    return [BOS, *encode(x + "="), *answer, C]


def refine_prompt(x: str, answer: list[int], feedback: list[int]) -> list[int]:
    """The actor's refinement sees only (x, last answer, last feedback): its length does not grow with the turn."""
    return [BOS, *encode(x + "="), *answer, C, *feedback, R]


def history_prompt(x: str, turns: list[tuple[list[int], list[int]]]) -> list[int]:
    """Non-Markovian ablation: the refinement prompt holds every earlier (answer, feedback) pair."""
    ids = [BOS, *encode(x + "=")]
    for i, (ans, fb) in enumerate(turns):
        ids += ([A] if i == 0 else [R]) + list(ans) + [C] + list(fb)
    return ids + [R]


def response_ids(text: str, length: int) -> list[int]:
    """A message as the model emits it: the characters, then EOS, padded (after EOS) to ``length``."""
    ids = encode(text)[:length]
    if len(ids) < length:
        ids = ids + [EOS] + [PAD] * (length - len(ids) - 1)
    return ids

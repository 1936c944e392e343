"""The tiny task (spec §4): sums of three 3-digit numbers, answer written most-significant digit first.

A 14-symbol character vocabulary: the ten digits, ``+``, ``-``, ``=`` and ``.`` (end of answer).
Every problem has the same shape ``aaa+bbb+ccc=dddd.`` (operands and answer zero-padded), so batches
need no padding. The second task type (the guidance class label) is ``a+b-c`` with a+b ≥ c.
Splits are disjoint by construction: a problem's split is a hash of its operands (train / validation /
test), so the held-out test problems are never seen in training or in tuning.
No torch here: the tab parses and validates problems with this module.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

VOCAB = list("0123456789+-=.")
STOI = {c: i for i, c in enumerate(VOCAB)}
EOS = STOI["."]
TASKS = ("add", "sub")  # class labels 0, 1; the null (unconditional) class is len(TASKS)
OPERAND_DIGITS = 3
ANSWER_DIGITS = 4
PROMPT_LEN = 3 * OPERAND_DIGITS + 3  # "aaa+bbb+ccc="
ANSWER_LEN = ANSWER_DIGITS + 1  # digits + "."
SEQ_LEN = PROMPT_LEN + ANSWER_LEN
SPLITS = ("train", "val", "test")
_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*\+\s*(\d{1,3})\s*([+-])\s*(\d{1,3})\s*=?\s*$")


class ProblemError(ValueError):
    """A problem the model cannot read; the message says what is accepted."""


def encode(text: str) -> list[int]:
    bad = sorted({c for c in text if c not in STOI})
    if bad:
        raise ProblemError(f"problem: characters {bad} are not in the vocabulary {''.join(VOCAB)!r}")
    return [STOI[c] for c in text]


def decode(ids) -> str:
    return "".join(VOCAB[int(i)] for i in ids)


def prompt_text(a: int, b: int, c: int, task: str = "add") -> str:
    op = "+" if task == "add" else "-"
    return f"{a:03d}+{b:03d}{op}{c:03d}="


def answer_of(a: int, b: int, c: int, task: str = "add") -> int:
    return a + b + c if task == "add" else a + b - c


def answer_text(value: int) -> str:
    return f"{value:0{ANSWER_DIGITS}d}."


def carries(a: int, b: int, c: int) -> int:
    """Difficulty label of an addition: the number of columns (of 3) that produce a carry."""
    n, carry = 0, 0
    for k in range(OPERAND_DIGITS):
        s = (a // 10**k) % 10 + (b // 10**k) % 10 + (c // 10**k) % 10 + carry
        carry = s // 10
        n += carry > 0
    return n


def parse_problem(text: str, max_len: int = SEQ_LEN) -> tuple[int, int, int, str]:
    """``"482+917+356="`` → (482, 917, 356, "add"); clear messages for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise ProblemError("problem: write three numbers of at most 3 digits, e.g. 482+917+356=")
    if len(text.strip()) > max_len:
        raise ProblemError(f"problem: {len(text.strip())} characters is longer than the model's context "
                           f"({max_len} symbols for problem and answer); write e.g. 482+917+356=")
    m = _PROBLEM.match(text)
    if m is None:
        raise ProblemError(f"problem: {text.strip()!r} is not of the form a+b+c= or a+b-c= with numbers of "
                           "at most 3 digits (e.g. 482+917+356=)")
    a, b, c = int(m.group(1)), int(m.group(2)), int(m.group(4))
    task = "add" if m.group(3) == "+" else "sub"
    if task == "sub" and a + b < c:
        raise ProblemError(f"problem: {a}+{b}-{c} is negative; the model writes answers from 0 to 9999")
    return a, b, c, task


def split_of(a: int, b: int, c: int, task: str) -> str:
    """Deterministic split from a hash of the problem: 90% train, 5% validation, 5% test."""
    h = int.from_bytes(hashlib.blake2b(f"{task}:{a},{b},{c}".encode(), digest_size=4).digest(), "little") % 100
    return "train" if h < 90 else ("val" if h < 95 else "test")


def zero_digits(x: np.ndarray, p: float, share: float, rng: np.random.Generator) -> np.ndarray:
    """In a ``share`` of the operands ``x`` (m, 3), set each decimal digit to 0 with probability ``p``.

    The base model's training mix (``TinyConfig.base_zeroed``): problems with zeroed digits still are sums of
    three 3-digit numbers, but many have columns without a carry, whose digit is a plain sum mod 10. Trained on
    uniform problems only, the tiny GPT never learned the answer's tens digit (loss ln 10 through 11,000 steps).
    """
    m, k = x.shape
    keep = ~((rng.random((m, k, OPERAND_DIGITS)) < p) & (rng.random((m, 1, 1)) < share))
    place = 10 ** np.arange(OPERAND_DIGITS)
    digits = (x[:, :, None] // place) % 10
    return (digits * keep * place).sum(-1)


def sample(n: int, seed: int, split: str = "train", task_mix: float = 0.5, tasks: tuple[str, ...] | None = None,
           zeroed: tuple[float, float] = (0.0, 0.0)):
    """n problems of one split: dict of numpy arrays ``a, b, c, task`` (0 add / 1 sub), ``carries``.

    Rejection-samples operands until the problem's hash falls in ``split``. ``zeroed = (share, p)``: in that share
    of the problems each operand digit is 0 with probability p (see ``zero_digits``); (0, 0) draws uniform problems.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}")
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("a", "b", "c", "task")}
    while len(out["a"]) < n:
        m = 4 * (n - len(out["a"])) + 64
        a, b, c = (rng.integers(0, 10**OPERAND_DIGITS, m) for _ in range(3))
        if zeroed[0] > 0 and zeroed[1] > 0:
            a, b, c = zero_digits(np.stack([a, b, c], 1), zeroed[1], zeroed[0], rng).T
        if tasks is not None:
            t = rng.integers(0, len(tasks), m)
            t = np.array([TASKS.index(tasks[i]) for i in t])
        else:
            t = (rng.random(m) < task_mix).astype(int)
        for ai, bi, ci, ti in zip(a, b, c, t):
            name = TASKS[ti]
            if name == "sub" and ai + bi < ci:
                continue
            if split_of(int(ai), int(bi), int(ci), name) != split:
                continue
            for k, v in zip(("a", "b", "c", "task"), (ai, bi, ci, ti)):
                out[k].append(int(v))
            if len(out["a"]) == n:
                break
    arr = {k: np.array(v, dtype=np.int64) for k, v in out.items()}
    arr["carries"] = np.array([carries(a, b, c) for a, b, c in zip(arr["a"], arr["b"], arr["c"])])
    return arr


def tokens(problems) -> np.ndarray:
    """(n, SEQ_LEN) token ids of prompt + answer + end symbol."""
    rows = []
    for a, b, c, t in zip(problems["a"], problems["b"], problems["c"], problems["task"]):
        name = TASKS[int(t)]
        rows.append(encode(prompt_text(a, b, c, name) + answer_text(answer_of(a, b, c, name))))
    return np.array(rows, dtype=np.int64)


def prompts(problems) -> np.ndarray:
    return tokens(problems)[:, :PROMPT_LEN]

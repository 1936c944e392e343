"""Word problems for the real-model path (no torch): the built-in set, checking the user's own problem,
the Markovian prompts of the three roles as chat messages, and parsing answers and verdicts.

The paper's actor answers a₀ ~ π_a(·|x), the critic writes feedback a₁ ~ π_c(·|x, a₀), and the actor refines
a₂ ~ π_a(·|x, a₀, a₁). With an instruct model each role is a chat: the refinement is the actor's own
answer followed by the critic's feedback as the next user message, so the refinement sees the problem,
the previous answer and the feedback only (the Markovian state), whatever the turn.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# Grade-school style, one to three steps, whole-number answers (written for this project).
WORD_PROBLEMS: list[tuple[str, int]] = [
    ("Tom has 3 apples and buys 5 more. How many apples does Tom have now?", 8),
    ("A box holds 12 pencils. Sara gives away 4 pencils. How many pencils are left in the box?", 8),
    ("There are 6 rows of chairs with 7 chairs in each row. How many chairs are there?", 42),
    ("Lena reads 9 pages every day. How many pages does she read in 4 days?", 36),
    ("A baker makes 24 muffins and puts them equally into 6 bags. How many muffins are in each bag?", 4),
    ("Sam had 15 marbles. He lost 6 and then found 4. How many marbles does Sam have now?", 13),
    ("A ticket costs 8 dollars. How much do 5 tickets cost, in dollars?", 40),
    ("Mia has 20 stickers. She gives 3 stickers to each of her 4 friends. How many stickers does Mia have left?", 8),
    ("A farmer has 7 cows and 3 times as many chickens. How many chickens does the farmer have?", 21),
    ("A train travels 60 miles each hour. How many miles does it travel in 3 hours?", 180),
    ("Jack is 9 years old. His sister is 4 years older. How old will his sister be in 2 years?", 15),
    ("A shop sold 35 cups on Monday and 28 cups on Tuesday. How many cups did it sell in the two days?", 63),
    ("Anna has 50 dollars. She buys a book for 12 dollars and a pen for 3 dollars. How many dollars does she "
     "have left?", 35),
    ("A garden has 5 rows of 8 tulips. 6 tulips are picked. How many tulips are still in the garden?", 34),
    ("Ben saves 5 dollars every week. How many weeks does he need to save 45 dollars?", 9),
    ("A class has 14 girls and 13 boys. The teacher splits the class into 3 equal groups. How many students "
     "are in each group?", 9),
    ("A pizza is cut into 8 slices. Four friends each eat 2 slices. How many slices are left?", 0),
    ("Nina buys 3 packs of cards with 10 cards in each pack and already had 7 cards. How many cards does she "
     "have now?", 37),
    ("A bus has 40 seats. 23 people are sitting on the bus. How many seats are empty?", 17),
    ("Paul runs 2 kilometres every morning and 3 kilometres every evening. How many kilometres does he run "
     "in 5 days?", 25),
]
WORD_EXAMPLE = WORD_PROBLEMS[0][0]
MAX_PROBLEM_CHARS = 600

ACTOR_INSTRUCTION = ("Solve the following math word problem. Think step by step, briefly. End with a last line "
                     "of the form 'Answer: <number>'.")
CRITIC_INSTRUCTION = ("You are checking a student's solution to a math word problem. Check each step. If there "
                      "is a mistake, say where it is and what the right value is. End with a last line that is "
                      "either 'Verdict: correct' or 'Verdict: incorrect'.")
REFINE_INSTRUCTION = ("Here is feedback on your answer:\n\n{feedback}\n\nUse the feedback to solve the problem "
                      "again. Think step by step, briefly. End with a last line of the form 'Answer: <number>'.")
NO_FEEDBACK = "(the checker wrote nothing)"


class WordProblemError(ValueError):
    pass


@dataclass(frozen=True)
class WordProblem:
    text: str
    truth: int | str | None  # None: unknown (no correctness marks)
    source: str  # "built-in", "arithmetic", "your answer", "unknown", "file"


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


_BUILTIN = {_norm(q): a for q, a in WORD_PROBLEMS}


def check_problem(text: str, expected: str = "") -> WordProblem:
    """The user's problem (a built-in one, a ``a+b-c`` of the tiny task, or their own word problem) and its
    right answer when known; raises ``WordProblemError`` with a message a person can act on."""
    from .task import ProblemError, parse_problem, solve

    text = (text or "").strip()
    if not text:
        raise WordProblemError("problem: type a word problem (or pick a built-in one), e.g. " + WORD_EXAMPLE)
    if len(text) > MAX_PROBLEM_CHARS:
        raise WordProblemError(f"problem: at most {MAX_PROBLEM_CHARS} characters (got {len(text)})")
    if not re.search(r"\d", text):
        raise WordProblemError("problem: a word problem with a whole-number answer must state its numbers in digits "
                               f"(no digit in {text[:60]!r})")
    truth: int | None = None
    source = "unknown"
    if _norm(text) in _BUILTIN:
        truth, source = _BUILTIN[_norm(text)], "built-in"
    else:
        try:
            truth, source = solve(*parse_problem(text))[1], "arithmetic"
        except ProblemError:
            pass
    expected = (expected or "").strip()
    if expected:
        m = re.fullmatch(r"[+-]?\d{1,12}", expected.replace(",", ""))
        if not m:
            raise WordProblemError(f"expected answer: a whole number such as 42 or -7 (got {expected[:30]!r})")
        truth, source = int(m[0]), "your answer"
    return WordProblem(text, truth, source)


def builtin_problems() -> list[WordProblem]:
    return [WordProblem(q, a, "built-in") for q, a in WORD_PROBLEMS]


def load_problems(path: str | Path, limit: int | None = None) -> list[WordProblem]:
    """MATH/GSM8K-style data by configuration: a JSONL file of {"problem": ..., "answer": ...}; an answer that is a
    whole number is compared as a number, any other as a normalised string (``\\boxed{}`` content)."""
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        try:
            q, a = str(row["problem"]), row["answer"]
        except (KeyError, TypeError):
            raise WordProblemError(f"{path}: line {i + 1} needs the keys 'problem' and 'answer'") from None
        a = str(a).strip().split("####")[-1].strip()  # GSM8K's "reasoning #### 42" answers
        out.append(WordProblem(q, int(a.replace(",", "")) if re.fullmatch(r"[+-]?[\d,]+", a) else _norm_answer(a),
                               "file"))
        if limit and len(out) >= limit:
            break
    if not out:
        raise WordProblemError(f"{path}: no problems")
    return out


# ----------------------------------------------------------------------------- the three roles (Markovian)


def actor_messages(problem: str) -> list[dict]:
    """s₀ = (x): the actor's first answer."""
    return [{"role": "user", "content": f"{ACTOR_INSTRUCTION}\n\nProblem: {problem}"}]


def critic_messages(problem: str, answer: str) -> list[dict]:
    """The critic sees (x, last answer) only."""
    return [{"role": "user", "content": f"{CRITIC_INSTRUCTION}\n\nProblem: {problem}\n\nStudent's solution:\n"
                                        f"{answer.strip() or '(empty)'}"}]


def refine_messages(problem: str, answer: str, feedback: str) -> list[dict]:
    """The actor's refinement sees (x, last answer, last feedback) only: its own previous answer as its turn,
    then the feedback; earlier turns never enter it."""
    return [*actor_messages(problem), {"role": "assistant", "content": answer.strip() or "(empty)"},
            {"role": "user", "content": REFINE_INSTRUCTION.format(feedback=feedback.strip() or NO_FEEDBACK)}]


# ----------------------------------------------------------------------------- parsing

_NUM = r"(?:(?<![\w)\]]\s)(?<![\w)\]])-)?\$?\d[\d,]*(?:\.\d+)?"  # a minus after a number is an operator
_MARKED = re.compile(r"(?:answer\s*(?:is)?\s*[:=]?|####)\s*\**\s*(" + _NUM + ")", re.I)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_ANY = re.compile(_NUM)
_LIST_MARK = re.compile(r"^\s*\d+[.)](?=\s|$)", re.M)
_VERDICT = re.compile(r"\b(incorrect|correct|wrong|right)\b", re.I)


def _number(s: str) -> int | float | None:
    s = s.replace("$", "").replace(",", "").replace(" ", "")
    try:
        v = float(s)
    except ValueError:
        return None
    return int(v) if v.is_integer() and abs(v) < 1e15 else v


def _norm_answer(s: str) -> str:
    return re.sub(r"\s+|\$|\\!|\\,|\\left|\\right", "", s).rstrip(".")


def parse_answer(text: str) -> tuple[int | float | None, str]:
    """(final answer, how it was found). ``\\boxed{}`` or an ``Answer: N`` / ``#### N`` line first ("marked"),
    else the last number of the text ("last number", the usual flexible GSM8K extraction); (None,
    "unparsable") when the text holds no number, e.g. an empty reply (excluded from the vote)."""
    text = text or ""
    boxed = _BOXED.findall(text)
    if boxed:
        v = _number(boxed[-1])
        return (v, "marked") if v is not None else (_norm_answer(boxed[-1]), "marked")
    marked = _MARKED.findall(text)
    if marked:
        return _number(marked[-1]), "marked"
    nums = _ANY.findall(_LIST_MARK.sub(" ", text))  # "4." opening a list item is not an answer
    if nums:
        return _number(nums[-1]), "last number"
    return None, "unparsable"


def is_correct(final, truth) -> bool | None:
    """None when the truth is unknown; numbers compare as numbers, other answers as normalised strings."""
    if truth is None:
        return None
    if final is None:
        return False
    if isinstance(truth, str) or isinstance(final, str):
        return _norm_answer(str(final)) == _norm_answer(str(truth))
    return abs(float(final) - float(truth)) < 1e-9


def parse_verdict(feedback: str) -> str | None:
    """The critic's verdict: ``correct`` / ``incorrect`` from its last verdict word, None when it gave none."""
    words = _VERDICT.findall(feedback or "")
    if not words:
        return None
    return "correct" if words[-1].lower() in ("correct", "right") else "incorrect"

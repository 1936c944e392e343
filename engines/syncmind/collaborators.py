"""Collaborators for the collaborative mode.

``OracleCollaborator`` is deterministic and answers *only* what is asked (the file, the function, the
changed identifiers, a one-line description), never the gold code. ``LLMCollaborator`` is the paper's
"know-everything" collaborator: an LLM prompted with the stale code, the error log, the ground-truth
location and the gold code, told to answer only what is asked and never mislead.
"""
from __future__ import annotations

import difflib
import re
from typing import Callable

from . import code as pycode
from .instances import Instance

NOT_ANSWERABLE = ("I can only tell you where the out-of-sync code is (file, function) and what changed in it "
                  "(identifiers, a one-line description).")


def changed_identifiers(inst: Instance) -> tuple[list[str], list[str]]:
    """(identifiers only the current version uses, identifiers only the out-of-sync version uses)."""
    new, old = pycode.identifiers(inst.gold_code), pycode.identifiers(inst.original_code)
    return [x for x in new if x not in old], [x for x in old if x not in new]


def describe(inst: Instance) -> str:
    added, removed = changed_identifiers(inst)
    diff = [l for l in difflib.unified_diff(inst.original_code.splitlines(), inst.gold_code.splitlines(), n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    return (f"The {inst.fm_type} `{inst.fm_name}` in `{inst.pyfile_path}` is still the version from commit "
            f"{inst.commit[:10]}; the current version differs in {len(diff)} line(s)"
            + (f" and uses {', '.join(added)} instead of {', '.join(removed)}." if added or removed else "."))


class OracleCollaborator:
    """Deterministic know-everything collaborator that answers only the asked piece of information."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self.questions: list[str] = []

    def answer(self, question: str) -> str:
        self.questions.append(question)
        q = question.lower()
        parts = []
        if re.search(r"\b(file|path|where|module)\b", q):
            parts.append(f"File: /workspace/test_repo/{self.inst.pyfile_path}")
        if re.search(r"\b(function|method|which code|name)\b", q):
            parts.append(f"{self.inst.fm_type.capitalize()}: {self.inst.fm_name}")
        if re.search(r"\b(identifier|identifiers|variable|changed|differ|rename|renamed)\b", q):
            added, removed = changed_identifiers(self.inst)
            parts.append(f"Current version uses: {', '.join(added) or '(no new identifiers)'}; "
                         f"outdated identifiers: {', '.join(removed) or '(none)'}")
        if re.search(r"\b(why|describe|what happened|explain)\b", q) and not parts:
            parts.append(describe(self.inst))
        return "\n".join(parts) if parts else NOT_ANSWERABLE


def know_everything_prompt(inst: Instance) -> str:
    """System prompt of the LLM collaborator (the paper's know-everything collaborator, our wording)."""
    return (
        "You assist students who must repair an out-of-sync Python repository `test_repo` at /workspace/test_repo.\n"
        f"Ground truth: the {inst.fm_type} `{inst.fm_name}` in /workspace/test_repo/{inst.pyfile_path} is an old "
        f"version:\n{inst.original_code}\nRunning the unit tests reports:\n{inst.initial_error_log[-3000:]}\n"
        f"The correct current code is:\n{inst.gold_code}\n"
        "Answer each student question with ONLY the specific information asked for, nothing else. "
        "Never give misleading information when unsure. Reply with the answer only."
    )


class LLMCollaborator:
    """An LLM answers with the know-everything prompt (``chat(messages) -> text``)."""

    def __init__(self, inst: Instance, chat: Callable[[list[dict]], str]):
        self.inst, self.chat = inst, chat
        self.system = know_everything_prompt(inst)

    def answer(self, question: str) -> str:
        try:
            return self.chat([{"role": "system", "content": self.system},
                              {"role": "user", "content": question}]).strip() or "(no answer)"
        except Exception as e:  # an unreachable endpoint must not crash the episode
            return f"(the collaborator could not answer: {type(e).__name__}: {str(e)[:200]})"

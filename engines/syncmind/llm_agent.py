"""LLM agents: the paper's ReAct-style loop with its tags over any chat backend.

Actions are read from the reply: ``<execute_bash>…</execute_bash>`` / ``<execute_ipython>…</execute_ipython>``
(environment interaction in the workspace; edits made this way persist), ``<text>/abs/path.py\\nfunc</text>``
(propose: the repository as edited, with the answer naming file and function), ``<question>[QUESTION] …
</question>`` (ask the collaborator, collaborative mode). Anything else is a malformed turn (it costs the
turn, no money). Backends: any OpenAI-compatible ``/chat/completions`` endpoint, or SmolLM2-135M-Instruct
offline through the zoo loader (``PAPERLAB_LLM_MODEL`` or ``llm.model`` selects another local model).
"""
from __future__ import annotations

import json
import re
import urllib.request
from typing import Callable

from .env import WORKSPACE, Action, AskAction, EnvAction, MalformedAction, Observation, ProposeAction
from .params import LLMParams

Chat = Callable[[list[dict]], str]
TAGS = re.compile(r"<(execute_bash|execute_ipython|text|question)>(.*?)</\1>", re.S)
MAX_OBS_CHARS = 2500


def system_prompt(info: dict) -> str:
    """The task description of the paper's prompts (independent / collaborative), in our own words."""
    collab = info["mode"] == "collaborative"
    options = ("(a) interact with the environment, (b) propose a solution" + (", (c) ask the collaborator" if collab else ""))
    lines = [
        "You are a helpful assistant repairing the Python repository `test_repo` at "
        f"{WORKSPACE}. Your copy of the code is out of sync with your teammates' changes, so its unit test fails.",
        f"Each turn choose exactly one option: {options}.",
        "(a) Run a shell command as <execute_bash>command</execute_bash> or Python as "
        "<execute_ipython>code</execute_ipython>. This is free but uses a turn. Edit files this way.",
        "(b) After editing the responsible function in the repository, propose it by naming the absolute file path "
        "and the function or method name (without its class) on two lines: "
        f"<text>{WORKSPACE}/pkg/module.py\nfunction_name</text>. Each proposal costs ${info['coding_cost']:g}.",
    ]
    if collab:
        lines.append("(c) Ask your collaborator, who knows the current code: <question>[QUESTION] your question"
                     f"</question>. Each question costs ${info['asking_cost']:g}.")
    lines.append(f"You start with ${info['total_budget']:g} and at most {info['max_turns']} turns; you fail when the "
                 "budget or the turns run out before a correct proposal. Do not install packages and do not run "
                 "unrelated tests.")
    return "\n".join(lines)


def parse_action(reply: str) -> Action:
    m = TAGS.search(reply or "")
    if not m:
        return MalformedAction(raw=(reply or "")[:2000], reason="no <execute_bash>, <execute_ipython>, <text> or "
                                                              "<question> block found")
    tag, body = m.group(1), m.group(2).strip()
    thought = reply[: m.start()].strip()[:500]
    if tag == "execute_bash":
        return EnvAction(kind="bash", arg=body, thought=thought) if body else MalformedAction(raw=reply, reason="empty command")
    if tag == "execute_ipython":
        return EnvAction(kind="python", arg=body, thought=thought) if body else MalformedAction(raw=reply, reason="empty code")
    if tag == "question":
        return AskAction(question=body, thought=thought) if body else MalformedAction(raw=reply, reason="empty question")
    lines = [l.strip() for l in body.splitlines() if l.strip()]
    pairs = [(lines[i], lines[i + 1]) for i in range(0, len(lines) - 1, 2) if lines[i].endswith(".py")]
    if not pairs:
        return MalformedAction(raw=reply[:2000], reason="<text> must hold a file path line followed by a function name line")
    return ProposeAction(answer=pairs, thought=thought)


class LLMAgent:
    def __init__(self, chat: Chat, name: str = "llm", history_turns: int = 6):
        self.chat, self.name, self.history_turns = chat, name, history_turns

    def reset(self, info: dict) -> None:
        self.info = info
        self.messages = [{"role": "system", "content": system_prompt(info)},
                         {"role": "user", "content": info["initial_text"][-MAX_OBS_CHARS:]}]
        self.first = True

    def act(self, obs: Observation) -> Action:
        if not self.first:
            self.messages.append({"role": "user", "content": obs.text[-MAX_OBS_CHARS:]})
        self.first = False
        msgs = self.messages[:2] + self.messages[2:][-2 * self.history_turns:]
        reply = self.chat(msgs)
        self.messages.append({"role": "assistant", "content": reply})
        return parse_action(reply)


def openai_chat(llm: LLMParams, timeout: float = 120.0) -> Chat:
    """``/chat/completions`` of an OpenAI-compatible server (vLLM, llama.cpp, hosted APIs)."""
    if not llm.endpoint:
        raise ValueError("llm.endpoint: an OpenAI-compatible base URL is required")
    url = llm.endpoint + "/chat/completions"

    def chat(messages: list[dict]) -> str:
        body = json.dumps({"model": llm.model or "default", "messages": messages, "temperature": llm.temperature,
                           "max_tokens": llm.max_new_tokens}).encode()
        req = urllib.request.Request(url, body, {"Content-Type": "application/json",
                                                 **({"Authorization": f"Bearer {llm.api_key}"} if llm.api_key else {})})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            data = json.loads(r.read().decode())
        return data["choices"][0]["message"]["content"] or ""

    return chat


def smollm2_chat(llm: LLMParams, cancelled: Callable[[], bool] | None = None) -> Chat:
    """SmolLM2-135M-Instruct (or ``llm.model``) through the zoo loader, greedy by default."""
    from engines.common.settings import get_settings
    from engines.common.zoo.smollm2 import load_smollm2

    device = get_settings().resolved_device()
    model, tok = load_smollm2(device, model_id=llm.model or None)

    def chat(messages: list[dict]) -> str:
        import torch

        from engines.common.threads import torch_threads

        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        if not torch.is_tensor(ids):
            ids = ids["input_ids"]
        ids = ids[:, -1800:].to(device)
        with torch.no_grad(), torch_threads(2):
            kw = dict(do_sample=llm.temperature > 0, max_new_tokens=llm.max_new_tokens,
                      pad_token_id=tok.eos_token_id)
            if llm.temperature > 0:
                kw["temperature"] = llm.temperature
            if cancelled is not None:  # a turn of up to max_new_tokens stops at the next token on Stop
                from engines.common.context import stop_generation_when

                kw["stopping_criteria"] = stop_generation_when(cancelled)
            out = model.generate(ids, attention_mask=torch.ones_like(ids), **kw)
        return tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)

    return chat

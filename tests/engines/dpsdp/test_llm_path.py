"""The real-model path: word problems, the Markovian chat prompts, answer parsing and the vote, batched chat
sampling, DP-ranked pairs of a chat tree, and DPO on a LoRA adapter (a tiny random LlamaForCausalLM stands in
for SmolLM2: same architecture, same code path)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engines.common.context import JobCancelled
from engines.dpsdp import chat, dp, lora
from engines.dpsdp import word_problems as wp
from engines.dpsdp.llm_params import ChatParams, LoraParams
from tests.engines.dpsdp.tiny_chat import tiny_llama, tiny_policy


@pytest.mark.parametrize("text, want, how", [
    ("6 * 7 = 42\nAnswer: 42", 42, "marked"),
    ("The answer is: 1,200.", 1200, "marked"),
    ("Final answer: **-7**", -7, "marked"),
    ("so \\boxed{15} apples, not 16", 15, "marked"),
    ("8 - 3 = 5 so 5", 5, "last number"),
    ("20-12 is 8", 8, "last number"),  # a minus after a number is an operator, not a sign
    ("It costs $40.", 40, "last number"),
    ("She has 2.5 kg", 2.5, "last number"),
    ("1. 23 people\n2. 40 - 23 = 17 seats\n3.", 17, "last number"),  # list markers are not answers
    ("Steps:\n1. think\n2.", None, "unparsable"),
    ("", None, "unparsable"),
    ("I do not know.", None, "unparsable"),
])
def test_parse_answer(text, want, how):
    assert wp.parse_answer(text) == (want, how)


def test_verdict_and_correctness():
    assert wp.parse_verdict("Step 2 is wrong: 6*7 is 42.\nVerdict: incorrect") == "incorrect"
    assert wp.parse_verdict("Everything checks out. Verdict: correct") == "correct"
    assert wp.parse_verdict("") is None
    assert wp.is_correct(8, 8) and wp.is_correct(8.0, 8) and not wp.is_correct(None, 8)
    assert wp.is_correct(8, None) is None  # unknown truth: no mark
    assert wp.is_correct("\\frac{1}{2}", "\\frac{1}{2} ")


def test_check_problem_truths_and_messages():
    assert wp.check_problem(wp.WORD_EXAMPLE) == wp.WordProblem(wp.WORD_EXAMPLE, 8, "built-in")
    assert wp.check_problem("  47+58-26 ").truth == 79  # the tiny task's problems know their answer too
    assert wp.check_problem("I have 4 hats and lose 1. How many?").truth is None
    assert wp.check_problem("I have 4 hats and lose 1. How many?", "3").truth == 3
    for text, expected, msg in [("", "", "type a word problem"), ("   ", "", "type a word problem"),
                                ("How many cats are there?", "", "numbers in digits"),
                                ("x" * 700 + "1", "", "at most 600 characters"),
                                ("I have 4 hats", "three", "expected answer: a whole number"),
                                ("I have 4 hats", "2.5", "expected answer: a whole number")]:
        with pytest.raises(wp.WordProblemError, match=msg):
            wp.check_problem(text, expected)


def test_chat_params_name_the_field():
    for bad, field in [({"problem": "no digits here"}, "problem"), ({"turns": 9}, "turns"), ({"turns": 0}, "turns"),
                       ({"temperature": 2.5}, "temperature"), ({"temperature": -0.1}, "temperature"),
                       ({"expected": "ten"}, "expected")]:
        with pytest.raises(ValueError, match=field):
            ChatParams(**bad)
    assert ChatParams(problem=" 47+58-26 ").problem == "47+58-26"


class Recorder:
    """A scripted chat policy: replies in turn (token ids from the characters), records every conversation."""

    def __init__(self, script: list[str], model=None, prompt_ids=None):
        self.script, self.seen, self.model, self.prompt_ids = list(script), [], model, prompt_ids

    def reply(self, conversations, temperature=0.0, seed=0, n=1, cancelled=None):
        self.seen.append(conversations)
        out = []
        for _ in conversations:
            texts = [self.script.pop(0) for _ in range(n)]
            out.append([chat.Reply(t, [4 + ord(ch) % 60 for ch in t][:8] + [2]) for t in texts])
        return out


def test_refinement_prompt_is_markovian():
    x = wp.WORD_PROBLEMS[2][0]
    script = ["Answer: 41", "wrong A", "Answer: 43", "wrong B", "Answer: 44", "wrong C", "Answer: 45"]
    pol = Recorder(script)
    (tr,) = chat.refine_loop(pol, pol, [wp.check_problem(x)], 4)
    assert tr.answers == ["Answer: 41", "Answer: 43", "Answer: 44", "Answer: 45"]
    assert tr.feedback == ["wrong A", "wrong B", "wrong C"]
    convs = [c[0] for c in pol.seen]
    critic_last, refine_last = convs[5], convs[6]
    text = " ".join(m["content"] for m in refine_last)
    # the last refinement sees the problem, the previous answer and the last feedback only
    assert x in text and "Answer: 44" in text and "wrong C" in text
    for old in ("Answer: 41", "Answer: 43", "wrong A", "wrong B"):
        assert old not in text
    assert [m["role"] for m in refine_last] == ["user", "assistant", "user"]
    assert refine_last == wp.refine_messages(x, "Answer: 44", "wrong C")
    # the critic sees (x, last answer) only; prompts do not grow with the turn
    assert critic_last == wp.critic_messages(x, "Answer: 44") and "Answer: 43" not in str(critic_last)
    assert len(str(convs[2])) == len(str(convs[4])) == len(str(convs[6]))


def test_majority_excludes_unparsable_and_says_so():
    p = wp.check_problem(wp.WORD_EXAMPLE)
    tr = chat.ChatTranscript(p, ["I am not sure.", "Answer: 8", "", "Answer: 9", "Answer: 8"],
                             ["fb1", "", "fb3", "Verdict: correct"])
    res = chat.transcript_of(tr)
    assert res["unparsable"] == 2 and res["empty"] == 1 and res["votes"] == {"8": 2, "9": 1}
    assert [t["majority"] for t in res["turns"]] == [None, 8, 8, 9, 8]  # 8 vs 9 tie → the latest (9)
    assert res["majority"] == 8 and res["majority_correct"] is True
    assert res["turns"][0]["correct"] is False and res["turns"][0]["majority_correct"] is False
    assert res["turns"][4]["verdict"] == "correct"
    m = chat.metrics([tr])
    assert m["p1"] == [0.0, 1.0, 0.0, 0.0, 1.0] and m["m1"][-1] == 1.0 and m["unparsable"] == pytest.approx(0.4)


def test_chat_policy_left_padded_batch_equals_single_prompts():
    pol = tiny_policy(max_new_tokens=6)
    convs = [wp.actor_messages("1+2"), wp.refine_messages("a longer problem 12", "Answer: 3", "check it")]
    batch = pol.reply(convs, 0.0, 0)
    alone = [pol.reply([c], 0.0, 0)[0] for c in convs]
    assert [r[0].ids for r in batch] == [r[0].ids for r in alone]
    assert all(len(r[0].ids) <= 6 for r in batch)
    assert pol.prompt_ids(convs[0])[-len("assistant\n"):] == pol.tok("assistant\n")["input_ids"]  # chat template
    assert len(pol.reply(convs[:1], 1.0, 0, n=3)[0]) == 3
    pol.max_rows = 1  # a level larger than one generate call is split, with the same greedy replies
    assert [r[0].ids for r in pol.reply(convs, 0.0, 0)] == [r[0].ids for r in batch]


def _scripted_tree():
    """Problem 0 (truth 8): a₀ right/wrong; the wrong one's feedback 0 leads to 2 right refinements, feedback 1 to none."""
    p = [wp.WordProblem("A has 3 and gets 5. How many?", 8, "built-in")]
    R = lambda t, i: chat.Reply(t, [4 + i, 2])  # noqa: E731
    a0 = [[R("Answer: 8", 0), R("Answer: 9", 1)]]
    fb = [[[R("good", 2), R("fine", 3)], [R("9 is wrong, 3+5=8", 4), R("looks right", 5)]]]
    a2 = [[[[R("Answer: 8", 0), R("Answer: 8", 0)], [R("Answer: 8", 0), R("Answer: 7", 6)]],
           [[R("Answer: 8", 0), R("Answer: 8", 0)], [R("Answer: 9", 1), R("Answer: 9", 1)]]]]
    c0 = np.array([[True, False]])
    c2 = np.array([[[[True, True], [True, False]], [[True, True], [False, False]]]])
    return lora.ChatTree(p, a0, fb, a2, c0, c2)


def test_chat_pairs_follow_the_dp_targets():
    tree = _scripted_tree()
    qa, qf, qr = tree.targets
    np.testing.assert_allclose(qa, [[1 + 0.75, 0 + 0.5]])  # 𝟙[a₀] + mean over feedbacks of mean refinement
    np.testing.assert_allclose(qf, [[[1.0, 0.5], [1.0, 0.0]]])
    pairs = lora.chat_pairs(tree, lambda msgs: [len(str(msgs)) % 50], 0.25, 4)
    kinds = [p.kind for p in pairs]
    assert kinds.count("answer") == 1 and kinds.count("feedback") == 2
    ans = next(p for p in pairs if p.kind == "answer")
    assert (ans.chosen.text, ans.rejected.text, ans.gap) == ("Answer: 8", "Answer: 9", pytest.approx(1.25))
    fb = [p for p in pairs if p.kind == "feedback"]
    assert {(p.chosen.text, p.rejected.text) for p in fb} == {("good", "fine"), ("9 is wrong, 3+5=8", "looks right")}
    # refine states whose refinements are all right (or all wrong) give no pair
    ref = [(p.chosen.text, p.rejected.text, p.prompt) for p in pairs if p.kind == "refine"]
    assert [r[:2] for r in ref] == [("Answer: 8", "Answer: 7")]
    assert ref[0][2] == [len(str(wp.refine_messages(tree.problems[0].text, "Answer: 8", "fine"))) % 50]
    assert all(p.gap >= 0.25 for p in pairs)
    strict = lora.chat_pairs(tree, lambda m: [0], 0.75, 4)  # the margin drops the good/fine pair (gap 0.5)
    assert [(p.kind, p.chosen.text) for p in strict] == [("answer", "Answer: 8"), ("refine", "Answer: 8"),
                                                         ("feedback", "9 is wrong, 3+5=8")]


def _random_pairs(n: int, vocab: int, seed: int = 0) -> list[lora.ChatPair]:
    rng = np.random.default_rng(seed)
    R = lambda: chat.Reply("", rng.integers(1, vocab, int(rng.integers(3, 7))).tolist())  # noqa: E731
    return [lora.ChatPair("answer", rng.integers(1, vocab, int(rng.integers(4, 9))).tolist(), R(), R(), 1.0)
            for _ in range(n)]


def test_lora_dpo_changes_only_the_adapter_and_lowers_the_loss():
    torch.manual_seed(0)
    model = lora.attach_lora(tiny_llama(40), rank=4)
    base = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}
    adapter = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    assert adapter and all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)
    pairs = _random_pairs(6, 40)
    rec = lora.dpo_lora(model, pairs, steps=12, batch=3, lr=5e-3, beta=0.5, nll_weight=0.0, seed=0,
                        progress=lambda f, m: None, cancelled=lambda: False)
    assert rec["loss_before"] == pytest.approx(math.log(2), abs=1e-5)  # π = π_ref: B = 0 at the start
    assert rec["loss_after"] < rec["loss_before"] - 0.01
    for n, p in model.named_parameters():
        if n in base:
            assert torch.equal(p, base[n]), n
    assert any(not torch.equal(p, adapter[n]) for n, p in model.named_parameters() if n in adapter)
    with model.disable_adapter(), torch.no_grad():  # π_ref is untouched
        ref = lora.sequence_logprobs(model, [pairs[0].prompt], [pairs[0].chosen.ids])
    with pytest.raises(ValueError, match="no preference pairs"):
        lora.dpo_lora(model, [], 1, 1, 1e-3, 0.1, 0.0, 0, lambda f, m: None, lambda: False)
    assert torch.isfinite(ref).all()


def test_sequence_logprobs_ignore_padding():
    model = tiny_llama(30)
    pairs = _random_pairs(3, 30, seed=1)
    with torch.no_grad():
        batch = lora.sequence_logprobs(model, [p.prompt for p in pairs], [p.chosen.ids for p in pairs])
        alone = torch.cat([lora.sequence_logprobs(model, [p.prompt], [p.chosen.ids]) for p in pairs])
    torch.testing.assert_close(batch, alone, atol=1e-4, rtol=1e-5)


def test_lora_job_end_to_end_and_cancellation():
    """The chat sampler fills the tree's shape; tree → DP targets → pairs → DPO on scripted replies."""
    pol = tiny_policy(max_new_tokens=5, seed=3)
    probs = [wp.WordProblem("1+2", None, "unknown")]
    tree = lora.sample_chat_tree(pol, pol, probs, 2, 2, 1.0, 0, lambda f, m: None, lambda: False)
    assert tree.correct0.shape == (1, 2) and tree.correct2.shape == (1, 2, 2, 2)
    assert len(tree.a2[0][1][0]) == 2 and all(r.ids for r in tree.a0[0])
    p = LoraParams(n_problems=1, k=2, m=2, steps=2, batch=2, lr=1e-3, rank=2, max_new_tokens=16)
    script = Recorder(["Answer: 1", "Answer: 2"] + ["fb"] * 4 + ["Answer: 1", "Answer: 2"] * 4, pol.model,
                      pol.prompt_ids)
    rec, model = lora.run_job(script, [wp.WordProblem("1+2", 1, "your answer")], p, lambda f, m: None, lambda: False)
    # a₀ right/wrong → 1 answer pair; the 4 identical feedbacks → no critic pair; per answer, its two (merged)
    # feedback states hold a right and a wrong refinement → 1 refine pair each
    assert rec["tree"]["pairs"] == {"answer": 1, "feedback": 0, "refine": 2} and rec["dpo"]["pairs"] == 3
    assert rec["dpo"]["loss_after"] <= rec["dpo"]["loss_before"] + 1e-6
    assert any("lora_" in n for n, _ in model.named_parameters())
    with pytest.raises(JobCancelled):
        lora.sample_chat_tree(pol, pol, probs, 2, 2, 1.0, 0, lambda f, m: None, lambda: True)


def test_pairs_reuse_the_engine_dp_code():
    # the chat tree's targets and ranking are the tiny pipeline's functions, not a copy
    assert lora.dp is dp and lora.ChatTree.targets.fget.__code__.co_names.count("q_targets") == 1

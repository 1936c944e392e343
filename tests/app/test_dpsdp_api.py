"""The dpsdp endpoints through gradio_client (inline jobs, micro models of the test profile), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

# problem, variant, expected answer (SmolLM2 only), turns, temperature, markovian, seed
REFINE = ("47+58-26", "dpsdp", "", 4, 0.0, True, 0)
WORD = "Tom has 3 apples and buys 5 more. How many apples does Tom have now?"
TWO_DIGIT, OOD, WORD_KIND = "two-digit numbers (held-out test split)", "three-digit first number (out of distribution)", \
    "word problem (for SmolLM2)"


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_refine(client):
    summary, table, plot, status = client.predict(*REFINE, api_name="/dpsdp_refine")
    assert "47+58-26 = 79" in summary and "majority" in summary
    rows = table["data"]
    assert [r[0] for r in rows] == [1, 2, 3, 4] and rows[0][1] == "—"
    assert plot["plot"].startswith("data:image") and "Done: majority" in status
    # the oracle critic names the first wrong digit of the previous answer
    _, table, _, _ = client.predict("47+58-26", "oracle_critic", "", 3, 0.0, True, 0, api_name="/dpsdp_refine")
    from engines.dpsdp import task

    for prev, row in zip(table["data"], table["data"][1:]):
        assert row[1] == task.oracle_feedback(prev[2] if prev[2] != "∅" else "", "105;079")


def test_random_problem_is_held_out(client):
    from engines.dpsdp import task
    from engines.dpsdp.word_problems import WORD_PROBLEMS

    p = client.predict(3, TWO_DIGIT, api_name="/dpsdp_random")
    assert task.split_of(*task.parse_problem(p)) == 2 and len(p) == 8
    hard = client.predict(3, OOD, api_name="/dpsdp_random")  # the task's OOD generator: a three-digit first number
    assert task.parse_problem(hard)[0] >= 100
    assert client.predict(1, WORD_KIND, api_name="/dpsdp_random") == WORD_PROBLEMS[1][0]
    with pytest.raises(Exception, match="Difficulty'? must be one of"):
        client.predict(3, "impossible", api_name="/dpsdp_random")


def test_bad_input_is_named(client):
    with pytest.raises(Exception, match="not a problem of the form a\\+b-c"):
        client.predict("2+2", *REFINE[1:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="partial results must lie in 0-999"):
        client.predict("10-90+5", *REFINE[1:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="(?i)turns.*maximum 8"):
        client.predict(*REFINE[:3], 12, *REFINE[4:], api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="Pick at least one variant"):
        client.predict(40, 3, "test", [], api_name="/dpsdp_evaluate")
    assert "majority" in client.predict(*REFINE, api_name="/dpsdp_refine")[0]  # still serving


def test_evaluate_and_tree(client):
    curves, flips, table, status = client.predict(40, 3, "test", ["dpsdp", "reference"], api_name="/dpsdp_evaluate")
    assert curves["plot"].startswith("data:image") and flips["plot"].startswith("data:image")
    labels = [r[0] for r in table["data"]]
    assert labels[0].startswith("DPSDP") and labels[-1].startswith("self-consistency@3")
    rows, text = client.predict(1, 0, api_name="/dpsdp_tree")
    levels = [r[0].strip() for r in rows["data"]]
    assert levels.count("a₀ (actor)") == 2 and "Q gap ≥ 0.25" in text


class ScriptedChat:
    """Stands in for SmolLM2 (the job runs in this process): wrong, then refined right, then an empty reply."""

    def __init__(self):
        from engines.dpsdp.chat import Reply

        self.Reply, self.seen = Reply, []
        self.replies = ["3 + 5 = 9\nAnswer: 9", "3 + 5 is 8, not 9.\nVerdict: incorrect", "3 + 5 = 8\nAnswer: 8",
                        "Verdict: correct", ""]

    def reply(self, conversations, temperature=0.0, seed=0, n=1, cancelled=None):
        self.seen.append(conversations)
        return [[self.Reply(self.replies.pop(0), [1])] for _ in conversations]


def test_smollm2_refine_and_its_bad_input(client, monkeypatch):
    from engines.dpsdp import chat

    fake = ScriptedChat()
    monkeypatch.setattr(chat, "load_policy", lambda max_new_tokens: (fake, "scripted stand-in"))
    summary, table, plot, status = client.predict(WORD, "smollm2", "", 3, 0.0, True, 0, api_name="/dpsdp_refine")
    rows = table["data"]
    assert [r[4] for r in rows] == ["❌", "✅", "❌"]
    assert rows[1][1].endswith("[verdict: incorrect]") and rows[2][2].startswith("∅ (the model returned an empty")
    assert rows[2][3] == "unparsable (left out of the vote)" and [r[5] for r in rows] == [9, 8, 8]
    assert "right answer: 8 (built-in)" in summary and "1 of 3 answers held no number and were left out" in summary
    assert "1 answer(s) came back empty" in summary and "majority 8" in summary
    assert "1 unparsable answer(s) left out" in status and plot["plot"].startswith("data:image")
    # the actor's refinement saw the problem, its previous answer and the feedback only
    assert [m["role"] for m in fake.seen[2][0]] == ["user", "assistant", "user"]
    for problem, expected, turns, temp, markov, msg in [
            ("", "", 3, 0.0, True, "type a word problem"),
            ("How many apples are left?", "", 3, 0.0, True, "numbers in digits"),
            (WORD, "eight", 3, 0.0, True, "expected answer: a whole number"),
            (WORD, "", 9, 0.0, True, "(?i)turns.*maximum 8"),
            (WORD, "", 3, 2.5, True, "(?i)temperature.*maximum 2"),
            (WORD, "", 3, 0.0, False, "always uses the Markovian state")]:
        with pytest.raises(Exception, match=msg):
            client.predict(problem, "smollm2", expected, turns, temp, markov, 0, api_name="/dpsdp_refine")
    with pytest.raises(Exception, match="(?i)steps"):
        client.predict(3, 2, 2, 0, 1e-4, 0, api_name="/dpsdp_lora")

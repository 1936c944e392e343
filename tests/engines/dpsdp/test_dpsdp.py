"""DPSDP: DP value targets and pairs (exact, hand-built tree), the DPO loss, the Markovian state, the vote,
the oracle critic, and the pipeline end to end on the test profile's micro models."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engines.common.params import ParamError
from engines.dpsdp import dp, refine, task
from engines.dpsdp.config import MICRO
from engines.dpsdp.models import dpo_loss, make_model, response_logprob


# ----------------------------------------------------------------------------- DP targets and pairs (check 1)


def test_dp_targets_on_a_hand_built_tree():
    # 1 problem, K = 2 answers, K = 2 feedbacks each, M = 2 refinements each
    correct0 = np.array([[True, False]])
    correct2 = np.array([[[[True, True], [False, True]], [[False, False], [True, False]]]])
    qa, qf, qr = dp.q_targets(correct0, correct2)
    assert qr.tolist() == correct2.astype(float).tolist()
    assert qf.tolist() == [[[1.0, 0.5], [0.0, 0.5]]]  # Q(feedback) = mean refinement correctness
    assert qa.tolist() == [[1 + 0.75, 0 + 0.25]]  # Q(a₀) = 𝟙[a₀] + E[Q(feedback)]


def test_pairs_respect_q_order_margin_and_limit():
    texts = ["a", "b", "c", "d"]
    q = [1.0, 0.8, 0.5, 0.0]
    pairs = dp.rank_pairs(texts, q, margin=0.25, limit=10)
    assert all(q[i] - q[j] >= 0.25 for i, j, _ in pairs)
    assert (0, 1) not in [(i, j) for i, j, _ in pairs]  # gap 0.2 < margin
    assert [round(g, 6) for *_, g in pairs] == sorted([round(g, 6) for *_, g in pairs], reverse=True)
    assert pairs[0][:2] == (0, 3) and len(pairs) == 5
    assert len(dp.rank_pairs(texts, q, 0.25, limit=2)) == 2


def test_identical_candidates_are_one_with_their_mean_q():
    # the same feedback sampled twice with different Monte-Carlo estimates: one candidate, Q = 0.5
    pairs = dp.rank_pairs(["OK", "OK", "E12"], [1.0, 0.0, 0.0], margin=0.25, limit=4)
    assert pairs == [(0, 2, 0.5)]
    assert dp.rank_pairs(["x", "x"], [1.0, 0.0], 0.25, 4) == []  # never a pair of a text with itself


def test_pairs_of_a_sampled_tree_follow_the_targets():
    a, c = make_model(MICRO), make_model(MICRO, seed=1)
    problems = task.sample(6, 0, "train")
    tree = dp.sample_tree(a, c, problems, 2, 2, 0, lambda f, m: None, lambda: False)
    # force some correct refinements, so that pairs exist at refinement states
    tree.a2[:, :, :, 0] = torch.tensor([task.encode(t) for t in tree.truths])[:, None, None, :]
    tree.correct2 = dp.correct_of(tree.a2, tree.truths)
    assert tree.correct2[:, :, :, 0].all()
    pairs = dp.dpsdp_pairs(tree, 0.25, 4)
    ref = pairs["refine"]
    for p, ch, rj in zip(ref.prompts, ref.chosen, ref.rejected):
        x = task.decode(p[1:]).split("=")[0]
        truth = task.solution_text(*task.parse_problem(x))
        assert task.decode(ch) == truth and task.decode(rj) != truth
    naive = dp.naive_pairs(tree, 4)["refine"]
    for p, rj in zip(naive.prompts, naive.rejected):  # the unofficial rule: the wrong a₀ itself is rejected
        assert p[1 + len(task.problem_text(*problems[0])) + 1:][:task.ANSWER_LEN].tolist() == rj.tolist()


# ----------------------------------------------------------------------------- DPO loss (check 2)


def test_dpo_loss_is_log2_at_the_reference_and_matches_the_formula():
    g = torch.Generator().manual_seed(0)
    pc, pr, rc, rr = (torch.randn(16, generator=g) * 3 for _ in range(4))
    loss, margin = dpo_loss(pc, pr, rc, rr, beta=0.1)
    # trl's "sigmoid" DPO loss: -logsigmoid(beta * ((pc - rc) - (pr - rr))), written out in float64
    want = [-math.log(1 / (1 + math.exp(-0.1 * ((a - c) - (b - d)))))
            for a, b, c, d in zip(pc.double().tolist(), pr.double().tolist(), rc.double().tolist(), rr.double().tolist())]
    assert max(abs(x - y) for x, y in zip(loss.tolist(), want)) < 1e-5
    same, m0 = dpo_loss(pc, pr, pc, pr, beta=0.1)
    assert torch.allclose(same, torch.full_like(same, math.log(2))) and torch.all(m0 == 0)


def test_a_dpo_step_raises_the_chosen_over_the_rejected():
    model = make_model(MICRO)
    ref = make_model(MICRO)
    ref.load_state_dict(model.state_dict())
    prompt = torch.tensor([task.actor_prompt("12+34-05")] * 4)
    chosen = torch.tensor([task.encode("046;041")] * 4)
    rejected = torch.tensor([task.encode("046;051")] * 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with torch.no_grad():
        rc, rr = response_logprob(ref, prompt, chosen), response_logprob(ref, prompt, rejected)
    for _ in range(3):
        loss, _ = dpo_loss(response_logprob(model, prompt, chosen), response_logprob(model, prompt, rejected), rc, rr, 0.1)
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
    with torch.no_grad():
        after, m = dpo_loss(response_logprob(model, prompt, chosen), response_logprob(model, prompt, rejected), rc, rr, 0.1)
    assert after.mean() < math.log(2) and (m > 0).all()


# ----------------------------------------------------------------------------- Markovian state (check 3)


def test_the_actor_prompt_holds_only_x_last_answer_and_last_feedback():
    x = "47+58-26"
    fb = [task.response_ids(task.oracle_feedback(a, "105;079"), task.FEEDBACK_LEN) for a in ("105;089", "115;089", "105;079")]
    turns = [(task.encode("105;089"), fb[0]), (task.encode("115;089"), fb[1]), (task.encode("105;079"), fb[2])]
    lens = {len(task.refine_prompt(x, a, f)) for a, f in turns}
    assert lens == {len(task.actor_prompt(x)) + task.ANSWER_LEN + 1 + task.FEEDBACK_LEN}  # constant in k
    last = task.refine_prompt(x, *turns[-1])
    assert task.decode(last[1:]) == x + "=105;079105;079=OK" and last[-1] == task.R
    ood = task.problem_text(*task.sample(1, 0, "ood")[0])  # the longest problems
    longest = task.history_prompt(ood, [turns[0]] * (task.HISTORY_TURNS - 1))
    assert len(longest) + task.ANSWER_LEN <= task.POSITIONS  # the full-history ablation fits its turns
    hist = [len(task.history_prompt(x, turns[:k])) for k in (1, 2, 3)]
    assert hist[1] - hist[0] == hist[2] - hist[1] == task.ANSWER_LEN + task.FEEDBACK_LEN + 2  # full history grows


# ----------------------------------------------------------------------------- vote, oracle, task


def test_majority_vote_ties_break_toward_the_latest_and_skips_unparsable():
    assert refine.majority([5, 7]) == 7
    assert refine.majority([5, 7, 5, 7, None]) == 7
    assert refine.majority([3, 3, 9]) == 3
    assert refine.majority([None, 4, None]) == 4
    assert refine.majority([None, None]) is None


def test_metrics_count_flips_and_majority():
    tr = refine.Transcript(["10+10+10"] * 2, ["020;030"] * 2,
                           [["020;031", "020;030", "020;030"], ["020;030", "020;031", "x"]], [[], []])
    m = refine.metrics(tr)
    assert m["p1"] == [0.5, 0.5, 0.5] and m["i2c"] == [0.5, 0.0] and m["c2i"] == [0.5, 0.0]
    assert m["m1"] == [0.5, 0.5, 0.5] and m["pass"] == [0.5, 1.0, 1.0] and m["unparsable"] == pytest.approx(1 / 6)


def test_oracle_writes_its_check_then_points_at_the_first_wrong_digit():
    assert task.oracle_feedback("105;079", "105;079") == "105;079=OK"
    assert task.oracle_feedback("105;089", "105;079") == "105;079=E57"
    assert task.oracle_feedback("115;089", "105;079") == "105;079=E10"
    assert task.oracle_feedback("10", "105;079") == "105;079=E25"
    assert all(task.valid_feedback(task.oracle_feedback(a, "105;079")) for a in ("", "999;999", "105-079"))
    assert task.verdict("105;079=E57") == "E57" and task.verdict("OK") is None and task.verdict("105;07=OK") is None
    assert len(task.response_ids(task.oracle_feedback("1", "105;079"), task.FEEDBACK_LEN)) == task.FEEDBACK_LEN
    # a learned critic judges against its own check, which may be wrong: the verdict follows the check
    assert task.judge("105;079", "105;089") == "E58"


def test_splits_are_disjoint_and_problems_are_checked():
    tr = {task.problem_text(*p) for p in task.sample(3000, 0, "train")}
    te = {task.problem_text(*p) for p in task.sample(1000, 0, "test")}
    assert not tr & te and len(te) > 900
    assert all(len(x) == 8 for x in te)  # in distribution: one prompt length
    with pytest.raises(task.ProblemError, match="not a problem of the form"):
        task.parse_problem("12*3")
    with pytest.raises(task.ProblemError, match="partial results must lie in 0-999"):
        task.parse_problem("10-50+1")


# ----------------------------------------------------------------------------- entries on the micro models


def test_transcript_entry_and_bad_input():
    from engines import registry

    res = registry.run("dpsdp", "transcript", {"problem": "47+58-26", "turns": 4})
    assert len(res["turns"]) == 4 and res["truth_final"] == 79
    assert res["turns"][0]["feedback"] is None and all(t["feedback"] is not None for t in res["turns"][1:])
    finals = [t["final"] for t in res["turns"]]
    assert res["majority"] == refine.majority(finals)
    again = registry.run("dpsdp", "transcript", {"problem": "47+58-26", "turns": 4})
    assert [t["answer"] for t in again["turns"]] == [t["answer"] for t in res["turns"]]  # deterministic
    oracle = registry.run("dpsdp", "transcript", {"problem": "47+58-26", "variant": "oracle_critic", "turns": 3})
    truth = oracle["truth"]
    for prev, t in zip(oracle["turns"], oracle["turns"][1:]):
        assert t["feedback"] == task.oracle_feedback(prev["answer"], truth)
    with pytest.raises(ParamError, match="problem.*not a problem of the form"):
        registry.run("dpsdp", "transcript", {"problem": "hello"})
    with pytest.raises(ParamError, match="turns"):
        registry.run("dpsdp", "transcript", {"turns": 0})
    with pytest.raises(ParamError, match="full-history state fits at most 5 turns"):
        registry.run("dpsdp", "transcript", {"turns": 6, "markovian": False})
    with pytest.raises(ParamError, match="temperature"):
        registry.run("dpsdp", "transcript", {"temperature": float("nan")})


def test_evaluate_and_tree_entries():
    from engines import registry

    res = registry.run("dpsdp", "evaluate", {"n_problems": 20, "turns": 3, "variants": ["dpsdp", "oracle_critic"]})
    for v in ("dpsdp", "oracle_critic", "history", "sc_reference", "sc_dpsdp"):
        c = res["curves"][v]
        assert len(c["p1"]) == len(c["m1"]) == 3 and len(c["c2i"]) == 2
        assert all(m1 <= ps + 1e-9 for m1, ps in zip(c["m1"], c["pass"]))  # pass@t bounds the majority
    with pytest.raises(ParamError, match="variants must not repeat"):
        registry.run("dpsdp", "evaluate", {"variants": ["dpsdp", "dpsdp"]})
    t = registry.run("dpsdp", "tree", {"index": 2})
    assert len(t["answers"]) == MICRO.k_answers
    for a in t["answers"]:
        qf = [f["q"] for f in a["feedback"]]
        assert a["q"] == pytest.approx(float(a["correct"]) + np.mean(qf))
        for f in a["feedback"]:
            assert f["q"] == pytest.approx(np.mean([r["correct"] for r in f["refinements"]]))

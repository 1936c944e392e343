"""L2D: the spec's acceptance checks 1, 2, 3, 5, 6 on seeded micro components, the task, bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.l2d import models, task
from engines.l2d.flow import Adapter, FlowConfig, FlowPath, freeze, main_pass
from engines.l2d.params import BenchmarkParams, RealModelParams, SolveParams
from engines.l2d.solvers import DecodeOptions, constant_velocity, generate, next_token_logits

FC = FlowConfig(flow_dim=16, noise_rescaling=8.0, flow_to_lm_hidden=32, freq_dim=32, cond_dim=16, lora_rank=4,
                lora_alpha=4.0)


def _gpt2():
    return freeze(models.make_base(models.MICRO))


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    conf = LlamaConfig(vocab_size=len(task.VOCAB), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return freeze(LlamaForCausalLM(conf))


def _random_flow(model, seed=0):
    """A flow path whose zero-initialised heads are randomised, so that it really acts for t > 0."""
    torch.manual_seed(seed)
    flow = FlowPath(Adapter(model), FC)
    with torch.no_grad():
        for name, p in flow.named_parameters():
            if "modulation_head" in name or "timestep_embedder" in name:
                p.normal_(0, 0.3)
    return flow.eval()


def _ids(n=4, seed=0):
    return torch.from_numpy(task.tokens(task.sample(n, seed, "val")))


@pytest.mark.parametrize("make", [_gpt2, _llama], ids=["gpt2", "llama"])
def test_preservation(make):
    """Check 1: logits at t = 0 equal the base logits (atol 1e-5); base unchanged after an optimizer step."""
    model = make()
    ad = Adapter(model)
    flow = _random_flow(model)
    ids = _ids()
    main = main_pass(model, ad, ids)
    P = task.PROMPT_LEN
    q = torch.arange(P - 1, task.SEQ_LEN - 1).expand(len(ids), -1)
    x = torch.randn(len(ids), q.shape[1], FC.flow_dim) * FC.noise_rescaling
    lab = torch.zeros(q.shape, dtype=torch.long)
    base = main.logits[:, P - 1:-1]
    with torch.no_grad():
        assert (flow(ad, main, q, x, torch.zeros(q.shape), lab) - base).abs().max() < 1e-5
        assert (flow(ad, main, q, x, torch.full(q.shape, 0.5), lab) - base).abs().max() > 1e-3
    before = {k: v.clone() for k, v in model.state_dict().items()}
    opt = torch.optim.AdamW(flow.parameters(), lr=1e-2)
    flow.train()
    loss, _, _ = models.l2d_loss(model, ad, flow, ids, torch.zeros(len(ids), dtype=torch.long),
                                 torch.Generator().manual_seed(0))
    loss.backward()
    opt.step()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(not p.requires_grad for p in model.parameters())


def test_interpolation_and_velocity():
    """Check 2: with x̂₁ = φ(y), Euler from x₀ = σε lands on φ(y); v = (x̂₁ − x)/(1 − t)."""
    from torchdiffeq import odeint

    torch.manual_seed(0)
    model = _gpt2()
    ad = Adapter(model)
    flow = _random_flow(model)
    y = torch.tensor([3, 7, 11])
    with torch.no_grad():
        phi = flow.phi(ad, y).double()
    assert torch.allclose(phi.norm(dim=-1), torch.full((3,), FC.flow_dim ** 0.5, dtype=torch.float64))
    eps = torch.randn_like(phi)
    t = 0.3
    x_t = (1 - t) * FC.noise_rescaling * eps + t * phi
    v = constant_velocity(phi, x_t, torch.tensor(t, dtype=torch.float64))
    assert torch.allclose(v, (phi - x_t) / (1 - t))
    traj = odeint(lambda tt, x: constant_velocity(phi, x, tt), FC.noise_rescaling * eps,
                  torch.linspace(0, 1, 9, dtype=torch.float64), method="euler")
    assert torch.allclose(traj[-1], phi, atol=1e-4)
    # the interpolation path itself: x_t at t = 0.3 of the straight line from x₀ to φ(y)
    assert torch.allclose(traj[0], FC.noise_rescaling * eps)


def test_kv_reuse():
    """Check 3: the frozen blocks run once per generated token (plus the prompt), regardless of N."""
    model = _gpt2()
    ad = Adapter(model)
    flow = _random_flow(model)
    calls, flow_calls = [0], [0]
    hooks = [ad.blocks[0].register_forward_hook(lambda *a: calls.__setitem__(0, calls[0] + 1))]
    orig = flow.forward

    def counted(*a, **k):
        flow_calls[0] += 1
        return orig(*a, **k)

    flow.forward = counted
    prompts = _ids(3)[:, :task.PROMPT_LEN]
    seen = {}
    try:
        for n in (2, 6):
            calls[0] = flow_calls[0] = 0
            generate(model, ad, flow, prompts, task.ANSWER_LEN, DecodeOptions(steps=n, solver="euler"))
            seen[n] = (calls[0], flow_calls[0])
    finally:
        for h in hooks:
            h.remove()
    assert {c for c, _ in seen.values()} == {task.ANSWER_LEN}  # prompt pass + one per new token but the last
    assert [f for _, f in seen.values()] == [task.ANSWER_LEN * n for n in (2, 6)]  # (N−1) evals + 1 read-out


def test_solvers_and_nfe():
    """Check 5: fixed and adaptive torchdiffeq solvers run; NFE grows with N and falls as tolerance loosens."""
    model = _gpt2()
    ad = Adapter(model)
    flow = _random_flow(model, seed=1)
    main = main_pass(model, ad, _ids(1)[:, :task.PROMPT_LEN])
    nfe = {}
    # evaluations per interval; the very last one of heun2/rk4 falls on t = 1, where v = 0 without a model call
    for solver, per, last in (("euler", 1, 0), ("midpoint", 2, 0), ("heun2", 2, 1), ("rk4", 4, 1)):
        for n in (2, 4, 6):
            logits, tr = next_token_logits(ad, flow, main, DecodeOptions(steps=n, solver=solver), None)
            assert torch.isfinite(logits).all()
            assert tr.nfe == (n - 1) * per - last, (solver, n, tr.nfe)
            nfe[solver, n] = tr.nfe
        assert nfe[solver, 2] < nfe[solver, 4] < nfe[solver, 6]
    adaptive = {}
    for solver in ("dopri5", "bosh3"):
        for tol in (1e-3, 1e-2, 1e-1):
            _, tr = next_token_logits(ad, flow, main, DecodeOptions(solver=solver, tolerance=tol), None)
            adaptive[solver, tol] = tr.nfe
        assert adaptive[solver, 1e-1] > 0
        assert adaptive[solver, 1e-3] >= adaptive[solver, 1e-2] >= adaptive[solver, 1e-1]
        assert adaptive[solver, 1e-3] > adaptive[solver, 1e-1]


def test_temperature_schedules_follow_the_official_code():
    """polynomial_<p>_<end>: T·(1 − t/end)^p, 0 from t ≥ end; read at t + δ (δ = half an interval for midpoint)."""
    from engines.l2d.solvers import schedule_offset, schedule_temperature

    assert schedule_temperature("polynomial_1_1.0", 1.0, 0.0) == 1.0
    assert schedule_temperature("polynomial_1_1.0", 1.0, 0.25) == pytest.approx(0.75)
    assert schedule_temperature("polynomial_2_0.5", 2.0, 0.25) == pytest.approx(0.5)
    assert schedule_temperature("polynomial_1_1.0", 1.0, 1.0) == 0.0
    assert schedule_temperature("polynomial_1_0.5", 1.0, 0.7) == 0.0
    assert schedule_temperature("constant", 0.7, 0.9) == 0.7
    for bad in ("cosine", "polynomial_1", "polynomial_1_0"):
        with pytest.raises(ValueError, match="schedule"):
            schedule_temperature(bad, 1.0, 0.5)
    grid = torch.linspace(0, 1, 8, dtype=torch.float64)
    assert schedule_offset("midpoint", grid) == pytest.approx(1 / 14)
    assert schedule_offset("euler", grid) == pytest.approx(1 / 7)
    assert schedule_offset("dopri5", grid) == 0.0


@pytest.mark.parametrize("estimator", ["sample", "average"])
def test_estimators_use_the_schedule(estimator, monkeypatch):
    """sample / average read T(t + δ): midpoint with N = 2 evaluates t = 0 at T = 0.5 and t = 0.5 at T = 0
    (argmax); temperature 0 everywhere is exactly the argmax estimator."""
    from engines.l2d import solvers

    model = _gpt2()
    ad = Adapter(model)
    flow = _random_flow(model, seed=3)
    main = main_pass(model, ad, _ids(3)[:, :task.PROMPT_LEN])
    seen = []
    orig = solvers.x1_estimate

    def spy(logits, table, est, temperature, generator):
        seen.append((est, temperature))
        return orig(logits, table, est, temperature, generator)

    monkeypatch.setattr(solvers, "x1_estimate", spy)
    next_token_logits(ad, flow, main, DecodeOptions(steps=2, estimator=estimator), None, torch.Generator().manual_seed(0))
    assert seen == [(estimator, pytest.approx(0.5)), (estimator, 0.0)]
    cold = next_token_logits(ad, flow, main, DecodeOptions(steps=6, estimator=estimator, temperature=0.0), None,
                             torch.Generator().manual_seed(1))[0]
    arg = next_token_logits(ad, flow, main, DecodeOptions(steps=6, estimator="argmax"), None,
                            torch.Generator().manual_seed(1))[0]
    assert torch.equal(cold, arg)
    warm = next_token_logits(ad, flow, main, DecodeOptions(steps=6, estimator=estimator, schedule="constant"), None,
                             torch.Generator().manual_seed(1))[0]
    assert torch.isfinite(warm).all() and not torch.equal(warm, arg)


def test_training_timesteps_and_checkpoint_selection():
    """cosmap / maximum_timestep as in the official loss; select="val_n8" returns the best evaluated checkpoint."""
    from dataclasses import replace

    g = torch.Generator().manual_seed(0)
    t = models.training_timesteps(2000, 5, g, "cosmap", 0.9)
    assert t.min() >= 0 and t.max() <= 0.9
    u = models.training_timesteps(2000, 5, torch.Generator().manual_seed(0))
    assert ((t > 0.25 * 0.9) & (t < 0.75 * 0.9)).float().mean() > ((u > 0.25) & (u < 0.75)).float().mean()
    assert torch.allclose(models.cosmap(torch.tensor([0.0, 0.5])), torch.tensor([0.0, 0.5]))
    with pytest.raises(ValueError, match="schedule"):
        models.training_timesteps(2, 2, g, "edm")
    cfg = replace(models.MICRO, l2d_steps=6, eval_every=2, n_val=8)
    seen = {}

    def keep(step, flow, acc):
        seen[step] = (acc, {k: v.clone() for k, v in flow.state_dict().items()})

    flow, rec = models.train_l2d(_gpt2(), cfg, lambda f, m: None, lambda: False, timestep_schedule="cosmap",
                                 select="val_n8", on_eval=keep)
    best = max(seen.values(), key=lambda v: v[0])[0]
    step = min(s for s, v in seen.items() if v[0] == best)
    assert rec["chosen_step"] == step and rec["val_acc_n8"] == best and rec["selection"] == "val_n8"
    assert all(torch.equal(v, seen[step][1][k]) for k, v in flow.state_dict().items())


def test_guidance_identities():
    """Check 6: w = 1 equals the conditional model, w = 0 the unconditional one, exactly."""
    model = _gpt2()
    ad = Adapter(model)
    flow = _random_flow(model, seed=2)
    main = main_pass(model, ad, _ids(3)[:, :task.PROMPT_LEN])
    lab = torch.tensor([0, 1, 0])

    def run(w, labels):
        g = torch.Generator().manual_seed(5)
        return next_token_logits(ad, flow, main, DecodeOptions(steps=6, guidance=w, trace=True), labels, g)

    cond, tc = run(None, lab)
    uncond, tu = run(None, None)
    w1, t1 = run(1.0, lab)
    w0, t0 = run(0.0, lab)
    assert torch.equal(w1, cond) and torch.equal(w0, uncond)
    assert all(torch.equal(a, b) for a, b in zip(t1.latents, tc.latents))
    assert all(torch.equal(a, b) for a, b in zip(t0.latents, tu.latents))
    assert t1.nfe == 2 * tc.nfe  # guidance evaluates both branches
    w2, _ = run(2.0, lab)
    assert not torch.equal(w2, cond)


def test_task_and_splits():
    assert task.parse_problem("482+917+356=") == (482, 917, 356, "add")
    assert task.parse_problem(" 5 + 17 - 3 ") == (5, 17, 3, "sub")
    assert task.answer_text(task.answer_of(482, 917, 356)) == "1755."
    assert task.carries(999, 999, 999) == 3 and task.carries(100, 200, 300) == 0
    s = {k: task.sample(300, 0, k) for k in task.SPLITS}
    keys = {k: {(a, b, c, t) for a, b, c, t in zip(v["a"], v["b"], v["c"], v["task"])} for k, v in s.items()}
    assert not keys["train"] & keys["test"] and not keys["val"] & keys["test"]
    toks = task.tokens(s["test"])
    assert toks.shape == (300, task.SEQ_LEN) and (toks[:, -1] == task.EOS).all()
    for bad, msg in (("4829+1+1=", "not of the form"), ("1+2-9=", "negative"), ("1*2=", "not of the form"),
                     ("1+" * 20, "longer than the model's context")):
        with pytest.raises(task.ProblemError, match=msg):
            task.parse_problem(bad)


def test_base_training_mix_zeroes_digits_within_the_train_split():
    """The base's mix: in a share of problems each operand digit is 0 with probability p; every problem stays in
    its split and its answer is recomputed; the uniform draw (what L2D, LoRA and every test use) is unchanged."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, (20000, 3))
    z = task.zero_digits(x, 0.3, 0.5, np.random.default_rng(1))
    digits = lambda v: np.stack([(v // 10**k) % 10 for k in range(3)], -1)  # noqa: E731
    dx, dz = digits(x), digits(z)
    assert ((dz == dx) | (dz == 0)).all()  # digits are kept or zeroed, never changed
    changed_rows = (dz != dx).any((1, 2))
    assert 0.40 < changed_rows.mean() < 0.50  # share 0.5 × P(at least one of 9 nonzero digits zeroed) ≈ 0.48
    zeroed_nonzero = ((dz == 0) & (dx != 0)).sum() / (dx != 0).sum()
    assert abs(zeroed_nonzero - 0.15) < 0.01  # share × p
    assert (task.zero_digits(x, 0.0, 0.5, rng) == x).all() and (task.zero_digits(x, 0.3, 0.0, rng) == x).all()
    mix = task.sample(500, 3, "train", zeroed=(0.5, 0.3))
    assert all(task.split_of(int(a), int(b), int(c), task.TASKS[t]) == "train"
               for a, b, c, t in zip(mix["a"], mix["b"], mix["c"], mix["task"]))
    assert (digits(mix["a"]) == 0).mean() > 0.2 > (digits(task.sample(500, 3, "train")["a"]) == 0).mean()
    uniform = task.sample(50, 7, "test")
    assert all((uniform[k] == task.sample(50, 7, "test", zeroed=(0.0, 0.0))[k]).all() for k in uniform)


def test_base_training_stops_at_the_headroom_target(monkeypatch):
    """The base stops at the first validation check at or above ``base_stop_at`` (the spec's 40-70% headroom)."""
    from dataclasses import replace

    seen = iter([0.2, 0.5, 0.6, 0.9])
    monkeypatch.setattr(models, "exact_match", lambda *a, **k: (next(seen), None))
    cfg = replace(models.MICRO, base_steps=40, base_eval_every=5, base_stop_at=0.55)
    _, rec = models.train_base(cfg, lambda f, m: None, lambda: False)
    assert rec["steps"] == 15 and rec["max_steps"] == 40 and rec["val_acc"] == 0.6
    assert [c["step"] for c in rec["curve"]] == [5, 10, 15]


def test_bad_parameters_are_named():
    for data, field in (({"steps": 0}, "steps"), ({"steps": 33}, "steps"), ({"tolerance": float("nan")}, "tolerance"),
                        ({"tolerance": 0.0}, "tolerance"), ({"guidance": 7.5}, "guidance"),
                        ({"guidance": float("inf")}, "guidance"), ({"solver": "leapfrog"}, "solver"),
                        ({"problem": "123456789+123456789+1="}, "problem"), ({"problem": "1/2="}, "problem"),
                        ({"compare_steps": [1, 64]}, "compare_steps"), ({"sigma": 3}, "sigma")):
        with pytest.raises(ParamError, match=field):
            validate(SolveParams, data)
    with pytest.raises(ParamError, match="tolerances"):
        validate(BenchmarkParams, {"tolerances": [1.0]})
    with pytest.raises(ParamError, match="steps"):
        validate(RealModelParams, {"steps": [0]})


def test_micro_models_and_solve():
    """The test profile's micro models train in seconds; solve reports the t = 0 check and per-step answers."""
    from engines.l2d import experiment, release

    b = release.load()
    assert b.manifest["training"]["l2d"]["base_bit_identical"] is True
    assert not release.verify(release.micro_dir()) and b.folder == release.micro_dir()
    assert "micro" in b.source
    res = experiment.solve({"problem": "482+917+356=", "steps": 4, "compare_steps": [1, 2]})
    assert res["t0_max_abs_diff"] < 1e-5 and res["t0_equals_base"]
    assert res["by_steps"][0]["answer"] == res["base_answer"]  # N = 1 is the base LM
    assert len(res["answer"]) == task.ANSWER_LEN and res["nfe_per_token"] == [6] * task.ANSWER_LEN
    with pytest.raises(ParamError, match="negative"):
        experiment.solve({"problem": "1+1-5="})


def test_lora_baseline_is_stored_as_its_adapter():
    """The release stores the LoRA baseline's A/B matrices only; merged into the frozen base they give the
    trained adapter's logits, and the base the bundle holds is untouched."""
    from safetensors.torch import load_file

    from engines.l2d import release

    b = release.load()
    stored = load_file(str(b.folder / release.FILES["lora"]))
    assert stored and all("lora_" in k for k in stored)  # no copy of the base's weights
    rank = b.manifest["training"]["lora"]["rank"]
    assert all(min(v.shape) == rank for v in stored.values())
    ids = _ids(8)
    with torch.no_grad():
        base_logits = b.base(input_ids=ids).logits
        lora_logits = b.lora(input_ids=ids).logits
    assert not torch.allclose(base_logits, lora_logits)  # the adapter acts
    again = models.merged_lora(b.base, rank, stored)
    with torch.no_grad():
        assert torch.equal(again(input_ids=ids).logits, lora_logits)
        assert torch.equal(b.base(input_ids=ids).logits, base_logits)


def test_publish_and_install_through_the_model_release(tmp_path, monkeypatch):
    """The micro models published into a release directory install, verified, into a fresh data dir."""
    import json
    import shutil

    from engines.common import release as shared
    from engines.l2d import release

    b = release.load()
    src = tmp_path / "src"
    shutil.copytree(b.folder, src)
    (src / "example.json").write_text(json.dumps({"problem": "1+2+3="}))
    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path / "rel"))
    m = release.publish(src, models.MICRO)
    assert m["key"] == release.key_for(models.MICRO) and set(m["files"]) >= {"base.safetensors", "l2d.json"}
    assert "python -m engines.l2d.release build" in m["rebuild"]
    dest = tmp_path / "fresh"
    assert shared.install("l2d", m["key"], dest) is not None
    assert not release.verify(dest) and release._complete(dest, models.MICRO)

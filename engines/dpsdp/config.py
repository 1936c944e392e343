"""Model and pipeline sizes of the tiny DPSDP setting (no torch: the tab and the release keys read them)."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TinyConfig:
    """Model and pipeline sizes; the defaults are the spec's (~10 CPU-minutes on 2 cores)."""

    n_layer: int = 4
    n_embd: int = 128
    n_head: int = 4
    pretrain_steps: int = 650  # deliberately short: p1@t1 of the actor ≈ 40-65 %
    sft_steps: int = 1000  # per role; 400 left the refinement turn unlearnt (kept 18 % of right answers)
    batch: int = 128
    lr: float = 2e-3
    sft_lr: float = 1e-3
    n_pool: int = 20000  # training problems (pretraining reads all of them)
    n_sft: int = 6000  # problems whose sampled first answers make the SFT data
    n_dp: int = 800  # training problems of the DPSDP tree
    k_answers: int = 4  # K candidate first answers per problem
    k_feedback: int = 4  # K feedbacks per answer
    m_refine: int = 4  # M refinements per feedback
    margin: float = 0.25  # pairs need a Q gap at least this large
    pairs_per_state: int = 4
    beta: float = 0.1
    dpo_lr: float = 1e-5  # chosen on validation (1e-4 / 3e-5 lowered the greedy accuracy of both roles more)
    dpo_epochs: int = 2
    dpo_batch: int = 64
    nll_weight: float = 1.0  # the chosen response's NLL added to the DPO loss (RPO-style; 0 = plain DPO)
    n_val: int = 500
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


QUICK = TinyConfig(pretrain_steps=400, sft_steps=600, n_pool=8000, n_sft=2000, n_dp=300, n_val=200)
MICRO = TinyConfig(n_layer=1, n_embd=32, n_head=2, pretrain_steps=20, sft_steps=20, batch=32, n_pool=200, n_sft=64, n_dp=16,
                   k_answers=2, k_feedback=2, m_refine=2, dpo_epochs=1, dpo_batch=16, n_val=32)

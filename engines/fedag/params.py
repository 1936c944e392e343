"""Parameters of the FedAG entry points (pydantic only: the UI validates them without torch).

Defaults follow ``options_fedadapter.py`` of the authors' code (λ = 0.1, m = 0.9, KD α = 0.5, temperature 1,
10 rounds, interact_epoch 2) where the tiny scale allows; learning rates and local epochs are the CPU plan's.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from engines.common.params import FiniteFloat, Params

Domain = Literal["tint", "rotate", "noise", "blur", "invert"]
DOMAIN_LABELS = {"tint": "colour-tinted", "rotate": "rotated 15-35°", "noise": "Gaussian noise σ=0.3",
                 "blur": "blurred σ=2.5", "invert": "inverted"}
#: the four domains of the leave-one-domain-out benchmark (spec §4: "over 4 of them, Office-Home-like")
BENCHMARK_DOMAINS = ("tint", "rotate", "noise", "blur")
Generator = Literal["pool", "glyph"]
GENERATOR_LABELS = {"pool": "deformed digits from the public pool no silo holds", "glyph": "font glyphs (procedural)"}
#: the paper-scale synthetic-data switch (a local StableDiffusionPipeline folder; ``paper_scale.PaperScale``), here
#: so the web process can tell which generator training uses without importing torch
SD_DIR_SETTING = "PAPERLAB_FEDAG_SD_DIR"
Method = Literal["fedag", "fedclip", "fedavg", "zeroshot"]
METHOD_LABELS = {"fedag": "FedAG", "fedclip": "FedCLIP (one FedAvg adapter)", "fedavg": "FedAvg (client CNNs)",
                 "zeroshot": "zero-shot CLIP"}


N_DIGITS = 1797  # scikit-learn digits: the silos' images and the synthetic generator's public pool
POOL_MIN = 100  # digits the pool generator keeps out of every silo


def max_images_per_domain(n_domains: int) -> int:
    """The most real images per domain that leave the pool generator ``POOL_MIN`` digits no silo holds."""
    return (N_DIGITS - POOL_MIN) // max(n_domains, 1)


def default_images_per_domain(n_domains: int) -> int:
    """The tab's silo size: the benchmark's 350, fewer when five domains would leave the pool too small."""
    return min(350, max_images_per_domain(n_domains))


class FederationParams(Params):
    """One leave-one-domain-out federation: clients per in-domain, one held-out domain, FedAG and baselines."""

    domains: tuple[Domain, ...] = Field(BENCHMARK_DOMAINS, max_length=5,
                                        description="the silos' visual domains (the held-out one included)")
    held_out: Domain = Field("blur", description="the domain no client holds (out-of-domain test)")
    clients_per_domain: int = Field(1, ge=1, le=3, description="cross-silo clients per in-domain (code: 1)")
    images_per_domain: int = Field(350, ge=40, le=440, description="real images of each domain (disjoint digits)")
    generator: Generator = Field("pool", description="synthetic data: deformed public-pool digits or font glyphs")
    synthetic_per_domain: int = Field(200, ge=20, le=1000, description="server-side synthetic renders per domain")
    corruption: FiniteFloat = Field(0.2, ge=0.0, le=0.8, description="share of deliberately wrong synthetic renders")
    rounds: int = Field(10, ge=1, le=30, description="communication rounds (code: 10)")
    local_epochs: int = Field(2, ge=1, le=10, description="client epochs per round (code: 10; spec CPU plan: 2)")
    interact_epochs: int = Field(2, ge=1, le=5, description="server mutual-learning passes per round (code: 2)")
    init_epochs: int = Field(20, ge=0, le=50, description="adapter initialisation epochs on synthetic data (code: 20)")
    lam: FiniteFloat = Field(0.1, ge=0.0, le=10.0, description="λ: weight of the attention regulariser (code: 0.1)")
    momentum: FiniteFloat = Field(0.9, ge=0.0, le=1.0, description="m: weight of the locally trained client (code: 0.9)")
    kd_alpha: FiniteFloat = Field(0.5, ge=0.0, le=1.0, description="α: KL weight against CE in distillation (code: 0.5)")
    quality: bool = Field(True, description="weight teachers by quality scores (False: the q ≡ 1 ablation)")
    lr: FiniteFloat = Field(1e-3, gt=0.0, le=0.1, description="Adam step of adapters, attention and KD (code: 1e-4)")
    lr_local: FiniteFloat = Field(1e-3, gt=0.0, le=0.1, description="Adam step of local training (code: 3e-4)")
    batch_size: int = Field(32, ge=4, le=256, description="batch size (code: 32)")
    baselines: tuple[Method, ...] = Field(("fedclip", "fedavg", "zeroshot"), max_length=3,
                                          description="baselines run on the same silos and budget")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    split_seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the disjoint per-domain split")
    example_index: int = Field(0, ge=0, le=10_000, description="held-out test image whose attention is shown")

    @field_validator("domains")
    @classmethod
    def _unique(cls, v):
        if len(set(v)) != len(v):
            raise ValueError("domains must not repeat")
        return v

    @field_validator("baselines")
    @classmethod
    def _no_fedag(cls, v):
        if "fedag" in v or len(set(v)) != len(v):
            raise ValueError("baselines are fedclip, fedavg, zeroshot, each at most once")
        return v

    @model_validator(mode="after")
    def _silos(self) -> "FederationParams":
        if not self.domains:
            raise ValueError("domains: the silos are empty; choose at least three domains (two in-domains and the "
                             "held-out one)")
        if self.held_out not in self.domains:
            raise ValueError(f"held_out: {self.held_out!r} is not one of the chosen domains {list(self.domains)}")
        if len(self.domains) < 3:
            raise ValueError(f"domains: {len(self.domains)} domain(s) chosen; FedAG needs at least two in-domains "
                             "(one adapter each, attention over them) plus the held-out domain")
        if self.generator == "pool" and self.images_per_domain > max_images_per_domain(len(self.domains)):
            raise ValueError(f"images_per_domain: {self.images_per_domain} × {len(self.domains)} domains leaves fewer "
                             f"than {POOL_MIN} of the {N_DIGITS:,} digits for the synthetic generator's public pool; "
                             f"choose at most {max_images_per_domain(len(self.domains))} or the glyph generator")
        return self

    @property
    def in_domains(self) -> list[str]:
        return [d for d in self.domains if d != self.held_out]


class ClassifyParams(Params):
    """Attention weights, per-adapter predictions and quality for one test image of a finished federation."""

    run: str = Field(..., min_length=1, max_length=400, description="artifact reference of a federation's state")
    index: int = Field(0, ge=0, le=10_000, description="index of the out-of-domain test image")

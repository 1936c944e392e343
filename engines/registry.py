"""The method registry: one explicit list of ``MethodSpec`` records, in landing-page order.

Entry points and parameter models are named by dotted paths (``module:attr``)
so that importing the registry imports nothing heavy; ``engines/<id>/params.py``
modules import only pydantic, so the UI can validate parameters without torch.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

Status = Literal["available", "planned"]
Queue = Literal["cpu", "gpu"]


@dataclass(frozen=True)
class Paper:
    title: str
    authors: str
    venue: str = "ICML 2025"
    arxiv: str | None = None
    code_url: str | None = None


@dataclass(frozen=True)
class Entry:
    """A callable the workers can run: ``target(params, ctx) -> result``."""

    target: str  # "engines.<id>.module:function"
    params: str  # "engines.<id>.params:Model"
    queue: Queue = "cpu"
    # Safe to run again after a worker died mid-way (pure function of its params).
    idempotent: bool = True


@dataclass(frozen=True)
class Claim:
    text: str
    command: str


@dataclass(frozen=True)
class MethodSpec:
    id: str
    title: str
    paper: Paper
    summary: str  # two sentences a newcomer understands
    try_it: str  # what you can do in the tab
    status: Status = "planned"
    entries: dict[str, Entry] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()

    @property
    def docs_page(self) -> str:
        return f"docs/methods/{self.id}.md"

    @property
    def results_page(self) -> str:
        return f"docs/results/{self.id}.md"


def _repro(mid: str) -> str:
    return f"make reproduce METHOD={mid}"


METHODS: list[MethodSpec] = [
    MethodSpec(
        id="dpsdp",
        title="Multi-agent reflection (DPSDP)",
        paper=Paper("Reinforce LLM Reasoning through Multi-Agent Reflection", "Yurun Yuan, Tengyang Xie", arxiv="2506.08379"),
        summary="An actor LLM answers, a critic LLM critiques, and the actor refines, over several turns. DPSDP trains both with direct preference learning on self-generated data whose targets come from dynamic programming over the refinement tree.",
        try_it="Pose an arithmetic problem (or a word problem for SmolLM2-135M), run actor and critic for several refinement rounds and read the transcript with its majority vote.",
        status="available",
        entries={
            "transcript": Entry("engines.dpsdp.experiment:transcript", "engines.dpsdp.params:RefineParams"),
            "tree": Entry("engines.dpsdp.experiment:tree", "engines.dpsdp.params:TreeParams"),
            "evaluate": Entry("engines.dpsdp.experiment:evaluate", "engines.dpsdp.params:EvaluateParams"),
            "train": Entry("engines.dpsdp.experiment:train", "engines.dpsdp.params:TrainParams"),
            "chat": Entry("engines.dpsdp.chat:transcript", "engines.dpsdp.llm_params:ChatParams"),
            "lora": Entry("engines.dpsdp.lora:lora_train", "engines.dpsdp.llm_params:LoraParams", queue="gpu"),
        },
        claims=(
            Claim("DPSDP: majority over 5 turns beats its first answer by ≥ 3 points (paper +5.0: 58.2 → 63.2, MATH500)", _repro("dpsdp")),
            Claim("m1@t5(DPSDP) > m1@t5(π_ref), and DPO does not hurt first-turn accuracy (≥ π_ref − 1 point)", _repro("dpsdp")),
            Claim("Accuracy per turn non-decreasing (≤ 1 point drop); incorrect→correct flips outnumber correct→incorrect", _repro("dpsdp")),
            Claim("m1@t5(DPSDP) ≥ self-consistency over 5 samples of the reference actor (tie acceptable)", _repro("dpsdp")),
            Claim("Ablations reported: single agent, full history, naive-DPO pairs", _repro("dpsdp")),
        ),
    ),
    MethodSpec(
        id="zapformat",
        title="Constrained decoding with Earley pruning (ZapFormat)",
        paper=Paper("Earley-Driven Dynamic Pruning for Efficient Structured Decoding", "Xintong Sun et al.", arxiv="2506.01151", code_url="https://github.com/Dan-wanna-M/formatron"),
        summary="To keep an LLM inside a JSON schema or grammar, every decoding step must mask out the tokens that would break it. ZapFormat prunes Earley parser states that can never matter again, so a small cache of masks keyed by the pruned state makes masking almost free.",
        try_it="Write a JSON schema, regex or grammar, step through constrained decoding token by token and watch masks, cache hits and pruned Earley sets.",
        status="available",
        entries={
            "step_through": Entry("engines.zapformat.experiment:step_through", "engines.zapformat.params:StepParams"),
            "generate": Entry("engines.zapformat.generation:generate", "engines.zapformat.params:GenerateParams"),
            "benchmark": Entry("engines.zapformat.experiment:benchmark", "engines.zapformat.params:BenchmarkParams"),
        },
        claims=(
            Claim("Our masks equal kbnf's on 100% of steps (≥ 3 grammars × 20 instances, Qwen2.5 vocabulary)", _repro("zapformat")),
            Claim("State cache: warm pass ≥ 5× faster than cache off, hit rate ≥ 90%", _repro("zapformat")),
            Claim("Pruning: peak live items on depth-6 JSON ≤ ⅓ of unpruned; items return to the pre-bracket level", _repro("zapformat")),
            Claim("SmolLM2 with our processor: 100% schema-valid JSON over 50 prompts; unconstrained less", _repro("zapformat")),
            Claim("Warm mean mask ≤ 2× kbnf's; cold mean below lm-format-enforcer's on every JSON workload", _repro("zapformat")),
        ),
    ),
    MethodSpec(
        id="pde_staggered",
        title="PDE surrogates",
        paper=Paper("Geometric and Physical Constraints Synergistically Enhance Neural PDE Surrogates", "Yunfei Huang, David S. Greenberg", arxiv="2506.05513"),
        summary="Neural surrogates replace slow PDE solvers but drift away from physics over long rollouts. Input and output layers that make them exactly equivariant to rotations and reflections on staggered grids, plus hard conservation constraints, keep them accurate for longer.",
        try_it="Pick an initial condition, run the solver and four surrogates side by side, and watch which one stays closest to the truth.",
        status="available",
        entries={
            "train": Entry("engines.pde_staggered.experiment:train", "engines.pde_staggered.params:TrainParams"),
            "rollout": Entry("engines.pde_staggered.experiment:rollout", "engines.pde_staggered.params:RolloutParams"),
            "rotate": Entry("engines.pde_staggered.experiment:rotate", "engines.pde_staggered.params:RotateParams"),
            "benchmark": Entry("engines.pde_staggered.experiment:benchmark",
                               "engines.pde_staggered.params:BenchmarkParams"),
        },
        claims=(
            Claim("Solver: D4-equivariant to 1e-10 and mass-conserving to 1e-12 (float64, closed C-grid basin)", _repro("pde_staggered")),
            Claim("p4m surrogates equivariant to < 1e-5 under all 8 grid symmetries; p1 is not", _repro("pde_staggered")),
            Claim("Mass-constrained (M) surrogates: relative mass drift < 1e-5 over the rollout; walls stay closed", _repro("pde_staggered")),
            Claim("Rollout error ordering p4m/M < p4m/∅ < p1/M ≤ p1/∅ on held-out ICs; p4m/M longest correlation time", _repro("pde_staggered")),
            Claim("Beyond the training rollout length and on the OOD L-shaped bump, p4m/M stays ahead of p1/∅", _repro("pde_staggered")),
            Claim("Surrogate step vs solver step wall-clock at the same batch on CPU (true ratio reported)", _repro("pde_staggered")),
        ),
    ),
    MethodSpec(
        id="fdgen",
        title="Fair graph generation (FDGen)",
        paper=Paper("FDGen: A Fairness-Aware Graph Generation Model", "Zichong Wang, Wenbin Zhang"),
        summary="Synthetic graphs inherit the biases of the real graph they imitate, both in node features and in who links to whom. FDGen adds feature-debiasing and structure-debiasing terms to a graph generator so that models trained on its graphs treat groups more equally.",
        try_it="Load a fairness graph, inspect its bias, train generators with and without debiasing, and compare downstream fairness gaps.",
        status="available",
        entries={
            "train_and_sample": Entry("engines.fdgen.experiment:train_and_sample", "engines.fdgen.params:TrainParams"),
            "lambda_sweep": Entry("engines.fdgen.experiment:lambda_sweep", "engines.fdgen.params:SweepParams"),
        },
        claims=(
            Claim("The vanilla generator reproduces the real graph's bias (h_s and probe AUC within 10 %)", _repro("fdgen")),
            Claim("FDGen lowers downstream ΔSP and ΔEO by ≥ 30 % vs the vanilla generator", _repro("fdgen")),
            Claim("With both bias sources on, FDGen beats structure-only and feature-only debiasing", _repro("fdgen")),
            Claim("Utility kept: accuracy drop ≤ 5 points, degree MMD ≤ 1.5× vanilla's", _repro("fdgen")),
        ),
    ),
    MethodSpec(
        id="multinoulli",
        title="Subset selection with the Multinoulli Extension",
        paper=Paper("Multinoulli Extension: A Lossless Yet Effective Probabilistic Framework for Subset Selection over Partition Constraints", "Qixin Zhang et al."),
        summary="Choosing a few items per group (frames per video segment, sensors per region) to maximise a submodular objective is a classic hard problem. Multinoulli-SCG relaxes each group to a distribution, climbs it with stochastic gradients and rounds losslessly, matching the best guarantees with far fewer evaluations.",
        try_it="Summarise a video by choosing frames per segment and compare objective value against function evaluations for each algorithm.",
        status="available",
        entries={
            "compare": Entry("engines.multinoulli.experiment:compare", "engines.multinoulli.params:CompareParams"),
            "sweep": Entry("engines.multinoulli.experiment:sweep", "engines.multinoulli.params:SweepParams"),
        },
        claims=(
            Claim("Multinoulli-SCG reaches ≥ 98% of distorted local search's value on video, design and coverage", _repro("multinoulli")),
            Claim("…with ≤ 25% of its function evaluations", _repro("multinoulli")),
            Claim("≥ (1 − 1/e)·OPT on brute-forced instances", _repro("multinoulli")),
            Claim("Rounding is lossless: mean f(rounded) ≥ ME(p) within sampling error, always feasible", _repro("multinoulli")),
            Claim("Parameter-free: no α, γ or β input", _repro("multinoulli")),
        ),
    ),
    MethodSpec(
        id="l2d",
        title="LLMs to diffusion finetuning (L2D)",
        paper=Paper("Large Language Models to Diffusion Finetuning", "Edoardo Cetin, Tianyu Zhao, Yujin Tang", arxiv="2501.15781", code_url="https://github.com/SakanaAI/L2D"),
        summary="A frozen language model gets a small diffusion path that refines each next token over several ODE steps. Spending more steps buys more accuracy, giving test-time compute scaling without retraining the LM.",
        try_it="Ask an arithmetic question and choose how many diffusion steps each answer token gets; watch the token probabilities settle.",
        status="available",
        entries={
            "solve": Entry("engines.l2d.experiment:solve", "engines.l2d.params:SolveParams"),
            "benchmark": Entry("engines.l2d.experiment:benchmark", "engines.l2d.params:BenchmarkParams"),
            "real_model": Entry("engines.l2d.real:real_model", "engines.l2d.params:RealModelParams", queue="gpu"),
        },
        claims=(
            Claim("Preservation: at t = 0 the L2D logits equal the frozen base's (max |Δ| < 1e-5); base weights bit-identical after training", _repro("l2d")),
            Claim("Test-time scaling: accuracy non-decreasing in steps N (within 1 point, 3 seeds); acc(N = 8) − acc(N = 1, base) ≥ 3 points on 2k held-out problems", _repro("l2d")),
            Claim("Accuracy vs NFE rises up to N = 8, then saturates (|acc(32) − acc(16)| ≤ 1.5 points)", _repro("l2d")),
            Claim("Adaptive solvers (dopri5, bosh3): NFE > 0 and falls as the tolerance loosens", _repro("l2d")),
            Claim("Guidance identities: w = 1 is the conditional model, w = 0 the unconditional one (exact)", _repro("l2d")),
            Claim("Runtime: base + L2D training < 10 min on 2 CPU cores; one problem at N = 8 < 1 s", _repro("l2d")),
        ),
    ),
    MethodSpec(
        id="cl_angles",
        title="Forgetting vs task angle",
        paper=Paper("Understanding the Forgetting of (Replay-based) Continual Learning via Feature Learning: Angle Matters", "Hongyi Wan et al.", code_url="https://github.com/iLearn-Lab/ICML25-Theory_CL"),
        summary="Whether a network forgets an old task when it learns a new one depends on the angle between the tasks' signal vectors. Small and slightly obtuse angles forget benignly, large ones harmfully, and replay widens the benign range.",
        try_it="Drag the angle between two tasks and watch task-1 accuracy after training on task 2, with and without replay.",
        status="available",
        entries={
            "angle_run": Entry("engines.cl_angles.synthetic:angle_run", "engines.cl_angles.params:AngleRunParams"),
            "angle_sweep": Entry("engines.cl_angles.synthetic:angle_sweep", "engines.cl_angles.params:SweepParams"),
            "angle_bins": Entry("engines.cl_angles.real_data:angle_bins", "engines.cl_angles.params:AngleBinsParams"),
            "buffer_selection": Entry("engines.cl_angles.real_data:buffer_selection",
                                      "engines.cl_angles.params:BufferSelectionParams"),
        },
        claims=(
            Claim("Synthetic: without replay, task-1 error < 0.05 for θ ≤ 60° and > 0.9 at θ = 180°", _repro("cl_angles")),
            Claim("Synthetic: task-1 error is non-decreasing in θ (Spearman > 0.9)", _repro("cl_angles")),
            Claim("Synthetic: replay moves the knee θ_c (first error > 0.5) later by ≥ 10°", _repro("cl_angles")),
            Claim("Synthetic: the knee lies beyond 90° (small obtuse angles stay benign)", _repro("cl_angles")),
            Claim("Real images: forgetting rises across the task-angle bins", _repro("cl_angles")),
            Claim("Real images: mid-angle buffers forget no more than random / small-angle (+0.5 pt) and less than "
                  "big-angle ones", _repro("cl_angles")),
        ),
    ),
    MethodSpec(
        id="syncmind",
        title="Out-of-sync recovery of coding agents (SyncMind)",
        paper=Paper("SyncMind: Measuring Agent Out-of-Sync Recovery in Collaborative Software Engineering", "Xuehang Guo et al.", arxiv="2502.06994", code_url="https://github.com/xhguo7/SyncMind"),
        summary="When several agents edit one repository, an agent's picture of the code goes stale. SyncMind builds out-of-sync instances from real histories and measures how well an agent notices, localises and repairs the divergence.",
        try_it="Pick an out-of-sync instance built from a repository's history, run an agent turn by turn under a budget (optionally asking a collaborator), then compare agents on success, localisation and collaboration.",
        status="available",
        entries={
            "episode": Entry("engines.syncmind.experiment:episode", "engines.syncmind.params:EpisodeParams"),
            "batch": Entry("engines.syncmind.experiment:batch", "engines.syncmind.params:BatchParams"),
            "build": Entry("engines.syncmind.experiment:build", "engines.syncmind.params:BuildParams"),
        },
        claims=(
            Claim("Construction validity: every built instance is fail-to-pass; two builds give identical ids", _repro("syncmind")),
            Claim("Bounds: gold replay SR = LA_func = 100 %, no-op SR = 0 %", _repro("syncmind")),
            Claim("Budget rules exact (independent: balance < coding cost; collaborative: < min of costs; turn cap)", _repro("syncmind")),
            Claim("Sandbox kills runaway test code within the timeout and blocks network access", _repro("syncmind")),
            Claim("Complexity: heuristic agent LA_func(caller) > LA_func(callee) on the toolz history", _repro("syncmind")),
            Claim("Collaboration: the oracle collaborator raises the heuristic agent's LA_func by ≥ 10 points", _repro("syncmind")),
        ),
    ),
    MethodSpec(
        id="poisonedeye",
        title="Knowledge poisoning of multimodal RAG (PoisonedEye)",
        paper=Paper("PoisonedEye: Knowledge Poisoning Attack on Retrieval-Augmented Generation based Large Vision-Language Models", "Chenyang Zhang et al.", code_url="https://github.com/123000001212/PoisonedEye"),
        summary="A vision-language model that retrieves image-text knowledge can be steered by one poisoned entry. PoisonedEye crafts that entry so it is retrieved for the target queries and flips the generated answer.",
        try_it="Craft one poisoned image-text entry, inject it into the knowledge base and see whether the answer flips.",
        status="available",
        entries={
            "craft": Entry("engines.poisonedeye.experiment:craft", "engines.poisonedeye.params:CraftParams"),
            "benchmark": Entry("engines.poisonedeye.experiment:benchmark", "engines.poisonedeye.params:BenchmarkParams"),
        },
        claims=(
            Claim("Fused embedding has unit norm; flat-L2 ranking equals cosine ranking", _repro("poisonedeye")),
            Claim("PE-S puts the poison at rank 1 for ≥ 95% of 50 target queries; ‖δ‖∞ ≤ ε on the saved 8-bit image", _repro("poisonedeye")),
            Claim("Class-wise ASR: PE-C > PE-S > PE-B with PE-C ≥ 70%", _repro("poisonedeye")),
            Claim("ASR ≤ top-k retrieval rate + no-poison target rate + 2 points for every variant", _repro("poisonedeye")),
            Claim("Removing the poison restores the index bit for bit and clean accuracy within 1 point", _repro("poisonedeye")),
            Claim("Purification cuts PE-C top-k retrieval by ≥ 30 points with ≤ 5 points clean recall@3 loss", _repro("poisonedeye")),
            Claim("Paper-scale retriever and LVLM classes build from local configs without downloading", _repro("poisonedeye")),
        ),
    ),
    MethodSpec(
        id="fedag",
        title="Federated domain knowledge infusion (FedAG)",
        paper=Paper("Enhancing Foundation Models with Federated Domain Knowledge Infusion", "Jiaqi Wang et al.", code_url="https://github.com/JackqqWang/fedag"),
        summary="Clients hold data from different visual domains that cannot leave their silos. FedAG trains per-domain adapters on a frozen foundation model by distillation and routes each test image to the right adapters with attention.",
        try_it="Run a small federation of digit domains, hold one out, and compare FedAG with zero-shot and FedAvg baselines.",
        status="available",
        entries={
            "federate": Entry("engines.fedag.experiment:federate", "engines.fedag.params:FederationParams"),
        },
        claims=(
            Claim("Gate sums to 1 over features, α to 1 over adapters; the regulariser is 0 iff the own-domain α is maximal",
                  _repro("fedag")),
            Claim("Quality scores separate corrupted synthetic samples: AUROC ≥ 0.8", _repro("fedag")),
            Claim("Leave-one-domain-out (4 folds): FedAG out-of-domain > FedCLIP > zero-shot, margins ≥ 2 points",
                  _repro("fedag")),
            Claim("In-domain one2one of FedAG ≥ FedCLIP − 1 point", _repro("fedag")),
            Claim("Ablations: λ = 0 and q ≡ 1 each lower mean one2all accuracy", _repro("fedag")),
            Claim("Attention regulariser: the own-domain adapter has the largest α for ≥ 70% of in-domain test images",
                  _repro("fedag")),
            Claim("Privacy contract: only weights, scores and metrics leave a client", _repro("fedag")),
        ),
    ),
    MethodSpec(
        id="emloc",
        title="Multimodal long-context compression (EMLoC)",
        paper=Paper("Efficient Multi-modal Long Context Learning for Training-free Adaptation", "Zehong Ma, Shiliang Zhang, Longhui Wei, Qi Tian", arxiv="2505.19812", code_url="https://github.com/Zehong-Ma/EMLoC"),
        summary="Many in-context demonstrations teach a model a new task without training, but the long context is expensive. EMLoC compresses the demonstrations chunk by chunk into a small key/value memory whose size each layer chooses under a divergence limit.",
        try_it="Compress many demonstrations into a small memory and compare accuracy, memory and latency with the full context.",
        status="available",
        entries={
            "build_memory": Entry("engines.emloc.experiment:build_memory", "engines.emloc.params:MemoryParams"),
            "benchmark": Entry("engines.emloc.experiment:benchmark", "engines.emloc.params:BenchmarkParams"),
        },
        claims=(
            Claim("No pruning: chunk-wise memory + query reproduces the full-context logits to ≤ 1e-4", _repro("emloc")),
            Claim("JS ≤ δ on every chunk's observation set; every answer token kept in every layer", _repro("emloc")),
            Claim("Accuracy within 2 points of the full context at 128 and 256 shots, keeping ≤ 40% of the demo KV", _repro("emloc")),
            Claim("≥ 3 points above truncation and uniform pruning at EMLoC's budget", _repro("emloc")),
            Claim("Non-uniform per-layer budgets (max/min ≥ 2), fewer tokens for larger δ; lower latency than full context", _repro("emloc")),
        ),
    ),
    MethodSpec(
        id="kl_bandits",
        title="KL-regularised bandits: logarithmic regret",
        paper=Paper("Logarithmic Regret for Online KL-Regularized Reinforcement Learning", "Heyang Zhao, Chenlu Ye, Wei Xiong, Quanquan Gu, Tong Zhang", arxiv="2502.07460"),
        summary="RLHF keeps a policy close to a reference model with a KL penalty. This paper proves that an optimistic algorithm then suffers only logarithmic regret in the number of rounds, instead of the square-root regret of unregularised learning.",
        try_it="Set the KL strength η and the horizon, run KL-UCB, greedy Gibbs and UCB, and compare regret curves against log T and √T.",
        status="available",
        entries={
            "regret_curves": Entry("engines.kl_bandits.experiment:regret_curves", "engines.kl_bandits.params:RegretCurvesParams"),
            "eta_sweep": Entry("engines.kl_bandits.experiment:eta_sweep", "engines.kl_bandits.params:EtaSweepParams"),
            # Paper-scale path: an LLM as π₀ (SmolLM2 offline, any causal LM by id); GPU queue.
            "rlhf": Entry("engines.kl_bandits.rlhf:rlhf_loop", "engines.kl_bandits.params:RLHFParams", queue="gpu"),
        },
        claims=(
            Claim("KL-UCB regret fits a + b·log T (R² ≥ 0.95)", _repro("kl_bandits")),
            Claim("Hard instances: KL-UCB 16× growth ratio ≤ 2.5 while UCB's ≥ 3", _repro("kl_bandits")),
            Claim("Regret increases with η", _repro("kl_bandits")),
            Claim("Log-log slope < 0.3 for KL-UCB, > 0.4 for UCB", _repro("kl_bandits")),
        ),
    ),
    MethodSpec(
        id="moex",
        title="Intrinsically interpretable mixture of experts (MoE-X)",
        paper=Paper("Mixture of Experts Made Intrinsically Interpretable", "Xingyi Yang et al.", arxiv="2503.07639"),
        summary="Neurons of dense models mix many concepts, which makes them hard to read. MoE-X rewrites the MoE layer as one wide, sparse MLP with ReLU experts and sparsity-aware routing, so its hidden units line up with single concepts.",
        try_it="Step through a chess game and see which hidden units fire and which board facts each unit stands for.",
        status="available",
        entries={
            "explore": Entry("engines.moex.experiment:explore", "engines.moex.params:ExploreParams"),
            "search": Entry("engines.moex.experiment:search_job", "engines.moex.params:SearchParams"),
            "grid": Entry("engines.moex.experiment:grid", "engines.moex.params:GridParams"),
        },
        claims=(
            Claim("Check 1: the MoE-X layer equals its wide sparse MLP W_dec·h(x) (max |Δ| < 1e-5), ‖h‖_0 ≤ k·D",
                  _repro("moex")),
            Claim("MoE-X beats dense GELU on coverage and on board reconstruction by ≥ 0.05, and matches or beats "
                  "TopK MoE (mean of 3 seeds, held-out games)", _repro("moex")),
            Claim("Ablation: ReLU experts + sparsity router ≥ either alone on reconstruction; ReLU experts "
                  "contribute most", _repro("moex")),
            Claim("Sparsity router score anti-correlated with true expert L0 (Spearman ≤ −0.5), linear TopK gate "
                  "not (|ρ| < 0.3)", _repro("moex")),
        ),
    ),
    MethodSpec(
        id="prototype",
        title="Prompt-to-prototype",
        paper=Paper("Targeted control of fast prototyping through domain-specific interface", "Yu-Zhe Shi et al.", arxiv="2506.11070"),
        summary="Designers speak of components and qualities, modelling tools of parameters and commands. A per-domain interface of components, attributes and operations, derived automatically, lets a language model turn a designer's words into precise edits of a 3D prototype.",
        try_it="Pick a product, type a design instruction and watch the 3D model change exactly where you asked.",
        status="available",
        entries={
            "interpret": Entry("engines.prototype.studio:interpret", "engines.prototype.params:InterpretParams"),
            "benchmark": Entry("engines.prototype.benchmark:run_benchmark", "engines.prototype.params:BenchmarkParams"),
            "specify": Entry("engines.prototype.specification:run_specify", "engines.prototype.params:SpecifyParams"),
        },
        claims=(
            Claim("Embedding mapper: interface beats raw parameters by ≥ 10 points exact match, fewer unintended edits", _repro("prototype")),
            Claim("SmolLM2 mapper: interface beats raw parameters by ≥ 10 points exact match, fewer unintended edits", _repro("prototype")),
            Claim("Every executed program yields valid, watertight geometry within the declared ranges", _repro("prototype")),
            Claim("Instruction round trip (interpret + rebuild + export) ≤ 2 s on CPU", _repro("prototype")),
            Claim("Automatically specified interface reaches ≥ 90% of the hand-written spec's accuracy", _repro("prototype")),
        ),
    ),
    MethodSpec(
        id="slug",
        title="Single-layer unlearning (SLUG)",
        paper=Paper("Targeted Unlearning with Single Layer Unlearning Gradient", "Zikui Cai, Yaoteng Tan, M. Salman Asif", arxiv="2407.11867", code_url="https://github.com/CSIPlab/SLUG"),
        summary="Removing one identity or concept from a trained model usually means costly fine-tuning. SLUG computes one gradient, picks the single layer where forgetting and retaining conflict least, and takes one step there.",
        try_it="Pick a concept to forget, see which layer SLUG chooses and why, and compare accuracy before and after.",
        status="available",
        entries={
            "unlearn": Entry("engines.slug.unlearn:unlearn", "engines.slug.params:UnlearnParams"),
            "unlearn_t2i": Entry("engines.slug.t2i_unlearn:unlearn_t2i", "engines.slug.params:T2IParams"),
        },
        claims=(
            Claim("Tiny CLIP: forget accuracy ≤ 5% with retain zero-shot accuracy drop ≤ 5 points", _repro("slug")),
            Claim("At matched forget accuracy SLUG keeps ≥ 10 points more retain accuracy than all-layer gradient ascent", _repro("slug")),
            Claim("The Pareto-chosen layer beats a random layer and the importance-only layer on retain accuracy", _repro("slug")),
            Claim("One gradient pass over D_f ∪ D_r, ≤ 10 search evaluations, exactly one layer changed, bit-exact revert", _repro("slug")),
            Claim("Text-to-image: judge accuracy on the forgotten concept falls ≥ 50 points, unrelated concepts within 10", _repro("slug")),
        ),
    ),
    MethodSpec(
        id="saeuron",
        title="Concept erasure with sparse autoencoders (SAeUron)",
        paper=Paper("SAeUron: Interpretable Concept Unlearning in Diffusion Models with Sparse Autoencoders", "Bartosz Cywiński, Kamil Deja", arxiv="2501.18052", code_url="https://github.com/cywinski/SAeUron"),
        summary="A sparse autoencoder trained on a diffusion model's activations exposes interpretable features. Scaling down the few features of one concept erases it from generated images without touching the model's weights.",
        try_it="Pick a style or object, drag the erasure slider and watch the concept leave the generated images.",
        status="available",
        entries={
            "build": Entry("engines.saeuron.pipeline:build", "engines.saeuron.params:BuildParams"),
            "erase": Entry("engines.saeuron.erase:erase", "engines.saeuron.params:EraseParams"),
            "benchmark": Entry("engines.saeuron.benchmark:benchmark", "engines.saeuron.params:BenchmarkParams"),
        },
        claims=(
            Claim("SAE contract: per-token L0 = k, FVU ≤ 0.25, upstream cfg.json + sae.safetensors round trip", _repro("saeuron")),
            Claim("Nothing selected: hooked generation equals unhooked (max |Δ| < 1e-4)", _repro("saeuron")),
            Claim("Style erasure: UA ≥ 0.80, IRA ≥ 0.85·IRA₀, CRA ≥ 0.90·CRA₀", _repro("saeuron")),
            Claim("SAeUron beats raw-channel ablation by ≥ 5 points of avg(UA, IRA, CRA)", _repro("saeuron")),
            Claim("Two styles at once with one SAE: UA ≥ 0.70 on both", _repro("saeuron")),
            Claim("Paper-scale SAE (d_in 1280, n 20480, k 32) loads and hooks an SD-structured UNet offline", _repro("saeuron")),
        ),
    ),
    MethodSpec(
        id="tailopt",
        title="Distributed optimisation under heavy-tailed noise",
        paper=Paper("Efficient Distributed Optimization under Heavy-Tailed Noise", "Su Hyeong Lee, Manzil Zaheer, Tian Li", arxiv="2502.04164", code_url="https://github.com/sulee3/Heavy-Tails"),
        summary="Gradient noise in language-model training is heavy-tailed, which breaks plain federated averaging. The paper's TailOPT framework clips adaptively at both the workers and the server (Bi²Clip) and converges where averaging diverges.",
        try_it="Simulate workers with heavy-tailed gradient noise and compare FedAvg, clipping and Bi²Clip loss curves.",
        status="available",
        entries={
            "compare": Entry("engines.tailopt.experiment:compare", "engines.tailopt.params:CompareParams"),
            "noise_probe": Entry("engines.tailopt.experiment:noise_probe", "engines.tailopt.params:NoiseParams"),
            "equivalence": Entry("engines.tailopt.experiment:equivalence", "engines.tailopt.params:EquivalenceParams"),
        },
        claims=(
            Claim("Cauchy noise: Bi²Clip's final excess loss ≤ 0.5× tuned FedAvg's (or FedAvg diverges), median of 5 held-out seeds", _repro("tailopt")),
            Claim("Cauchy noise: Bi²Clip ≤ 1.2× the best Adam-type method (FedAdam, local Adam, Adam², DiLoCo) with zero extra state", _repro("tailopt")),
            Claim("Bi²Clip beats FedAvg + L2 clipping on the anisotropic task", _repro("tailopt")),
            Claim("Counted state: Bi²Clip 0 floats/parameter (worker and server), Adam² 2 + 2; floats sent per round d (3d for local Adam)", _repro("tailopt")),
            Claim("Gaussian noise: Bi²Clip within 10% of FedAvg", _repro("tailopt")),
            Claim("2-rank torch.distributed (gloo, 127.0.0.1) run equals the simulator within 1e-6", _repro("tailopt")),
            Claim("Tiny transformer on Zipf tokens: Bi²Clip validation loss < FedAvg's, within 10% of the best Adam-type", _repro("tailopt")),
        ),
    ),
    MethodSpec(
        id="object_audio",
        title="Object-click audio",
        paper=Paper("Sounding that Object: Interactive Object-Aware Image to Audio Generation", "Tingle Li et al.", arxiv="2506.04214"),
        summary="Image-to-audio models blur the sounds of all objects in a scene together. Here the user clicks an object, segmentation masks it, and the mask replaces the model's attention so only that object's sound is generated.",
        try_it="Click an object in a picture, see its mask and hear the sound generated for it alone, next to the whole-scene sound.",
        status="available",
        entries={
            "click": Entry("engines.object_audio.experiment:click_to_audio", "engines.object_audio.params:ClickParams"),
            "train": Entry("engines.object_audio.experiment:train_models", "engines.object_audio.params:TrainParams"),
            "benchmark": Entry("engines.object_audio.evaluate:benchmark", "engines.object_audio.params:BenchmarkParams"),
        },
        claims=(
            Claim("Clicked-class accuracy ≥ 0.80 on 2-3-object scenes, ≥ 20 points above whole-image conditioning", _repro("object_audio")),
            Claim("Learned text attention ≈ mask: AUROC ≥ 0.85, |ACC_mask − ACC_attn| ≤ 0.05", _repro("object_audio")),
            Claim("Additive attention ≥ 30 points worse than dot-product with mask substitution", _repro("object_audio")),
            Claim("Flood-fill IoU ≥ 0.95; LiteMedSAM (box proposals) IoU reported", _repro("object_audio")),
            Claim("Click-to-audio ≤ 5 s on 2 CPU cores once models are loaded", _repro("object_audio")),
        ),
    ),
    MethodSpec(
        id="rose",
        title="General time-series forecasting (ROSE)",
        paper=Paper("Towards a General Time Series Forecasting Model with Unified Representation and Adaptive Transfer", "Yihang Wang et al.", arxiv="2405.17478", code_url="https://github.com/decisionintelligence/ROSE"),
        summary="One pre-trained forecaster should serve series from many domains. ROSE learns unified representations with decomposed frequency masking and adapts to a new domain through a register of learned patterns.",
        try_it="Forecast a held-out real series (airline, CO₂, sunspots, electricity demand) or your CSV zero-shot and after few-shot fine-tuning, beside seasonal naive, AutoETS and AutoARIMA, and see which register entries it activates.",
        status="available",
        entries={
            "forecast": Entry("engines.rose.experiment:forecast", "engines.rose.params:ForecastParams"),
            "mask_view": Entry("engines.rose.experiment:mask_view", "engines.rose.params:MaskViewParams"),
            "pretrain": Entry("engines.rose.experiment:pretrain", "engines.rose.params:PretrainParams"),
            "ablation": Entry("engines.rose.experiment:ablation", "engines.rose.params:AblationParams"),
        },
        claims=(
            Claim("Pre-training helps: few-shot ROSE (10% of windows) mean MSE < the same architecture from scratch "
                  "on the same windows, held-out real series", _repro("rose")),
            Claim("Beats the naive floor: zero-shot mean MASE < 1.0 on the held-out real series", _repro("rose")),
            Claim("Frequency masking beats random patch masking in zero-shot MSE (equal compute, mean of 3 seeds)",
                  _repro("rose")),
            Claim("The register helps: zero-shot MSE with register ≤ without (mean of 3 seeds)", _repro("rose")),
            Claim("The register is used: codebook perplexity > 4 and NMI(code; synthetic domain) > 0.2",
                  _repro("rose")),
            Claim("AutoETS and AutoARIMA reported on the same windows (no claim to beat them)", _repro("rose")),
            Claim("Released-layout checkpoints load with zero missing/unexpected keys; the paper configuration has "
                  "≈ 8M parameters; a mismatched d_model is refused", _repro("rose")),
        ),
    ),
]

# Entries that are not paper methods (the shared model zoo's build job): reachable by id for jobs,
# never listed on the landing page or given a tab.
INTERNAL: list[MethodSpec] = [
    MethodSpec(
        id="zoo",
        title="Model zoo",
        paper=Paper("(shared infrastructure)", "Paperlab", venue=""),
        summary="Shared tiny models (CLIP, latent text-to-image diffusion, judges) trained once and cached. Methods load them with engines.common.zoo.load.",
        try_it="Build a zoo model from the landing page.",
        status="planned",
        entries={"build": Entry("engines.common.zoo.jobs:build_entry", "engines.common.zoo.params:ZooBuildParams")},
    ),
]

_BY_ID = {m.id: m for m in METHODS + INTERNAL}


def get(method_id: str) -> MethodSpec:
    try:
        return _BY_ID[method_id]
    except KeyError:
        raise KeyError(f"unknown method {method_id!r}; known: {', '.join(_BY_ID)}") from None


def available() -> list[MethodSpec]:
    return [m for m in METHODS if m.status == "available"]


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def entry(method_id: str, name: str) -> Entry:
    spec = get(method_id)
    try:
        return spec.entries[name]
    except KeyError:
        raise KeyError(f"method {method_id!r} has no entry {name!r}; entries: {', '.join(spec.entries) or 'none'}") from None


def params_model(method_id: str, name: str):
    """The pydantic parameter model of an entry (imports only the light params module)."""
    return _load(entry(method_id, name).params)


def entry_callable(method_id: str, name: str) -> Callable[..., Any]:
    return _load(entry(method_id, name).target)


def run(method_id: str, name: str, params: Any, ctx: Any = None) -> dict[str, Any]:
    """Validate ``params`` and run an entry point in this process; returns the JSON-able result."""
    import json

    from engines.common.params import validate

    p = validate(params_model(method_id, name), params)
    result = entry_callable(method_id, name)(p, ctx)
    return json.loads(result.model_dump_json()) if hasattr(result, "model_dump_json") else result

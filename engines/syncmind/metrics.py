"""SyncMind metrics (spec §1): SR, LA_file, LA_func, CSR, ASR, time allocation and resource use.

- LA_file / LA_func: the agent's final answer names the right file / the right file and function; a success
  counts as correct (as in the official ``run_eval.py``).
- CSR: success rate among the episodes whose localisation (LA_func) is correct.
- ASR: share of turns spent asking the collaborator (pooled over episodes).
- Time allocation: shares of turns spent on environment interaction, proposing, asking, other.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class EpisodeResult:
    instance_id: str
    instance_type: str
    agent: str
    mode: str
    success: bool
    la_file: bool
    la_func: bool
    turns: int
    n_env: int
    n_ask: int
    n_propose: int
    n_other: int
    cost: float
    balance_left: float
    end_reason: str
    answer: list = field(default_factory=list)
    seconds: float = 0.0
    log: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def localisation(answers: list[list[tuple[str, str]]], path: str, fm_name: str, success: bool) -> tuple[bool, bool]:
    """(LA_file, LA_func) of the final answer."""
    if success:
        return True, True
    final = answers[-1] if answers else []
    la_file = any(p == path for p, _ in final)
    la_func = any(p == path and f.split(".")[-1] == fm_name for p, f in final)
    return la_file, la_func


def summarize(results: list[EpisodeResult]) -> dict:
    n = len(results)
    if n == 0:
        return {"n": 0}
    turns = sum(r.turns for r in results) or 1
    la = [r for r in results if r.la_func]
    return {
        "n": n,
        "SR": 100.0 * sum(r.success for r in results) / n,
        "LA_file": 100.0 * sum(r.la_file for r in results) / n,
        "LA_func": 100.0 * sum(r.la_func for r in results) / n,
        "CSR": 100.0 * sum(r.success for r in la) / len(la) if la else 0.0,
        "ASR": 100.0 * sum(r.n_ask for r in results) / turns,
        "time_env": 100.0 * sum(r.n_env for r in results) / turns,
        "time_propose": 100.0 * sum(r.n_propose for r in results) / turns,
        "time_ask": 100.0 * sum(r.n_ask for r in results) / turns,
        "time_other": 100.0 * sum(r.n_other for r in results) / turns,
        "mean_turns": sum(r.turns for r in results) / n,
        "mean_cost": sum(r.cost for r in results) / n,
        "mean_balance_left": sum(r.balance_left for r in results) / n,
    }

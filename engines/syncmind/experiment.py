"""Entry points: run one episode, evaluate agents over a batch, build instances (jobs with progress)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from engines.common.context import JobContext, LocalContext
from engines.common.params import validate

from .agents import Agent, GoldReplayAgent, HeuristicAgent, NoOpAgent
from .collaborators import LLMCollaborator, OracleCollaborator
from .env import EnvConfig, Episode, GiveUpAction, MalformedAction, ProposeAction, AskAction, EnvAction
from .instances import Instance, build_instances
from .metrics import EpisodeResult, localisation, summarize
from .params import AGENT_LABELS, BatchParams, BuildParams, EpisodeParams, LLMParams
from .sandbox import Limits
from .sources import get_instance, head_dir, instance_set


def make_agent(name: str, inst: Instance, llm: LLMParams | None = None,
               cancelled: Callable[[], bool] | None = None) -> Agent:
    if name == "gold":
        return GoldReplayAgent(inst)
    if name == "noop":
        return NoOpAgent()
    if name == "heuristic":
        return HeuristicAgent()
    from .llm_agent import LLMAgent, openai_chat, smollm2_chat

    llm = llm or LLMParams()
    chat = openai_chat(llm) if name == "openai" else smollm2_chat(llm, cancelled)
    return LLMAgent(chat, name=name)


def make_collaborator(kind: str, inst: Instance, llm: LLMParams | None):
    if kind == "llm":
        from .llm_agent import openai_chat

        return LLMCollaborator(inst, openai_chat(llm or LLMParams()))
    return OracleCollaborator(inst)


def run_episode(inst: Instance, agent: Agent, cfg: EnvConfig, head: Path, collaborator=None,
                on_turn: Callable[[dict], None] | None = None, cancelled: Callable[[], bool] | None = None,
                cache: dict | None = None) -> EpisodeResult:
    """Run ``agent`` on ``inst`` until the episode ends; returns the metrics and the turn log."""
    collaborator = collaborator if collaborator is not None else OracleCollaborator(inst)
    with Episode(inst, head, cfg, collaborator, cache=cache) as ep:
        agent.reset({"error_log": inst.initial_error_log, "unittest_path": inst.unittest_path,
                     "mode": cfg.mode, "total_budget": cfg.total_budget, "coding_cost": cfg.coding_cost,
                     "asking_cost": cfg.asking_cost, "max_turns": cfg.max_turns,
                     "initial_text": ep.initial_text()})
        obs = ep.initial_observation()
        while not ep.done:
            if cancelled and cancelled():
                ep.end_reason = "stopped"
                break
            try:
                action = agent.act(obs)
            except Exception as e:  # a crashing agent is scored as a malformed turn, not a crash of the job
                action = MalformedAction(raw="", reason=f"agent error {type(e).__name__}: {str(e)[:200]}")
            obs = ep.step(action)
            if on_turn:
                r = ep.records[-1]
                on_turn(dict(r.__dict__, thought=getattr(action, "thought", "")))
        kinds = [r.kind for r in ep.records]
        la_file, la_func = localisation(ep.answers, inst.pyfile_path, inst.fm_name, ep.success)
        return EpisodeResult(
            instance_id=inst.instance_id, instance_type=inst.instance_type, agent=getattr(agent, "name", "agent"),
            mode=cfg.mode, success=ep.success, la_file=la_file, la_func=la_func, turns=ep.turn,
            n_env=kinds.count("env"), n_ask=kinds.count("ask"), n_propose=kinds.count("propose"),
            n_other=len(kinds) - kinds.count("env") - kinds.count("ask") - kinds.count("propose"),
            cost=cfg.total_budget - ep.balance, balance_left=ep.balance, end_reason=ep.end_reason or "stopped",
            answer=[list(a) for a in (ep.answers[-1] if ep.answers else [])], seconds=ep.seconds,
            log=[dict(r.__dict__) for r in ep.records])


def env_config(p) -> EnvConfig:
    return EnvConfig(mode=p.mode, total_budget=p.total_budget, coding_cost=p.coding_cost,
                     asking_cost=p.asking_cost, max_turns=p.max_turns, test_timeout_s=p.test_timeout_s)


class EpisodeOutput(BaseModel):
    instance: dict
    result: dict
    elapsed_s: float


def episode(params: dict | EpisodeParams, ctx: JobContext | None = None) -> EpisodeOutput:
    """One agent on one instance; progress previews carry the turn log so far."""
    p = validate(EpisodeParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    inst = get_instance(p.repo, p.instance_id)
    ctx.progress(0.02, f"preparing {inst.instance_id}")
    head = head_dir(p.repo)
    agent = make_agent(p.agent, inst, p.llm, ctx.cancelled)
    cfg = env_config(p)
    turns: list[dict] = []

    def on_turn(rec: dict) -> None:
        turns.append(rec)
        ctx.progress(min(0.98, rec["turn"] / cfg.max_turns), f"turn {rec['turn']}: {rec['kind']}",
                     {"turns": turns[-50:]})

    res = run_episode(inst, agent, cfg, head, make_collaborator(p.collaborator, inst, p.llm),
                      on_turn=on_turn, cancelled=ctx.cancelled)
    ctx.check_cancelled()
    ctx.progress(1.0, "done")
    return EpisodeOutput(instance=inst.model_dump(), result=res.to_dict(), elapsed_s=time.perf_counter() - t0)


class BatchOutput(BaseModel):
    repo: str
    rows: list[dict]  # one per (agent, mode, instance type): summarize() + labels
    episodes: list[dict]  # per-episode results without logs
    elapsed_s: float


def select(repo: str, instance_type: str, max_instances: int) -> list[Instance]:
    insts = [i for i in instance_set(repo).instances if instance_type == "all" or i.instance_type == instance_type]
    return insts[:max_instances]


def batch(params: dict | BatchParams, ctx: JobContext | None = None) -> BatchOutput:
    """Every selected agent × mode over the selected instances; SR / LA / CSR / ASR per caller / callee."""
    p = validate(BatchParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    insts = select(p.repo, p.instance_type, p.max_instances)
    head = head_dir(p.repo)
    cache: dict = {}
    jobs = [(a, m) for a in p.agents for m in p.modes if not (a in ("gold", "noop") and m == "collaborative")]
    total = len(jobs) * len(insts)
    done = 0
    results = []
    for agent_name, mode in jobs:
        cfg = env_config(p.model_copy(update={"mode": mode}))
        for inst in insts:
            ctx.check_cancelled()
            res = run_episode(inst, make_agent(agent_name, inst, p.llm, ctx.cancelled), cfg, head,
                              make_collaborator(p.collaborator, inst, p.llm), cancelled=ctx.cancelled, cache=cache)
            d = res.to_dict()
            d.pop("log")
            results.append(res)
            done += 1
            ctx.progress(done / total, f"{AGENT_LABELS[agent_name]} ({mode}): {done}/{total}",
                         {"episodes": [dict(r.to_dict(), log=None) for r in results[-5:]]})
    rows = []
    for agent_name, mode in jobs:
        for kind in ("all", "caller", "callee"):
            sel = [r for r in results if r.agent == agent_name and r.mode == mode
                   and (kind == "all" or r.instance_type == kind)]
            if sel:
                rows.append(dict(summarize(sel), agent=agent_name, mode=mode, instance_type=kind))
    eps = []
    for r in results:
        d = r.to_dict()
        d.pop("log")
        eps.append(d)
    return BatchOutput(repo=p.repo, rows=rows, episodes=eps, elapsed_s=time.perf_counter() - t0)


class BuildOutput(BaseModel):
    repo: str
    head_commit: str
    ids: list[str]
    n_caller: int
    n_callee: int
    rejected: dict
    elapsed_s: float


def build(params: dict | BuildParams, ctx: JobContext | None = None) -> BuildOutput:
    """Build the instances of the bundled repository from its git history (as the tab's job)."""
    p = validate(BuildParams, params)
    ctx = ctx or LocalContext()
    t0 = time.perf_counter()
    from .synthetic import synthetic_repo

    repo = synthetic_repo()

    def prog(f, msg):
        ctx.progress(f, msg)
        ctx.check_cancelled()

    iset = build_instances(repo, "minilib", head_dir("minilib"), trace_mode=p.trace_mode, strict=p.strict,
                           limits=Limits(timeout_s=p.test_timeout_s, cpu_s=int(p.test_timeout_s)),
                           max_instances=p.max_instances, progress=prog)
    kinds = [i.instance_type for i in iset.instances]
    return BuildOutput(repo="minilib", head_commit=iset.head_commit, ids=iset.ids(), n_caller=kinds.count("caller"),
                       n_callee=kinds.count("callee"), rejected=iset.rejected, elapsed_s=time.perf_counter() - t0)

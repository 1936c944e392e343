"""``nstep_inference`` (spec §1): per generated token, integrate the latent ODE with torchdiffeq.

dx/dt = v(x, t) = (x̂₁(x, t) − x)/(1 − t) from x₀ = σε at t = 0 to t = 1 ("constant" velocity
schedule); x̂₁ from the L2D logits at (x, t): argmax → φ(argmax token) (temperature 0, the benchmark
default), sample → φ of a token sampled at temperature T(t), average → E_p[φ] at temperature T(t), with
the official temperature schedules: ``polynomial_<p>_<end>`` gives T(t) = T·(1 − t/end)^p and 0 (argmax)
from t ≥ end (``polynomial_1_1.0``, the code benchmark's, is T·(1 − t)); ``constant`` keeps T. As in the
official ``nstep_inference`` the schedule is read at t + δ, δ = half the last interval for midpoint, the
last interval for euler/heun2/rk4 and 0 for adaptive solvers, so the last evaluation is at temperature 0.
Fixed-step solvers use the grid linspace(0, 1, N) (``ode_steps`` = N grid points, N − 1 intervals);
N = 1 is the base LM itself (the single-step diffusion model: the t = 0 prediction). Adaptive solvers
integrate [0, 1] to rtol = atol = tolerance and choose the number of evaluations themselves. The
velocity is 0 at t ≥ 1. A last forward pass at (x₁, t = 1) gives the logits that are decoded.
Classifier-free guidance: v = w·v_cond + (1 − w)·v_uncond.

The frozen model runs once per token (``main_pass`` with its KV cache); every ODE evaluation runs
only the diffusion path for the last position against the cached keys/values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torchdiffeq import odeint

from .flow import Adapter, FlowPath, MainPass, main_pass

FIXED_SOLVERS = ("euler", "midpoint", "heun2", "rk4")
ADAPTIVE_SOLVERS = ("dopri5", "bosh3", "adaptive_heun", "fehlberg2")


@dataclass
class TokenTrace:
    """What happened while one token was denoised (batch-wide)."""

    nfe: int = 0  # model evaluations of the velocity (guidance counts cond + uncond as 2)
    times: list[float] = field(default_factory=list)
    top: list[list[list[tuple[int, float]]]] = field(default_factory=list)  # per eval, per row: top-5 (id, p)
    latents: list[torch.Tensor] = field(default_factory=list)  # x at each evaluated time (B, d_f)


@dataclass
class DecodeOptions:
    steps: int = 8
    solver: str = "midpoint"
    tolerance: float = 1e-3
    guidance: float | None = None  # None: no guidance (conditional-only when a label is given)
    estimator: str = "argmax"
    temperature: float = 1.0
    schedule: str = "polynomial_1_1.0"  # temperature schedule of sample/average (official names)
    seed: int = 0
    trace: bool = False


def constant_velocity(x1_hat: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The "constant" velocity schedule: v = (x̂₁ − x_t)/(1 − t)."""
    return (x1_hat - x) / (1 - t)


def schedule_temperature(schedule: str, temperature: float, t: float) -> float:
    """T(t) of an official temperature schedule, scaled by ``temperature`` (T = 1: the official values).

    ``constant``: T. ``polynomial_<p>_<end>``: T·(1 − t/end)^p for t < end, 0 from t ≥ end
    (``flow_llms/utils.polynomial_temperature``).
    """
    if schedule == "constant":
        return temperature
    parts = schedule.split("_")
    if len(parts) != 3 or parts[0] != "polynomial":
        raise ValueError(f"temperature schedule {schedule!r}: use 'constant' or 'polynomial_<p>_<end>'")
    p, end = float(parts[1]), float(parts[2])
    if not end > 0:
        raise ValueError(f"temperature schedule {schedule!r}: the end time must be > 0")
    if t >= end:
        return 0.0
    return temperature * (1.0 - t / end) ** p


def schedule_offset(solver: str, grid: torch.Tensor) -> float:
    """δ of the official ``nstep_inference``: the schedule is read at t + δ (0 for adaptive solvers)."""
    if len(grid) < 2:
        return 0.0
    h = float(grid[-1] - grid[-2])
    if solver == "midpoint":
        return h / 2
    if solver in ("euler", "heun2", "rk4"):
        return h
    return 0.0


def x1_estimate(logits: torch.Tensor, table: torch.Tensor, estimator: str, temperature: float,
                generator: torch.Generator | None) -> torch.Tensor:
    if estimator == "argmax" or temperature <= 0:
        return table[logits.argmax(-1)]
    p = torch.softmax(logits.float() / temperature, dim=-1)
    if estimator == "sample":
        flat = p.reshape(-1, p.shape[-1])
        idx = torch.multinomial(flat, 1, generator=generator).view(p.shape[:-1])
        return table[idx]
    return p @ table.float()


@torch.no_grad()
def next_token_logits(adapter: Adapter, flow: FlowPath | None, main: MainPass, opt: DecodeOptions,
                      labels: torch.Tensor | None, generator: torch.Generator | None = None
                      ) -> tuple[torch.Tensor, TokenTrace]:
    """Logits (B, V) for the token after ``main``'s prefix, and the trace of the ODE solve."""
    trace = TokenTrace()
    base = main.logits[:, -1].float()
    if opt.steps <= 1 and opt.solver not in ADAPTIVE_SOLVERS or flow is None:
        return base, trace
    B = base.shape[0]
    dev = base.device
    q_pos = torch.full((B, 1), main.length - 1, dtype=torch.long, device=dev)
    table = flow.flow_table(adapter).float()
    dtype = table.dtype
    x0 = torch.randn(B, 1, flow.fc.flow_dim, generator=generator, device=dev) * flow.fc.noise_rescaling
    null = torch.full((B, 1), flow.null_class, dtype=torch.long, device=dev) if flow.data_label_embedder is not None else None
    cond = labels.view(B, 1) if labels is not None else None
    guided = cond is not None and null is not None and opt.guidance is not None

    if opt.solver in ADAPTIVE_SOLVERS:
        grid = torch.tensor([0.0, 1.0], dtype=torch.float64, device=dev)
    else:
        grid = torch.linspace(0.0, 1.0, opt.steps, dtype=torch.float64, device=dev)
    delta = schedule_offset(opt.solver, grid)

    def velocity(tt: torch.Tensor, x: torch.Tensor, lab, record: bool = True) -> torch.Tensor:
        logits = flow(adapter, main, q_pos, x.to(dtype), tt.to(dtype).view(1, 1), lab)
        temp = 0.0 if opt.estimator == "argmax" else schedule_temperature(opt.schedule, opt.temperature,
                                                                          float(tt) + delta)
        x1 = x1_estimate(logits, table, opt.estimator, temp, generator).to(x.dtype)
        if opt.trace and record:
            p = torch.softmax(logits[:, 0].float(), -1)
            v, i = p.topk(min(5, p.shape[-1]), -1)
            trace.top.append([[(int(a), float(b)) for a, b in zip(ii, vv)] for ii, vv in zip(i, v)])
        return constant_velocity(x1, x, tt)

    def ode_fn(tt, x):
        if float(tt) >= 1.0:
            return torch.zeros_like(x)
        trace.times.append(float(tt))
        if opt.trace:
            trace.latents.append(x[:, 0].float().clone())
        if guided:
            trace.nfe += 2
            v_c = velocity(tt, x, cond)
            v_u = velocity(tt, x, null, record=False)
            return opt.guidance * v_c + (1 - opt.guidance) * v_u
        trace.nfe += 1
        return velocity(tt, x, cond if cond is not None else null)

    x0 = x0.double()
    if opt.solver in ADAPTIVE_SOLVERS:
        traj = odeint(ode_fn, x0, grid, method=opt.solver, rtol=opt.tolerance, atol=opt.tolerance)
    else:
        traj = odeint(ode_fn, x0, grid, method=opt.solver)
    x1 = traj[-1]
    if opt.trace:
        trace.latents.append(x1[:, 0].float().clone())
    one = torch.ones(1, 1, dtype=dtype, device=dev)
    lab = cond if cond is not None else null
    final = flow(adapter, main, q_pos, x1.to(dtype), one, lab)[:, 0].float()
    if guided and opt.guidance != 1.0:
        # guidance on the read-out too, in logit space (w = 1 and w = 0 are exact identities)
        final = opt.guidance * final + (1 - opt.guidance) * flow(adapter, main, q_pos, x1.to(dtype), one, null)[:, 0].float()
    return final, trace


@torch.no_grad()
def generate(model, adapter: Adapter, flow: FlowPath | None, prompt_ids: torch.Tensor, n_tokens: int,
             opt: DecodeOptions, labels: torch.Tensor | None = None) -> tuple[torch.Tensor, list[TokenTrace]]:
    """Greedy decoding of ``n_tokens`` answer tokens; the frozen model runs once per token."""
    g = torch.Generator(device=prompt_ids.device).manual_seed(opt.seed)
    main = main_pass(model, adapter, prompt_ids)
    out, traces = [], []
    for k in range(n_tokens):
        logits, tr = next_token_logits(adapter, flow, main, opt, labels, g)
        tok = logits.argmax(-1)
        out.append(tok)
        traces.append(tr)
        if k < n_tokens - 1:
            main = main_pass(model, adapter, tok[:, None], prev=main)
    return torch.stack(out, 1), traces

"""Surrogates: U-Nets with p1 (plain) or p4m (D4 group) convolutions between the paper's staggered
input layer (outward face velocities regrouped per cell) and output layer (face fluxes from the two
cells sharing a face), optionally with the hard mass constraint and closed walls ("M").

The p4m layers are our own pure-torch lifting / group convolutions (Cohen & Welling style): a filter
bank is expanded into its 8 transformed copies (resampled + input channels permuted), so the output
carries the regular representation of D4 (8 channels per field, indexed by group element).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import groups as G

VARIANTS = ("p1", "p1_M", "p4m", "p4m_M")
LABELS = {"p1": "p1/∅", "p1_M": "p1/M", "p4m": "p4m/∅", "p4m_M": "p4m/M", "solver": "solver"}


def parse_variant(name: str) -> tuple[str, bool]:
    group, _, phys = name.partition("_")
    return group, phys == "M"


# ----------------------------------------------------------------------------- p4m layers

def _input_perms(n_scalar: int, n_dir: int, n_reg: int) -> list[np.ndarray]:
    """For each group element h, perm[c] = where input channel c goes under h (the input's rep)."""
    mult, _ = G.tables()
    out = []
    for a, g in enumerate(G.ELEMENTS):
        dp = G.direction_perm(g)
        p = list(range(n_scalar))
        base = n_scalar
        for i in range(n_dir):
            p += [base + 4 * i + dp[d] for d in range(4)]
        base += 4 * n_dir
        for i in range(n_reg):
            p += [base + 8 * i + int(mult[a, h]) for h in range(8)]
        out.append(np.asarray(p))
    return out


class GroupConv(nn.Module):
    """Scalars (trivial), direction fields (4-dim permutation rep) and regular fields in -> regular out.

    Output channel o*8 + h = correlation with h·W, where h·W is W resampled by h with its input channels
    permuted by the input representation; hence G(g·x) = g·G(x) exactly (up to float rounding)."""

    def __init__(self, n_scalar: int, n_dir: int, n_reg: int, out_fields: int, kernel: int = 3,
                 circular: bool = False):
        super().__init__()
        cin = n_scalar + 4 * n_dir + 8 * n_reg
        self.out_fields, self.kernel, self.circular = out_fields, kernel, circular
        self.weight = nn.Parameter(torch.randn(out_fields, cin, kernel, kernel) * math.sqrt(2.0 / (cin * kernel ** 2)))
        self.bias = nn.Parameter(torch.zeros(out_fields))
        src = [np.argsort(p) for p in _input_perms(n_scalar, n_dir, n_reg)]
        self.register_buffer("src", torch.as_tensor(np.stack(src)), persistent=False)

    def expanded(self) -> torch.Tensor:
        ws = [G.spatial(self.weight, g)[:, self.src[a]] for a, g in enumerate(G.ELEMENTS)]
        return torch.stack(ws, 1).reshape(self.out_fields * 8, -1, self.kernel, self.kernel)

    def forward(self, x):
        p = self.kernel // 2
        if self.circular and p:
            return F.conv2d(F.pad(x, (p, p, p, p), mode="circular"), self.expanded(), self.bias.repeat_interleave(8))
        return F.conv2d(x, self.expanded(), self.bias.repeat_interleave(8), padding=p)


class GroupNormReg(nn.Module):
    """One normalisation group over all channels and positions (layer-norm style, so group channels are
    pooled and it is equivariant), one affine pair per field. p1 and p4m use the same normalisation: with
    per-field groups p4m lost each field's global amplitude and trained markedly worse than p1."""

    def __init__(self, fields: int, mult: int):
        super().__init__()
        self.mult = mult
        self.norm = nn.GroupNorm(1, fields * mult, affine=False)
        self.weight = nn.Parameter(torch.ones(fields))
        self.bias = nn.Parameter(torch.zeros(fields))

    def forward(self, x):
        w = self.weight.repeat_interleave(self.mult)[None, :, None, None]
        b = self.bias.repeat_interleave(self.mult)[None, :, None, None]
        return self.norm(x) * w + b


# ----------------------------------------------------------------------------- U-Net

class Block(nn.Module):
    """conv-norm-GELU-conv-norm-GELU with a residual (1×1) connection; p1 or p4m."""

    def __init__(self, group: str, cin: int, cout: int, circular: bool = False):
        super().__init__()
        self.group = group
        mode = "circular" if circular else "zeros"
        if group == "p4m":
            conv = lambda a, b, k=3: GroupConv(0, 0, a, b, k, circular)  # noqa: E731
            norm = lambda c: GroupNormReg(c, 8)  # noqa: E731
        else:
            conv = lambda a, b, k=3: nn.Conv2d(a, b, k, padding=k // 2, padding_mode=mode)  # noqa: E731
            norm = lambda c: GroupNormReg(c, 1)  # noqa: E731
        self.c1, self.n1, self.c2, self.n2 = conv(cin, cout), norm(cout), conv(cout, cout), norm(cout)
        self.skip = conv(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = F.gelu(self.n1(self.c1(x)))
        h = F.gelu(self.n2(self.c2(h)))
        return h + self.skip(x)


class StaggeredUNet(nn.Module):
    """Staggered input layer -> 2-level U-Net -> staggered output layer (+ optional hard constraints).

    ``width`` counts fields: channels for p1, regular 8-channel fields for p4m."""

    def __init__(self, group: str, physics: bool, width: int, scales: dict[str, float], zero_head: bool = True,
                 problem: str = "swe"):
        super().__init__()
        if group not in ("p1", "p4m"):
            raise ValueError(f"unknown group {group!r}")
        if problem not in ("swe", "ins"):
            raise ValueError(f"unknown problem {problem!r}")
        self.group, self.physics, self.width, self.problem = group, physics, width, problem
        circ = problem == "ins"  # doubly periodic turbulence: circular padding everywhere
        n_scalar = 1 if problem == "swe" else 0
        c1, c2 = width, 2 * width
        if group == "p4m":
            self.lift = GroupConv(n_scalar, 1, 0, c1, 3, circ)  # ζ (trivial) + q (direction rep) -> regular
            # -> regular fields for Δζ / ψ (group-pooled, trivial or sign rep) and fluxes (coset-pooled)
            self.head = GroupConv(0, 0, c1, 2, 3, circ)
        else:
            mode = "circular" if circ else "zeros"
            self.lift = nn.Conv2d(n_scalar + 4, c1, 3, padding=1, padding_mode=mode)
            self.head = nn.Conv2d(c1, 5, 3, padding=1, padding_mode=mode)
        if zero_head:  # start as the identity map w(t+Δt) = w(t): stable rollouts from the first step
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)
        self.e1, self.e2, self.mid = Block(group, c1, c1, circ), Block(group, c1, c2, circ), Block(group, c2, c2, circ)
        self.d2, self.d1 = Block(group, 2 * c2, c2, circ), Block(group, c2 + c1, c1, circ)
        for k in ("zeta", "vel", "dzeta", "dvel"):
            self.register_buffer(f"s_{k}", torch.tensor(float(scales[k])))
        if group == "p4m":  # direction k <- the two group elements that map d_0 to d_k (a coset)
            coset = torch.zeros(4, 8)
            for a, g in enumerate(G.ELEMENTS):
                coset[G.direction_perm(g)[0], a] = 1.0
            self.register_buffer("coset", coset, persistent=False)
            # sign representation (det of the element): pooling with it gives a pseudo-scalar (stream function)
            self.register_buffer("det", torch.tensor([-1.0 if f else 1.0 for f, _ in G.ELEMENTS]), persistent=False)

    def features(self, x):
        e1 = self.e1(self.lift(x))
        e2 = self.e2(F.avg_pool2d(e1, 2))
        m = self.mid(F.avg_pool2d(e2, 2))
        d2 = self.d2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), e2], 1))
        d1 = self.d1(torch.cat([F.interpolate(d2, scale_factor=2.0, mode="nearest"), e1], 1))
        return self.head(d1)

    def forward(self, *state):
        if self.problem == "ins":
            return self.forward_ins(*state)
        return self.forward_swe(*state)

    def forward_ins(self, u, v):
        """Turbulence step on periodic MAC velocities. ∅: face fluxes from the staggered output layer.
        M: a pseudo-scalar stream function ψ at corners (mean of the 4 adjacent cells); Δu = ∂ψ/∂row,
        Δv = −∂ψ/∂col by differences, so the update is exactly divergence-free and has zero mean (momentum)."""
        dtype, wd = u.dtype, self.s_vel.dtype
        uu, vv = u.to(wd) / self.s_vel, v.to(wd) / self.s_vel
        q = torch.stack([torch.roll(uu, -1, -1), -vv, -uu, torch.roll(vv, -1, -2)], 1)
        y = self.features(q)
        if self.group == "p4m":
            y = y.reshape(y.shape[0], 2, 8, *y.shape[-2:])
            psi = torch.einsum("h,bhij->bij", self.det, y[:, 0]) / 8
            a = torch.einsum("kh,bhij->bkij", self.coset, y[:, 1])
        else:
            psi, a = y[:, 0], y[:, 1:]
        if self.physics:
            c = 0.25 * (psi + torch.roll(psi, 1, -1) + torch.roll(psi, 1, -2) + torch.roll(psi, (1, 1), (-2, -1)))
            du = torch.roll(c, -1, -2) - c
            dv = -(torch.roll(c, -1, -1) - c)
        else:
            du = torch.roll(a[:, 0], 1, -1) - a[:, 2]
            dv = torch.roll(a[:, 3], 1, -2) - a[:, 1]
        s = self.s_dvel.to(dtype)
        return u + du.to(dtype) * s, v + dv.to(dtype) * s

    def forward_swe(self, zeta, u, v):
        """One surrogate step on a batch of C-grid states: returns (ζ', u', v') in the input's dtype. The hard
        constraint acts in that dtype, so a float64 state keeps its mass to float64 round-off."""
        dtype, wd = zeta.dtype, self.s_zeta.dtype  # the state may be float64; the network runs in its own dtype
        q = G.faces_to_q(u.to(wd), v.to(wd)) / self.s_vel
        x = torch.cat([(zeta.to(wd) / self.s_zeta)[:, None], q], 1)
        y = self.features(x)
        if self.group == "p4m":
            y = y.reshape(y.shape[0], 2, 8, *y.shape[-2:])
            dz = y[:, 0].mean(1)  # trivial (invariant) part
            a = torch.einsum("kh,bhij->bkij", self.coset, y[:, 1])  # direction rep
        else:
            dz, a = y[:, 0], y[:, 1:]
        du, dv = self.output_faces(a)
        dz, du, dv = (dz * self.s_dzeta).to(dtype), du.to(dtype), dv.to(dtype)
        if self.physics:
            dz = dz - dz.mean((-2, -1), keepdim=True)  # mass: remove the mean height change (Eq. "M")
        return zeta + dz, u + du * self.s_dvel.to(dtype), v + dv * self.s_dvel.to(dtype)

    def output_faces(self, a):
        """Staggered output layer F_x^k = a_x[k] - a_{x+d_k}[k+2]: one antisymmetric value per face.
        Cells outside the basin are zero ghosts; with the physics constraint the wall faces are 0."""
        p = F.pad(a, (1, 1, 1, 1))
        u = p[:, 0, 1:-1, :-1] - p[:, 2, 1:-1, 1:]  # (N, N+1)
        v = p[:, 3, :-1, 1:-1] - p[:, 1, 1:, 1:-1]  # (N+1, N)
        if self.physics:
            u = torch.cat([torch.zeros_like(u[..., :1]), u[..., 1:-1], torch.zeros_like(u[..., :1])], -1)
            v = torch.cat([torch.zeros_like(v[..., :1, :]), v[..., 1:-1, :], torch.zeros_like(v[..., :1, :])], -2)
        return u, v


def n_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def build(variant: str, width: int, scales: dict[str, float], zero_head: bool = True,
          problem: str = "swe") -> StaggeredUNet:
    """p4m variants use ``width`` regular fields; p1 variants get the channel count that matches their
    parameter count (nearest, so the factorial comparison is at equal size)."""
    group, physics = parse_variant(variant)
    if group == "p4m":
        return StaggeredUNet("p4m", physics, width, scales, zero_head, problem)
    target = n_params(StaggeredUNet("p4m", physics, width, scales, problem=problem))
    best = min(range(2, 12 * width + 2),
               key=lambda c: abs(n_params(StaggeredUNet("p1", physics, c, scales, problem=problem)) - target))
    return StaggeredUNet("p1", physics, best, scales, zero_head, problem)

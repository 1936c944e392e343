"""The dihedral group D4 (p4m's point group) acting on cell-centred and staggered (Arakawa C-grid) fields.

Conventions (array index order ``[..., row, col]``):

* a group element ``g = (f, k)`` acts as "flip the columns if f, then ``rot90`` k times" (numpy/torch
  ``rot90`` over the last two axes, rotating from the row axis towards the column axis);
* the four face directions of a cell are d_0 = (0, +1) (east, +col), d_1 = (-1, 0), d_2 = (0, -1),
  d_3 = (+1, 0); one ``rot90`` maps d_k to d_{k+1}, the column flip swaps d_0 and d_2;
* a C-grid state is (zeta, u, v): zeta at centres ``(N, N)``, u on column faces ``(N, N+1)`` (positive
  towards +col), v on row faces ``(N+1, N)`` (positive towards +row);
* the staggered input layer's per-cell vector of *outward* normal face velocities
  q_x = (u_{i,j+1/2}, -v_{i-1/2,j}, -u_{i,j-1/2}, v_{i+1/2,j}) is indexed by direction, so the group only
  permutes its channels (section "Input layer" of the spec; the paper's regular-representation lift).

Works on numpy arrays and torch tensors alike.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

ELEMENTS: tuple[tuple[int, int], ...] = tuple((f, k) for f in (0, 1) for k in range(4))
NAMES = ("identity", "rot 90°", "rot 180°", "rot 270°", "flip", "flip + rot 90°", "flip + rot 180°",
         "flip + rot 270°")
ORDER = len(ELEMENTS)  # 8


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _rot90(x, k: int):
    if k % 4 == 0:
        return x
    if _is_torch(x):
        import torch

        return torch.rot90(x, k, dims=(-2, -1))
    return np.rot90(x, k, axes=(-2, -1))


def _flip(x):
    if _is_torch(x):
        import torch

        return torch.flip(x, dims=(-1,))
    return np.flip(x, -1)


def _stack(xs, axis):
    if _is_torch(xs[0]):
        import torch

        return torch.stack(xs, dim=axis)
    return np.stack(xs, axis=axis)


def _cat(xs, axis):
    if _is_torch(xs[0]):
        import torch

        return torch.cat(xs, dim=axis)
    return np.concatenate(xs, axis=axis)


def spatial(x, g: tuple[int, int]):
    """Transform the last two (square) axes of ``x`` by g."""
    f, k = g
    if f:
        x = _flip(x)
    return _rot90(x, k)


def direction_perm(g: tuple[int, int]) -> tuple[int, ...]:
    """``perm[d]`` = the direction that d_d is mapped to by g."""
    f, k = g
    flip = (2, 1, 0, 3) if f else (0, 1, 2, 3)
    return tuple((flip[d] + k) % 4 for d in range(4))


@lru_cache(maxsize=1)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """(mult, inv): mult[a, b] = index of ELEMENTS[a]∘ELEMENTS[b]; inv[a] = index of the inverse."""
    perms = [direction_perm(g) for g in ELEMENTS]
    index = {p: i for i, p in enumerate(perms)}
    mult = np.zeros((ORDER, ORDER), dtype=np.int64)
    for a, pa in enumerate(perms):
        for b, pb in enumerate(perms):
            mult[a, b] = index[tuple(pa[pb[d]] for d in range(4))]
    inv = np.array([int(np.where(mult[a] == 0)[0][0]) for a in range(ORDER)])
    return mult, inv


def permute_channels(x, perm, axis: int):
    """y[..., perm[c], ...] = x[..., c, ...] along ``axis``."""
    src = np.argsort(np.asarray(perm))  # y[c'] = x[src[c']]
    idx = [slice(None)] * x.ndim
    if _is_torch(x):
        import torch

        return torch.index_select(x, axis if axis >= 0 else x.ndim + axis, torch.as_tensor(src, device=x.device))
    idx[axis] = src
    return x[tuple(idx)]


def act_directions(q, g):
    """g acting on a direction-indexed field ``q[..., 4, N, N]`` (the permutation representation)."""
    return permute_channels(spatial(q, g), direction_perm(g), axis=-3)


def act_regular(x, g):
    """g acting on a regular-representation field ``x[..., 8, N, N]`` (channel h -> g∘h)."""
    mult, _ = tables()
    a = ELEMENTS.index(tuple(g))
    return permute_channels(spatial(x, g), [int(mult[a, h]) for h in range(ORDER)], axis=-3)


def faces_to_q(u, v):
    """C-grid face velocities -> per-cell outward normal velocities q[..., 4, N, N]."""
    return _stack([u[..., :, 1:], -v[..., :-1, :], -u[..., :, :-1], v[..., 1:, :]], axis=-3)


def q_to_faces(q):
    """Inverse of ``faces_to_q`` (reads each interior face from the cell on its low side)."""
    u = _cat([-q[..., 2, :, :], q[..., 0, :, -1:]], axis=-1)
    v = _cat([-q[..., 1, :, :], q[..., 3, -1:, :]], axis=-2)
    return u, v


def act_state(zeta, u, v, g):
    """g acting on a C-grid state: scalar zeta moves with the grid, face velocities rotate as vectors."""
    u2, v2 = q_to_faces(act_directions(faces_to_q(u, v), g))
    return spatial(zeta, g), u2, v2

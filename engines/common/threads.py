"""``torch_threads(k)``: run a block on ``k`` intra-op torch threads.

The tiny models here are many small tensor ops; on a shared 2-core machine OpenMP's spinning threads
made them 3-40× slower than a single thread (measured in cl_angles, fdgen and object_audio).
"""
from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def torch_threads(k: int = 1):
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(k)
    try:
        yield
    finally:
        torch.set_num_threads(old)

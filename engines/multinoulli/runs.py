"""One algorithm's run: the chosen set, its value, and value against the number of f-evaluations."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .objectives import Objective

StepHook = Callable[[float, str], None] | None


@dataclass
class Run:
    method: str
    selection: list[int]
    value: float
    evals: int  # set-function evaluations charged to this run
    seconds: float
    curve_evals: list[int] = field(default_factory=list)
    curve_values: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)


class Tracker:
    """Counts the evaluations of one run from the moment it starts and records (evals, value) points."""

    def __init__(self, obj: Objective, method: str):
        self.obj, self.method = obj, method
        self.start = obj.evals
        self.t0 = time.perf_counter()
        self.curve_evals: list[int] = []
        self.curve_values: list[float] = []

    @property
    def evals(self) -> int:
        return self.obj.evals - self.start

    def point(self, value: float) -> None:
        self.curve_evals.append(self.evals)
        self.curve_values.append(float(value))

    def done(self, selection, value: float, **extra) -> Run:
        self.point(value)
        return Run(self.method, sorted(int(v) for v in selection), float(value), self.evals,
                   time.perf_counter() - self.t0, self.curve_evals, self.curve_values, extra)

"""Overall dimensions of a product (height, width, depth, capacity) as first-class interface attributes.

They are *derived*: a function of the parts' parameters, computed from the same model program the builder
uses (checked against the built meshes' extents in the tests). An edit to an overall dimension is
distributed over the parts by the stated rule of that dimension — the parts listed in ``scale`` are scaled
by one common factor, found by bisection, so that the overall value hits its target; a part that is kept,
or whose change would break a kept dimension, is left out of the factor. A "keep" constraint on an overall
dimension is enforced by solving for the first free parameter of its ``solve`` list, or refused with the
reason when none can hold it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Derived:
    name: str  # "height", "width", "depth", "capacity"
    unit: str  # "cm" or "ml"
    fn: Callable[[dict[str, float]], float]
    scale: tuple[str, ...]  # parts scaled by one common factor when the overall value is edited
    solve: tuple[str, ...]  # parameters (in order of preference) solved for to keep the value
    rule: str  # the stated distribution rule, in designer terms
    description: str

    @property
    def id(self) -> str:
        return f"overall.{self.name}"


def _t(deg: float) -> float:
    return math.tan(math.radians(deg))


# ----------------------------------------------------------------------------- chair

def _chair_out(v):  # how far a splayed leg's foot reaches beyond its top
    return (v["seat.height"] - v["seat.thickness"] + 0.3) * _t(v["legs.splay"])


def _chair_h(v):
    h = v["seat.height"] + v["backrest.height"]
    if v["armrests.present"] >= 0.5:
        h = max(h, v["seat.height"] + v["armrests.height"] + 1.25)
    return h


def _chair_w(v):
    W, d = v["seat.width"], v["legs.thickness"]
    return max(W, W - d + 2 * _chair_out(v))


def _chair_d(v):
    D, d = v["seat.depth"], v["legs.thickness"]
    leg = D / 2 - d / 2 + _chair_out(v)
    back = D / 2 + v["backrest.curvature"] + v["backrest.height"] * _t(v["backrest.tilt"])
    return max(D / 2, leg) + max(back, leg)


# ----------------------------------------------------------------------------- stool, lamp, mug, bottle

def _stool_w(v):  # diameter of the footprint (round product: width = depth)
    R = v["seat.radius"]
    rb = 0.7 * R + (v["seat.height"] - v["seat.thickness"]) * _t(v["legs.splay"])
    return 2 * max(R, rb + v["legs.thickness"] / 2)


def _lamp_h(v):
    return v["base.height"] + v["stem.height"] + 1.0  # the shade's top rim sits 1 cm above the stem's top


def _lamp_w(v):
    return 2 * max(v["base.radius"], v["shade.bottom_radius"], v["shade.top_radius"])


def _mug_w(v):  # the cup's widest diameter plus the handle's reach (x extent)
    R, Rt = v["body.radius"], v["body.radius"] * v["body.taper"]
    right = max(R, Rt)
    if v["handle.present"] >= 0.5:
        right = max(right, R + (Rt - R) * 0.52 + v["handle.reach"] + v["handle.thickness"] / 2)
    return max(R, Rt) + right


def _mug_c(v):  # inner volume of the cup: a frustum from the 0.6 cm floor to the rim, in ml (= cm³)
    r1 = v["body.radius"] - v["body.wall"]
    r2 = v["body.radius"] * v["body.taper"] - v["body.wall"]
    return math.pi * (v["body.height"] - 0.6) / 3 * (r1 * r1 + r1 * r2 + r2 * r2)


def _bottle_h(v):
    return v["body.height"] + v["shoulder.height"] + v["neck.height"] - 0.3 + v["cap.height"]


def _bottle_c(v):  # enclosed volume of body + shoulder + neck (thin-walled), in ml
    R, rn = v["body.radius"], v["neck.radius"]
    a, b = rn + (R - rn) / 2, (R - rn) / 2  # shoulder radius a + b·cos(πu): mean of r² is a² + b²/2
    return math.pi * (R * R * v["body.height"] + v["shoulder.height"] * (a * a + b * b / 2)
                      + rn * rn * v["neck.height"])


PROPORTIONAL = "the parts {parts} are scaled by one common factor"

DERIVED: dict[str, tuple[Derived, ...]] = {
    "chair": (
        Derived("height", "cm", _chair_h, ("seat.height", "backrest.height"), ("backrest.height", "seat.height"),
                PROPORTIONAL, "floor to the top of the backrest"),
        Derived("width", "cm", _chair_w, ("seat.width",), ("legs.splay", "seat.width"),
                PROPORTIONAL, "side to side, seat or splayed feet"),
        Derived("depth", "cm", _chair_d, ("seat.depth",), ("backrest.tilt", "seat.depth"),
                PROPORTIONAL, "front to back, feet to the back of the reclined backrest"),
    ),
    "stool": (
        Derived("height", "cm", lambda v: v["seat.height"], ("seat.height",), ("seat.height",),
                PROPORTIONAL, "floor to the seat top"),
        Derived("width", "cm", _stool_w, ("seat.radius",), ("legs.splay", "seat.radius"),
                PROPORTIONAL, "diameter of the footprint (seat or splayed feet; a round product's depth is its width)"),
    ),
    "lamp": (
        Derived("height", "cm", _lamp_h, ("base.height", "stem.height"), ("stem.height", "base.height"),
                PROPORTIONAL, "table to the top of the shade"),
        Derived("width", "cm", _lamp_w, ("base.radius", "shade.top_radius", "shade.bottom_radius"),
                ("shade.bottom_radius", "base.radius"), PROPORTIONAL, "widest diameter, base or shade"),
    ),
    "mug": (
        Derived("height", "cm", lambda v: v["body.height"], ("body.height",), ("body.height",),
                PROPORTIONAL, "table to the rim"),
        Derived("width", "cm", _mug_w, ("body.radius",), ("body.radius", "handle.reach"),
                PROPORTIONAL, "across the cup and out to the handle"),
        Derived("capacity", "ml", _mug_c, ("body.height", "body.radius"), ("body.radius", "body.height"),
                PROPORTIONAL, "inner volume of the cup"),
    ),
    "bottle": (
        Derived("height", "cm", _bottle_h, ("body.height", "shoulder.height", "neck.height", "cap.height"),
                ("body.height", "shoulder.height", "neck.height"), PROPORTIONAL, "table to the top of the cap"),
        Derived("width", "cm", lambda v: 2 * v["body.radius"], ("body.radius",), ("body.radius",),
                PROPORTIONAL, "diameter of the body"),
        Derived("capacity", "ml", _bottle_c, ("body.height", "body.radius"), ("body.radius", "body.height"),
                PROPORTIONAL, "enclosed volume of body, shoulder and neck"),
    ),
}


def derived_of(domain: str) -> dict[str, Derived]:
    return {d.id: d for d in DERIVED.get(domain, ())}


def derived_spec(domain: str) -> dict:
    """The overall dimensions as they appear in the interface spec (JSON-able)."""
    return {d.id: {"component": "overall", "attribute": d.name, "unit": d.unit, "scale": list(d.scale),
                   "solve": list(d.solve), "rule": d.rule.format(parts=" and ".join(d.scale)),
                   "description": d.description} for d in DERIVED.get(domain, ())}


def values(domain: str, state: dict[str, float]) -> dict[str, float]:
    return {d.id: float(d.fn(state)) for d in DERIVED.get(domain, ())}


def bisect(f: Callable[[float], float], target: float, lo: float, hi: float, iters: int = 60) -> float | None:
    """x in [lo, hi] with f(x) = target for a monotone f, or None when the target is outside f's reach."""
    flo, fhi = f(lo) - target, f(hi) - target
    if abs(flo) < 1e-9:
        return lo
    if abs(fhi) < 1e-9:
        return hi
    if flo * fhi > 0:
        return None
    for _ in range(iters):
        mid = (lo + hi) / 2
        fm = f(mid) - target
        if (fm > 0) == (fhi > 0):
            hi, fhi = mid, fm
        else:
            lo, flo = mid, fm
    return (lo + hi) / 2

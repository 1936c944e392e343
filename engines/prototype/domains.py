"""Parametric model programs of the product domains: typed parameters, constraints and a builder.

Each domain is a small program in the modelling language of ``geometry`` (revolve, loft, sweep, box,
cylinder, Boolean union). ``build`` records the modelling commands it issues (what an interface compiles
to) and returns one watertight mesh per component. Raw parameter names (``seat_h``) are the names a
flat parameter list shows; the interface addresses parameters as ``component.attribute``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import geometry as G


@dataclass(frozen=True)
class ParamDef:
    raw: str  # name in the model program (what a flat parameter list shows)
    component: str
    attribute: str
    unit: str  # "cm", "deg", "count", "bool", "ratio"
    lo: float
    hi: float
    default: float
    steps: tuple[float, float, float]  # calibrated |Δ| for slight / moderate / large
    description: str

    @property
    def id(self) -> str:
        return f"{self.component}.{self.attribute}"

    @property
    def kind(self) -> str:
        return {"count": "int", "bool": "bool"}.get(self.unit, "float")


@dataclass(frozen=True)
class Relation:
    """Inter-part constraint ``lhs ≤ factor · rhs + offset`` (both parameter ids), with its reason."""

    lhs: str
    rhs: str
    factor: float
    offset: float
    reason: str

    def holds(self, v: dict[str, float]) -> bool:
        return v[self.lhs] <= self.factor * v[self.rhs] + self.offset + 1e-9


@dataclass
class Model:
    """What ``build`` returns: meshes per component and the modelling commands issued."""

    parts: dict[str, list] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    def add(self, component: str, mesh, command: str) -> None:
        self.parts.setdefault(component, []).append(mesh)
        self.commands.append(f"{component}: {command}")


@dataclass(frozen=True)
class Domain:
    name: str
    title: str
    params: tuple[ParamDef, ...]
    relations: tuple[Relation, ...]
    builder: Callable[[dict[str, float]], Model]
    # Components attached to others: their geometry follows these parameters (legs reach the seat, the
    # cap sits on the neck). Locality means a change reaches no component outside its own and these.
    attachments: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def reached_by(self, pid: str) -> set[str]:
        """Components whose geometry may change when ``pid`` changes."""
        return {self.by_id[pid].component} | {c for c, ps in self.attachments if pid in ps}

    @property
    def by_id(self) -> dict[str, ParamDef]:
        return {p.id: p for p in self.params}

    @property
    def by_raw(self) -> dict[str, ParamDef]:
        return {p.raw: p for p in self.params}

    @property
    def components(self) -> list[str]:
        return list(dict.fromkeys(p.component for p in self.params))

    def defaults(self) -> dict[str, float]:
        return {p.id: p.default for p in self.params}

    def build(self, values: dict[str, float]) -> Model:
        return self.builder(values)


def _f(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


# ----------------------------------------------------------------------------- chair

def _chair(v: dict[str, float]) -> Model:
    m = Model()
    H, W, D, T = v["seat.height"], v["seat.width"], v["seat.depth"], v["seat.thickness"]
    m.add("seat", G.box((W, D, T), (0, 0, H - T / 2)), f"box({_f(W)}×{_f(D)}×{_f(T)}) at z={_f(H - T / 2)}")
    d, s = v["legs.thickness"], np.radians(v["legs.splay"])
    Lh = H - T + 0.3
    out = Lh * np.tan(s)
    for sx in (-1, 1):
        for sy in (-1, 1):
            top = (sx * (W / 2 - d), sy * (D / 2 - d), H - T + 0.3)
            bot = (top[0] + sx * out, top[1] + sy * out, 0.0)
            m.add("legs", G.cylinder(d / 2, bot, top), f"cylinder(r={_f(d / 2)}) {tuple(map(_f, bot))}→{tuple(map(_f, top))}")
    bh, tilt, bt, bow = v["backrest.height"], np.radians(v["backrest.tilt"]), v["backrest.thickness"], v["backrest.curvature"]
    xs = np.linspace(-W / 2, W / 2, 17)
    y_arc = bow * (1 - (2 * xs / W) ** 2)
    secs = []
    for u in np.linspace(0, 1, 6):
        z = H - T / 2 + u * (bh + T / 2)
        y0 = D / 2 - bt / 2 + (z - H) * np.tan(tilt) * (z > H)
        outer = np.stack([xs, y0 + y_arc + bt / 2, np.full_like(xs, z)], 1)
        inner = np.stack([xs[::-1], (y0 + y_arc - bt / 2)[::-1], np.full_like(xs, z)], 1)
        secs.append(np.vstack([outer, inner]))
    m.add("backrest", G.loft(secs, cap="strip"), f"loft(6 arc sections, width={_f(W)}, bow={_f(bow)}, tilt={_f(v['backrest.tilt'])}°, h={_f(bh)})")
    if v["armrests.present"] >= 0.5:
        ah = v["armrests.height"]
        for sx in (-1, 1):
            x = sx * (W / 2 - 2)
            m.add("armrests", G.box((4, D - 3, 2.5), (x, 1.5, H + ah)), f"box(4×{_f(D - 3)}×2.5) at x={_f(x)}, z={_f(H + ah)}")
            m.add("armrests", G.cylinder(1.2, (x, -D / 2 + 5, H - T / 2), (x, -D / 2 + 5, H + ah)), f"cylinder(r=1.2) post at x={_f(x)}")
    return m


CHAIR = Domain("chair", "Chair", (
    ParamDef("seat_h", "seat", "height", "cm", 35, 60, 45, (2, 5, 10), "height of the seat top above the floor"),
    ParamDef("seat_w", "seat", "width", "cm", 35, 65, 45, (2, 5, 10), "side-to-side width of the seat"),
    ParamDef("seat_d", "seat", "depth", "cm", 35, 60, 42, (2, 5, 10), "front-to-back depth of the seat"),
    ParamDef("seat_t", "seat", "thickness", "cm", 2, 8, 4, (0.5, 1, 2.5), "thickness of the seat board or cushion"),
    ParamDef("back_h", "backrest", "height", "cm", 20, 70, 40, (3, 8, 15), "height of the backrest above the seat"),
    ParamDef("back_ang", "backrest", "tilt", "deg", 0, 30, 8, (3, 6, 12), "backward recline angle of the backrest"),
    ParamDef("back_t", "backrest", "thickness", "cm", 1.5, 6, 3, (0.5, 1, 2), "thickness of the backrest panel"),
    ParamDef("back_bow", "backrest", "curvature", "cm", 0, 8, 2, (1, 2, 4), "depth of the backrest's curve around the sitter"),
    ParamDef("leg_dia", "legs", "thickness", "cm", 2, 7, 3.5, (0.5, 1, 2), "diameter of each leg"),
    ParamDef("leg_ang", "legs", "splay", "deg", 0, 15, 3, (2, 4, 8), "outward splay angle of the legs"),
    ParamDef("arm_on", "armrests", "present", "bool", 0, 1, 0, (1, 1, 1), "whether the chair has armrests"),
    ParamDef("arm_h", "armrests", "height", "cm", 15, 30, 20, (2, 4, 8), "height of the armrests above the seat"),
), (
    Relation("backrest.thickness", "seat.depth", 0.15, 0, "the backrest must fit on the seat's rear edge"),
    Relation("legs.thickness", "seat.width", 0.12, 0, "legs must fit under the seat corners"),
), _chair, (("legs", ("seat.height", "seat.width", "seat.depth", "seat.thickness")), ("backrest", ("seat.height", "seat.width", "seat.depth", "seat.thickness")), ("armrests", ("seat.height", "seat.width", "seat.depth", "seat.thickness"))))


# ----------------------------------------------------------------------------- stool

def _stool(v: dict[str, float]) -> Model:
    m = Model()
    H, R, T = v["seat.height"], v["seat.radius"], v["seat.thickness"]
    m.add("seat", G.revolve([(0, H - T), (R, H - T), (R, H - 0.5), (R - 0.5, H), (0, H)]),
          f"revolve(disc r={_f(R)}, t={_f(T)}) at z={_f(H)}")
    n, d, s = int(round(v["legs.count"])), v["legs.thickness"], np.radians(v["legs.splay"])
    rt = 0.7 * R
    feet = []
    for k in range(n):
        a = 2 * np.pi * k / n
        top = np.array([rt * np.cos(a), rt * np.sin(a), H - T + 0.3])
        rb = rt + (H - T) * np.tan(s)
        bot = np.array([rb * np.cos(a), rb * np.sin(a), 0.0])
        feet.append((bot, top))
        m.add("legs", G.cylinder(d / 2, bot, top), f"cylinder(r={_f(d / 2)}) leg {k + 1}/{n}, splay {_f(v['legs.splay'])}°")
    if v["footrest.present"] >= 0.5:
        f = v["footrest.height"]
        pts = []
        for bot, top in feet:
            t = f / top[2]
            pts.append(bot + t * (top - bot))
        for k in range(n):
            m.add("footrest", G.cylinder(0.35 * d + 0.3, pts[k], pts[(k + 1) % n]), f"cylinder rung {k + 1} at z={_f(f)}")
    return m


STOOL = Domain("stool", "Bar stool", (
    ParamDef("seat_h", "seat", "height", "cm", 40, 80, 65, (3, 6, 12), "height of the seat top above the floor"),
    ParamDef("seat_r", "seat", "radius", "cm", 14, 25, 17, (1, 2, 4), "radius of the round seat"),
    ParamDef("seat_t", "seat", "thickness", "cm", 2, 6, 3, (0.5, 1, 2), "thickness of the seat"),
    ParamDef("n_legs", "legs", "count", "count", 3, 5, 4, (1, 1, 2), "number of legs"),
    ParamDef("leg_d", "legs", "thickness", "cm", 2, 5, 3, (0.4, 0.8, 1.5), "diameter of each leg"),
    ParamDef("leg_ang", "legs", "splay", "deg", 0, 15, 6, (2, 4, 7), "outward splay angle of the legs"),
    ParamDef("ring_on", "footrest", "present", "bool", 0, 1, 1, (1, 1, 1), "whether the stool has a footrest ring"),
    ParamDef("ring_z", "footrest", "height", "cm", 15, 45, 25, (2, 5, 10), "height of the footrest above the floor"),
), (
    Relation("footrest.height", "seat.height", 1.0, -15, "the footrest must sit at least 15 cm below the seat"),
), _stool, (("legs", ("seat.height", "seat.radius", "seat.thickness")),
            ("footrest", ("seat.height", "seat.radius", "seat.thickness", "legs.count", "legs.thickness",
                          "legs.splay"))))


# ----------------------------------------------------------------------------- table lamp

def _lamp(v: dict[str, float]) -> Model:
    m = Model()
    Rb, hb = v["base.radius"], v["base.height"]
    m.add("base", G.revolve([(0, 0), (Rb, 0), (Rb, hb * 0.6), (Rb * 0.8, hb), (0, hb)]), f"revolve(base r={_f(Rb)}, h={_f(hb)})")
    Hs, rs = v["stem.height"], v["stem.thickness"] / 2
    z_top = hb + Hs
    m.add("stem", G.cylinder(rs, (0, 0, hb - 0.2), (0, 0, z_top + 0.6)), f"cylinder(r={_f(rs)}) z={_f(hb)}→{_f(z_top)}")
    Hsh, rt, rb = v["shade.height"], v["shade.top_radius"], v["shade.bottom_radius"]
    w = 0.4
    z0 = z_top - Hsh + 1.0
    m.add("shade", G.revolve([(rb - w, z0), (rb, z0), (rt, z0 + Hsh), (rt - w, z0 + Hsh), (rb - w, z0)]),
          f"revolve(frustum shell r={_f(rb)}→{_f(rt)}, h={_f(Hsh)}, wall {w})")
    zs = z0 + Hsh - 0.6
    r_at = rt + (rb - rt) * 0.6 / Hsh  # outer radius of the shade wall at the spider's height
    for ang in (0, 90):
        c, s_ = np.cos(np.radians(ang)), np.sin(np.radians(ang))
        L = 2 * (r_at - 0.1)
        m.add("shade", G.box((L * abs(c) + 0.5 * abs(s_), L * abs(s_) + 0.5 * abs(c), 0.5), (0, 0, zs)), "box(spider arm)")
    return m


LAMP = Domain("lamp", "Table lamp", (
    ParamDef("base_r", "base", "radius", "cm", 6, 15, 9, (0.7, 1.5, 3), "radius of the round base"),
    ParamDef("base_h", "base", "height", "cm", 1, 5, 2, (0.4, 0.8, 1.5), "height of the base"),
    ParamDef("stem_h", "stem", "height", "cm", 15, 50, 30, (2, 5, 10), "height of the stem from base to shade"),
    ParamDef("stem_d", "stem", "thickness", "cm", 0.8, 3, 1.5, (0.2, 0.4, 0.8), "diameter of the stem"),
    ParamDef("shade_h", "shade", "height", "cm", 10, 30, 18, (1.5, 3, 6), "height of the shade"),
    ParamDef("shade_rt", "shade", "top_radius", "cm", 5, 20, 9, (1, 2, 4), "radius of the shade's top opening"),
    ParamDef("shade_rb", "shade", "bottom_radius", "cm", 8, 25, 14, (1, 2, 4), "radius of the shade's bottom opening"),
), (
    Relation("shade.top_radius", "shade.bottom_radius", 1.0, 0, "the shade narrows upwards (top ≤ bottom)"),
    Relation("shade.bottom_radius", "base.radius", 2.2, 0, "stability: the shade may overhang the base by at most 2.2×"),
    Relation("shade.height", "stem.height", 1.0, 0, "the shade must not reach the base"),
), _lamp, (("stem", ("base.height",)), ("shade", ("base.height", "stem.height"))))


# ----------------------------------------------------------------------------- mug

def _mug(v: dict[str, float]) -> Model:
    m = Model()
    H, R, w, tp = v["body.height"], v["body.radius"], v["body.wall"], v["body.taper"]
    Rt = R * tp
    m.add("body", G.revolve([(0, 0), (R, 0), (Rt, H), (Rt - w, H), (R - w, 0.6), (0, 0.6)]),
          f"revolve(cup r={_f(R)}→{_f(Rt)}, h={_f(H)}, wall {_f(w)})")
    if v["handle.present"] >= 0.5:
        S, th, reach = v["handle.size"], v["handle.thickness"], v["handle.reach"]
        zc = H * 0.52
        t = np.linspace(0, np.pi, 24)
        z = zc + S / 2 * np.cos(t)
        r_wall = R + (Rt - R) * z / H
        x = r_wall - w / 2 + (reach + w / 2) * np.sin(t)
        path = np.stack([x, np.zeros_like(x), z], 1)
        m.add("handle", G.sweep_circle(path, th / 2), f"sweep(circle r={_f(th / 2)}) along C-arc span={_f(S)}, reach={_f(reach)}")
    return m


MUG = Domain("mug", "Mug", (
    ParamDef("cup_h", "body", "height", "cm", 7, 15, 10, (0.7, 1.5, 3), "height of the cup"),
    ParamDef("cup_r", "body", "radius", "cm", 3.5, 6, 4.2, (0.25, 0.5, 1), "radius of the cup at its foot"),
    ParamDef("wall_t", "body", "wall", "cm", 0.25, 0.8, 0.4, (0.05, 0.1, 0.2), "wall thickness of the cup"),
    ParamDef("taper", "body", "taper", "ratio", 0.8, 1.3, 1.0, (0.04, 0.08, 0.16), "top radius over foot radius (flare)"),
    ParamDef("handle_on", "handle", "present", "bool", 0, 1, 1, (1, 1, 1), "whether the mug has a handle"),
    ParamDef("handle_span", "handle", "size", "cm", 3, 10, 6, (0.7, 1.5, 3), "vertical span of the handle loop"),
    ParamDef("handle_t", "handle", "thickness", "cm", 0.5, 1.5, 0.8, (0.1, 0.2, 0.4), "thickness of the handle bar"),
    ParamDef("handle_off", "handle", "reach", "cm", 1.5, 4, 2.5, (0.3, 0.6, 1.2), "how far the handle sticks out from the body"),
), (
    Relation("handle.size", "body.height", 1.0, -1.5, "the handle must fit on the body"),
), _mug, (("handle", ("body.height", "body.radius", "body.wall", "body.taper")),))


# ----------------------------------------------------------------------------- bottle

def _bottle(v: dict[str, float]) -> Model:
    m = Model()
    Hb, R, hs = v["body.height"], v["body.radius"], v["shoulder.height"]
    hn, rn, hc = v["neck.height"], v["neck.radius"], v["cap.height"]
    m.add("body", G.revolve([(0, 0), (R - 0.4, 0), (R, 0.4), (R, Hb), (0, Hb)]), f"revolve(body r={_f(R)}, h={_f(Hb)})")
    prof = [(0, Hb - 0.2), (R, Hb - 0.2), (R, Hb)]
    for u in np.linspace(0, 1, 8)[1:]:
        prof.append((rn + (R - rn) * 0.5 * (1 + np.cos(np.pi * u)), Hb + hs * u))
    prof.append((0, Hb + hs))
    m.add("shoulder", G.revolve(prof), f"revolve(shoulder r={_f(R)}→{_f(rn)}, h={_f(hs)})")
    z0 = Hb + hs - 0.2
    m.add("neck", G.revolve([(0, z0), (rn, z0), (rn, Hb + hs + hn), (0, Hb + hs + hn)]),
          f"revolve(neck r={_f(rn)}, h={_f(hn)})")
    z = Hb + hs + hn - 0.3
    m.add("cap", G.revolve([(0, z), (rn + 0.25, z), (rn + 0.25, z + hc), (0, z + hc)]), f"revolve(cap r={_f(rn + 0.25)}, h={_f(hc)})")
    return m


BOTTLE = Domain("bottle", "Bottle", (
    ParamDef("body_h", "body", "height", "cm", 10, 30, 18, (1, 2.5, 5), "height of the cylindrical body"),
    ParamDef("body_r", "body", "radius", "cm", 2.5, 8, 4, (0.3, 0.6, 1.2), "radius of the body"),
    ParamDef("sh_h", "shoulder", "height", "cm", 1, 8, 3, (0.5, 1, 2), "height of the shoulder between body and neck"),
    ParamDef("neck_h", "neck", "height", "cm", 1, 10, 4, (0.5, 1.2, 2.5), "height of the neck"),
    ParamDef("neck_r", "neck", "radius", "cm", 0.8, 3, 1.3, (0.15, 0.3, 0.6), "radius of the neck"),
    ParamDef("cap_h", "cap", "height", "cm", 0.8, 4, 1.5, (0.3, 0.6, 1.2), "height of the cap"),
), (
    Relation("neck.radius", "body.radius", 0.8, 0, "the neck must be narrower than the body"),
), _bottle, (("shoulder", ("body.height", "body.radius", "neck.radius")), ("neck", ("body.height", "shoulder.height")),
             ("cap", ("body.height", "shoulder.height", "neck.height", "neck.radius"))))


DOMAINS: dict[str, Domain] = {d.name: d for d in (CHAIR, STOOL, LAMP, MUG, BOTTLE)}


def get_domain(name: str) -> Domain:
    try:
        return DOMAINS[name]
    except KeyError:
        raise ValueError(f"unknown product domain {name!r}; choose one of {', '.join(DOMAINS)}") from None

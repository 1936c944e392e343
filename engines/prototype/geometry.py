"""Modelling commands on meshes: primitives, revolve, loft, sweep, Boolean union (manifold3d), GLB export.

Every primitive returns a closed, consistently oriented triangle mesh (watertight), so the Boolean union
of a product's components is a valid solid. Units are centimetres; +z is up.
"""
from __future__ import annotations

import io

import numpy as np
import trimesh

SECTIONS = 48  # angular resolution of revolved / swept parts


def _cap(ring_idx: np.ndarray, centre: int, flip: bool) -> np.ndarray:
    a, b = ring_idx, np.roll(ring_idx, -1)
    c = np.full_like(a, centre)
    tri = np.stack([c, b, a] if flip else [c, a, b], 1)
    return tri


def _strip_cap(offset: int, n: int) -> np.ndarray:
    """Triangulate a band section: outer points 0..k-1 followed by the inner points in reverse."""
    k = n // 2
    o = np.arange(k - 1) + offset
    i0 = (n - 1 - np.arange(k - 1)) + offset
    i1 = i0 - 1
    return np.concatenate([np.stack([o, o + 1, i1], 1), np.stack([o, i1, i0], 1)])


def loft(sections: list[np.ndarray], cap: str = "fan") -> trimesh.Trimesh:
    """Surface lofting through closed cross-sections (each (n, 3), same n), capped at both ends.

    ``cap="fan"`` closes star-shaped sections from their centroid; ``cap="strip"`` closes band-shaped
    sections (outer curve then inner curve reversed), e.g. a curved panel.
    """
    secs = [np.asarray(s, float) for s in sections]
    n = len(secs[0])
    verts = np.concatenate(secs)
    faces = []
    for k in range(len(secs) - 1):
        i = np.arange(n) + k * n
        j = (np.arange(n) + 1) % n + k * n
        faces.append(np.stack([i, j, j + n], 1))
        faces.append(np.stack([i, j + n, i + n], 1))
    last = (len(secs) - 1) * n
    if cap == "fan":
        c0, c1 = len(verts), len(verts) + 1
        verts = np.vstack([verts, secs[0].mean(0), secs[-1].mean(0)])
        faces.append(_cap(np.arange(n), c0, flip=True))
        faces.append(_cap(np.arange(n) + last, c1, flip=False))
    elif cap == "strip":
        faces.append(_strip_cap(0, n)[:, ::-1])
        faces.append(_strip_cap(last, n))
    m = trimesh.Trimesh(verts, np.concatenate(faces), process=True)
    trimesh.repair.fix_winding(m)
    if m.volume < 0:
        m.invert()
    return m


def revolve(profile: list[tuple[float, float]], sections: int = SECTIONS) -> trimesh.Trimesh:
    """Revolve a closed (r, z) profile around the z axis. Points with r = 0 must be the first and last."""
    p = np.asarray(profile, float)
    m = trimesh.creation.revolve(p, sections=sections)
    if m.volume < 0:
        m.invert()
    return m


def box(size: tuple[float, float, float], centre: tuple[float, float, float]) -> trimesh.Trimesh:
    return trimesh.creation.box(extents=size, transform=trimesh.transformations.translation_matrix(centre))


def cylinder(radius: float, p0, p1, sections: int = 24) -> trimesh.Trimesh:
    """A solid cylinder between two points."""
    return trimesh.creation.cylinder(radius=radius, segment=np.array([p0, p1], float), sections=sections)


def rounded_rect(w: float, h: float, r: float, n_corner: int = 6) -> np.ndarray:
    """A closed rounded rectangle in the (u, v) plane, counter-clockwise, 4·n_corner points."""
    r = min(r, w / 2 - 1e-3, h / 2 - 1e-3)
    pts = []
    for cx, cy, a0 in ((w / 2 - r, h / 2 - r, 0), (-w / 2 + r, h / 2 - r, 90), (-w / 2 + r, -h / 2 + r, 180),
                       (w / 2 - r, -h / 2 + r, 270)):
        for t in np.linspace(np.radians(a0), np.radians(a0 + 90), n_corner):
            pts.append((cx + r * np.cos(t), cy + r * np.sin(t)))
    return np.array(pts)


def sweep_circle(path: np.ndarray, radius: float, sides: int = 16) -> trimesh.Trimesh:
    """Sweep a circle along a 3D polyline (parallel-transport frames), capped: a tube."""
    path = np.asarray(path, float)
    tang = np.gradient(path, axis=0)
    tang /= np.linalg.norm(tang, axis=1, keepdims=True)
    ref = np.array([0.0, 0.0, 1.0]) if abs(tang[0, 2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    normal = np.cross(tang[0], ref)
    normal /= np.linalg.norm(normal)
    ang = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    rings = []
    for k, t in enumerate(tang):
        normal = normal - np.dot(normal, t) * t
        normal /= np.linalg.norm(normal)
        binormal = np.cross(t, normal)
        rings.append(path[k] + radius * (np.cos(ang)[:, None] * normal + np.sin(ang)[:, None] * binormal))
    return loft(rings)


def union(parts: list[trimesh.Trimesh]) -> trimesh.Trimesh:
    """Boolean union of closed meshes with manifold3d (exact, robust); the result is one watertight solid."""
    import manifold3d as mf

    acc = None
    for p in parts:
        m = mf.Manifold(mf.Mesh(vert_properties=np.asarray(p.vertices, np.float32),
                                tri_verts=np.asarray(p.faces, np.uint32)))
        acc = m if acc is None else acc + m
    out = acc.to_mesh()
    return trimesh.Trimesh(np.asarray(out.vert_properties)[:, :3], np.asarray(out.tri_verts), process=True)


def volume_of(parts: dict[str, trimesh.Trimesh]) -> float:
    return float(sum(p.volume for p in parts.values()))


BASE_RGBA = (176, 184, 196, 255)
HIGHLIGHT_RGBA = (240, 122, 38, 255)


def to_glb(parts: dict[str, list[trimesh.Trimesh]], highlight: set[str] = frozenset()) -> bytes:
    """A GLB scene with one node per component, the changed components in orange. Converted to y-up for viewers."""
    scene = trimesh.Scene()
    rot = trimesh.transformations.rotation_matrix(-np.pi / 2, [1, 0, 0])  # z-up → y-up (glTF convention)
    for comp, meshes in parts.items():
        for k, m in enumerate(meshes):
            g = m.copy()
            g.apply_transform(rot)
            g.apply_scale(0.01)  # cm → m
            rgba = HIGHLIGHT_RGBA if comp in highlight else BASE_RGBA
            mat = trimesh.visual.material.PBRMaterial(name=comp, baseColorFactor=rgba, metallicFactor=0.0,
                                                      roughnessFactor=0.7)
            g.visual = trimesh.visual.TextureVisuals(material=mat)
            scene.add_geometry(g, node_name=f"{comp}_{k}", geom_name=f"{comp}_{k}")
    buf = io.BytesIO()
    scene.export(buf, file_type="glb")
    return buf.getvalue()


def to_stl(mesh: trimesh.Trimesh) -> bytes:
    return mesh.export(file_type="stl")

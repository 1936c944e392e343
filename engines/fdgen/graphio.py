"""Uploaded graphs: parse and check an edge list + node table (standard library only).

The parameter model calls :func:`parse_upload` in a validator, so a malformed
upload is rejected with a message naming the problem before any job is queued.

Formats
-------
* edge list: one edge per line, two node ids separated by a comma, tab or
  spaces; an optional header line (``source,target``); ``#`` starts a comment.
* node table: CSV with a header holding ``id``, ``s`` (binary sensitive
  attribute), ``y`` (binary label) and at least one numeric feature column.
"""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

MIN_NODES = 20
MAX_NODES = 2000
MAX_FEATURES = 256
_SPLIT = re.compile(r"[,\t; ]+")


@dataclass(frozen=True)
class ParsedGraph:
    ids: list[str]
    edges: list[tuple[int, int]]  # i < j, unique, indices into ``ids``
    s: list[int]
    y: list[int]
    features: list[list[float]]
    feature_names: list[str]


def _binary(values: list[str], column: str) -> list[int]:
    out = []
    for row, v in enumerate(values, start=2):
        v = v.strip()
        try:
            f = float(v)
        except ValueError:
            raise ValueError(f"node table row {row}: column '{column}' must be 0 or 1, got {v!r}") from None
        if f not in (0.0, 1.0):
            raise ValueError(f"node table row {row}: column '{column}' must be binary (0 or 1), got {v!r}")
        out.append(int(f))
    if len(set(out)) < 2:
        what = "sensitive attribute" if column == "s" else "label"
        raise ValueError(f"the {what} '{column}' is constant ({out[0] if out else '-'} for every node): "
                         "both groups must be present")
    return out


def parse_nodes(text: str) -> tuple[list[str], list[int], list[int], list[list[float]], list[str]]:
    if not text.strip():
        raise ValueError("the node table is empty")
    rows = list(csv.reader(io.StringIO(text.strip())))
    header = [h.strip() for h in rows[0]]
    lower = [h.lower() for h in header]
    for col in ("id", "s", "y"):
        if col not in lower:
            raise ValueError(f"the node table has no '{col}' column (header: {', '.join(header)[:120]})")
    i_id, i_s, i_y = lower.index("id"), lower.index("s"), lower.index("y")
    feat_cols = [k for k in range(len(header)) if k not in (i_id, i_s, i_y)]
    if not feat_cols:
        raise ValueError("the node table has no feature columns besides id, s and y")
    if len(feat_cols) > MAX_FEATURES:
        raise ValueError(f"the node table has {len(feat_cols)} feature columns; at most {MAX_FEATURES} are allowed")
    body = [r for r in rows[1:] if any(c.strip() for c in r)]
    if len(body) < MIN_NODES:
        raise ValueError(f"the graph is too small: {len(body)} nodes, at least {MIN_NODES} are needed")
    if len(body) > MAX_NODES:
        raise ValueError(f"the graph is too large: {len(body)} nodes, at most {MAX_NODES} are allowed on CPU")
    ids, s_raw, y_raw, feats = [], [], [], []
    for row, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise ValueError(f"node table row {row}: {len(r)} fields, the header has {len(header)}")
        ids.append(r[i_id].strip())
        s_raw.append(r[i_s])
        y_raw.append(r[i_y])
        vec = []
        for k in feat_cols:
            try:
                v = float(r[k])
            except ValueError:
                raise ValueError(f"node table row {row}: feature '{header[k]}' is not a number ({r[k]!r})") from None
            if not math.isfinite(v):
                raise ValueError(f"node table row {row}: feature '{header[k]}' is not finite ({r[k]!r})")
            vec.append(v)
        feats.append(vec)
    missing = [row for row, v in enumerate(s_raw, start=2) if not v.strip()]
    if missing:
        raise ValueError(f"the sensitive attribute 's' is missing in {len(missing)} rows (first: row {missing[0]})")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"node id {dup!r} appears more than once in the node table")
    s = _binary(s_raw, "s")
    y = _binary(y_raw, "y")
    return ids, s, y, feats, [header[k] for k in feat_cols]


def parse_edges(text: str, index: dict[str, int]) -> list[tuple[int, int]]:
    if not text.strip():
        raise ValueError("the edge list is empty")
    edges: set[tuple[int, int]] = set()
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p for p in _SPLIT.split(line) if p]
        if len(parts) < 2:
            raise ValueError(f"edge list line {line_no}: expected two node ids, got {line[:60]!r}")
        a, b = parts[0].strip(), parts[1].strip()
        if line_no == 1 and a not in index and b not in index and a.lower() in ("source", "src", "u", "from", "node1"):
            continue  # header
        for v in (a, b):
            if v not in index:
                raise ValueError(f"edge list line {line_no}: node id {v!r} is not in the node table")
        if a == b:
            raise ValueError(f"edge list line {line_no}: self-loop on node {a!r} (remove self-loops)")
        i, j = sorted((index[a], index[b]))
        edges.add((i, j))
    if not edges:
        raise ValueError("the edge list has no edges")
    return sorted(edges)


def _components(n: int, edges: list[tuple[int, int]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
    sizes: dict[int, int] = {}
    for v in range(n):
        r = find(v)
        sizes[r] = sizes.get(r, 0) + 1
    return sorted(sizes.values(), reverse=True)


def parse_upload(edges_text: str, nodes_text: str) -> ParsedGraph:
    """Parse and check an uploaded graph; raises ``ValueError`` naming the problem."""
    ids, s, y, feats, names = parse_nodes(nodes_text)
    index = {v: k for k, v in enumerate(ids)}
    edges = parse_edges(edges_text, index)
    n = len(ids)
    deg = [0] * n
    for i, j in edges:
        deg[i] += 1
        deg[j] += 1
    isolated = sum(d == 0 for d in deg)
    if isolated > n // 2:
        raise ValueError(f"the graph is mostly disconnected: {isolated} of {n} nodes have no edge")
    sizes = _components(n, edges)
    if sizes[0] < MIN_NODES:
        raise ValueError(f"the graph is disconnected into tiny pieces: its largest connected component has "
                         f"{sizes[0]} nodes, at least {MIN_NODES} are needed")
    return ParsedGraph(ids, edges, s, y, feats, names)


def to_edge_csv(edges, ids: list[str] | None = None) -> str:
    out = io.StringIO()
    out.write("source,target\n")
    for i, j in edges:
        out.write(f"{ids[i] if ids else i},{ids[j] if ids else j}\n")
    return out.getvalue()


def to_node_csv(s, y, features, feature_names: list[str], ids: list[str] | None = None) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "s", "y", *feature_names])
    for k in range(len(s)):
        w.writerow([ids[k] if ids else k, int(s[k]), int(y[k]), *(f"{float(v):.5g}" for v in features[k])])
    return out.getvalue()

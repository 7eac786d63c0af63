"""The agents' graph laid out for a page, with a finding's witness path picked out.

The page draws it as inline SVG from these numbers alone (no script, no charting library).

Layout: layered by breadth-first depth from the graph's entries (the routers a session starts
at), following the edges in the order the document lists them, so the same document is always
drawn the same way; a step no entry reaches goes in a last layer. Within a layer, steps keep the
order the search met them, which keeps a step near the one that led to it. An edge to a later
layer is a curve to the right; one that goes back (a model's loop, a new turn) arcs below.

A witness is a list of steps (`{"node", "on"}`, as the report writes it): its steps are marked,
and so is each edge from one step to the next with the label the step came in on. Graphs larger
than `MAX_DRAWN` steps are drawn around the witness only (its steps and their neighbours), and
say so, rather than as a picture nobody can read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_DRAWN = 250
NEIGHBOURS_CAP = 80
COLUMN = 200
NODE_W = 164
NODE_H = 30
ROW = 44
MARGIN = 20
LABEL_CHARS = 24

#: Fill of a step by its kind (the witness' steps are outlined in red on top of it).
FILLS = {
    "router": "#e6edfb",
    "model": "#fdf1dc",
    "check": "#e3f4e8",
    "human": "#f3e8fb",
    "tool": "#eef1f6",
    "handoff": "#fff7d6",
    "end": "#f6f7f9",
    "opaque": "#fde7e5",
}


@dataclass(frozen=True)
class DrawnNode:
    id: str
    kind: str
    label: str
    x: int
    y: int
    fill: str
    witness: bool = False
    order: str = ""  # the step numbers of the witness at this node ("1, 4")

    @property
    def w(self) -> int:
        return NODE_W

    @property
    def h(self) -> int:
        return NODE_H

    @property
    def text_x(self) -> int:
        return self.x + 8

    @property
    def text_y(self) -> int:
        return self.y + 19


@dataclass(frozen=True)
class DrawnEdge:
    source: str
    target: str
    on: str
    d: str
    witness: bool = False
    back: bool = False
    low: int = 0  # the lowest point the curve reaches


@dataclass
class Drawing:
    width: int
    height: int
    nodes: list[DrawnNode] = field(default_factory=list)
    edges: list[DrawnEdge] = field(default_factory=list)
    total_nodes: int = 0
    partial: bool = False

    @property
    def witness_edges(self) -> list[DrawnEdge]:
        return [e for e in self.edges if e.witness]

    @property
    def plain_edges(self) -> list[DrawnEdge]:
        return [e for e in self.edges if not e.witness]


def _nodes(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = doc.get("nodes")
    return (
        [n for n in raw if isinstance(n, Mapping) and isinstance(n.get("id"), str)]
        if isinstance(raw, list)
        else []
    )


def _edges(doc: Mapping[str, Any], ids: set[str]) -> list[tuple[str, str, str]]:
    raw = doc.get("edges")
    out: list[tuple[str, str, str]] = []
    for edge in raw if isinstance(raw, list) else []:
        if not isinstance(edge, Mapping):
            continue
        source, target = edge.get("from"), edge.get("to")
        if source in ids and target in ids:
            out.append((str(source), str(target), str(edge.get("on") or "")))
    return out


def _layers(
    order: Sequence[str], edges: Iterable[tuple[str, str, str]], entries: Sequence[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """(layer of each step, the order the breadth-first search met it in)."""
    after: dict[str, list[str]] = {}
    for source, target, _ in edges:
        after.setdefault(source, []).append(target)
    known = set(order)
    layer: dict[str, int] = {}
    met: dict[str, int] = {}
    queue: deque[str] = deque()
    for entry in entries:
        if entry in known and entry not in layer:
            layer[entry] = 0
            queue.append(entry)
    while queue:
        node = queue.popleft()
        met[node] = len(met)
        for nxt in after.get(node, ()):
            if nxt not in layer:
                layer[nxt] = layer[node] + 1
                queue.append(nxt)
    last = max(layer.values(), default=-1) + 1
    for node in order:
        layer.setdefault(node, last)
        met.setdefault(node, len(met))
    return layer, met


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _witness(
    witness: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, list[int]], set[tuple[str, str, str]]]:
    steps: dict[str, list[int]] = {}
    moves: set[tuple[str, str, str]] = set()
    previous: str | None = None
    for number, step in enumerate(witness, start=1):
        node = step.get("node")
        if not isinstance(node, str):
            previous = None
            continue
        steps.setdefault(node, []).append(number)
        if previous is not None:
            moves.add((previous, node, str(step.get("on") or "")))
        previous = node
    return steps, moves


def draw(doc: Mapping[str, Any], witness: Sequence[Mapping[str, Any]] = ()) -> Drawing:
    """The graph of `doc` laid out, with `witness` (a finding's steps) marked."""
    all_nodes = _nodes(doc)
    steps, moves = _witness(witness)
    ids = [str(n["id"]) for n in all_nodes]
    kinds = {str(n["id"]): str(n.get("kind") or "") for n in all_nodes}
    edges = _edges(doc, set(ids))
    entries = [e for e in doc.get("entries") or [] if isinstance(e, str)]
    partial = len(ids) > MAX_DRAWN
    if partial:
        keep = [i for i in ids if i in steps]
        near: list[str] = []
        for source, target, _ in edges:
            if len(near) >= NEIGHBOURS_CAP:
                break
            if source in steps and target not in steps and target not in near:
                near.append(target)
            elif target in steps and source not in steps and source not in near:
                near.append(source)
        chosen = set(keep) | set(near)
        ids = [i for i in ids if i in chosen]
        edges = [e for e in edges if e[0] in chosen and e[1] in chosen]
        first = next((str(s.get("node")) for s in witness if s.get("node") in chosen), None)
        entries = [first] if first else []
    layer, met = _layers(ids, edges, entries)
    rows: dict[int, list[str]] = {}
    for node in sorted(ids, key=lambda n: (layer[n], met[n])):
        rows.setdefault(layer[node], []).append(node)
    place: dict[str, tuple[int, int]] = {}
    for column, members in rows.items():
        for row, node in enumerate(members):
            place[node] = (MARGIN + column * COLUMN, MARGIN + 16 + row * ROW)
    drawn_nodes = [
        DrawnNode(
            id=node,
            kind=kinds.get(node, ""),
            label=_label(node),
            x=place[node][0],
            y=place[node][1],
            fill=FILLS.get(kinds.get(node, ""), "#fff"),
            witness=node in steps,
            order=", ".join(str(n) for n in steps.get(node, [])),
        )
        for node in ids
    ]
    drawn_edges = [_edge(s, t, on, place, layer, (s, t, on) in moves) for s, t, on in edges]
    columns = max(rows, default=0) + 1
    lowest = max([y + NODE_H for _, y in place.values()] + [e.low for e in drawn_edges], default=0)
    return Drawing(
        width=MARGIN * 2 + (columns - 1) * COLUMN + NODE_W,
        height=lowest + MARGIN,
        nodes=drawn_nodes,
        # the witness' edges last, so they are drawn over the others
        edges=sorted(drawn_edges, key=lambda e: e.witness),
        total_nodes=len(all_nodes),
        partial=partial,
    )


def _edge(
    source: str,
    target: str,
    on: str,
    place: Mapping[str, tuple[int, int]],
    layer: Mapping[str, int],
    witness: bool,
) -> DrawnEdge:
    (x1, y1), (x2, y2) = place[source], place[target]
    if layer[target] > layer[source]:
        sx, sy, tx, ty = x1 + NODE_W, y1 + NODE_H // 2, x2, y2 + NODE_H // 2
        middle = (sx + tx) // 2
        d = f"M{sx},{sy} C{middle},{sy} {middle},{ty} {tx},{ty}"
        return DrawnEdge(source, target, on, d, witness, low=max(sy, ty))
    # back to an earlier layer, or within one: an arc below both steps
    sx, sy = x1 + NODE_W // 2, y1 + NODE_H
    tx, ty = x2 + NODE_W // 2, y2 + NODE_H
    dip = max(sy, ty) + 18 + abs(sx - tx) // 12
    d = f"M{sx},{sy} C{sx},{dip} {tx},{dip} {tx},{ty}"
    # a cubic's lowest point is 3/4 of the way from its ends to its control points
    return DrawnEdge(source, target, on, d, witness, back=True, low=(max(sy, ty) + 3 * dip) // 4)

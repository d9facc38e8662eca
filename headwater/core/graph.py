"""Walks over a workflow's dependency graph, iteratively (a 10,000-node chain needs no
recursion): cycle detection and upstream search for spec validation."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Protocol


class GraphNode(Protocol):
    """What the walks read of a node (``spec.NodeSpec`` has it)."""

    @property
    def id(self) -> str:
        """The node's id."""

    @property
    def needs(self) -> tuple[str, ...]:
        """The ids of the nodes it needs."""

    @property
    def on_error(self) -> str | None:
        """The node its error routes to, if any."""


def find_cycle(nodes: Sequence[GraphNode]) -> list[str] | None:
    """Find one dependency cycle, iteratively.

    Returns:
        The cycle as a path that starts and ends at the same node
        (``["a", "b", "a"]``), or ``None`` when the graph is acyclic.
    """
    needs = {n.id: [d for d in n.needs if d != n.id] for n in nodes}
    for n in nodes:  # a handler comes after the node routing to it
        if n.on_error in needs and n.on_error != n.id:
            needs[n.on_error] = [*needs[n.on_error], n.id]
    color: dict[str, int] = {}  # 0/absent: new, 1: on the stack, 2: done
    for start in needs:
        if color.get(start):
            continue
        path: list[str] = [start]
        iters = [iter(needs[start])]
        color[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                iters.pop()
                continue
            if nxt not in needs:
                continue
            state = color.get(nxt, 0)
            if state == 1:
                cycle = [*path[path.index(nxt):], nxt]
                return list(reversed(cycle))
            if state == 0:
                color[nxt] = 1
                path.append(nxt)
                iters.append(iter(needs[nxt]))
    return None


def upstream_among(
    needs: Mapping[str, Sequence[str]], node_id: str, candidates: set[str]
) -> set[str]:
    """Which of ``candidates`` are transitive dependencies of ``node_id``.

    A breadth-first walk up the ``needs`` edges that stops once every candidate is found,
    so memory stays linear in the graph (no per-node ancestor sets).

    Args:
        needs: node id -> the ids it needs (unknown ids are ignored).
        node_id: where to start.
        candidates: the ids to look for.

    Returns:
        The subset of ``candidates`` upstream of ``node_id``.
    """
    found: set[str] = set()
    seen = {node_id}
    queue = deque([node_id])
    while queue and len(found) < len(candidates):
        for dep in needs.get(queue.popleft(), ()):
            if dep not in seen:
                seen.add(dep)
                queue.append(dep)
                if dep in candidates:
                    found.add(dep)
    return found

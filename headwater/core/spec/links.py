"""The links between a spec's nodes: ``needs`` and ``on_error`` name other nodes, each
checked with the fault named and, for a name no node has, the closest ids suggested
(``core.suggest``).

A node declared with an id but refused for a fault of its own (an unknown ``kind``, say)
is not in ``nodes``; a link to it is no fault of the linking node (``declared`` holds its
id), so the spec's faults name that node once, where it is wrong.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from headwater.core.graph import GraphNode
from headwater.core.suggest import did_you_mean


def unknown_node(node_id: str, ids: Collection[str]) -> str:
    """``"unknown node 'x'"`` with the closest ids suggested (``core.suggest``)."""
    return f"unknown node {node_id!r}{did_you_mean(node_id, ids)}"


def check_needs(nodes: Sequence[GraphNode], declared: Collection[str],
                faults: list[str]) -> None:
    """A fault for each ``needs`` entry that names no node (nor a declared one), or the
    node itself."""
    ids = {n.id for n in nodes}
    for n in nodes:
        for dep in n.needs:
            if dep == n.id:
                faults.append(f"node {n.id!r}: needs itself")
            elif dep not in ids and dep not in declared:
                faults.append(f"node {n.id!r}: needs {unknown_node(dep, ids)}")


def check_routes(nodes: Sequence[GraphNode], declared: Collection[str],
                 faults: list[str]) -> None:
    """``on_error`` names another node, which handles no other node's errors and has no
    ``needs`` of its own (it starts when the node routing to it fails)."""
    by_id = {n.id: n for n in nodes}
    routed_from: dict[str, str] = {}
    for n in nodes:
        target = n.on_error
        if target is None:
            continue
        if target not in by_id:
            if target not in declared:
                faults.append(f"node {n.id!r}: on_error names {unknown_node(target, by_id)}")
        elif target == n.id:
            faults.append(f"node {n.id!r}: on_error names itself")
        elif target in routed_from:
            faults.append(f"node {target!r} is the error route of both {routed_from[target]!r}"
                          f" and {n.id!r}; give each node its own handler")
        else:
            routed_from[target] = n.id
            if by_id[target].needs:
                faults.append(f"node {target!r}: an error handler (on_error of {n.id!r}) "
                              "cannot have needs; it starts when that node fails")

"""Workflow specs: parse a YAML/JSON document into frozen definitions and validate it.

Validation reports every fault at once (duplicate ids, unknown dependencies, cycles with
their path, unknown or non-upstream references, bad retry values). It is iterative, so a
10,000-node chain validates without recursion.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import yaml

from headwater.errors import SpecError
from headwater.refs import Ref, iter_refs, parse_ref
from headwater.retry import RetryPolicy, parse_retry

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
_QUEUE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
DEFAULT_QUEUE = "cpu"
MAX_NODES = 10_000


class NodeKind(StrEnum):
    """What a node does."""

    TASK = "task"  # run one registered task on a worker pool
    MAP = "map"  # run one task per item of a list; the fan-in keeps input order


@dataclass(frozen=True)
class NodeSpec:
    """One node of the DAG.

    Attributes:
        id: unique within the workflow.
        kind: task or map.
        task: registered task name, e.g. ``"stdlib.search"``.
        queue: worker pool, e.g. ``"cpu"``.
        needs: ids of the nodes that must succeed first.
        input: JSON-like template with ``${...}`` references.
        over: for maps, the reference to the list to fan out over.
        max_concurrency: for maps, most children in flight at once (None: no bound).
        retry: the node's retry policy (workflow default when not given).
        timeout: per-attempt timeout in seconds, or None.
    """

    id: str
    kind: NodeKind
    task: str
    queue: str = DEFAULT_QUEUE
    needs: tuple[str, ...] = ()
    input: Any = None
    over: str | None = None
    max_concurrency: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float | None = None


@dataclass(frozen=True)
class WorkflowSpec:
    """A validated workflow: nodes in declared order, and the output template."""

    name: str
    nodes: tuple[NodeSpec, ...]
    output: Any = None

    def node(self, node_id: str) -> NodeSpec:
        """The node named ``node_id``. Raises ``KeyError`` if there is none."""
        return self._by_id()[node_id]

    def _by_id(self) -> dict[str, NodeSpec]:
        cached: dict[str, NodeSpec] | None = self.__dict__.get("_index")
        if cached is None:
            cached = {n.id: n for n in self.nodes}
            object.__setattr__(self, "_index", cached)
        return cached

    def dependents(self) -> dict[str, list[str]]:
        """Node id -> ids of the nodes that need it, in declared order."""
        out: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for dep in n.needs:
                out[dep].append(n.id)
        return out


def load_spec_text(text: str) -> Any:
    """Parse YAML or JSON text (JSON is YAML) into plain data. Raises ``SpecError``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError([f"not valid YAML/JSON: {e}"]) from e


def parse_spec(doc: Any) -> WorkflowSpec:
    """Validate a spec document and build a ``WorkflowSpec``.

    Args:
        doc: plain data as loaded from YAML/JSON: ``{name, retry?, nodes: [...], output?}``.

    Returns:
        The frozen spec.

    Raises:
        SpecError: with every fault found.
    """
    faults: list[str] = []
    if not isinstance(doc, Mapping):
        raise SpecError(["spec must be a mapping with 'name' and 'nodes'"])
    for key in sorted(set(doc) - _TOP_KEYS, key=str):
        faults.append(f"unknown field {key!r} (expected one of {sorted(_TOP_KEYS)})")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        faults.append("name: required, a non-empty string")
    default_retry = parse_retry(doc.get("retry"), RetryPolicy(), "retry", faults)
    raw_nodes = doc.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        faults.append("nodes: required, a non-empty list")
        raise SpecError(faults)
    if len(raw_nodes) > MAX_NODES:
        faults.append(f"nodes: at most {MAX_NODES} nodes (got {len(raw_nodes)}); "
                      "fan out with a map node instead")
        raise SpecError(faults)
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_nodes):
        node = _parse_node(raw, i, default_retry, faults)
        if node is None:
            continue
        if node.id in seen:
            faults.append(f"nodes[{i}]: duplicate node id {node.id!r}")
            continue
        seen.add(node.id)
        nodes.append(node)
    _check_needs(nodes, faults)
    cycle = find_cycle(nodes)
    if cycle:
        faults.append("cycle: " + " -> ".join(cycle))
    _check_refs(nodes, doc.get("output"), faults)
    if faults:
        raise SpecError(faults)
    return WorkflowSpec(name=str(name), nodes=tuple(nodes), output=doc.get("output"))


_TOP_KEYS = {"name", "retry", "nodes", "output"}
_NODE_KEYS = {
    "id", "kind", "task", "queue", "needs", "input", "over", "max_concurrency", "retry",
    "timeout",
}


def _parse_node(
    raw: Any, i: int, default_retry: RetryPolicy, faults: list[str]
) -> NodeSpec | None:
    where = f"nodes[{i}]"
    if not isinstance(raw, Mapping):
        faults.append(f"{where}: must be a mapping")
        return None
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not _ID.match(node_id):
        faults.append(f"{where}: id must match {_ID.pattern}")
        return None
    where = f"node {node_id!r}"
    for key in sorted(set(raw) - _NODE_KEYS, key=str):
        faults.append(f"{where}: unknown field {key!r}")
    try:
        kind = NodeKind(raw.get("kind", "task"))
    except ValueError:
        faults.append(f"{where}: kind must be one of {[k.value for k in NodeKind]}")
        return None
    task = raw.get("task")
    if not isinstance(task, str) or not task:
        faults.append(f"{where}: task: required, a registered task name")
    queue = raw.get("queue", DEFAULT_QUEUE)
    if not isinstance(queue, str) or not _QUEUE.match(queue):
        faults.append(f"{where}: queue must match {_QUEUE.pattern}")
    needs = raw.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        faults.append(f"{where}: needs must be a list of node ids")
        needs = []
    over = raw.get("over")
    max_conc = raw.get("max_concurrency")
    if kind is NodeKind.MAP:
        if not isinstance(over, str) or not isinstance(parse_ref(over), Ref):
            faults.append(f"{where}: a map needs 'over', a reference to a list such as "
                          "\"${nodes.<id>.output}\" or \"${input.<key>}\"")
        if max_conc is not None and (type(max_conc) is not int or max_conc < 1):
            faults.append(f"{where}: max_concurrency must be a positive integer")
    elif over is not None or max_conc is not None:
        faults.append(f"{where}: 'over' and 'max_concurrency' belong to map nodes")
    timeout = raw.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float)
        or not math.isfinite(timeout) or timeout <= 0
    ):
        faults.append(f"{where}: timeout must be a positive, finite number of seconds")
        timeout = None
    retry = parse_retry(raw.get("retry"), default_retry, f"{where}: retry", faults)
    return NodeSpec(
        id=node_id,
        kind=kind,
        task=task if isinstance(task, str) else "",
        queue=queue if isinstance(queue, str) else DEFAULT_QUEUE,
        needs=tuple(dict.fromkeys(needs)),
        input=raw.get("input"),
        over=over if isinstance(over, str) else None,
        max_concurrency=max_conc if type(max_conc) is int else None,
        retry=retry,
        timeout=float(timeout) if isinstance(timeout, int | float) else None,
    )


def _check_needs(nodes: list[NodeSpec], faults: list[str]) -> None:
    ids = {n.id for n in nodes}
    for n in nodes:
        for dep in n.needs:
            if dep not in ids:
                faults.append(f"node {n.id!r}: needs unknown node {dep!r}")
            elif dep == n.id:
                faults.append(f"node {n.id!r}: needs itself")


def find_cycle(nodes: list[NodeSpec] | tuple[NodeSpec, ...]) -> list[str] | None:
    """Find one dependency cycle, iteratively.

    Returns:
        The cycle as a path that starts and ends at the same node
        (``["a", "b", "a"]``), or ``None`` when the graph is acyclic.
    """
    needs = {n.id: [d for d in n.needs if d != n.id] for n in nodes}
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


def topological_order(nodes: tuple[NodeSpec, ...] | list[NodeSpec]) -> list[str]:
    """Kahn's algorithm; unknown dependencies and self-dependencies are ignored. Nodes on a
    cycle are left out."""
    ids = {n.id for n in nodes}
    indegree = {n.id: sum(1 for d in n.needs if d in ids and d != n.id) for n in nodes}
    dependents: dict[str, list[str]] = {n.id: [] for n in nodes}
    for n in nodes:
        for d in n.needs:
            if d in ids and d != n.id:
                dependents[d].append(n.id)
    ready = [n.id for n in nodes if indegree[n.id] == 0]
    order: list[str] = []
    while ready:
        cur = ready.pop()
        order.append(cur)
        for dep in dependents[cur]:
            indegree[dep] -= 1
            if indegree[dep] == 0:
                ready.append(dep)
    return order


def _check_refs(nodes: list[NodeSpec], output: Any, faults: list[str]) -> None:
    ids = {n.id for n in nodes}
    needs = {n.id: n.needs for n in nodes}
    for n in nodes:
        templates: list[tuple[str, Any]] = [("input", n.input)]
        if n.over is not None:
            templates.append(("over", n.over))
        refs = [(field_name, raw, ref) for field_name, template in templates
                for raw, ref in iter_refs(template)]
        named = {ref.node for _, _, ref in refs if isinstance(ref, Ref) and ref.node in ids}
        upstream = named & set(n.needs)  # most references name a direct dependency
        if named - upstream:
            upstream |= upstream_among(needs, n.id, named - upstream)
        for field_name, raw, ref in refs:
            in_map_input = n.kind is NodeKind.MAP and field_name == "input"
            fault = _ref_fault(ref, ids, upstream, in_map_input)
            if fault:
                faults.append(f"node {n.id!r}: {field_name}: {raw}: {fault}")
    for raw, ref in iter_refs(output):
        fault = _ref_fault(ref, ids, ids, False)
        if fault:
            faults.append(f"output: {raw}: {fault}")


def _ref_fault(ref: Ref | str, ids: set[str], upstream: set[str], in_map: bool) -> str | None:
    if isinstance(ref, str):
        return ref
    if ref.root in ("item", "index") and not in_map:
        return f"${{{ref.root}}} is only defined in a map node's input"
    if ref.root == "nodes":
        if ref.node not in ids:
            return f"unknown reference to node {ref.node!r}"
        if ref.node not in upstream:
            return f"node {ref.node!r} is not upstream (add it to needs)"
    return None

"""Workflow specs: parse a YAML/JSON document into frozen definitions and validate it.

Validation reports every fault at once (duplicate ids, unknown dependencies, cycles with
their path, unknown or non-upstream references, bad retry values). It is iterative, so a
10,000-node chain validates without recursion.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import yaml

from headwater.core.graph import find_cycle, upstream_among
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.refs import Ref, iter_refs, parse_ref
from headwater.core.retry import MAX_SECONDS, RetryPolicy, parse_retry
from headwater.errors import SpecError

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
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
        timeout: per-attempt timeout in seconds, counted from dispatch, or None.
        heartbeat_timeout: seconds without a report from a running attempt after which
            it is lost and retried (it counts as an attempt).
        on_error: the node that runs, with the error as its input, when this node fails
            for good; this node's dependents are then skipped.
        continue_on_error: when this node fails for good, its dependents still run and
            see ``{"error": {...}}`` instead of its output.
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
    heartbeat_timeout: float = 30.0
    on_error: str | None = None
    continue_on_error: bool = False


@dataclass(frozen=True)
class WorkflowSpec:
    """A validated workflow: nodes in declared order, and the output template."""

    name: str
    nodes: tuple[NodeSpec, ...]
    output: Any = None

    def handler_of(self, node_id: str) -> str | None:
        """The node whose ``on_error`` names ``node_id``, or None: such an error handler
        starts only through its route."""
        cached: dict[str, str] | None = self.__dict__.get("_handlers")
        if cached is None:
            cached = {n.on_error: n.id for n in self.nodes if n.on_error}
            object.__setattr__(self, "_handlers", cached)
        return cached.get(node_id)

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
    defaults = _Defaults(
        retry=parse_retry(doc.get("retry"), RetryPolicy(), "retry", faults),
        timeout=_seconds(doc.get("timeout"), None, "timeout", faults),
        heartbeat_timeout=_seconds(doc.get("heartbeat_timeout"), DEFAULT_HEARTBEAT_TIMEOUT,
                                   "heartbeat_timeout", faults, MIN_HEARTBEAT_TIMEOUT)
        or DEFAULT_HEARTBEAT_TIMEOUT,
        continue_on_error=_flag(doc.get("continue_on_error"), "continue_on_error", faults),
    )
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
        node = _parse_node(raw, i, defaults, faults)
        if node is None:
            continue
        if node.id in seen:
            faults.append(f"nodes[{i}]: duplicate node id {node.id!r}")
            continue
        seen.add(node.id)
        nodes.append(node)
    _check_needs(nodes, faults)
    _check_routes(nodes, faults)
    cycle = find_cycle(nodes)
    if cycle:
        faults.append("cycle: " + " -> ".join(cycle))
    _check_refs(nodes, doc.get("output"), faults)
    if faults:
        raise SpecError(faults)
    return WorkflowSpec(name=str(name), nodes=tuple(nodes), output=doc.get("output"))


ERROR_KEYS = ("node", "index", "attempts", "type", "message")
"""The keys of ``${error}`` (``state.error_object``)."""
_TOP_KEYS = {"name", "retry", "timeout", "heartbeat_timeout", "continue_on_error", "nodes",
             "output"}
_NODE_KEYS = {
    "id", "kind", "task", "queue", "needs", "input", "over", "max_concurrency", "retry",
    "timeout", "heartbeat_timeout", "on_error", "continue_on_error",
}
DEFAULT_HEARTBEAT_TIMEOUT = 30.0
MIN_HEARTBEAT_TIMEOUT = 1.0
"""Seconds: a running attempt with no report for this long is lost (every node has one,
so a worker that dies mid-task never leaves its task hanging)."""


@dataclass(frozen=True)
class _Defaults:
    """Workflow-level defaults for node fields."""

    retry: RetryPolicy
    timeout: float | None
    heartbeat_timeout: float
    continue_on_error: bool


def _seconds(value: Any, default: float | None, where: str, faults: list[str],
             least: float = 0.0) -> float | None:
    """A positive, finite number of seconds (above ``least`` and at most
    ``retry.MAX_SECONDS``), or ``default``."""
    if value is None:
        return default
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 < value <= MAX_SECONDS):
        faults.append(f"{where} must be a positive number of seconds, at most {MAX_SECONDS}")
        return default
    if value < least:
        faults.append(f"{where} must be at least {least:g} s (workers heartbeat every "
                      "third of it)")
        return default
    return float(value)


def _flag(value: Any, where: str, faults: list[str], default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        faults.append(f"{where} must be true or false")
        return default
    return value


def _parse_node(
    raw: Any, i: int, defaults: _Defaults, faults: list[str]
) -> NodeSpec | None:
    where = f"nodes[{i}]"
    if not isinstance(raw, Mapping):
        faults.append(f"{where}: must be a mapping")
        return None
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not _ID.fullmatch(node_id):
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
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        faults.append(f"{where}: queue must match {QUEUE_PATTERN.pattern}")
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
    timeout = _seconds(raw.get("timeout"), defaults.timeout, f"{where}: timeout", faults)
    heartbeat = _seconds(raw.get("heartbeat_timeout"), defaults.heartbeat_timeout,
                         f"{where}: heartbeat_timeout", faults, MIN_HEARTBEAT_TIMEOUT)
    on_error = raw.get("on_error")
    if on_error is not None and not isinstance(on_error, str):
        faults.append(f"{where}: on_error must be the id of another node")
        on_error = None
    keep_going = _flag(raw.get("continue_on_error"), f"{where}: continue_on_error", faults,
                       defaults.continue_on_error)
    if on_error is not None and raw.get("continue_on_error") is True:
        faults.append(f"{where}: on_error and continue_on_error exclude each other")
    retry = parse_retry(raw.get("retry"), defaults.retry, f"{where}: retry", faults)
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
        timeout=timeout,
        heartbeat_timeout=heartbeat or DEFAULT_HEARTBEAT_TIMEOUT,
        on_error=on_error,
        continue_on_error=keep_going and on_error is None,
    )


def _check_needs(nodes: list[NodeSpec], faults: list[str]) -> None:
    ids = {n.id for n in nodes}
    for n in nodes:
        for dep in n.needs:
            if dep not in ids:
                faults.append(f"node {n.id!r}: needs unknown node {dep!r}")
            elif dep == n.id:
                faults.append(f"node {n.id!r}: needs itself")


def _check_routes(nodes: list[NodeSpec], faults: list[str]) -> None:
    """``on_error`` names another node, which handles no other node's errors and has no
    ``needs`` of its own (it starts when the node routing to it fails)."""
    ids = {n.id for n in nodes}
    by_id = {n.id: n for n in nodes}
    routed_from: dict[str, str] = {}
    for n in nodes:
        target = n.on_error
        if target is None:
            continue
        if target not in ids:
            faults.append(f"node {n.id!r}: on_error names unknown node {target!r}")
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


def _check_refs(nodes: list[NodeSpec], output: Any, faults: list[str]) -> None:
    ids = {n.id for n in nodes}
    needs = {n.id: n.needs for n in nodes}
    source_of = {n.on_error: n.id for n in nodes if n.on_error}
    for n in nodes:
        templates: list[tuple[str, Any]] = [("input", n.input)]
        if n.over is not None:
            templates.append(("over", n.over))
        refs = [(field_name, raw, ref) for field_name, template in templates
                for raw, ref in iter_refs(template)]
        named = {ref.node for _, _, ref in refs if isinstance(ref, Ref) and ref.node in ids}
        # A handler sees what its source could see: the nodes upstream of the source.
        source = source_of.get(n.id)
        upstream = named & set(n.needs)  # most references name a direct dependency
        if named - upstream:
            upstream |= upstream_among(needs, source or n.id, named - upstream)
        for field_name, raw, ref in refs:
            scope = _Scope(in_map=n.kind is NodeKind.MAP and field_name == "input",
                           handler=source is not None and field_name == "input")
            fault = _ref_fault(ref, ids, upstream, scope)
            if fault:
                faults.append(f"node {n.id!r}: {field_name}: {raw}: {fault}")
    for raw, ref in iter_refs(output):
        fault = _ref_fault(ref, ids, ids, _Scope())
        if fault:
            faults.append(f"output: {raw}: {fault}")


@dataclass(frozen=True)
class _Scope:
    """Which special references a template may use."""

    in_map: bool = False  # ${item}, ${index}: a map node's input
    handler: bool = False  # ${error}: an error handler's input


def _ref_fault(ref: Ref | str, ids: set[str], upstream: set[str], scope: _Scope) -> str | None:
    if isinstance(ref, str):
        return ref
    if ref.root in ("item", "index") and not scope.in_map:
        return f"${{{ref.root}}} is only defined in a map node's input"
    if ref.root == "error" and not scope.handler:
        return "${error} is only defined in the input of an error handler (an on_error target)"
    if ref.root == "error" and ref.path and ref.path[0] not in ERROR_KEYS:
        return f"an error has the keys {', '.join(ERROR_KEYS)}, not {ref.path[0]!r}"
    if ref.root == "nodes":
        if ref.node not in ids:
            return f"unknown reference to node {ref.node!r}"
        if ref.node not in upstream:
            return f"node {ref.node!r} is not upstream (add it to needs)"
    return None

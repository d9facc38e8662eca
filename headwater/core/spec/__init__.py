"""Workflow specs: parse a YAML/JSON document into frozen definitions and validate it.

Validation reports every fault at once (duplicate ids, unknown dependencies, cycles with
their path, unknown or non-upstream references, bad retry values). It is iterative, so a
10,000-node chain validates without recursion. Single field values (seconds, flags, a
node's task, queue, needs and error policy) are checked in ``spec.fields``; what each
node kind adds (a wait's signal, a sleep, a child, a loop) and ``when`` in ``spec.kinds``;
one node is read into its ``NodeSpec`` in ``spec.node``, and the workflow here checks
what ties its nodes together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import yaml

from headwater.core.deadline import KEY as DEADLINE_KEY
from headwater.core.deadline import RunDeadline, parse_deadline
from headwater.core.graph import find_cycle
from headwater.core.kinds.schedule.cron import schedule_environment_faults, schedule_spec_faults
from headwater.core.labels import KEY as LABELS_KEY
from headwater.core.labels import parse_labels
from headwater.core.priority import DEFAULT as DEFAULT_PRIORITY
from headwater.core.priority import KEY as PRIORITY_KEY
from headwater.core.priority import parse_priority
from headwater.core.spec.fields import Defaults, parse_defaults, workflow_name
from headwater.core.spec.kinds import NodeKind, signal_clash_faults
from headwater.core.spec.links import check_needs, check_routes
from headwater.core.spec.node import NodeSpec, parse_node, suggest
from headwater.core.spec.refs import ERROR_KEYS, check_refs
from headwater.core.spec.restart import RESTART_KEYS, parse_restarts
from headwater.errors import SpecError

__all__ = ["ERROR_KEYS", "MAX_NODES", "NodeKind", "NodeSpec", "WorkflowSpec", "load_spec_text",
           "parse_spec"]

MAX_NODES = 10_000


@dataclass(frozen=True)
class WorkflowSpec:
    """A validated workflow: nodes in declared order, and the output template.

    The indexes below are derived from ``nodes`` on first use and cached on the instance
    (``functools.cached_property``; the spec itself never changes).
    """

    name: str
    nodes: tuple[NodeSpec, ...]
    output: Any = None
    max_restarts: int = 0
    """How many times a lost attempt may restart the whole run (``spec.restart``; 0:
    never, a lost attempt is retried like any failed one)."""
    priority: int = DEFAULT_PRIORITY
    """Its dispatches' priority among those waiting for a queue, 0-9, higher first
    (``headwater.core.priority``)."""
    deadline: RunDeadline | None = None
    """The whole run's deadline (``headwater.core.deadline``); None: none."""

    def handler_of(self, node_id: str) -> str | None:
        """The node whose ``on_error`` names ``node_id``, or None: such an error handler
        starts only through its route."""
        return self._handlers.get(node_id)

    def node(self, node_id: str) -> NodeSpec:
        """The node named ``node_id``. Raises ``KeyError`` if there is none."""
        return self._by_id[node_id]

    def dependents(self) -> dict[str, list[str]]:
        """Node id -> ids of the nodes that need it, in declared order (a new dict)."""
        out: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for dep in n.needs:
                out[dep].append(n.id)
        return out

    def dependents_of(self, node_id: str) -> tuple[str, ...]:
        """Ids of the nodes that need ``node_id``, in declared order (cached)."""
        return self._dependents.get(node_id, ())

    @cached_property
    def _handlers(self) -> dict[str, str]:
        """Error handler id -> the node whose ``on_error`` names it."""
        return {n.on_error: n.id for n in self.nodes if n.on_error}

    @cached_property
    def _by_id(self) -> dict[str, NodeSpec]:
        return {n.id: n for n in self.nodes}

    @cached_property
    def _dependents(self) -> dict[str, tuple[str, ...]]:
        return {node_id: tuple(deps) for node_id, deps in self.dependents().items()}


def load_spec_text(text: str) -> Any:
    """Parse YAML or JSON text (JSON is YAML) into plain data. Raises ``SpecError``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError([f"not valid YAML/JSON: {e}"]) from e


def parse_spec(doc: Any) -> WorkflowSpec:
    """Validate a submitted spec document and build a ``WorkflowSpec``: its form, and
    what the environment says of it (a schedule's cron and zone, asked of croniter and
    the time zone database: ``schedule_environment_faults``).

    Args:
        doc: plain data as loaded from YAML/JSON: ``{name, retry?, nodes: [...], output?,
            restart_on_failure?, max_restarts?, priority?, deadline?}``.

    Returns:
        The frozen spec.

    Raises:
        SpecError: with every fault found.
    """
    return _parse(doc, submitted=True)


def read_spec(doc: Any) -> WorkflowSpec:
    """Build the ``WorkflowSpec`` of an accepted spec document (a state's, at every fold,
    restore and replay): its form only, so that an upgrade of croniter or tzdata under a
    running workflow does not make its history fold otherwise. The coordinator asks the
    environment once, when it accepts a submission (``environment_faults``).

    Raises:
        SpecError: with every fault of its form.
    """
    return _parse(doc, submitted=False)


def environment_faults(nodes: Sequence[NodeSpec]) -> list[str]:
    """What the environment says of a spec's nodes whose form is valid (``read_spec``):
    the faults ``parse_spec`` adds to those of its form (of these nodes; a child's spec
    is asked when the child is submitted)."""
    return [fault for n in nodes if n.schedule is not None
            for fault in schedule_environment_faults(n.schedule, f"node {n.id!r}")]


def _parse(doc: Any, submitted: bool) -> WorkflowSpec:
    faults: list[str] = []
    if not isinstance(doc, Mapping):
        raise SpecError(["spec must be a mapping with 'name' and 'nodes'"])
    for key in sorted(set(doc) - _TOP_KEYS, key=str):
        faults.append(f"unknown field {key!r}{suggest(key, _TOP_KEYS)}; expected one of "
                      f"{sorted(_TOP_KEYS)}")
    name = workflow_name(doc.get("name"), faults)
    defaults = parse_defaults(doc, faults)
    nodes = _parse_nodes(doc.get("nodes"), defaults, faults,
                         _child_faults if submitted else _read_child_faults)
    # Ids of the nodes refused for a fault of their own: a link to one is no fault.
    declared = {r["id"] for r in doc["nodes"] if isinstance(r, Mapping)
                and isinstance(r.get("id"), str)}
    check_needs(nodes, declared, faults)
    check_routes(nodes, declared, faults)
    signal_clash_faults([(n.id, n.wait) for n in nodes if n.wait is not None], faults)
    schedule_spec_faults(nodes, faults)
    cycle = find_cycle(nodes)
    if cycle:
        faults.append("cycle: " + " -> ".join(cycle))
    check_refs(nodes, doc.get("output"), faults, declared)
    restarts = parse_restarts(
        doc, [(n.id, n.kind, n.child.workflow if n.child else None) for n in nodes], faults)
    priority = parse_priority(doc, faults)
    deadline = parse_deadline(doc, faults)
    parse_labels(doc, faults)  # the projection and the listing read them from the spec
    if submitted:
        faults.extend(environment_faults(nodes))
    if faults:
        raise SpecError(faults)
    return WorkflowSpec(name=str(name), nodes=tuple(nodes), output=doc.get("output"),
                        max_restarts=restarts, priority=priority, deadline=deadline)


def _parse_nodes(raw_nodes: Any, defaults: Defaults, faults: list[str],
                 validate: Callable[[Any], list[str]]) -> list[NodeSpec]:
    """The nodes with a valid id, first of each id. Raises ``SpecError`` (with the
    faults so far) when ``nodes`` is missing, empty or too long."""
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
        node = parse_node(raw, i, defaults, faults, validate)
        if node is None:
            continue
        if node.id in seen:
            faults.append(f"nodes[{i}]: duplicate node id {node.id!r}")
            continue
        seen.add(node.id)
        nodes.append(node)
    return nodes


_TOP_KEYS = {"name", "retry", "timeout", "heartbeat_timeout", "continue_on_error", "nodes",
             "output", PRIORITY_KEY, *RESTART_KEYS, DEADLINE_KEY, LABELS_KEY}
def _child_faults(doc: Any) -> list[str]:
    """The faults of a submitted child workflow's spec document (none when it is
    valid)."""
    try:
        parse_spec(doc)
    except SpecError as e:
        return e.faults
    return []


def _read_child_faults(doc: Any) -> list[str]:
    """The faults of the form of an accepted child workflow's spec document."""
    try:
        read_spec(doc)
    except SpecError as e:
        return e.faults
    return []

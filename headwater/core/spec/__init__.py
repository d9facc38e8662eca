"""Workflow specs: parse a YAML/JSON document into frozen definitions and validate it.

Validation reports every fault at once (duplicate ids, unknown dependencies, cycles with
their path, unknown or non-upstream references, bad retry values). It is iterative, so a
10,000-node chain validates without recursion. Single field values (seconds, flags, a
node's task, queue, needs and error policy) are checked in ``spec.fields``; what each
node kind adds (a wait's signal, a sleep, a child, a loop) and ``when`` in ``spec.kinds``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import yaml

from headwater.core.caching import CacheSpec, parse_cache
from headwater.core.deadline import KEY as DEADLINE_KEY
from headwater.core.deadline import RunDeadline, parse_deadline
from headwater.core.graph import find_cycle
from headwater.core.kinds.code.records import CodeSpec
from headwater.core.kinds.loop.records import LoopSpec
from headwater.core.kinds.schedule.cron import (
    ScheduleSpec,
    schedule_environment_faults,
    schedule_spec_faults,
)
from headwater.core.kinds.sleep.records import SleepSpec
from headwater.core.kinds.wait.records import WaitSpec
from headwater.core.labels import KEY as LABELS_KEY
from headwater.core.labels import parse_labels
from headwater.core.limits import LimitSpec, parse_limits
from headwater.core.priority import DEFAULT as DEFAULT_PRIORITY
from headwater.core.priority import KEY as PRIORITY_KEY
from headwater.core.priority import parse_priority
from headwater.core.retry import RetryPolicy, parse_retry
from headwater.core.selectors import parse_requires
from headwater.core.spec.fields import (
    DEFAULT_HEARTBEAT_TIMEOUT,
    DEFAULT_QUEUE,
    MIN_HEARTBEAT_TIMEOUT,
    NODE_ID,
    Defaults,
    error_policy,
    node_work,
    parse_defaults,
    seconds,
    workflow_name,
)
from headwater.core.spec.kinds import (
    KIND_KEYS,
    TASK_KEY,
    ChildSpec,
    NodeKind,
    Work,
    any_kind_keys,
    fan_out_fields,
    kind_key_faults,
    parse_kind,
    parse_when,
    signal_clash_faults,
)
from headwater.core.spec.links import check_needs, check_routes
from headwater.core.spec.refs import ERROR_KEYS, check_refs
from headwater.core.spec.restart import RESTART_KEYS, parse_restarts
from headwater.core.suggest import did_you_mean
from headwater.errors import SpecError

__all__ = ["ERROR_KEYS", "MAX_NODES", "NodeKind", "NodeSpec", "WorkflowSpec", "load_spec_text",
           "parse_spec"]

_ID = NODE_ID
MAX_NODES = 10_000


@dataclass(frozen=True)
class NodeSpec:
    """One node of the DAG.

    Attributes:
        id: unique within the workflow.
        kind: task, map, wait, sleep, workflow, loop, schedule or code.
        task: registered task name, e.g. ``"stdlib.search"`` (a loop's decide task;
            ``""`` for wait, sleep and workflow nodes).
        queue: worker pool, e.g. ``"cpu"``.
        needs: ids of the nodes that must succeed first.
        input: JSON-like template with ``${...}`` references.
        over: for maps (and waits and workflow nodes that fan out), the reference to
            the list to fan out over.
        max_concurrency: most items in flight at once (None: the default,
            ``kinds.map.DEFAULT_MAP_CONCURRENCY``; a wait with ``over`` has none).
        retry: the node's retry policy (workflow default when not given).
        timeout: per-attempt timeout in seconds, counted from dispatch, or None.
        heartbeat_timeout: seconds without a report from a running attempt after which
            it is lost and retried (it counts as an attempt).
        on_error: the node that runs, with the error as its input, when this node fails
            for good; this node's dependents are then skipped.
        continue_on_error: when this node fails for good, its dependents still run and
            see ``{"error": {...}}`` instead of its output.
        when: a condition (``conditions``); false at start skips the node.
        requires: the tags a worker must announce to run the node's tasks (``task``
            and ``map`` nodes; ``selectors``), sorted, each once; empty: any worker of
            its queue. Its dispatches go to the queue's selector topic for these tags
            (``Topics.needs``).
        limits: its ``concurrency`` and ``rate_limit`` (``headwater.core.limits``), in
            that order: each attempt holds a permit of each before it is dispatched
            (``machine.holds``); empty: none.
        cache: its ``cache`` (``headwater.core.caching``): each attempt looks its key
            up first, and a hit succeeds without a dispatch (``machine.lookups``);
            None: not cached.
        wait, sleep, child, loop, schedule, code: what the node's kind adds (``spec.kinds``;
            a schedule's runs are its ``child``).
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
    when: str | None = None
    requires: tuple[str, ...] = ()
    limits: tuple[LimitSpec, ...] = ()
    cache: CacheSpec | None = None
    wait: WaitSpec | None = None
    sleep: SleepSpec | None = None
    child: ChildSpec | None = None
    loop: LoopSpec | None = None
    schedule: ScheduleSpec | None = None
    code: CodeSpec | None = None

    @property
    def fans_out(self) -> bool:
        """Whether the node runs once per item of ``over`` (maps, and waits and workflow
        nodes given ``over``)."""
        return self.over is not None


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
        faults.append(f"unknown field {key!r}{_suggest(key, _TOP_KEYS)}; expected one of "
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
        node = _parse_node(raw, i, defaults, faults, validate)
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
_NODE_KEYS = frozenset({"id", "kind", "needs", "when", "on_error", "continue_on_error"})
"""The fields of every node (each kind's own: ``spec.kinds.KIND_KEYS``)."""


def _parse_node(
    raw: Any, i: int, defaults: Defaults, faults: list[str],
    validate: Callable[[Any], list[str]],
) -> NodeSpec | None:
    """One node, or None when it has no valid id or kind (its faults appended in field
    order: id, unknown fields, kind, task, queue, needs, fan-out fields, timeouts, error
    policy, retry, condition, requirements, the kind's own fields)."""
    head = _node_head(raw, i, faults)
    if head is None:
        return None
    node_id, kind, where = head
    task, queue, needs = node_work(raw, where, faults, TASK_KEY.get(kind))
    over, max_conc = fan_out_fields(raw, kind, where, faults)
    # A wait's timeout is its own (a workflow-wide one is for task attempts); a wait or
    # a sleep or a schedule's run is never retried.
    own = kind in (NodeKind.WAIT, NodeKind.SLEEP, NodeKind.SCHEDULE)
    timeout = seconds(raw.get("timeout"), None if own else defaults.timeout,
                      f"{where}: timeout", faults)
    heartbeat = seconds(raw.get("heartbeat_timeout"), defaults.heartbeat_timeout,
                        f"{where}: heartbeat_timeout", faults, MIN_HEARTBEAT_TIMEOUT)
    on_error, keep_going = error_policy(raw, where, defaults, faults)
    retry = parse_retry(raw.get("retry"), RetryPolicy() if own else defaults.retry,
                        f"{where}: retry", faults)
    when = parse_when(raw, where, faults)
    requires = parse_requires(raw.get("requires"), where, faults)
    limits = parse_limits(raw, where, faults)
    cache = parse_cache(raw, where, faults)
    work = Work(queue, retry, timeout, heartbeat or DEFAULT_HEARTBEAT_TIMEOUT)
    parts = parse_kind(raw, kind, where, work, validate, faults)
    return NodeSpec(
        id=node_id, kind=kind, task=task, queue=queue, needs=needs, input=raw.get("input"),
        over=over, max_concurrency=max_conc, retry=retry, timeout=timeout,
        heartbeat_timeout=work.heartbeat_timeout, on_error=on_error,
        continue_on_error=keep_going and on_error is None, when=when, requires=requires,
        limits=limits, cache=cache, wait=parts.wait,
        sleep=parts.sleep, child=parts.child, loop=parts.loop, schedule=parts.schedule,
        code=parts.code,
    )


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


def _suggest(word: Any, names: Any) -> str:
    """``did_you_mean`` of a field name (a key of any type: suggested when a string)."""
    return did_you_mean(word, [str(n) for n in names]) if isinstance(word, str) else ""


def _node_head(raw: Any, i: int, faults: list[str]) -> tuple[str, NodeKind, str] | None:
    """``(id, kind, where)`` of a node: ``where`` names it in faults. None (the fault
    appended) when it is not a mapping, or its id or kind is invalid; unknown fields are
    faults too."""
    where = f"nodes[{i}]"
    if not isinstance(raw, Mapping):
        faults.append(f"{where}: must be a mapping")
        return None
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not _ID.fullmatch(node_id):
        faults.append(f"{where}: id must match {_ID.pattern}")
        return None
    where = f"node {node_id!r}"
    given = raw.get("kind", "task")
    kind = next((k for k in NodeKind if k.value == given), None)
    own_keys = _NODE_KEYS | (KIND_KEYS.get(kind, frozenset()) if kind else any_kind_keys())
    for key in sorted(set(raw) - _NODE_KEYS - any_kind_keys(), key=str):
        faults.append(f"{where}: unknown field {key!r}{_suggest(key, own_keys)}")
    if kind is None:
        kinds = [k.value for k in NodeKind
                 if k not in (NodeKind.LIMITER, NodeKind.CACHE)]  # not written
        faults.append(f"{where}: kind must be one of {kinds}{_suggest(given, kinds)}")
        return None
    kind_key_faults(raw, kind, where, faults)
    return node_id, kind, where

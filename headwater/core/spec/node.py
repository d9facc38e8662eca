"""One node of a workflow spec: its frozen definition (``NodeSpec``) and how one node's
document is read into it (``parse_node``): its id and kind first, then the fields every
node has, the fields of its work (``spec.fields``), and what its kind adds
(``spec.kinds``).

A node is read on its own, with the workflow's defaults; what ties nodes together (ids
unique, ``needs`` and ``on_error`` naming nodes that exist, no cycle, references
upstream) is the workflow's to check (``headwater.core.spec``). A child workflow's spec
is checked by the callable the workflow's parser passes in, so this module never
imports the parser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.core.caching import CacheSpec, parse_cache
from headwater.core.kinds.code.records import CodeSpec
from headwater.core.kinds.loop.records import LoopSpec
from headwater.core.kinds.schedule.cron import ScheduleSpec
from headwater.core.kinds.sleep.records import SleepSpec
from headwater.core.kinds.wait.records import WaitSpec
from headwater.core.limits import LimitSpec, parse_limits
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
    seconds,
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
)
from headwater.core.suggest import did_you_mean


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


_NODE_KEYS = frozenset({"id", "kind", "needs", "when", "on_error", "continue_on_error"})
"""The fields of every node (each kind's own: ``spec.kinds.KIND_KEYS``)."""


def parse_node(
    raw: Any, i: int, defaults: Defaults, faults: list[str],
    validate: Callable[[Any], list[str]],
) -> NodeSpec | None:
    """One node, or None when it has no valid id or kind (its faults appended in field
    order: id, unknown fields, kind, task, queue, needs, fan-out fields, timeouts, error
    policy, retry, condition, requirements, the kind's own fields).

    Args:
        raw: the node's document, as loaded from YAML/JSON.
        i: its position in ``nodes``, which names it in faults until its id is known.
        defaults: the workflow's defaults (``spec.fields.parse_defaults``).
        faults: where its faults are appended.
        validate: the faults of a child workflow's spec document (a ``workflow`` node's,
            a schedule's run): the spec's own parser, as submitted or as accepted.
    """
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


def suggest(word: Any, names: Any) -> str:
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
    if not isinstance(node_id, str) or not NODE_ID.fullmatch(node_id):
        faults.append(f"{where}: id must match {NODE_ID.pattern}")
        return None
    where = f"node {node_id!r}"
    given = raw.get("kind", "task")
    kind = next((k for k in NodeKind if k.value == given), None)
    own_keys = _NODE_KEYS | (KIND_KEYS.get(kind, frozenset()) if kind else any_kind_keys())
    for key in sorted(set(raw) - _NODE_KEYS - any_kind_keys(), key=str):
        faults.append(f"{where}: unknown field {key!r}{suggest(key, own_keys)}")
    if kind is None:
        kinds = [k.value for k in NodeKind
                 if k not in (NodeKind.LIMITER, NodeKind.CACHE)]  # not written
        faults.append(f"{where}: kind must be one of {kinds}{suggest(given, kinds)}")
        return None
    kind_key_faults(raw, kind, where, faults)
    return node_id, kind, where

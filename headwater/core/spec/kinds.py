"""The node kinds of a spec and what each kind adds (``KindParts``: the data of a wait,
sleep, workflow, loop, schedule or code node, from its unit's ``records.py``), the fields each
kind takes, the fan-out fields, and the ``when`` condition any node may carry. Each
kind's own parser is in its unit; ``parse_kind`` looks it up in ``KIND_PARSERS``.

Like ``spec.fields``, each parser appends what is wrong to ``faults`` (``"<where>:
<what>"``) and returns a usable value (or None), so ``spec.parse_spec`` reports every
fault of a spec at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from headwater.core.conditions import ConditionError, parse_condition
from headwater.core.kinds.code.records import CodeSpec
from headwater.core.kinds.loop.records import LoopSpec
from headwater.core.kinds.schedule.cron import ScheduleSpec
from headwater.core.kinds.sleep.records import SleepSpec
from headwater.core.kinds.wait.records import WaitSpec
from headwater.core.kinds.workflow.records import ChildSpec
from headwater.core.refs import Ref, parse_ref
from headwater.core.retry import RetryPolicy

__all__ = ["ChildSpec", "CodeSpec", "LoopSpec", "ScheduleSpec", "SleepSpec", "WaitSpec"]
"""The kinds' parts (each from its unit's records), re-exported for ``KindParts`` and
``NodeSpec``; the module's own names are public too."""

class NodeKind(StrEnum):
    """What a node does."""

    TASK = "task"  # run one registered task on a worker pool
    MAP = "map"  # run one task per item of a list; the fan-in keeps input order
    WAIT = "wait"  # wait for a named signal (per item with ``over``), up to its timeout
    SLEEP = "sleep"  # wait for a duration or until an instant, durably
    WORKFLOW = "workflow"  # run a child workflow (per item with ``over``)
    LOOP = "loop"  # a bounded agent loop: decide, call a tool, repeat
    SCHEDULE = "schedule"  # run a child workflow at each fire time of a cron expression
    CODE = "code"  # a @workflow function: its activations decide its steps as it runs
    LIMITER = "limiter"  # a limiter's own node (``headwater.core.limits``): never submitted
    CACHE = "cache"  # a cache's own node (``headwater.core.caching``): never submitted


@dataclass(frozen=True)
class KindParts:
    """What a node's kind adds to it (None where the kind has no such part)."""

    wait: WaitSpec | None = None
    sleep: SleepSpec | None = None
    child: ChildSpec | None = None
    loop: LoopSpec | None = None
    schedule: ScheduleSpec | None = None
    code: CodeSpec | None = None


@dataclass(frozen=True)
class Work:
    """The task settings of a node (a loop's tools default to them)."""

    queue: str
    retry: RetryPolicy
    timeout: float | None
    heartbeat_timeout: float


TASKLIKE_KEYS = frozenset({"task", "queue", "input", "retry", "timeout", "heartbeat_timeout"})
"""The fields of a node that runs a task (``task`` and ``map``; a loop's but ``task``)."""
REQUIRES_KEY = "requires"
"""The field of a ``task`` or ``map`` node naming the tags its worker must announce
(``headwater.core.selectors``)."""
KIND_KEYS: dict[NodeKind, frozenset[str]] = {}
"""The fields each kind takes besides those of every node (id, kind, needs, when, error
policy), from its unit's ``keys`` (the registry fills it)."""
TASK_KEY: dict[NodeKind, str | None] = {}
"""The field naming a node's task (a loop's is its decide task), from its unit's
``task_field`` (the registry fills it); absent: no task."""


def any_kind_keys() -> frozenset[str]:
    """Every field some kind takes."""
    return frozenset().union(*KIND_KEYS.values())


def kind_key_faults(raw: Mapping[str, Any], kind: NodeKind, where: str,
                    faults: list[str]) -> None:
    """A fault per field another kind takes but this one does not (``over`` and
    ``max_concurrency`` are judged by ``fan_out_fields``)."""
    for key in sorted(set(raw) & any_kind_keys() - KIND_KEYS[kind] - {"over", "max_concurrency"}):
        hint = (" (a loop names its task with 'decide:')"
                if key == "task" and kind is NodeKind.LOOP else "")
        faults.append(f"{where}: {key!r} does not apply to a {kind.value} node{hint}")



def fan_out_fields(raw: Mapping[str, Any], kind: NodeKind, where: str,
                   faults: list[str]) -> tuple[str | None, int | None]:
    """``(over, max_concurrency)``: a map needs ``over`` (a reference) and may bound its
    concurrency; a workflow node may have both, a wait ``over`` alone (every item waits
    at once); other kinds have neither."""
    over = raw.get("over")
    max_conc = raw.get("max_concurrency")
    if kind in (NodeKind.MAP, NodeKind.WAIT, NodeKind.WORKFLOW):
        if (over is not None or kind is NodeKind.MAP) and (
                not isinstance(over, str) or not isinstance(parse_ref(over), Ref)):
            faults.append(f"{where}: a {kind.value} needs 'over', a reference to a list "
                          "such as \"${nodes.<id>.output}\" or \"${input.<key>}\""
                          if kind is NodeKind.MAP else
                          f"{where}: 'over' must be a reference to a list")
        if kind is NodeKind.WAIT and max_conc is not None:
            faults.append(f"{where}: a wait has no max_concurrency (every item waits at once)")
        elif max_conc is not None and (type(max_conc) is not int or max_conc < 1):
            faults.append(f"{where}: max_concurrency must be a positive integer")
        elif max_conc is not None and over is None:
            faults.append(f"{where}: max_concurrency needs 'over'")
    elif over is not None or max_conc is not None:
        faults.append(f"{where}: 'over' and 'max_concurrency' belong to map nodes (and "
                      "'over' to wait and workflow nodes)")
    return (over if isinstance(over, str) else None,
            max_conc if type(max_conc) is int else None)


def parse_when(raw: Mapping[str, Any], where: str, faults: list[str]) -> str | None:
    """A node's ``when`` condition (its references are checked with the others')."""
    text = raw.get("when")
    if text is None:
        return None
    if not isinstance(text, str) or not text.strip():
        faults.append(f"{where}: when must be a condition (a string such as "
                      "'${nodes.a.output.ok} == true')")
        return None
    try:
        parse_condition(text)
    except ConditionError as e:
        faults.append(f"{where}: when: {text}: {e}")
        return None
    return text


KindParser = Callable[[Mapping[str, Any], str, Work, Callable[[Any], list[str]], list[str]],
                      KindParts]
"""What a kind adds to a node: ``(raw, where, work, validate, faults) -> KindParts`` (the
arguments of ``parse_kind``)."""


def no_parts(raw: Mapping[str, Any], where: str, work: Work,
             validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """The ``KindParser`` of a kind that adds nothing to a node (``task``, ``map``)."""
    return KindParts()


KIND_PARSERS: dict[NodeKind, KindParser] = {}
"""Node kind -> its parser, from its unit (``headwater/core/kinds/``; the registry fills
it)."""


def parse_kind(raw: Mapping[str, Any], kind: NodeKind, where: str, work: Work,
               validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    """What ``kind`` adds to the node ``raw``.

    Args:
        raw: the node's mapping.
        kind: its kind.
        where: names the node in faults.
        work: the node's task settings (a loop's tools default to them).
        validate: the faults of a child's spec document (``[]`` when it is valid).
        faults: appended to.

    Returns:
        The parts (those of other kinds None), by the kind's parser (``KIND_PARSERS``).
    """
    return KIND_PARSERS[kind](raw, where, work, validate, faults)


def signal_clash_faults(waits: list[tuple[str, WaitSpec]], faults: list[str]) -> None:
    """A signal waited for by two wait nodes is a fault: a signal names one wait."""
    first: dict[str, str] = {}
    for node_id, wait in waits:
        if not wait.signal:
            continue
        if wait.signal in first:
            faults.append(f"signal {wait.signal!r} is waited for by both "
                          f"{first[wait.signal]!r} and {node_id!r}; give each wait its own "
                          "signal")
        else:
            first[wait.signal] = node_id

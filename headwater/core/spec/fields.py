"""Field values of a workflow spec: seconds, flags, the workflow-level defaults, and a
node's work (task, queue, needs) and error policy, each checked with the fault named.

Each function appends what is wrong to ``faults`` (``"<where>: <what>"``) and returns a
usable placeholder, so ``spec.parse_spec`` can report every fault of a spec at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.ids import QUEUE_PATTERN
from headwater.core.retry import MAX_SECONDS, RetryPolicy, finite_number, parse_retry

NODE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
"""What a node id (and a wait's signal name) must match."""
DEFAULT_QUEUE = "cpu"
"""The worker pool of a node that names none."""
DEFAULT_HEARTBEAT_TIMEOUT = 30.0
"""Seconds: a running attempt with no report for this long is lost (every node has one,
so a worker that dies mid-task never leaves its task hanging)."""
MIN_HEARTBEAT_TIMEOUT = 1.0
"""Seconds: the least heartbeat timeout a spec may give (workers heartbeat every third
of it)."""
MAX_NAME_CHARS = 200
"""Longest workflow name, characters. The projection indexes it (``workflows_by_name``),
and PostgreSQL refuses an index row over 2704 bytes (btree version 4, ``BTMaxItemSize``
of an 8 KiB page): 200 characters of up to 4 UTF-8 bytes each stay well below that."""


@dataclass(frozen=True)
class Defaults:
    """Workflow-level defaults for node fields."""

    retry: RetryPolicy
    timeout: float | None
    heartbeat_timeout: float
    continue_on_error: bool


def workflow_name(value: Any, faults: list[str]) -> str:
    """The spec's ``name``: a non-empty string of at most ``MAX_NAME_CHARS`` characters;
    ``""`` when invalid (a fault appended)."""
    if not isinstance(value, str) or not value:
        faults.append("name: required, a non-empty string")
        return ""
    if len(value) > MAX_NAME_CHARS:
        faults.append(f"name: at most {MAX_NAME_CHARS} characters, got {len(value)}")
        return ""
    return value


def seconds(value: Any, default: float | None, where: str, faults: list[str],
            least: float = 0.0) -> float | None:
    """A positive, finite number of seconds (at least ``least`` and at most
    ``retry.MAX_SECONDS``), or ``default`` when absent or invalid (a fault appended)."""
    if value is None:
        return default
    if not finite_number(value) or not 0 < value <= MAX_SECONDS:
        faults.append(f"{where} must be a positive number of seconds, at most {MAX_SECONDS}")
        return default
    if value < least:
        faults.append(f"{where} must be at least {least:g} s (workers heartbeat every "
                      "third of it)")
        return default
    return float(value)


def flag(value: Any, where: str, faults: list[str], default: bool = False) -> bool:
    """``true`` or ``false``, or ``default`` when absent or invalid (a fault appended)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        faults.append(f"{where} must be true or false")
        return default
    return value


def parse_defaults(doc: Mapping[str, Any], faults: list[str]) -> Defaults:
    """The workflow-level defaults for node fields (faults appended in field order)."""
    return Defaults(
        retry=parse_retry(doc.get("retry"), RetryPolicy(), "retry", faults),
        timeout=seconds(doc.get("timeout"), None, "timeout", faults),
        heartbeat_timeout=seconds(doc.get("heartbeat_timeout"), DEFAULT_HEARTBEAT_TIMEOUT,
                                  "heartbeat_timeout", faults, MIN_HEARTBEAT_TIMEOUT)
        or DEFAULT_HEARTBEAT_TIMEOUT,
        continue_on_error=flag(doc.get("continue_on_error"), "continue_on_error", faults),
    )


def node_work(raw: Mapping[str, Any], where: str, faults: list[str],
              task_key: str | None = "task") -> tuple[str, str, tuple[str, ...]]:
    """``(task, queue, needs)`` of a node; an invalid value gives a fault and a
    placeholder (``""``, the default queue, no needs). ``task_key`` is the field that
    names the task (a loop's ``decide``), None for kinds without one (task ``""``)."""
    task = raw.get(task_key) if task_key else ""
    if task_key and (not isinstance(task, str) or not task):
        faults.append(f"{where}: {task_key}: required, a registered task name")
    queue = raw.get("queue", DEFAULT_QUEUE)
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        faults.append(f"{where}: queue must match {QUEUE_PATTERN.pattern}")
    needs = raw.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        faults.append(f"{where}: needs must be a list of node ids")
        needs = []
    return (task if isinstance(task, str) else "",
            queue if isinstance(queue, str) else DEFAULT_QUEUE,
            tuple(dict.fromkeys(needs)))


def error_policy(raw: Mapping[str, Any], where: str, defaults: Defaults,
                 faults: list[str]) -> tuple[str | None, bool]:
    """``(on_error, continue_on_error as given or defaulted)``; the two exclude each
    other when both are given on the node."""
    on_error = raw.get("on_error")
    if on_error is not None and not isinstance(on_error, str):
        faults.append(f"{where}: on_error must be the id of another node")
        on_error = None
    keep_going = flag(raw.get("continue_on_error"), f"{where}: continue_on_error", faults,
                      defaults.continue_on_error)
    if on_error is not None and raw.get("continue_on_error") is True:
        faults.append(f"{where}: on_error and continue_on_error exclude each other")
    return on_error, keep_going

"""What an activation's decision looks like, and why one is refused.

A decision is ``{"steps": [...], "chunks"?: [...]}`` (``chunks``: what a streaming
function yielded in this activation) and at most one of ``"finish": output``, ``"fail":
{type, message, traceback}`` and ``"continue_as_new": input``; each step is ``{"op":
"task" | "child" | "sleep" | "signal" | "patch", ...}`` with the fields of its op
(``STEP_KEYS``).
The SDK writes them (``headwater/workflows``); the core checks them before the
activation's success is recorded (a refused one fails the attempt with
``DECISION_ERROR``, and the activation is retried), so a worker speaking another
version of the SDK cannot put a malformed step into a journal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from headwater.core.caching import step_cache_fault
from headwater.core.ids import QUEUE_PATTERN
from headwater.core.instants import FIRST_MS, LAST_MS
from headwater.core.retry import RetryPolicy, parse_retry
from headwater.core.signals import id_fault

MAX_SECONDS = 10 ** 9
"""A step's ``seconds``, ``timeout`` and ``heartbeat_timeout`` are under this (about 31
years)."""
MAX_STEPS_PER_ACTIVATION = 10_000
"""The most steps one activation may issue (a ``gather`` of more is refused)."""
DECISION_ERROR = "WorkflowDecisionError"
"""The error type of an activation whose output is not a decision (a bug in the SDK, or
a worker that speaks another version of it)."""
STEP_KEYS = {
    "task": frozenset({"op", "step", "name", "input", "queue", "retry", "timeout",
                       "heartbeat_timeout", "cache"}),
    "child": frozenset({"op", "step", "name", "input", "workflow", "definition",
                        "definition_version", "retry", "timeout"}),
    "sleep": frozenset({"op", "step", "name", "seconds", "until_ms"}),
    "signal": frozenset({"op", "step", "name", "timeout"}),
    "patch": frozenset({"op", "step", "name"}),
}
"""The fields of a step, by its op (``step``: its number in the run's generation, which
must follow the journal's: ``steps_fault``)."""
_DECISION_KEYS = frozenset({"steps", "finish", "fail", "continue_as_new", "chunks"})
ENDS = ("finish", "fail", "continue_as_new")
"""The keys of a decision that ends the function's run (this generation's)."""


def decision_fault(decision: Any) -> str | None:
    """Why ``decision`` is not a well-formed decision, or None."""
    if not isinstance(decision, dict):
        return f"an activation returned {type(decision).__name__}, not a decision object"
    steps = decision.get("steps") or []
    checks: list[tuple[bool, Callable[[], str]]] = [
        (bool(set(decision) - _DECISION_KEYS), lambda: (
            f"a decision has no key {sorted(set(decision) - _DECISION_KEYS)[0]!r} "
            "(keys: steps, finish, fail, continue_as_new, chunks)")),
        (sum(k in decision for k in ENDS) > 1,
         lambda: "a decision has at most one of finish, fail and continue_as_new"),
        ("fail" in decision and not isinstance(decision["fail"], dict),
         lambda: "a decision's fail must be an object {type, message, traceback}"),
        (not isinstance(steps, list), lambda: "a decision's steps must be a list"),
        (not isinstance(decision.get("chunks", []), list),
         lambda: "a decision's chunks must be a list"),
        (isinstance(steps, list) and len(steps) > MAX_STEPS_PER_ACTIVATION, lambda: (
            f"an activation issued {len(steps)} steps at once, over the limit of "
            f"{MAX_STEPS_PER_ACTIVATION} (bound the gather with max_concurrency)")),
    ]
    for failed, message in checks:
        if failed:
            return message()
    for i, step in enumerate(steps):
        fault = step_fault(step)
        if fault:
            return f"step {i} of the decision: {fault}"
    return None


def numbering_fault(decision: Any, issued: int) -> str | None:
    """Why the numbers the decision gives its steps do not follow the ``issued`` steps
    before it (each step may say its number, ``step``; a missing one is taken as right),
    or None."""
    steps = decision.get("steps") if isinstance(decision, dict) else None
    for i, step in enumerate(steps if isinstance(steps, list) else ()):
        number = step.get("step", issued + i) if isinstance(step, dict) else issued + i
        if type(number) is not int or number != issued + i:  # not 1.0, not True
            return (f"step {i} of the decision says it is step {step.get('step')!r}, but "
                    f"the run has issued {issued + i} steps before it (a worker replaying "
                    "another history)")
    return None


def step_fault(step: Any) -> str | None:
    """Why one issued step is malformed, or None."""
    if not isinstance(step, dict) or step.get("op") not in STEP_KEYS:
        return f"a step is an object with op one of {', '.join(STEP_KEYS)}"
    op, name = step["op"], step.get("name")
    extra = sorted(set(step) - STEP_KEYS[op])
    if extra:
        return f"a {op} step has no field {extra[0]!r}"
    if (op != "sleep" or name is not None) and (
            not isinstance(name, str) or id_fault("name", name)):
        return (f"a {op} step needs a name (a string of at most 200 characters): "
                f"{id_fault('its name', name)}")
    where = f"{op} step {name}" if op != "sleep" else "sleep step"
    return _op_fault(where, step) or _retry_fault(step.get("retry"), where)


def _op_fault(where: str, step: dict[str, Any]) -> str | None:
    """What is wrong with the fields of a step's op (``where``: the step, as a message
    names it), or None."""
    op = step["op"]
    if op == "task" and not (isinstance(step.get("queue"), str)
                             and QUEUE_PATTERN.fullmatch(step["queue"])):
        return f"{where}: queue {step.get('queue')!r} must match {QUEUE_PATTERN.pattern}"
    if op == "task" and step_cache_fault(step.get("cache")):
        return f"{where}: {step_cache_fault(step.get('cache'))}"
    if op == "child" and not isinstance(step.get("workflow"), dict):
        return f"{where}: workflow must be the child's spec document"
    if op == "signal" and ("/" in step["name"] or step["name"] in (".", "..")):
        return (f"{where}: a signal's name must not hold / nor be . or .. (POST "
                "/v1/workflows/{id}/signals/{name} could never send it)")
    return _time_fault(where, step)


def _time_fault(where: str, step: dict[str, Any]) -> str | None:
    """What is wrong with a step's durations, or with a sleep's end, or None."""
    for key in ("seconds", "timeout", "heartbeat_timeout"):
        value = step.get(key)
        if value is not None and not (_number(value) and 0 <= value < MAX_SECONDS):
            return (f"{where}: {key} must be a number of seconds from 0 to under "
                    f"{MAX_SECONDS:.0e}, not {value!r}")
    if step["op"] != "sleep":
        return None
    until = step.get("until_ms")
    if until is not None and not (isinstance(until, int) and not isinstance(until, bool)
                                  and FIRST_MS <= until <= LAST_MS):
        return (f"{where}: until_ms must be a whole number of ms from {FIRST_MS} to {LAST_MS} "
                f"(years 1 to 9999), not {until!r}")
    if step.get("seconds") is None and until is None:
        return "a sleep step needs seconds or until_ms"
    return None


def _retry_fault(retry: Any, where: str) -> str | None:
    """What ``parse_retry`` finds wrong with a step's retry policy, or None."""
    if retry is None:
        return None
    faults: list[str] = []
    parse_retry(retry, RetryPolicy(), f"{where}: retry", faults)
    return faults[0] if faults else None


def _number(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, int | float)
            and math.isfinite(value))

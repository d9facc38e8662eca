"""State-machine tables: ``sleep`` nodes, by duration and until an instant.

The shape is A -> S -> B. ``T0`` (1,000,000 ms) is 1970-01-01T00:16:40Z, so the instants
below are written around it.
"""

from __future__ import annotations

from typing import Any

import golden_codec as gc
import pytest
from machine_harness import (
    T0,
    Case,
    cancel,
    check_case,
    fired,
    has,
    ok,
    replay,
    spec,
    submit,
    task,
)

STARTED_AT = T0 + 100  # when ok("a") arrives
AT_1200 = "1970-01-01T00:20:00Z"  # 1,200,000 ms
AT_1200_PARIS = "1970-01-01T01:20:00.000+01:00"  # the same instant
PAST = "1969-12-31T23:59:59Z"  # -1,000 ms


def shape(**sleep: Any) -> dict[str, Any]:
    return spec(task("a"), {"id": "s", "kind": "sleep", "needs": ["a"], **sleep},
                task("b", "s", input={"slept": "${nodes.s.output}"}))


BY_DURATION = shape(duration=3)
UNTIL = shape(until=AT_1200)
UNTIL_REF = shape(until="${input.at}")
AFTER_A = [ok("a", "A")]
WOKE = [("TimerFired", {}), ("NodeFinished", {"node": "s", "status": "succeeded"}),
        ("TaskDispatched", {"node": "b", "input": {"slept": None}})]

CASES = [
    Case("a sleep by duration wakes duration after its start: its timer is armed",
         BY_DURATION, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("SleepStarted", {"node": "s", "wake_at_ms": STARTED_AT + 3000})],
         state={"nodes.s.status": "running", "timers.sleep:s.fire_at_ms": STARTED_AT + 3000,
                "timers.sleep:s.attempt": 0, "timers.sleep:s.index": None}),
    Case("an early firing changes nothing",
         BY_DURATION, given=AFTER_A, when=fired("sleep:s", STARTED_AT + 2999), events=[]),
    Case("the timer wakes it: it succeeds with null, B runs",
         BY_DURATION, given=AFTER_A, when=fired("sleep:s", STARTED_AT + 3000), events=WOKE,
         state={"timers": {}, "outputs.s": None}),
    Case("a second firing after it woke changes nothing",
         BY_DURATION, given=[*AFTER_A, fired("sleep:s", STARTED_AT + 3000)],
         when=fired("sleep:s", STARTED_AT + 3001), events=[]),
    Case("until a literal instant",
         UNTIL, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("SleepStarted", {"wake_at_ms": 1_200_000})],
         state={"timers.sleep:s.fire_at_ms": 1_200_000}),
    Case("until a literal instant, woken",
         UNTIL, given=AFTER_A, when=fired("sleep:s", 1_200_000), events=WOKE),
    Case("until an instant in the past: it succeeds at once, no timer",
         shape(until=PAST), given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {"node": "a"}),
                 ("SleepStarted", {"wake_at_ms": -1000}),
                 ("NodeFinished", {"node": "s", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b", "input": {"slept": None}})],
         state={"timers": {}}),
    Case("until a reference, resolved at start (any UTC offset)",
         UNTIL_REF, input={"at": AT_1200_PARIS}, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("SleepStarted", {"wake_at_ms": 1_200_000})]),
    Case("until a reference to a past instant: at once",
         UNTIL_REF, input={"at": PAST}, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}), ("SleepStarted", {}),
                 ("NodeFinished", {"node": "s", "status": "succeeded"}),
                 ("TaskDispatched", {"node": "b"})]),
    Case("until a reference that gives no instant: the sleep fails",
         UNTIL_REF, input={"at": "tomorrow"}, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("NodeFinished", {"node": "s", "status": "failed",
                                   "error": has("sleep s: until: ${input.at} gave 'tomorrow'",
                                                "RFC 3339")}),
                 ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})]),
    Case("until a reference that cannot be resolved: the sleep fails",
         UNTIL_REF, input={}, given=[], when=ok("a", "A"),
         events=[("TaskSucceeded", {}), ("NodeFinished", {}),
                 ("NodeFinished", {"node": "s", "status": "failed",
                                   "error": has("no key 'at'")}),
                 ("NodeFinished", {"node": "b", "status": "upstream_failed"}),
                 ("WorkflowFailed", {})]),
    Case("a cancel while sleeping drops the timer",
         BY_DURATION, given=AFTER_A, when=cancel(),
         events=[("NodeFinished", {"node": "s", "status": "cancelled"}),
                 ("NodeFinished", {"node": "b", "status": "cancelled"}),
                 ("WorkflowCancelled", {})],
         state={"timers": {}}),
    Case("a root sleep starts with the workflow",
         spec({"id": "s", "kind": "sleep", "duration": 0.25}), submit=False, given=[],
         when=submit(spec({"id": "s", "kind": "sleep", "duration": 0.25})),
         events=[("WorkflowAccepted", {}), ("SleepStarted", {"wake_at_ms": T0 + 250})]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sleep_table(case: Case) -> None:
    result = check_case(case)
    assert gc.state_doc(replay(result.history)) == gc.state_doc(result.state)

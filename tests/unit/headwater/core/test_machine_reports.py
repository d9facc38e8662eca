"""State-machine tables: progress, checkpoints and streamed output chunks."""

from __future__ import annotations

import pytest
from machine_harness import (
    T0,
    WF,
    Case,
    check_case,
    fail,
    fired,
    ok,
    run,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev

RETRY = {"max_attempts": 3, "backoff_base": 1}
ONE = spec(task("a", retry=RETRY))


def saved(state: object, attempt: int = 1, at: int = T0 + 60) -> ev.TaskCheckpointed:
    return ev.TaskCheckpointed(WF, "a", None, attempt, at, state)


def chunk(seq: int, value: object, attempt: int = 1) -> ev.TaskOutputStreamed:
    return ev.TaskOutputStreamed(WF, "a", None, attempt, T0 + 70 + seq, seq, value)


CASES = [
    Case("progress is recorded and shows in the task's state",
         ONE, given=[started("a")],
         when=ev.TaskProgressed(WF, "a", None, 1, T0 + 60, 0.25, "a quarter"),
         events=[("TaskProgressed", {"fraction": 0.25})],
         state={"tasks.a.progress": 0.25, "tasks.a.message": "a quarter"}),
    Case("a checkpoint is recorded and kept on the task",
         ONE, given=[started("a")], when=saved({"done": 3}),
         events=[("TaskCheckpointed", {"checkpoint": {"done": 3}})],
         state={"tasks.a.checkpoint": {"done": 3}}),
    Case("the next attempt is dispatched with the last checkpoint",
         ONE, given=[started("a"), saved({"done": 3}), saved({"done": 5}), fail("a")],
         when=fired("retry:a:2", T0 + 2000),
         events=[("TimerFired", {}),
                 ("TaskDispatched", {"attempt": 2, "checkpoint": {"done": 5}})],
         state={"tasks.a.checkpoint": {"done": 5}, "tasks.a.attempt": 2}),
    Case("a checkpoint of a finished attempt records nothing",
         ONE, given=[started("a"), fail("a")], when=saved({"late": True}), events=[]),
    Case("a streamed chunk is recorded",
         ONE, given=[started("a")], when=chunk(0, "Hel"),
         events=[("TaskOutputStreamed", {"chunk_seq": 0, "chunk": "Hel"})],
         state={"tasks.a.chunks": 1}),
    Case("a redelivered chunk records nothing",
         ONE, given=[started("a"), chunk(0, "Hel"), chunk(1, "lo")], when=chunk(1, "lo"),
         events=[]),
    Case("a chunk of an older attempt records nothing",
         ONE, given=[started("a"), fail("a"), fired("retry:a:2", T0 + 2000)],
         when=chunk(0, "old"), events=[]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reports_table(case: Case) -> None:
    check_case(case)


def test_first_dispatch_has_no_checkpoint_and_chunks_restart_per_attempt() -> None:
    result = run([submit(ONE), started("a"), chunk(0, "x"), fail("a"),
                  fired("retry:a:2", T0 + 2000), started("a", attempt=2, at=T0 + 2001),
                  chunk(0, "y", attempt=2), ok("a", ["y"], attempt=2)])
    assert result.state is not None
    first, second = result.bodies(ev.TaskDispatched)
    assert first.checkpoint is None and second.checkpoint is None
    assert [c.chunk for c in result.bodies(ev.TaskOutputStreamed)] == ["x", "y"]
    assert result.state.outputs == {"a": ["y"]}

"""``@workflow(deadline=...)``: the run's spec carries it, a bad one is refused when the
function is decorated, and ``headwater.testing`` fires it (time skipped): a function
that sleeps past its deadline fails with ``DeadlineExceeded``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from headwater import WorkflowContext, workflow
from headwater.errors import WorkflowFailed, WorkflowRegistrationError
from headwater.testing import Environment
from headwater.workflows.decorator import forget, info_of

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@workflow(name="wd.bounded", deadline="1h")
async def bounded(wf: WorkflowContext, hours: float) -> str:
    await wf.sleep(hours * 3600)
    return "woke"


def test_the_spec_of_a_run_carries_the_deadline() -> None:
    info = info_of(bounded)
    assert info is not None and info.deadline == "1h"
    assert info.spec()["deadline"] == "1h"
    assert "deadline" not in (info_of(_plain()) or info).spec()


def _plain() -> object:
    forget("wd.plain")

    @workflow(name="wd.plain")
    async def plain(wf: WorkflowContext) -> None:
        return None

    return plain


def test_a_bad_deadline_is_refused_when_decorating() -> None:
    with pytest.raises(WorkflowRegistrationError, match=r"deadline: .*365 days"):
        @workflow(name="wd.bad", deadline="400d")
        async def bad(wf: WorkflowContext) -> None:
            return None


async def test_a_run_within_its_deadline_ends_and_one_past_it_fails() -> None:
    assert await Environment(now=START).run(bounded, hours=0.5) == "woke"
    env = Environment(now=START)
    with pytest.raises(WorkflowFailed, match=re.escape(
            "DeadlineExceeded: the run's deadline 2026-12-01T10:00:00.000Z passed")):
        await env.run(bounded, hours=2)
    (run,) = env.states
    assert [e.type for e in env.history(run)][:2] == ["WorkflowAccepted", "DeadlineSet"]

"""A submission's ``priority`` at the edge: 0-9 or a name, else 422; set in the spec the
run records (over a definition's default) and in what its id's hash covers; shown in the
run's document; a schedule's in the runs it starts; a queue's backlog per band."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from headwater.topics import Topics
from services.gateway.queues.figures import Lag, priority_views
from services.gateway.runs.facts import priority_of
from services.gateway.runs.models import SubmitRequest
from services.gateway.runs.submit import _given
from services.gateway.schedules.generations import settings_of

SPEC: dict[str, Any] = {"name": "w", "nodes": [{"id": "a", "task": "t.a"}]}


@pytest.mark.parametrize(("given", "recorded"), [(0, 0), (9, 9), ("high", 8), ("low", 2)])
def test_a_priority_is_set_in_the_spec_as_a_number(given: Any, recorded: int) -> None:
    request = SubmitRequest(workflow=SPEC, priority=given)
    assert _given(request).doc == {**SPEC, "priority": recorded}
    by_name = SubmitRequest(definition="d", priority=given)
    assert _given(by_name).doc == {"definition": "d", "priority": recorded}


def test_without_one_the_request_hashes_as_before() -> None:
    assert _given(SubmitRequest(workflow=SPEC)).doc == SPEC
    assert _given(SubmitRequest(definition="d")).doc == {"definition": "d"}
    assert SubmitRequest(definition="d").prioritized({"p": 1}) == {"p": 1}


@pytest.mark.parametrize("bad", [10, -1, "urgent", "8", True, 2.5])
def test_anything_else_is_refused(bad: Any) -> None:
    with pytest.raises(ValidationError):
        SubmitRequest(workflow=SPEC, priority=bad)


def test_the_runs_document_shows_its_priority() -> None:
    assert priority_of({**SPEC, "priority": "high"}) == 8
    assert priority_of({**SPEC, "priority": 1}) == 1
    assert priority_of(SPEC) == 5 and priority_of(None) == 5
    assert priority_of({**SPEC, "priority": "bogus"}) == 5


def test_a_schedules_priority_tells_two_generations_apart() -> None:
    def spec(workflow: dict[str, Any]) -> dict[str, Any]:
        return {"name": "schedule:s", "nodes": [{"id": "fire", "cron": "* * * * *",
                                                  "workflow": workflow}]}
    assert settings_of(spec(SPEC)) == settings_of(spec(dict(SPEC)))
    assert settings_of(spec(SPEC)) != settings_of(spec({**SPEC, "priority": 8}))


def test_a_queues_backlog_is_shown_per_priority_highest_first() -> None:
    topics = Topics("p")
    lag = Lag(45, None, ((topics.tasks("q"), 40), (topics.priority("q", 8), 3),
                         (topics.priority("q", 2), 0), (topics.needs("q", ["gpu"]), 2)))
    assert list(priority_views(topics, lag).items()) == [("8", 3), ("5", 42)]
    assert priority_views(topics, Lag(7)) == {"5": 7}
    assert priority_views(topics, Lag(0)) == {}

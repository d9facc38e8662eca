"""Domain records (``headwater.events``) and the names they use (``headwater.topics``)."""

from __future__ import annotations

import dataclasses

import pytest

from headwater.core import events as ev
from headwater.core.ids import dispatch_id, task_key
from headwater.topics import Topics

AT = 1_000


def test_dispatch_id_names_workflow_task_and_attempt() -> None:
    task = ev.TaskDispatched("wf", "extract", 12, 3, "t", "cpu", {}, AT)
    assert task.dispatch_id == "wf/extract[12]/3"
    plain = ev.TaskDispatched("wf", "a", None, 1, "t", "cpu", None, AT)
    assert plain.dispatch_id == "wf/a/1" == dispatch_id("wf", "a", None, 1)
    assert task_key("m", 0) == "m[0]" and task_key("m", None) == "m"


@pytest.mark.parametrize(("record", "key"), [
    (ev.TaskSucceeded("wf", "m", 4, 1, AT), "m[4]"),
    (ev.TaskFailed("wf", "a", None, 2, AT), "a"),
    (ev.TaskStarted("wf", "m", 0, 1, AT), "m[0]"),
    (ev.TaskProgressed("wf", "a", None, 1, AT), "a"),
    (ev.TaskDispatched("wf", "m", 9, 1, "t", "q", None, AT), "m[9]"),
    (ev.TimerScheduled("wf", "retry:m[2]:2", AT + 5, "m", 2, 2, AT), "m[2]"),
])
def test_report_key(record: ev.Report | ev.TaskDispatched | ev.TimerScheduled, key: str) -> None:
    assert task_key(record.node, record.index) == key


BODIES: list[tuple[ev.Body, bool]] = [
    (ev.WorkflowAccepted("wf", AT, {}, None), False),
    (ev.TaskDispatched("wf", "a", None, 1, "t", "cpu", None, AT), False),
    (ev.TaskSucceeded("wf", "a", None, 1, AT), False),
    (ev.TaskFailed("wf", "a", None, 1, AT), False),
    (ev.TimerScheduled("wf", "t", AT, "a", None, 2, AT), False),
    (ev.NodeFinished("wf", "a", "failed", AT), False),
    (ev.WorkflowSucceeded("wf", AT), True),
    (ev.WorkflowFailed("wf", AT, "x"), True),
    (ev.WorkflowCancelled("wf", AT), True),
]


@pytest.mark.parametrize(("body", "terminal"), BODIES, ids=[type(b).__name__ for b, _ in BODIES])
def test_history_event_type_and_terminal(body: ev.Body, terminal: bool) -> None:
    event = ev.HistoryEvent("wf", 7, body)
    assert event.type == type(body).__name__
    assert event.terminal is terminal


def test_records_are_frozen_with_defaults() -> None:
    failed = ev.TaskFailed("wf", "a", None, 1, AT)
    assert (failed.error, failed.error_type, failed.retryable) == ("", "", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        failed.attempt = 2  # type: ignore[misc]
    assert ev.WorkflowSubmitted("wf", {}, None, AT).tenant is None
    assert ev.TaskProgressed("wf", "a", None, 1, AT).fraction == 0.0


def test_topic_names_follow_the_prefix() -> None:
    topics = Topics("run-42")
    assert topics.inputs == ("run-42.submissions", "run-42.control", "run-42.reports")
    assert topics.events == "run-42.events" and topics.dlq == "run-42.dlq"
    assert topics.tasks("gpu") == "run-42.tasks.gpu"
    assert topics.worker_group("gpu") == "run-42-worker-gpu"
    assert topics.coordinator_app_id == "run-42-coordinator"
    assert Topics().submissions == "headwater.submissions"

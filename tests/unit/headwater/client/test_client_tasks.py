"""``Client.task``, ``Client.node_tasks`` (and ``AsyncClient``'s) ask for a run's tasks
and read them into views, and ``result`` raises a failed run's ``WorkflowFailed`` with the
attempt that failed it, its message ending with the traceback's last lines (against
``httpx.MockTransport``)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, NodeTasks, Task

TB = ('Traceback (most recent call last):\n  File "/app/t.py", line 9, in job\n'
      "    return split_it(value)\n"
      '  File "/app/t.py", line 4, in split_it\n    return value.split(",")\n'
      "AttributeError: 'int' object has no attribute 'split'\n")
FAILURE = {"node": "m", "index": 4, "attempt": 3, "error_type": "AttributeError",
           "message": "'int' object has no attribute 'split'", "traceback": TB}
FAILED = {"id": "wf-1", "name": "n", "status": "failed", "seq": 9, "output": None,
          "error": "m[4] failed after 3 attempts: AttributeError: 'int' object has no "
                   "attribute 'split'", "failure": FAILURE}
ATTEMPT = {"attempt": 1, "status": "failed", "worker": "w-1", "dispatched_at": "t0",
           "started_at": "t1", "finished_at": "t2", "error": FAILURE["message"],
           "error_type": "AttributeError", "traceback": TB}
TASK = {"workflow_id": "wf-1", "node": "m", "index": 4, "key": "m[4]", "task": "t.m",
        "queue": "cpu", "status": "failed", "attempt": 1, "input": {"value": 3},
        "output": None, "attempts": [ATTEMPT],
        "links": {"self": "/v1/workflows/wf-1/tasks/m/4",
                  "logs": "/v1/workflows/wf-1/tasks/m/4/logs"}}
ROW = {"key": "m[4]", "node": "m", "index": 4, "attempt": 1, "status": "failed",
       "error": FAILURE["message"], "error_type": "AttributeError", "traceback": TB}
PAGE = {"workflow_id": "wf-1", "node": "m", "total": 7, "tasks": [ROW], "next": 4}


class Answers:
    """Answers each path with its document; records the requests."""

    def __init__(self, docs: dict[str, Any]) -> None:
        self.docs = docs
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return httpx.Response(200, json=self.docs[request.url.path])


def test_a_task_is_asked_by_node_and_index_and_read_with_its_attempts() -> None:
    answers = Answers({"/v1/workflows/wf-1/tasks/m/4": TASK, "/v1/workflows/wf-1/tasks/a/-":
                       {**TASK, "node": "a", "index": None}})
    with Client("http://gw", retries=0, transport=httpx.MockTransport(answers)) as hw:
        task = hw.task("wf-1", "m", 4)
        plain = hw.task("wf-1", "a")
        with pytest.raises(ValueError):
            hw.task("wf-1", "m", -1)
    assert isinstance(task, Task) and (task.node, task.index, task.input) == ("m", 4, {"value": 3})
    assert [(a.attempt, a.status, a.worker, a.error_type) for a in task.attempts] == [
        (1, "failed", "w-1", "AttributeError")]
    assert task.attempts[0].traceback == TB and task.raw["links"]["logs"].endswith("/logs")
    assert plain.index is None


def test_a_nodes_tasks_are_paged_after_an_index() -> None:
    answers = Answers({"/v1/workflows/wf-1/nodes/m/tasks": PAGE})
    with Client("http://gw", retries=0, transport=httpx.MockTransport(answers)) as hw:
        page = hw.node_tasks("wf-1", "m", after=2, limit=1, status="failed")
        hw.node_tasks("wf-1", "m")
    assert isinstance(page, NodeTasks) and (page.total, page.next) == (7, 4)
    assert [(t.index, t.error_type, t.traceback) for t in page.tasks] == [(4, "AttributeError",
                                                                          TB)]
    assert dict(answers.seen[0].url.params) == {"limit": "1", "after": "2", "status": "failed"}
    assert dict(answers.seen[1].url.params) == {"limit": "100"}


def test_the_async_client_asks_the_same() -> None:
    answers = Answers({"/v1/workflows/wf-1/tasks/m/4": TASK,
                       "/v1/workflows/wf-1/nodes/m/tasks": PAGE})

    async def both() -> tuple[Task, NodeTasks]:
        async with AsyncClient("http://gw", retries=0,
                               transport=httpx.MockTransport(answers)) as hw:
            return await hw.task("wf-1", "m", 4), await hw.node_tasks("wf-1", "m", after=2)

    task, page = asyncio.run(both())
    assert task.attempts[0].traceback == TB and page.tasks[0].index == 4


def test_a_failed_run_raises_with_the_attempt_that_failed_it() -> None:
    answers = Answers({"/v1/workflows/wf-1": FAILED})
    with Client("http://gw", retries=0, transport=httpx.MockTransport(answers)) as hw:
        workflow = hw.get("wf-1")
        with pytest.raises(errors.WorkflowFailed) as raised:
            hw.result("wf-1")
    failure = raised.value.failure
    assert failure == errors.TaskFailure("m", 4, 3, "AttributeError", FAILURE["message"], TB)
    assert workflow.failure == failure
    text = str(raised.value)
    assert text.startswith(f"workflow wf-1 failed: {FAILED['error']}\n")
    assert text.endswith('    return value.split(",")\n'
                         "AttributeError: 'int' object has no attribute 'split'")
    assert "Traceback (most recent call last)" in text  # 7 lines: all of it


def test_the_message_keeps_the_last_lines_of_a_long_traceback() -> None:
    long = "Traceback (most recent call last):\n" + "".join(
        f'  File "t.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(50)) + "E: x\n"
    error = errors.WorkflowFailed("wf-1", "boom", errors.TaskFailure("a", None, 1, "E", "x", long))
    lines = str(error).splitlines()
    assert lines[0] == "workflow wf-1 failed: boom" and lines[-1] == "E: x"
    assert len(lines) == 9 and "line 49, in f49" in lines[-3]


def test_a_run_without_failure_or_traceback_says_its_error_alone() -> None:
    assert str(errors.WorkflowFailed("wf-1", "bad spec")) == "workflow wf-1 failed: bad spec"
    timed_out = errors.TaskFailure("a", None, 2, "TimeoutError", "timed out", "")
    assert str(errors.WorkflowFailed("wf-1", "a timed out", timed_out)) == (
        "workflow wf-1 failed: a timed out")
    assert errors.TaskFailure.from_document(None) is None
    assert errors.TaskFailure.from_document({"node": "a", "index": None, "attempt": None,
                                             "message": "m"}) == errors.TaskFailure(
        "a", None, None, "", "m", "")

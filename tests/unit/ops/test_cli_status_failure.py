"""``headwater status`` of a failed run shows the attempt that failed it, its error type,
message and traceback (``--no-traceback``: a line instead), and each node's failed count
as the document gives it: against a real HTTP server standing in for the gateway
(``conftest.Gateway``)."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
RUN_ID = "wf-failed-1"
TB = ('Traceback (most recent call last):\n  File "/app/jobs.py", line 9, in job\n'
      "    return split_it(value)\n"
      '  File "/app/jobs.py", line 4, in split_it\n    return value.split(",")\n'
      "AttributeError: 'int' object has no attribute 'split'\n")
ERROR = "m[4] failed after 3 attempts: AttributeError: 'int' object has no attribute 'split'"


def failed_doc(**failure: Any) -> dict[str, Any]:
    node = {"id": "m", "kind": "map", "status": "failed", "total": 6, "succeeded": 5,
            "failed": 1, "error": ERROR}
    return {"id": RUN_ID, "name": "jobs", "status": "failed", "seq": 30, "nodes": [node],
            "tasks": [], "output": None, "error": ERROR,
            "failure": {"node": "m", "index": 4, "attempt": 3,
                        "error_type": "AttributeError",
                        "message": "'int' object has no attribute 'split'", "traceback": TB,
                        **failure}}


TASK = {"workflow_id": RUN_ID, "node": "m", "index": 4, "task": "jobs.split", "queue": "cpu",
        "status": "failed", "input": {"value": 42}, "output": None, "attempts": []}


def test_status_of_a_failed_run_prints_the_failing_attempt_and_its_traceback(
        gateway: Gateway) -> None:
    gateway.answers = [(200, failed_doc()), (200, TASK)]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url],
                           env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert ("failed at m[4], attempt 3: AttributeError: 'int' object has no attribute "
            "'split'") in out
    assert 'File "/app/jobs.py", line 4, in split_it' in out
    assert '    return value.split(",")' in out
    assert "AttributeError: 'int' object has no attribute 'split'\nits input: " in out
    assert 'its input: {"value": 42}' in out  # what the failed attempt was given
    assert "(headwater task wf-failed-1 m 4 shows every attempt)" in out
    row = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("m "))
    assert " 5/6 " in row and " 1 " in row, out  # succeeded 5 of 6, failed 1


def test_no_traceback_says_how_to_see_it(gateway: Gateway) -> None:
    gateway.answers = [(200, failed_doc()), (200, TASK)]
    result = runner.invoke(app, ["status", RUN_ID, "--no-traceback", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "failed at m[4], attempt 3" in result.stdout
    assert "split_it" not in result.stdout
    assert "(a traceback of 6 lines: --traceback shows it)" in result.stdout


def test_a_node_that_failed_without_an_attempt_is_named_alone(gateway: Gateway) -> None:
    gateway.answers = [(200, failed_doc(index=None, attempt=None, error_type="",
                                        message="a: ${input.x}: no key 'x'", traceback=""))]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "failed at m: a: ${input.x}: no key 'x'" in result.stdout
    assert "Traceback" not in result.stdout


def test_status_counts_a_nodes_cached_and_held_tasks(gateway: Gateway) -> None:
    node = {"id": "m", "kind": "map", "status": "running", "total": 6, "succeeded": 4,
            "running": 0, "failed": 0, "held": 2, "cached": 3, "error": ""}
    gateway.answers = [(200, {"id": "wf-c", "name": "jobs", "status": "running", "seq": 9,
                              "nodes": [node], "tasks": [], "output": None, "error": None})]
    result = runner.invoke(app, ["status", "wf-c", "--gateway", gateway.url],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines()
               if line.lstrip("│ ").startswith("m "))
    assert "(2 held)" in row and "4/6 (3 cached)" in row, result.stdout

"""``headwater task`` (one task's input, output and attempts), ``headwater rerun`` (the
request it sends, the new run it prints) and ``status``'s rerun links, against a real
HTTP server standing in for the gateway (``conftest.Gateway``)."""

from __future__ import annotations

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
TB = "Traceback (most recent call last):\n  File \"/app/t.py\", line 3, in f\nKeyError: 'x'\n"
TASK = {"workflow_id": "wf-1", "node": "m", "index": 2, "task": "t.f", "queue": "cpu",
        "status": "failed", "input": {"page": 42}, "output": None, "attempts": [
            {"attempt": 1, "status": "failed", "worker": "worker-cpu-1-77",
             "dispatched_at": "2026-12-05T10:00:00+00:00",
             "started_at": "2026-12-05T10:00:01+00:00",
             "finished_at": "2026-12-05T10:00:02+00:00", "error": "'x'",
             "error_type": "KeyError", "traceback": TB}]}


def test_task_prints_its_input_its_attempts_and_their_tracebacks(gateway: Gateway) -> None:
    gateway.answers = [(200, TASK)]
    result = runner.invoke(app, ["task", "wf-1", "m", "2", "--gateway", gateway.url],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert gateway.requests[0][:2] == ("GET", "/v1/workflows/wf-1/tasks/m/2")
    assert "m[2] of wf-1: task t.f on queue cpu, failed" in result.stdout
    assert 'input: {"page": 42}' in result.stdout
    assert "worker-cpu-1-77" in result.stdout and "KeyError: 'x'" in result.stdout
    assert "attempt 1:" in result.stdout and 'File "/app/t.py", line 3, in f' in result.stdout


def test_task_names_where_a_cached_output_came_from_and_prints_a_large_one_as_its_link(
        gateway: Gateway) -> None:
    ref = {"$blob": "sha256:" + "c" * 64, "bytes": 4_000_002,
           "href": "/v1/workflows/wf-2/blobs/sha256:" + "c" * 64}
    gateway.answers = [(200, {**TASK, "workflow_id": "wf-2", "status": "succeeded",
                              "input": None, "output": ref, "attempts": [
                                  {"attempt": 1, "status": "succeeded", "worker": "",
                                   "dispatched_at": None, "started_at": None,
                                   "finished_at": "2026-12-05T10:00:02+00:00", "error": "",
                                   "error_type": "", "traceback": "",
                                   "cached": {"workflow_id": "wf-1", "node": "m",
                                              "index": 2, "attempt": 1}}]})]
    result = runner.invoke(app, ["task", "wf-2", "m", "2", "--gateway", gateway.url],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert gateway.requests == gateway.requests[:1]  # the blob is not fetched
    assert '"bytes": 4000002' in result.stdout and ref["href"] in result.stdout
    assert ("attempt 1 was not run: its output is the cache's, computed by wf-1 m[2] "
            "attempt 1") in result.stdout


def test_task_of_a_node_without_index_asks_for_the_dash(gateway: Gateway) -> None:
    gateway.answers = [(200, {**TASK, "index": None, "status": "succeeded", "output": [1],
                              "attempts": []})]
    result = runner.invoke(app, ["task", "wf-1", "m", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert gateway.requests[0][1] == "/v1/workflows/wf-1/tasks/m/-"
    assert "output: [1]" in result.stdout


def test_rerun_sends_the_new_input_and_prints_the_new_run(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "wf-2", "status": "accepted", "rerun_of": "wf-1",
                              "reset": None, "links": {}})]
    result = runner.invoke(app, ["rerun", "wf-1", "--input", '{"pages": ["a"]}', "--id",
                                 "wf-2", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    method, path, body = gateway.requests[0]
    assert (method, path) == ("POST", "/v1/workflows/wf-1/rerun")
    assert body == {"id": "wf-2", "input": {"pages": ["a"]}}
    assert "workflow wf-2 accepted: a rerun of wf-1 from what failed" in result.stdout


def test_rerun_from_a_node_is_a_reset_and_keeps_the_input_when_none_is_given(
        gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "wf-3", "status": "accepted", "rerun_of": "wf-1",
                              "reset": "b", "links": {}})]
    result = runner.invoke(app, ["rerun", "wf-1", "--from", "b", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    method, path, body = gateway.requests[0]
    assert (method, path) == ("POST", "/v1/workflows/wf-1/reset")
    assert body["node"] == "b" and "input" not in body and body["id"].startswith("wf-")


def test_a_reset_may_refresh_the_cache(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "wf-4", "status": "accepted", "rerun_of": "wf-1",
                              "reset": "b", "links": {}})]
    result = runner.invoke(app, ["rerun", "wf-1", "--from", "b", "--refresh-cache",
                                 "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    _, path, _ = gateway.requests[0]
    assert path == "/v1/workflows/wf-1/reset?cache=refresh"


def test_a_refused_rerun_says_why(gateway: Gateway) -> None:
    gateway.answers = [(409, {"type": "about:blank", "title": "Conflict", "status": 409,
                              "detail": "workflow wf-1 has not ended; a rerun needs one "
                                        "that failed or was cancelled"})]
    result = runner.invoke(app, ["rerun", "wf-1", "--gateway", gateway.url])
    assert result.exit_code != 0
    assert "has not ended" in result.output


def test_status_names_a_reruns_source_what_it_reused_and_its_own_reruns(
        gateway: Gateway) -> None:
    doc = {"id": "wf-2", "name": "n", "status": "succeeded", "seq": 9, "nodes": [],
           "tasks": [], "output": 1, "error": "", "rerun_of": "wf-1", "reset": None,
           "reused": {"nodes": ["a"], "items": {"m": 5}}, "reruns": ["wf-3"]}
    gateway.answers = [(200, doc)]
    result = runner.invoke(app, ["status", "wf-2", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "a rerun of wf-1; reused: a, m: 5 items" in result.stdout
    assert "rerun as: wf-3" in result.stdout

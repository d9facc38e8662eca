"""``headwater pause ID`` and ``headwater resume ID`` against a stand-in gateway: what
they send, what they print, and an ended run's 409 as one line and exit status 2."""

from __future__ import annotations

from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.follow import FollowState
from tests.unit.ops.conftest import Gateway

RUNNER = CliRunner()


def test_pause_sends_its_reason_and_request_id_and_says_it_was_requested(
        gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "wf-1", "status": "pause_requested",
                              "request_id": "ops-1", "was_paused": False})]
    result = RUNNER.invoke(app, ["pause", "wf-1", "--reason", "model API down",
                                 "--request-id", "ops-1", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "pause of wf-1 requested" in result.output
    assert gateway.requests == [("POST", "/v1/workflows/wf-1/pause",
                                 {"request_id": "ops-1", "reason": "model API down"})]


def test_resume_of_a_run_that_did_not_read_as_paused_says_so(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "wf-1", "status": "resume_requested",
                              "request_id": "r", "was_paused": False})]
    result = RUNNER.invoke(app, ["resume", "wf-1", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "resume of wf-1 requested (it did not read as paused)" in result.output
    [(method, path, body)] = gateway.requests
    assert (method, path) == ("POST", "/v1/workflows/wf-1/resume")
    assert len(body["request_id"]) == 32 and "reason" not in body


def test_an_ended_run_is_one_line_and_exit_status_2(gateway: Gateway) -> None:
    gateway.answers = [(409, {"title": "Conflict", "status": 409, "detail": "workflow wf-1 "
                              "has already ended (succeeded) and cannot be paused"})]
    result = RUNNER.invoke(app, ["pause", "wf-1", "--gateway", gateway.url])
    assert result.exit_code == 2, result.output
    assert "cannot be paused" in result.output and "Traceback" not in result.output


def test_status_says_a_run_is_paused_since_when_and_by_whom(gateway: Gateway) -> None:
    node = {"id": "a", "kind": "task", "status": "running", "total": None,
            "succeeded": 0, "failed": 0, "error": ""}
    gateway.answers = [(200, {"id": "wf-1", "name": "n", "status": "running", "seq": 5,
                              "nodes": [node], "tasks": [], "output": None, "error": None,
                              "paused": {"since": "2026-01-01T00:00:00+00:00", "by": "ann",
                                         "reason": "deploy"}})]
    result = RUNNER.invoke(app, ["status", "wf-1", "--gateway", gateway.url],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "(paused since 2026-01-01T00:00:00+00:00 by ann: deploy)" in result.stdout


def test_follow_says_when_a_run_pauses_and_resumes() -> None:
    state = FollowState()
    line = state.apply("WorkflowPaused", 4, {"by": "ann", "reason": "deploy"})
    assert line == "paused by ann: deploy (nothing new is dispatched until it is resumed)"
    assert state.apply("WorkflowResumed", 5, {"held": 2, "due": 1}) == (
        "resumed: 2 held attempts dispatched, 1 due timers fired")

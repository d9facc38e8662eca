"""``headwater status`` names the lost worker of a running attempt, and ``headwater
queues`` lists a queue's lost workers (``worker_state``, ``lost_workers`` of the
gateway's answers)."""

from __future__ import annotations

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
RUN_ID = "wf-lost"


def test_status_shows_the_lost_worker_of_a_running_node(gateway: Gateway) -> None:
    node = {"id": "embed", "kind": "task", "status": "running", "total": None,
            "succeeded": 0, "failed": 0, "error": ""}
    task = {"key": "embed", "node": "embed", "attempt": 1, "status": "running",
            "queue": "cpu", "task": "embed", "worker": "host-9",
            "worker_state": "lost", "worker_last_heard_at": "2026-01-01T00:00:00+00:00"}
    warning = "embed (attempt 1) runs on worker 'host-9', which is lost"
    gateway.answers = [(200, {"id": RUN_ID, "name": "n", "status": "running", "seq": 3,
                              "nodes": [node], "tasks": [task], "output": None,
                              "error": None, "warnings": [warning]})]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url],
                           env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "running, worker host-9 lost" in result.stdout, result.stdout
    assert f"warning: {warning}" in result.stdout


def test_queues_lists_a_lost_worker_with_what_it_had_in_flight(gateway: Gateway) -> None:
    queue = {"queue": "cpu", "backlog": 0, "in_flight": 0, "live_workers": 0, "workers": [],
             "lost_workers": [{"worker_id": "host-9", "host": "h", "pid": 9, "in_flight": 4,
                               "last_heard_at": "2026-01-01T00:00:00+00:00"}],
             "tasks": [], "oldest_waiting_s": None, "maxdepth": 0, "state": "no_live_workers"}
    gateway.answers = [(200, {"queues": [queue]})]
    result = runner.invoke(app, ["queues", "--gateway", gateway.url], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "lost: worker host-9 of queue cpu" in result.stdout, result.stdout
    assert "with 4 in flight" in result.stdout


def test_queues_lists_the_limits_in_use(gateway: Gateway) -> None:
    queue = {"queue": "cpu", "backlog": 0, "in_flight": 0, "live_workers": 1, "workers": [],
             "tasks": ["t"], "oldest_waiting_s": None, "maxdepth": 0, "state": "ok"}
    limits = [{"limiter": "limit::concurrency:acme", "kind": "concurrency", "key": "acme",
               "limit": 2, "window_s": None, "holding": 2, "queued": 3, "granted": 41},
              {"limiter": "limit::rate:openai", "kind": "rate", "key": "openai",
               "limit": 500, "window_s": 60.0, "holding": 120, "queued": 0, "granted": 900}]
    gateway.answers = [(200, {"queues": [queue], "limits": limits}),
                       (200, {"queues": [queue], "limits": None})]
    result = runner.invoke(app, ["queues", "--gateway", gateway.url], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    acme = next(line for line in result.stdout.splitlines() if " acme " in line)
    assert "concurrency" in acme and " 2 " in acme and " 3 " in acme and " 41 " in acme
    openai = next(line for line in result.stdout.splitlines() if " openai " in line)
    assert "500 per 60 s" in openai and "120 in the window" in openai
    unread = runner.invoke(app, ["queues", "--gateway", gateway.url], env={"COLUMNS": "200"})
    assert "the limits could not be read" in unread.stdout

"""``headwater status`` of a running run says what it waits for (the document's
``waiting``: a signal, its node, since and until when) and each running attempt's last
progress report, against a real HTTP server standing in for the gateway
(``conftest.Gateway``)."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
RUN_ID = "wf-waiting-1"


def running_doc(**extra: Any) -> dict[str, Any]:
    node = {"id": "main", "kind": "code", "status": "running", "total": None,
            "succeeded": 3, "failed": 0, "error": ""}
    return {"id": RUN_ID, "name": "my.pipeline", "status": "running", "seq": 20,
            "nodes": [node], "output": None, "error": None, **extra}


def test_status_says_which_signal_a_run_waits_for_and_what_runs_report(
        gateway: Gateway) -> None:
    doc = running_doc(
        waiting=[{"node": "main", "index": None, "signal": "approval",
                  "since": "2026-12-06T04:00:00Z", "timeout_at": "2026-12-13T04:00:00Z"}],
        tasks=[{"key": "main[7]", "status": "running", "progress": 0.5,
                "message": "chunk 5 of 10"},
               {"key": "main[9]", "status": "running", "progress": None,
                "message": "signal approval"},
               {"key": "main[1]", "status": "succeeded", "progress": 1.0, "message": "done"}])
    gateway.answers = [(200, doc)]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url],
                           env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert ("waiting for signal 'approval' at main since 2026-12-06T04:00:00Z, times out "
            "at 2026-12-13T04:00:00Z") in lines
    assert "main[7] running 50%: chunk 5 of 10" in lines
    assert "main[9] running: signal approval" in lines
    assert not any(line.startswith("main[1]") for line in lines)


def test_status_of_a_run_waiting_on_nothing_says_nothing_more(gateway: Gateway) -> None:
    gateway.answers = [(200, running_doc(waiting=[], tasks=[]))]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "waiting for" not in result.stdout
    assert not any(line.startswith("main[") for line in result.stdout.splitlines())

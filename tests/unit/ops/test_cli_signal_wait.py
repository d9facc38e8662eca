"""``headwater signal ... --wait``: after the 202 it asks for the signal's fate until
the run applied it, prints it, and exits 0 when the run took it (consumed, buffered), 1
when it was refused or discarded or not applied within ``--timeout``."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
SENT = (202, {"workflow_id": "wf-1", "signal": "go", "signal_id": "s-1", "links": {}})


def fate(status: str, **extra: Any) -> tuple[int, dict[str, Any]]:
    return 200, {"workflow_id": "wf-1", "signal_id": "s-1", "name": "go", "index": None,
                 "status": status, "node": None, "reason": None, "at": None,
                 "received_at": None, "links": {}, **extra}


@pytest.mark.parametrize(("answers", "code", "line"), [
    ([fate("received"), fate("consumed", node="approve", at="2026-01-01T00:00:00+00:00")],
     0, "signal s-1: consumed by approve at 2026-01-01T00:00:00+00:00"),
    ([fate("buffered")], 0, "signal s-1: buffered: kept until its wait starts"),
    ([fate("refused", reason="the workflow has already ended (succeeded)")], 1,
     "signal s-1: refused: the workflow has already ended (succeeded)"),
    ([fate("discarded", reason="wait approve has already succeeded")], 1,
     "signal s-1: discarded: wait approve has already succeeded"),
])
def test_wait_prints_the_fate_and_exits_by_it(gateway: Gateway, answers: list[Any],
                                              code: int, line: str) -> None:
    gateway.answers = [SENT, *answers]
    result = runner.invoke(app, ["signal", "wf-1", "go", "--id", "s-1", "--wait",
                                 "--gateway", gateway.url], env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output
    assert line in result.output
    assert [(m, p) for m, p, _ in gateway.requests][-1] == ("GET",
                                                           "/v1/workflows/wf-1/signals/s-1")


def test_a_fate_not_applied_in_time_exits_1(gateway: Gateway) -> None:
    gateway.answers = [SENT]
    gateway.otherwise = fate("received")
    result = runner.invoke(app, ["signal", "wf-1", "go", "--wait", "--timeout", "0.2",
                                 "--gateway", gateway.url], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "received, not applied within 0.2 s" in result.output

"""``headwater bulk``: a dry run first (the count and a sample), then, asked or with
``--yes``, the operation started and followed to its counts; ``--dry-run`` stops after
the count; no filter is refused before anything is sent; ``--not-paused`` is a filter
(False is sent). Against a real HTTP server
standing in for the gateway (``conftest.Gateway``)."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
DRY = (200, {"dry_run": True, "action": "cancel", "matched": 200, "over_limit": False,
             "sample": [f"wf-{i}" for i in range(10)]})


def _operation(state: str, progress: int, **counts: int) -> tuple[int, dict[str, Any]]:
    return (200, {"id": "op-1", "action": "cancel", "state": state, "matched": 200,
                  "progress": progress, "counts": {"done": 0, "skipped": 0, "failed": 0,
                                                   **counts},
                  "reasons": [{"id": "wf-3", "outcome": "skipped",
                               "reason": "already succeeded"}] if counts else []})


def test_a_dry_run_shows_the_count_and_stops(gateway: Gateway) -> None:
    gateway.answers = [DRY]
    result = runner.invoke(app, ["bulk", "cancel", "--label", "team=x", "--dry-run",
                                 "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "200 runs match: wf-0 wf-1" in result.output
    (method, path, body), = gateway.requests
    assert (method, path) == ("POST", "/v1/operations")
    assert body == {"action": "cancel", "dry_run": True, "filter": {"label": ["team:x"]}}


def test_a_cancel_is_started_and_followed_to_its_counts(gateway: Gateway) -> None:
    gateway.answers = [DRY, (202, _operation("running", 0)[1]), _operation("running", 50),
                       _operation("done", 200, done=199, skipped=1)]
    result = runner.invoke(app, ["bulk", "cancel", "-l", "team=x", "--status", "running",
                                 "--reason", "rebuilt", "--yes", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    assert "operation op-1 started: cancel of 200 runs" in result.output
    assert "200/200 acted on, 199 done, 1 skipped, 0 failed" in result.output
    assert "wf-3 skipped: already succeeded" in result.output
    started = gateway.requests[1][2]
    assert started["filter"] == {"label": ["team:x"], "status": "running"}
    assert started["reason"] == "rebuilt" and started["id"].startswith("op-")
    assert [r[1] for r in gateway.requests[2:]] == ["/v1/operations/op-1"] * 2


def test_a_refused_confirmation_acts_on_nothing(gateway: Gateway) -> None:
    gateway.answers = [DRY]
    result = runner.invoke(app, ["bulk", "signal", "go", "--label", "team=x", "--field",
                                 "ok=true", "--gateway", gateway.url], input="n\n")
    assert result.exit_code == 1, result.output
    (_, _, body), = gateway.requests
    assert body["signal"] == {"name": "go", "fields": {}}  # a dry run's: its name only


def test_no_filter_is_refused_before_anything_is_sent(gateway: Gateway) -> None:
    result = runner.invoke(app, ["bulk", "rerun", "--gateway", gateway.url])
    assert result.exit_code == 2 and "give a filter" in result.output
    assert gateway.requests == []


def test_not_paused_alone_is_a_filter_and_is_sent(gateway: Gateway) -> None:
    gateway.answers = [DRY]
    result = runner.invoke(app, ["bulk", "resume", "--not-paused", "--dry-run",
                                 "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (_, _, body), = gateway.requests
    assert body["filter"] == {"paused": False}

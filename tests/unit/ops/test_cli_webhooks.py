"""``headwater webhooks``: the body ``put`` and ``apply`` send, the file checks before
anything is sent, the tables of ``list`` and ``deliveries`` (attempts by status code or
error, the next attempt or a dead one's reason), ``show`` without a secret, and a 404
as exit 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import standin_gateway
from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.common import console

runner = CliRunner()
HOOK = {"name": "ops", "tenant": None, "url": "https://x.test/h",
        "events": ["run.failed", "run.waiting"],
        "filter": {"names": [], "definitions": ["refund"]},
        "retry": {"max_attempts": 8, "backoff_s": 2.0, "backoff_max_s": 600.0}}
DELIVERIES = [
    {"id": "d_2", "workflow_id": "wf-2", "event": "run.failed", "status": "pending",
     "attempts": [{"n": 1, "status_code": None, "error": "ConnectError: refused"}],
     "next_attempt_at": "2026-03-02T09:14:17+00:00", "reason": None},
    {"id": "d_1", "workflow_id": "wf-1", "event": "run.failed", "status": "dead",
     "attempts": [{"n": 1, "status_code": 500}, {"n": 2, "status_code": 503}],
     "next_attempt_at": None, "reason": "after 2 attempts: HTTP 503"}]


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console wide enough for a table row on one line (made at import, it took the
    width of its terminal then)."""
    monkeypatch.setattr(console, "_width", 200)


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[tuple[str, str, Any]]]]:
    seen: list[tuple[str, str, Any]] = []

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        seen.append((method, path, body))
        if "/none" in path:
            return 404, {"title": "Not found", "status": 404, "detail": "no webhook none"}
        writes = {"PUT": (201, HOOK), "POST": (202, {**DELIVERIES[1], "status": "pending"}),
                  "DELETE": (204, None)}
        if method in writes:
            return writes[method]
        if "/deliveries" in path:
            return 200, {"items": DELIVERIES, "next_cursor": None}
        if path.startswith("/v1/webhooks?"):
            return 200, {"items": [HOOK], "next_cursor": None}
        return 200, HOOK

    with standin_gateway.serve(answer) as url:
        yield url, seen


def test_put_sends_the_events_filter_and_retries(gateway: Any) -> None:
    url, seen = gateway
    result = runner.invoke(app, [
        "webhooks", "put", "ops", "--url", "https://x.test/h", "--event", "run.failed",
        "--event", "run.waiting", "--definition", "refund", "--max-attempts", "3",
        "--gateway", url], env={"HEADWATER_WEBHOOK_SECRET": "s" * 16})
    assert result.exit_code == 0, result.output
    assert "ops: run.failed, run.waiting to https://x.test/h" in result.output
    assert seen == [("PUT", "/v1/webhooks/ops", {
        "url": "https://x.test/h", "events": ["run.failed", "run.waiting"], "secret": "s" * 16,
        "filter": {"names": [], "definitions": ["refund"]}, "retry": {"max_attempts": 3}})]


def test_apply_sends_the_file_without_its_name(tmp_path: Path, gateway: Any) -> None:
    url, seen = gateway
    file = tmp_path / "h.yaml"
    file.write_text("name: ops\nurl: https://x.test/h\nevents: [run.ended]\n"
                    "secret: 0123456789abcdef\n")
    result = runner.invoke(app, ["webhooks", "apply", str(file), "--gateway", url])
    assert result.exit_code == 0, result.output
    assert seen == [("PUT", "/v1/webhooks/ops", {"url": "https://x.test/h",
                                                 "events": ["run.ended"],
                                                 "secret": "0123456789abcdef"})]


@pytest.mark.parametrize(("text", "message"), [
    ("- a\n", "holds no mapping"), ("url: https://x.test\n", "has no name"),
    ("url: [\n", "cannot read")])
def test_a_file_without_a_webhook_is_a_usage_error(tmp_path: Path, text: str,
                                                   message: str) -> None:
    file = tmp_path / "h.yaml"
    file.write_text(text)
    result = runner.invoke(app, ["webhooks", "apply", str(file), "--gateway",
                                 "http://127.0.0.1:9"])
    assert result.exit_code == 2 and message in result.output, result.output


def test_list_show_and_delete(gateway: Any) -> None:
    url, seen = gateway
    listed = runner.invoke(app, ["webhooks", "list", "--gateway", url])
    assert listed.exit_code == 0, listed.output
    assert "ops" in listed.output and "definitions: refund" in listed.output
    shown = runner.invoke(app, ["webhooks", "show", "ops", "--gateway", url])
    assert "8 attempts, from 2 s doubling to 600 s" in shown.output
    assert "tenant every tenant" in shown.output
    as_json = runner.invoke(app, ["webhooks", "show", "ops", "--json", "--gateway", url])
    assert json.loads(as_json.output) == HOOK
    deleted = runner.invoke(app, ["webhooks", "delete", "ops", "--gateway", url])
    assert deleted.exit_code == 0 and "ops deleted" in deleted.output
    missing = runner.invoke(app, ["webhooks", "show", "none", "--gateway", url])
    assert missing.exit_code == 1, missing.output
    assert [m for m, _, _ in seen] == ["GET", "GET", "GET", "DELETE", "GET"]


def test_deliveries_show_each_attempt_and_what_follows(gateway: Any) -> None:
    url, seen = gateway
    result = runner.invoke(app, ["webhooks", "deliveries", "ops", "--status", "dead",
                                 "--run", "wf-1", "--gateway", url])
    assert result.exit_code == 0, result.output
    assert seen[-1][1] == "/v1/webhooks/ops/deliveries?limit=500&status=dead&workflow_id=wf-1"
    lines = result.output.splitlines()
    pending = next(line for line in lines if "d_2" in line)
    dead = next(line for line in lines if "d_1" in line)
    assert "ConnectError: refused" in pending and "2026-03-02T09:14:17" in pending
    assert "500, 503" in dead and "after 2 attempts: HTTP 503" in dead
    raw = runner.invoke(app, ["webhooks", "deliveries", "ops", "--json", "--gateway", url])
    assert json.loads(raw.output) == DELIVERIES


def test_redeliver(gateway: Any) -> None:
    url, seen = gateway
    result = runner.invoke(app, ["webhooks", "redeliver", "ops", "d_1", "--gateway", url])
    assert result.exit_code == 0, result.output
    assert "d_1: due again (2 attempts so far)" in result.output
    assert seen == [("POST", "/v1/webhooks/ops/deliveries/d_1/retry", None)]

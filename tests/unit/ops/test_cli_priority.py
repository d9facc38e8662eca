"""``--priority`` of ``headwater run`` and ``headwater submit``: a number or a name is
sent as the gateway takes it (``?priority=`` of ``POST /v1/run/{name}``, ``priority`` of
the submission's body), none leaves the definition's or the spec's, and anything else is
refused before anything is sent. Against a real HTTP server standing in for the gateway
(``conftest.Gateway``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stdlib_search" / "workflow.yaml"
RUN_ID = "wf-" + "0" * 32
runner = CliRunner()


def _query(path: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(path).query)


@pytest.mark.parametrize(("given", "sent"), [("high", "high"), ("7", "7"), (" 0 ", "0"),
                                             ("normal", "normal")])
def test_run_sends_the_priority_given(gateway: Gateway, given: str, sent: str) -> None:
    gateway.answers = [(202, {"id": RUN_ID, "status": "accepted"})]
    result = runner.invoke(app, ["run", "docs", "--async", "--priority", given, "--id",
                                 RUN_ID, "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (method, path, _), = gateway.requests
    assert method == "POST" and _query(path)["priority"] == [sent]


def test_run_without_a_priority_leaves_the_definitions(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": RUN_ID, "status": "accepted"})]
    result = runner.invoke(app, ["run", "docs", "--async", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (_, path, _), = gateway.requests
    assert "priority" not in _query(path) and "cache" not in _query(path)


def test_run_with_refresh_cache_asks_for_a_refresh(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": RUN_ID, "status": "accepted"})]
    result = runner.invoke(app, ["run", "docs", "--async", "--refresh-cache", "--gateway",
                                 gateway.url])
    assert result.exit_code == 0, result.output
    (_, path, _), = gateway.requests
    assert _query(path)["cache"] == ["refresh"]


@pytest.mark.parametrize("given", ["urgent", "10", "-1", "7.5"])
def test_a_bad_priority_is_refused_before_anything_is_sent(gateway: Gateway,
                                                           given: str) -> None:
    for command in (["run", "docs"], ["submit", str(EXAMPLE)]):
        result = runner.invoke(app, [*command, "--priority", given, "--gateway",
                                     gateway.url])
        assert result.exit_code == 2, result.output
        assert "is no priority" in result.output
    assert gateway.requests == []


def test_submit_sends_the_priority_in_its_body(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "p-1", "status": "accepted"}),
                       (202, {"id": "p-2", "status": "accepted"}),
                       (202, {"id": "p-3", "status": "accepted"})]
    for run_id, flags in (("p-1", ["-p", "high"]), ("p-2", ["--priority", "3"]),
                          ("p-3", [])):
        result = runner.invoke(app, ["submit", str(EXAMPLE), "--id", run_id, *flags,
                                     "--gateway", gateway.url])
        assert result.exit_code == 0, result.output
    bodies = [body for _, _, body in gateway.requests]
    assert [b.get("priority") for b in bodies] == ["high", 3, None]
    assert "priority" not in bodies[2]

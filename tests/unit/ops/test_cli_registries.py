"""``headwater definitions`` and ``headwater schedules`` list, show and delete alike
(``ops.cli.resources.Registry``): a table or ``--json``, a description, one line for a
deletion, and the gateway's refusals as exit 1 (404) or 2 (any other), against a
stand-in gateway (a real HTTP server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import standin_gateway
from typer.testing import CliRunner

from ops.cli.app import app

DEFINITION = {"name": "greet", "version": 2, "digest": "abcdef0123456789", "latest": 3,
              "created_at": "2026-01-01T00:00:00Z", "workflow": {"name": "greet"},
              "input_schema": {"type": "object"}}
SCHEDULE = {"name": "nightly", "generation": 2, "workflow_id": "schedule:nightly:2",
            "status": "running", "cron": "0 2 * * *", "timezone": "Europe/Paris",
            "definition": {"name": "billing", "version": 3}, "paused": True,
            "next_fire_at": "2026-12-02T01:00:00+00:00", "overlap": "skip",
            "catchup": "none", "catchup_max": 10, "misfire_grace": 60, "fired": 4,
            "skipped": 1, "runs": []}
runner = CliRunner()


class Gateway:
    """What the stand-in answers: ``items`` per listing; records ``(method, path)``."""

    def __init__(self) -> None:
        self.items: dict[str, list[dict[str, Any]]] = {
            "definitions": [DEFINITION], "schedules": [SCHEDULE]}
        self.asked: list[tuple[str, str]] = []

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        self.asked.append((method, path))
        kind = path.split("/")[2].split("?")[0]
        if path.endswith(("/missing", "/missing/pause")):
            return 404, {"title": "Not Found", "detail": f"no such {kind[:-1]}"}
        if path.endswith(("/gone", "/gone/pause")):
            return 410, {"title": "Gone", "detail": "deleted"}
        if method in ("DELETE", "POST"):
            return 204, None
        if "?" in path:
            return 200, {"items": self.items[kind], "next_cursor": None}
        return 200, DEFINITION if kind == "definitions" else SCHEDULE


@pytest.fixture
def gateway() -> Iterator[tuple[str, Gateway]]:
    state = Gateway()
    with standin_gateway.serve(lambda method, path, _: state.answer(method, path)) as url:
        yield url, state


def cli(url: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--gateway", url], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_list_prints_a_table_json_or_none(gateway: tuple[str, Gateway]) -> None:
    url, state = gateway
    assert cli(url, "definitions", "list")[1].split("\n")[1].split() == [
        "greet", "2", "2026-01-01T00:00:00Z", "abcdef012345"]
    assert cli(url, "schedules", "list")[1].split("\n")[1].split() == [
        "nightly", "2", "0", "2", "*", "*", "*", "billing@3", "paused",
        "2026-12-02T01:00:00+00:00"]
    for kind, item in (("definitions", DEFINITION), ("schedules", SCHEDULE)):
        assert json.loads(cli(url, kind, "list", "--json")[1]) == [item]
        state.items[kind] = []
        assert cli(url, kind, "list") == (0, f"no {kind}\n")
    assert ("GET", "/v1/definitions?limit=500") in state.asked


def test_show_describes_or_prints_json(gateway: tuple[str, Gateway]) -> None:
    url, _ = gateway
    code, shown = cli(url, "definitions", "show", "greet")
    assert code == 0 and shown.startswith(
        "greet version 2 of 3 (live), created 2026-01-01T00:00:00Z, digest abcdef012345\n"
        "workflow:\n  name: greet\ninput_schema:\n  type: object\n")
    code, shown = cli(url, "schedules", "show", "nightly")
    assert code == 0 and shown.split("\n")[:2] == [
        "nightly generation 2 (schedule:nightly:2), paused, running",
        "cron 0 2 * * * in Europe/Paris, runs billing@3; overlap skip, catchup none "
        "(max 10), misfire grace 60 s"]
    assert shown.endswith("no runs yet\n")
    assert json.loads(cli(url, "schedules", "show", "nightly", "--json")[1]) == SCHEDULE


def test_delete_and_pause_say_what_was_sent(gateway: tuple[str, Gateway]) -> None:
    url, state = gateway
    assert cli(url, "definitions", "delete", "greet") == (0, "greet deleted: no new runs\n")
    assert cli(url, "schedules", "delete", "nightly") == (0, "nightly deleted: no new runs\n")
    assert cli(url, "schedules", "pause", "nightly") == (0, "nightly: pause sent\n")
    assert cli(url, "schedules", "resume", "nightly") == (0, "nightly: resume sent\n")
    assert state.asked[-4:] == [
        ("DELETE", "/v1/definitions/greet"), ("DELETE", "/v1/schedules/nightly"),
        ("POST", "/v1/schedules/nightly/pause"), ("POST", "/v1/schedules/nightly/resume")]


@pytest.mark.parametrize("args", [("definitions", "show"), ("definitions", "delete"),
                                  ("schedules", "show"), ("schedules", "delete"),
                                  ("schedules", "pause")])
def test_a_404_exits_1_and_another_refusal_2(gateway: tuple[str, Gateway],
                                             args: tuple[str, str]) -> None:
    url, _ = gateway
    assert cli(url, *args, "missing") == (1, f"error: 404 no such {args[0][:-1]}\n")
    assert cli(url, *args, "gone") == (2, "error: 410 deleted\n")

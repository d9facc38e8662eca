"""``headwater triggers``: ``apply`` reads a file and sends its body without its name,
``list`` a table with each trigger's lag (or ``--json``), ``show`` the settings and the
lag per partition, ``delete`` one line, a 404 exit 1; against a stand-in gateway (a
real HTTP server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import standin_gateway
from typer.testing import CliRunner

from ops.cli.app import app

SETTINGS = {"topic": "shop.orders", "format": "json", "filter": [], "input": {"n": "${value.n}"},
            "id": None, "definition": "ship", "start": "earliest"}
TRIGGER = {"name": "orders", "tenant": None, "settings": SETTINGS, "at_ms": 1,
           "lag": {"trigger": "-/orders", "group": "hw-trigger---orders", "lag": 5,
                   "partitions": [{"partition": 0, "end": 10, "committed": 5, "lag": 5},
                                  {"partition": 1, "end": 0, "committed": None, "lag": 0}]},
           "links": {}}
runner = CliRunner()


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[tuple[str, str, Any]]]]:
    seen: list[tuple[str, str, Any]] = []

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        seen.append((method, path, body))
        if path.startswith("/v1/triggers/missing"):
            return 404, {"title": "Not Found", "status": 404, "detail": "no trigger missing"}
        if method == "DELETE":
            return 200, {"name": "orders", "deleted": True}
        if path.startswith("/v1/triggers?"):
            return 200, {"items": [TRIGGER, {**TRIGGER, "name": "audit", "lag": None}]}
        return (201 if method == "PUT" else 200), TRIGGER

    with standin_gateway.serve(answer) as url:
        yield url, seen


def cli(url: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--gateway", url], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_apply_sends_the_file_without_its_name(tmp_path: Path, gateway: Any) -> None:
    url, seen = gateway
    file = tmp_path / "t.yaml"
    file.write_text("name: orders\ntopic: shop.orders\ndefinition: ship\nstart: earliest\n"
                    "input: {n: '${value.n}'}\n")
    code, out = cli(url, "triggers", "apply", str(file))
    assert code == 0, out
    assert "orders: reads shop.orders, starts runs of ship" in out
    assert seen == [("PUT", "/v1/triggers/orders", {
        "topic": "shop.orders", "definition": "ship", "start": "earliest",
        "input": {"n": "${value.n}"}})]


def test_a_file_without_a_name_is_a_usage_error(tmp_path: Path) -> None:
    file = tmp_path / "t.yaml"
    file.write_text("topic: t\ndefinition: d\n")
    result = runner.invoke(app, ["triggers", "apply", str(file), "--gateway",
                                 "http://127.0.0.1:9"])
    assert result.exit_code == 2 and "has no name" in result.output


def test_list_show_and_delete(gateway: Any) -> None:
    url, _ = gateway
    code, out = cli(url, "triggers", "list")
    assert code == 0, out
    lines = out.strip().split("\n")
    assert lines[1].split() == ["orders", "-", "shop.orders", "json", "ship", "5"]
    assert lines[2].split() == ["audit", "-", "shop.orders", "json", "ship", "-"]
    code, out = cli(url, "triggers", "list", "--json")
    assert code == 0 and [t["name"] for t in json.loads(out)] == ["orders", "audit"]
    code, out = cli(url, "triggers", "show", "orders")
    assert code == 0, out
    assert "orders reads shop.orders (json, from the earliest record)" in out
    assert "consumer group hw-trigger---orders, lag 5" in out
    assert [line.split() for line in out.strip().split("\n")[-2:]] == [
        ["0", "10", "5", "5"], ["1", "0", "-", "0"]]
    code, out = cli(url, "triggers", "delete", "orders")
    assert code == 0 and "orders deleted" in out
    code, out = cli(url, "triggers", "show", "missing")
    assert code == 1 and "no trigger missing" in out

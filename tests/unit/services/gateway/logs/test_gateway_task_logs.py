"""``GET /v1/workflows/{id}/tasks/{node}/{index}/logs`` (paged and followed) and ``GET
/v1/workflows/{id}/logs`` over an in-memory projection: order, cursors, ``complete``,
the SSE stream's ids and end, problems, and tenant scope."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway_harness import assert_problem, gateway
from tenant_harness import RegistryPool, tenants

from services.gateway.logs.reads import NO_INDEX

AT = datetime(2026, 3, 2, 9, 14, 7, tzinfo=UTC)


@dataclass
class LogsPool(RegistryPool):
    """The ``task_logs``, ``task_log_ends`` and ``tasks`` rows the log reads ask about."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    ends: set[tuple[str, str, int, int]] = field(default_factory=set)
    tasks: dict[tuple[str, str, int | None], dict[str, Any]] = field(default_factory=dict)

    def log(self, wf: str, node: str, index: int | None, attempt: int, n: int,
            message: str) -> None:
        self.lines.append({"workflow_id": wf, "node": node,
                           "idx": NO_INDEX if index is None else index, "attempt": attempt,
                           "line": n, "at": AT, "level": "INFO", "stream": "log",
                           "logger": "headwater.task", "message": message})

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        if "left join tasks" in sql:
            run = self.rows.get(args[0])
            if run is None:
                return None
            task = self.tasks.get((args[0], args[1], args[2]), {})
            return {"status": task.get("status"), "attempt": task.get("attempt", 0),
                    "long_ago": task.get("long_ago", False), "run_status": run["status"]}
        return await super().fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        if sql.startswith("select spec from workflows"):
            run = self.rows.get(args[0])
            return None if run is None else run.get("spec")
        return await super().fetchval(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        await self._enter()
        if "from task_log_ends" in sql:
            wf, node, idx, asked = args
            return [{"attempt": a} for a in asked if (wf, node, idx, a) in self.ends]
        if sql.startswith("select node, idx,"):
            wf, node, *after, limit = args
            found = sorted((r for r in self.lines if r["workflow_id"] == wf
                            and node in (None, r["node"])
                            and (r["node"], r["idx"], r["attempt"], r["line"]) > tuple(after)),
                           key=lambda r: (r["node"], r["idx"], r["attempt"], r["line"]))
            return found[:limit]
        if "from task_logs" in sql:
            wf, node, idx, attempt, a, n, limit = args
            found = sorted((r for r in self.lines if (r["workflow_id"], r["node"], r["idx"])
                            == (wf, node, idx) and attempt in (None, r["attempt"])
                            and (r["attempt"], r["line"]) > (a, n)),
                           key=lambda r: (r["attempt"], r["line"]))
            return found[:limit]
        return await super().fetch(sql, *args)


def _pool() -> LogsPool:
    pool = LogsPool()
    pool.rows["wf1"] = {"status": "running", "seq": 3, "tenant": "A", "spec": {"nodes": [
        {"id": "fetch", "task": "t.fetch"}, {"id": "map", "kind": "map", "task": "t.m"}]}}
    for n in (1, 2):
        pool.log("wf1", "fetch", None, 1, n, f"first attempt, line {n}")
    pool.log("wf1", "fetch", None, 2, 1, "second attempt")
    pool.log("wf1", "map", 0, 1, 1, "item 0")
    pool.log("wf1", "map", 1, 1, 1, "item 1")
    pool.tasks[("wf1", "fetch", None)] = {"status": "running", "attempt": 2}
    return pool


URL = "/v1/workflows/wf1/tasks/fetch/-/logs"


def _events(text: str) -> list[dict[str, str]]:
    """The SSE messages of ``text`` (comments and pings left out)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines()
                      if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append(fields)
    return out


def test_a_tasks_lines_page_by_page_then_complete() -> None:
    with gateway() as gw:
        pool = _pool()
        gw.connect(pool)
        page = gw.client.get(URL, params={"limit": 2}).json()
        assert page["workflow_id"] == "wf1" and page["node"] == "fetch"
        assert page["index"] is None and page["complete"] is False
        assert [(x["attempt"], x["line"], x["message"]) for x in page["lines"]] == [
            (1, 1, "first attempt, line 1"), (1, 2, "first attempt, line 2")]
        assert set(page["lines"][0]) == {"attempt", "line", "at", "level", "stream", "logger",
                                         "message"}
        assert page["next"] == "1:2"
        rest = gw.client.get(URL, params={"after": page["next"]}).json()
        assert [x["message"] for x in rest["lines"]] == ["second attempt"]
        assert rest["next"] == "2:1" and rest["complete"] is False  # still running
        one = gw.client.get(URL, params={"attempt": 1}).json()
        assert [x["line"] for x in one["lines"]] == [1, 2]
        pool.tasks[("wf1", "fetch", None)] = {"status": "failed", "attempt": 2}
        pool.ends |= {("wf1", "fetch", NO_INDEX, 1), ("wf1", "fetch", NO_INDEX, 2)}
        done = gw.client.get(URL, params={"after": "2:1"}).json()
        assert done == {"workflow_id": "wf1", "node": "fetch", "index": None, "lines": [],
                        "next": None, "complete": True}
        item = gw.client.get("/v1/workflows/wf1/tasks/map/1/logs").json()
        assert item["index"] == 1 and [x["message"] for x in item["lines"]] == ["item 1"]


def test_an_ended_task_without_its_logs_end_is_complete_only_after_a_while() -> None:
    with gateway() as gw:
        pool = _pool()
        gw.connect(pool)
        pool.tasks[("wf1", "fetch", None)] = {"status": "failed", "attempt": 2}
        pool.ends.add(("wf1", "fetch", NO_INDEX, 1))  # attempt 2's worker died
        assert gw.client.get(URL).json()["complete"] is False
        pool.tasks[("wf1", "fetch", None)]["long_ago"] = True
        assert gw.client.get(URL).json()["complete"] is True


def test_following_a_task_sends_its_lines_then_the_end() -> None:
    with gateway() as gw:
        pool = _pool()
        pool.tasks[("wf1", "fetch", None)] = {"status": "succeeded", "attempt": 2}
        pool.ends |= {("wf1", "fetch", NO_INDEX, 1), ("wf1", "fetch", NO_INDEX, 2)}
        gw.connect(pool)
        answer = gw.client.get(URL, params={"follow": "true"})
        assert answer.headers["content-type"].startswith("text/event-stream")
        events = _events(answer.text)
        assert [(e.get("id"), e["event"]) for e in events] == [
            ("1:1", "log"), ("1:2", "log"), ("2:1", "log"), (None, "end")]
        assert json.loads(events[1]["data"])["message"] == "first attempt, line 2"
        assert events[-1]["data"] == '{"complete":true}'
        resumed = gw.client.get(URL, params={"follow": "true"},
                                headers={"Last-Event-ID": "1:2"}).text
        assert [line for line in resumed.splitlines() if line.startswith("id: ")] == ["id: 2:1"]
        assert "event: end" in resumed


def test_a_runs_lines_in_task_order_with_a_cursor() -> None:
    with gateway() as gw:
        gw.connect(_pool())
        first = gw.client.get("/v1/workflows/wf1/logs", params={"limit": 3}).json()
        assert [(x["node"], x["index"], x["attempt"], x["line"]) for x in first["lines"]] == [
            ("fetch", None, 1, 1), ("fetch", None, 1, 2), ("fetch", None, 2, 1)]
        rest = gw.client.get("/v1/workflows/wf1/logs",
                             params={"limit": 3, "after": first["next"]}).json()
        assert [(x["node"], x["index"]) for x in rest["lines"]] == [("map", 0), ("map", 1)]
        assert rest["next"] is None
        only = gw.client.get("/v1/workflows/wf1/logs", params={"node": "map"}).json()
        assert [x["message"] for x in only["lines"]] == ["item 0", "item 1"]


def test_bad_requests_are_problems() -> None:
    with gateway() as gw:
        gw.connect(_pool())
        assert_problem(gw.client.get("/v1/workflows/nope/tasks/a/-/logs"), 404, "Not found")
        assert_problem(gw.client.get("/v1/workflows/nope/logs"), 404, "Not found")
        assert_problem(gw.client.get("/v1/workflows/wf1/tasks/fetch/x/logs"), 422,
                       "Invalid request")
        assert_problem(gw.client.get(URL, params={"after": "yesterday"}), 400, "Bad cursor")
        assert_problem(gw.client.get("/v1/workflows/wf1/logs", params={"after": "!!"}), 400,
                       "Bad cursor")
        assert_problem(gw.client.get(URL, params={"follow": "true"},
                                     headers={"Last-Event-ID": "7"}), 400,
                       "Bad Last-Event-ID")
        assert_problem(gw.client.get(URL, params={"attempt": 0}), 422, "Invalid request")


def test_another_tenants_run_is_not_found(tmp_path: Path) -> None:
    with tenants(tmp_path) as t:
        t.gw.connect(_pool(), t.producer)
        assert t.call("A", "GET", URL).status_code == 200
        assert t.call("*", "GET", "/v1/workflows/wf1/logs").status_code == 200
        assert_problem(t.call("B", "GET", URL), 404, "Not found")
        assert_problem(t.call("B", "GET", "/v1/workflows/wf1/logs"), 404, "Not found")
        assert_problem(t.call("B", "GET", URL, params={"follow": "true"}), 404, "Not found")


def test_the_logs_of_a_node_the_run_lacks_are_404_naming_its_nodes() -> None:
    with gateway() as gw:
        gw.connect(_pool())
        for url in ("/v1/workflows/wf1/tasks/fetc/-/logs", "/v1/workflows/wf1/logs?node=fetc"):
            answer = gw.client.get(url)
            assert answer.status_code == 404, url
            assert answer.json()["detail"] == (
                "workflow wf1 has no node 'fetc'; its nodes: 'fetch', 'map'")

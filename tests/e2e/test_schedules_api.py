"""Schedules on the real stack: a schedule every 2 s starts runs of a registered
definition and shows its fire times; the same ``PUT`` is the same generation, a changed
one the next (the old one cancelled, its runs not); pause stops new runs until resume;
``DELETE`` ends it (404, no new runs); bad bodies are 422 naming the field; and
``headwater schedules``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml
from stackkit import Stack
from test_kafka_submission import wait_status
from typer.testing import CliRunner

from ops.cli.app import app
from tests.polling import holds_for_async, wait_until_async

EVERY_2S = "* * * * * */2"
SCHEMA = {"type": "object", "required": ["s"], "properties": {"s": {"type": "number"}}}


async def _definition(client: httpx.AsyncClient) -> str:
    name = f"tick-{uuid.uuid4().hex[:8]}"
    spec = {"name": name, "nodes": [{"id": "nap", "task": "e2e.sleep",
                                     "input": {"seconds": "${input.s}"}}]}
    response = await client.put(f"/v1/definitions/{name}",
                                json={"workflow": spec, "input_schema": SCHEMA})
    assert response.status_code == 201, response.text
    return name


async def _get(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    response = await client.get(f"/v1/schedules/{name}")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _children(client: httpx.AsyncClient, workflow_id: str) -> list[dict[str, Any]]:
    doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
    return list(doc.get("children") or [])


async def _put(client: httpx.AsyncClient, name: str, body: dict[str, Any],
               status: int) -> dict[str, Any]:
    response = await client.put(f"/v1/schedules/{name}", json=body)
    assert response.status_code == status, response.text
    return dict(response.json())


async def test_a_schedule_fires_is_replaced_paused_resumed_and_deleted(stack: Stack) -> None:
    name = f"every2-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        definition = await _definition(client)
        body = {"cron": EVERY_2S, "definition": definition, "input": {"s": 0.05}}
        first = await _put(client, name, body, 201)
        assert (first["generation"], first["workflow_id"]) == (1, f"schedule:{name}:1")

        shown = await wait_until_async(lambda: _get(client, name), 60, "two runs started",
                                       until=lambda d: d["fired"] >= 2 and len(d["runs"]) >= 2)
        assert shown["next_fire_at"] and shown["last_fire_at"], shown
        assert shown["definition"] == {"name": definition, "version": 1}
        assert shown["last_run_id"].startswith(f"schedule:{name}:1:fire."), shown
        run = await wait_status(stack, shown["last_run_id"])
        assert run["status"] == "succeeded" and run["output"] is not None, run
        assert run["definition"] == {"name": definition, "version": 1}, run
        assert (await client.get("/v1/schedules")).json()["items"], "listed"

        same = await _put(client, name, dict(reversed(body.items())), 200)
        assert same["generation"] == 1 and same["created"] is False
        second = await _put(client, name, {**body, "overlap": "allow"}, 201)
        assert second["generation"] == 2, second
        old = await wait_status(stack, f"schedule:{name}:1")
        assert old["status"] == "cancelled", old
        for child in await _children(client, f"schedule:{name}:1"):
            ended = await wait_status(stack, child["workflow_id"])
            assert ended["status"] == "succeeded", ended  # a run outlives its schedule
        await wait_until_async(lambda: _get(client, name), 60, "generation 2 fires",
                               until=lambda d: d["generation"] == 2 and d["fired"] >= 1)

        await _pause_and_resume(client, name)

        assert (await client.delete(f"/v1/schedules/{name}")).status_code == 204
        await wait_until_async(lambda: client.get(f"/v1/schedules/{name}"), 30, "404",
                               until=lambda r: r.status_code == 404)
        runs = len(await _children(client, f"schedule:{name}:2"))
        await holds_for_async(lambda: _children(client, f"schedule:{name}:2"), 5,
                              "no new run after the delete", holds=lambda c: len(c) == runs)
        assert (await client.delete(f"/v1/schedules/{name}")).status_code == 404


async def _pause_and_resume(client: httpx.AsyncClient, name: str) -> None:
    """Paused: fire times are skipped, no run starts; resumed: runs start again."""
    response = await client.post(f"/v1/schedules/{name}/pause")
    assert response.status_code == 202, response.text
    paused = await wait_until_async(lambda: _get(client, name), 30, "paused",
                                    until=lambda d: d["paused"])
    await holds_for_async(lambda: _get(client, name), 5, "no run while paused",
                          holds=lambda d: d["fired"] == paused["fired"])
    assert (await _get(client, name))["skipped"] > paused["skipped"]
    response = await client.post(f"/v1/schedules/{name}/resume")
    assert response.status_code == 202, response.text
    await wait_until_async(lambda: _get(client, name), 30, "runs again",
                           until=lambda d: not d["paused"] and d["fired"] > paused["fired"])


async def test_bad_schedules_are_422_naming_the_field(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        definition = await _definition(client)
        good = {"cron": EVERY_2S, "definition": definition, "input": {"s": 1}}
        for change, fault in (({"cron": "every 2 s"}, "cron: "),
                              ({"cron": "61 * * * *"}, "cron: "),
                              ({"timezone": "Mars/Olympus"}, "timezone: "),
                              ({"definition": f"{definition}-none"}, "definition: "),
                              ({"definition": f"{definition}@9"}, "definition: "),
                              ({"input": {"s": "one"}}, "input.s: "),
                              ({"catchup": "sometimes"}, "catchup: ")):
            response = await client.put("/v1/schedules/bad", json={**good, **change})
            assert response.status_code == 422, (change, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            errors = response.json()["errors"]
            assert any(e.startswith(fault) for e in errors), (change, errors)
        assert (await client.get("/v1/schedules/bad")).status_code == 404


async def test_the_command_line(stack: Stack, tmp_path: Path) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        definition = await _definition(client)
    file = tmp_path / "schedule.yaml"
    file.write_text(yaml.safe_dump({"name": name, "cron": "0 3 * * *", "timezone":
                                    "Europe/Paris", "definition": definition,
                                    "input": {"s": 1}}))
    runner = CliRunner()

    def cli(*args: str) -> str:
        result = runner.invoke(app, [*args, "--gateway", stack.gateway])
        assert result.exit_code == 0, result.output
        return result.output

    assert "created generation 1" in cli("schedules", "apply", str(file))
    assert "unchanged, generation 1" in cli("schedules", "apply", str(file))
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await wait_until_async(lambda: _get(client, name), 30, "armed",
                               until=lambda d: d["next_fire_at"] is not None)
    listed = json.loads(cli("schedules", "list", "--json"))
    assert [(s["generation"], s["cron"]) for s in listed if s["name"] == name] == [
        (1, "0 3 * * *")]
    assert name in cli("schedules", "list")
    assert "0 3 * * * in Europe/Paris" in cli("schedules", "show", name)
    assert "pause sent" in cli("schedules", "pause", name)
    assert "resume sent" in cli("schedules", "resume", name)
    assert "deleted" in cli("schedules", "delete", name)
    missing = runner.invoke(app, ["schedules", "show", f"{name}-none", "--gateway",
                                  stack.gateway])
    assert missing.exit_code == 1 and "no schedule" in missing.output, missing.output

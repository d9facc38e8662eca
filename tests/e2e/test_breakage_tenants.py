"""Breakage with auth on: a tenant reruns its own failed run under an id of the form
Headwater gives child workflows (``<parent>:<node>:<attempt>``), naming another
tenant's run as the parent. The rerun is accepted, so when that run's node starts its
child, the id is taken: the node fails with ``ChildWorkflowConflict`` and the other
tenant's run fails. (Over ``POST /v1/workflows`` such an id is a 422.) The new views
themselves keep tenants apart: another tenant's task view, logs, node tasks, signal fate,
rerun and reset are 404, a read token's rerun 403, no token 401."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import authkit
import httpx
import pytest
from breakkit import hostile_stack, one_task, submit, wait_run

from ops.sandbox import Sandbox

KEYS = {"service": ("*", "submit"), "acme": ("acme", "submit"),
        "acme_read": ("acme", "read"), "globex": ("globex", "submit")}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    return authkit.write_keys(tmp_path_factory.mktemp("keys"), KEYS)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, services: None,
            tokens: tuple[dict[str, str], Path]) -> Iterator[Sandbox]:
    with hostile_stack(tmp_path_factory.mktemp("tenants"),
                       extra_env=authkit.secured_env(*tokens)) as stack:
        yield stack


@pytest.fixture
def http(secured: Sandbox,
         tokens: tuple[dict[str, str], Path]) -> Iterator[dict[str, httpx.Client]]:
    clients = authkit.clients(secured.gateway, tokens[0], timeout=30, anonymous=True)
    yield clients
    for client in clients.values():
        client.close()


def test_the_new_views_keep_tenants_apart(http: dict[str, httpx.Client]) -> None:
    run = submit(http["acme"], {"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "e2e.logs_then_fail", "over": "${input.xs}",
         "retry": {"max_attempts": 1}, "input": {"lines": 2, "message": "boom"}}]},
        {"xs": [1]})
    assert wait_run(http["acme"], run)["status"] == "failed"
    reads = [f"/v1/workflows/{run}/tasks/m/0", f"/v1/workflows/{run}/tasks/m/0/logs",
             f"/v1/workflows/{run}/tasks/m/0/logs?follow=true",
             f"/v1/workflows/{run}/nodes/m/tasks", f"/v1/workflows/{run}/logs",
             f"/v1/workflows/{run}/signals/s1"]
    writes = [(f"/v1/workflows/{run}/rerun", {}), (f"/v1/workflows/{run}/reset", {"node": "m"})]
    for path in reads:
        assert http["globex"].get(path).status_code == 404, path
        assert http["none"].get(path).status_code == 401, path
    for path, body in writes:
        assert http["globex"].post(path, json=body).status_code == 404, path
        assert http["acme_read"].post(path, json=body).status_code == 403, path
        assert http["none"].post(path, json=body).status_code == 401, path
    assert http["acme"].get(reads[0]).json()["attempts"][0]["error_type"] == "ValueError"


def test_a_rerun_cannot_take_the_child_id_of_another_tenant_run(
        http: dict[str, httpx.Client]) -> None:
    own = submit(http["acme"], one_task("e2e.fatal", {}))
    assert wait_run(http["acme"], own)["status"] == "failed"
    theirs = f"nightly-{uuid.uuid4().hex[:6]}"
    submit(http["globex"], {"name": "parent", "nodes": [
        {"id": "pre", "task": "e2e.sleep", "input": {"seconds": 3}},
        {"id": "n", "kind": "workflow", "needs": ["pre"], "retry": {"max_attempts": 1},
         "workflow": {"name": "kid", "nodes": [
             {"id": "k", "task": "e2e.digest", "input": {"value": 1}}]}, "input": {}}]},
        workflow_id=theirs)
    taken = http["acme"].post(f"/v1/workflows/{own}/rerun", json={"id": f"{theirs}:n:1"})
    doc = wait_run(http["globex"], theirs)
    assert (taken.status_code, doc["status"]) == (422, "succeeded"), (taken.text, doc["error"])

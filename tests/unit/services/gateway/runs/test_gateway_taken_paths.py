"""A workflow path the gateway's own routes take (``GET /health``, ``/metrics``, the
web UI under ``/ui``, ``/docs``) would never run the workflow: a ``POST`` there gets the
other route's 405. So a definition claiming one is refused, at ``PUT`` (422 naming the
route) and when a worker's announcement is registered (``body_faults``), and so is a path
with a ``.`` or ``..`` segment, which no client sends as written."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.announcement import AnnouncedWorkflow
from headwater.core.kinds.code.records import path_fault
from services.gateway.app import create_app
from services.gateway.definitions.announced import body_faults, body_of
from services.gateway.runs.path_route import taken


def code_spec(path: str) -> dict[str, Any]:
    return {"name": "w", "nodes": [{"id": "main", "kind": "code", "task": "w.fn",
                                    "queue": "cpu", "path": path}]}


@pytest.mark.parametrize("path", ["/health", "/ready", "/metrics", "/ui", "/ui/runs",
                                  "/docs", "/openapi.json"])
def test_a_path_another_route_takes_is_422_naming_it(gw: Gateway, path: str) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    doc = assert_problem(gw.client.put("/v1/definitions/w", json={"workflow": code_spec(path)}),
                         422)
    assert any(f"path {path} is the gateway's own" in e for e in doc["errors"]), doc
    assert producer.sent == []


@pytest.mark.parametrize("path", ["/a/../b", "/a/./b", "/..", "/a/."])
def test_a_path_with_a_dot_segment_is_refused(gw: Gateway, path: str) -> None:
    gw.connect(FakePool(), FakeProducer())
    doc = assert_problem(gw.client.put("/v1/definitions/w", json={"workflow": code_spec(path)}),
                         422)
    assert any("no . or .. segment" in e for e in doc["errors"]), doc
    assert path_fault("/a.b/c..d/.e") is None  # dots inside a segment are fine


def test_an_announced_workflow_at_a_taken_path_is_not_registered() -> None:
    routes = create_app().router.routes
    spec = code_spec("/health")
    faults = body_faults(body_of(AnnouncedWorkflow("w", spec, None, "/metrics", "v1")), routes)
    assert faults and "path /metrics is the gateway's own" in faults[0], faults
    assert body_faults(body_of(AnnouncedWorkflow("w", spec, None, "/w/run", "v1")), routes) == []
    assert taken(routes, "/research") is None and taken(routes, "/v1") is None

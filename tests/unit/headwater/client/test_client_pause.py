"""``Client.pause``/``resume`` and ``AsyncClient.pause``/``resume``: what each sends (the
request id chosen once, before the first try, so a retry is the same request) and how
an ended run's 409 reads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client

WF = "wf-7"


def gateway(seen: list[tuple[str, dict[str, Any]]], fail_first: bool = False,
            ) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        if fail_first and len(seen) == 1:
            return httpx.Response(503, json={"title": "Kafka unavailable", "status": 503},
                                  headers={"Retry-After": "0"})
        if "ended" in request.url.path:
            return httpx.Response(409, json={"title": "Conflict", "status": 409,
                                             "detail": "workflow ended has already ended"})
        verb = request.url.path.rsplit("/", 1)[1]
        return httpx.Response(202, json={"id": WF, "status": f"{verb}_requested",
                                         "request_id": json.loads(request.content)["request_id"],
                                         "was_paused": verb == "resume"})
    return httpx.MockTransport(handle)


def test_pause_and_resume_send_their_verb_reason_and_one_request_id() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with Client("http://gw", "", transport=gateway(seen, fail_first=True)) as hw:
        answer = hw.pause(WF, reason="model API down")
        assert answer["status"] == "pause_requested"
        assert hw.resume(WF, request_id="ops-2")["request_id"] == "ops-2"
    (p1, b1), (p2, b2), (p3, b3) = seen
    assert p1 == p2 == f"/v1/workflows/{WF}/pause" and p3 == f"/v1/workflows/{WF}/resume"
    assert b1 == b2, "the retry after the 503 is the same request (its id chosen once)"
    assert b1["reason"] == "model API down" and len(b1["request_id"]) == 32
    assert b3 == {"request_id": "ops-2"}


def test_an_ended_run_raises_conflict() -> None:
    with Client("http://gw", "", transport=gateway([])) as hw, \
            pytest.raises(errors.Conflict):
        hw.pause("ended")


def test_the_async_client_sends_the_same() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def both() -> None:
        async with AsyncClient("http://gw", "", transport=gateway(seen)) as hw:
            assert (await hw.pause(WF, "why", "p-1"))["status"] == "pause_requested"
            assert (await hw.resume(WF))["status"] == "resume_requested"
    asyncio.run(both())
    assert seen[0] == (f"/v1/workflows/{WF}/pause", {"request_id": "p-1", "reason": "why"})
    assert seen[1][0] == f"/v1/workflows/{WF}/resume"


"""Kafka lost under a running gateway: ``/ready`` answers 503 "Kafka unreachable" within
a few seconds, reads go on, and the gateway is ready again by itself once the broker is.

The gateway runs on a private broker (``faultsuite.infra``), first frozen (SIGSTOP:
its connections stay open and nothing answers, as with a hung broker or a lost
network), then killed (SIGKILL: connections refused) and started again. Before the fix
``/ready`` stayed 200 throughout, while a submission waited its whole produce timeout
and failed.
"""

from __future__ import annotations

import asyncio
import sys
import time

import httpx
from stackkit import Stack
from test_gateway_pg_outage import SPEC, assert_503, wait_for_status

from faultsuite.infra import PrivateInfra, private_infra
from ops.localstack import Service
from ops.sandbox import free_port
from tests.polling import scaled

BODY = {"workflow": SPEC, "queue_anyway": True}
"""No worker runs beside this gateway, so its submissions are queued anyway: admission's
400 for a task that no worker serves is not what this test is about."""
UNREADY_WITHIN_S = 5.0
"""How soon ``/ready`` must say so once the broker stops answering, seconds (scaled)."""


async def unready_after(client: httpx.AsyncClient, since: float) -> float:
    """Poll ``/ready`` until it answers 503 naming Kafka; return the seconds since
    ``since`` (fails after ``UNREADY_WITHIN_S``, scaled)."""
    response = await wait_for_status(client, "/ready", 503, timeout_s=UNREADY_WITHIN_S)
    assert_503(response, "Not ready")
    assert "Kafka unreachable" in response.json()["detail"], response.text
    return time.monotonic() - since


async def test_ready_follows_the_broker(stack: Stack) -> None:
    with private_infra("gateway-ready", postgres=False) as infra:
        port = free_port()
        service = Service("gateway-private-broker", (sys.executable, "-m", "services.gateway"))
        stack.start(service, {"HEADWATER_GATEWAY_PORT": str(port),
                              "HEADWATER_KAFKA_BOOTSTRAP": infra.bootstrap,
                              "HEADWATER_PRODUCE_TIMEOUT": "3"})
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                         timeout=30) as client:
                await frozen_and_thawed(client, infra)
                await killed_and_restarted(client, infra)
        finally:
            infra.resume_broker()
            stack.stop(service)
    log = service.log_file.read_text(errors="replace")
    for crash in ("Exception in ASGI application", "unexpected error"):
        assert crash not in log, log[-3000:]


async def frozen_and_thawed(client: httpx.AsyncClient, infra: PrivateInfra) -> None:
    """SIGSTOP: 503 within seconds, each probe answered within about ``ready_timeout_s``
    (1 s), reads still served; SIGCONT: ready and accepting again."""
    await wait_for_status(client, "/ready", 200)
    accepted = await client.post("/v1/workflows", json=BODY)
    assert accepted.status_code == 202, accepted.text
    wid = accepted.json()["id"]

    infra.pause_broker()
    assert await unready_after(client, time.monotonic()) < scaled(UNREADY_WITHIN_S)
    started = time.monotonic()
    assert (await client.get("/ready")).status_code == 503
    assert time.monotonic() - started < scaled(3), "the probe does not wait for the broker"
    assert (await client.get("/health")).status_code == 200
    assert (await client.get(f"/v1/workflows/{wid}")).status_code == 200, "reads go on"
    assert_503(await client.post("/v1/workflows", json=BODY),
               "Kafka unavailable")

    infra.resume_broker()
    await wait_for_status(client, "/ready", 200, timeout_s=30)
    response = await client.post("/v1/workflows", json=BODY)
    assert response.status_code == 202, response.text


async def killed_and_restarted(client: httpx.AsyncClient, infra: PrivateInfra) -> None:
    """SIGKILL: 503 within seconds; started again: ready and accepting, by itself."""
    infra.kill_broker()
    assert await unready_after(client, time.monotonic()) < scaled(UNREADY_WITHIN_S)
    await asyncio.to_thread(infra.start_broker)
    await wait_for_status(client, "/ready", 200, timeout_s=60)
    response = await client.post("/v1/workflows", json=BODY)
    assert response.status_code == 202, response.text

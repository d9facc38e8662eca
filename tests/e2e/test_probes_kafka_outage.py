"""The probes of the coordinator, the projector and a worker (``services/common/probes.py``)
with Kafka killed under them: each one's ``/ready`` answers 503 naming Kafka within
seconds while its ``/health`` stays 200 (shallow: a broker outage must not get every
process restarted), and each is ready again by itself once the broker is back.

The three run on a private broker (``faultsuite.infra``: ``infra/kafka.sh`` started
with a home of its own, killed by its pid), with a database of their own on the local
PostgreSQL (the projector's).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from stackkit import HERE

from faultsuite.infra import PrivateInfra, private_infra
from ops.localstack import Service
from ops.sandbox import empty_sandbox, free_port, home_kept, stop_sandbox
from tests.polling import scaled, wait_until_async

UNREADY_WITHIN_S = 10.0
"""How soon every ``/ready`` must say so once the broker is gone, seconds (scaled): a
check every 2 s that waits 2 s at most (``probes.BROKER_CHECK_S``, ``BROKER_TIMEOUT_S``)."""
SERVICES = {
    "coordinator": ("-m", "services.coordinator"),
    "projector": ("-m", "services.projector"),
    "worker": ("-m", "services.worker", "--queue", "cpu", "--tasks", "e2e_tasks"),
}


@pytest.fixture
def infra() -> Iterator[PrivateInfra]:
    with private_infra("probes", postgres=False) as private:
        yield private


@pytest.fixture
def urls(tmp_path: Path, services: None, infra: PrivateInfra) -> Iterator[dict[str, str]]:
    """The three services started on the private broker, each with a probes port of its
    own: name -> where it answers them."""
    with home_kept():
        box = empty_sandbox(tmp_path, pythonpath=[str(HERE)], extra_env={
            "HEADWATER_KAFKA_BOOTSTRAP": infra.bootstrap, "HEADWATER_PROJECTION": "off",
            "HEADWATER_TABLE_STORE": "memory://"})
        try:
            found = {}
            for name, argv in SERVICES.items():
                port = free_port()
                box.start(Service(name, (sys.executable, *argv)),
                          {"HEADWATER_METRICS_PORT": str(port)})
                found[name] = f"http://127.0.0.1:{port}"
            yield found
        finally:
            stop_sandbox(box)


async def answers(client: httpx.AsyncClient, urls: dict[str, str],
                  path: str) -> dict[str, tuple[int, str]]:
    """Each service's status and body on ``path`` now (0: no answer)."""
    async def one(url: str) -> tuple[int, str]:
        try:
            got = await client.get(f"{url}{path}")
        except httpx.TransportError as e:
            return 0, type(e).__name__
        return got.status_code, got.text

    found = await asyncio.gather(*(one(u) for u in urls.values()))
    return dict(zip(urls, found, strict=True))


def all_status(status: int) -> object:
    return lambda a: all(code == status for code, _ in a.values())


async def test_readiness_follows_kafka_and_liveness_does_not(
        urls: dict[str, str], infra: PrivateInfra) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        ready = await wait_until_async(lambda: answers(client, urls, "/ready"), 90,
                                       "every service ready", until=all_status(200))
        assert all('"status":"ready"' in body for _, body in ready.values()), ready

        infra.kill_broker()
        since = time.monotonic()
        unready = await wait_until_async(lambda: answers(client, urls, "/ready"),
                                         UNREADY_WITHIN_S, "every service not ready",
                                         until=all_status(503))
        took = time.monotonic() - since
        assert all("Kafka unreachable" in body for _, body in unready.values()), unready
        alive = await answers(client, urls, "/health")
        assert all_status(200)(alive), f"liveness must not follow Kafka: {alive}"
        await asyncio.sleep(1)  # unready stays unready; alive stays alive
        assert all_status(503)(await answers(client, urls, "/ready"))
        assert all_status(200)(await answers(client, urls, "/health"))

        await asyncio.to_thread(infra.start_broker)
        back = time.monotonic()
        await wait_until_async(lambda: answers(client, urls, "/ready"), 90,
                               "every service ready again", until=all_status(200))
        print(f"not ready {took:.1f} s after the kill; ready {time.monotonic() - back:.1f} s "
              "after the broker's start")
        assert took < scaled(UNREADY_WITHIN_S)
        assert all_status(200)(await answers(client, urls, "/health"))

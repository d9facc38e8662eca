"""Every service's ``/metrics`` during a real run: a private stack whose projector runs
as a process of its own (``HEADWATER_PROJECTION=off``), each process on the metrics port
the local stack gave it (its launch record's ``metrics_port``), the gateway on its HTTP
port. Three workflows (one retried, one failed, one slow and streamed) move the
attempts and the durations (by task and workflow name), the batches, the projection, the
HTTP requests and the queue gauges, each scraped from the process that counts it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from stackkit import Stack, private_stack
from test_kafka_submission import wait_status

from tests.polling import wait_until_async

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
"""``(sample name, its labels)`` -> value, as one scrape read them."""
PROCESSES = ("coordinator", "projector", "worker-cpu-1")
RETRY = {"max_attempts": 3, "backoff_base": 0.1, "backoff_max": 0.5, "jitter": 0}


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A stack of the module's own, its projector apart (``HEADWATER_HOME`` put back
    for the session's stack, and set to this one's again to stop it)."""
    with private_stack(tmp_path_factory.mktemp("metrics"),
                       extra_env={"HEADWATER_PROJECTION": "off"}) as stack:
        yield stack


def endpoints(stack: Stack) -> dict[str, str]:
    """Each process's ``/metrics`` URL: the stack's own ports, and the gateway's."""
    urls = {"gateway": f"{stack.gateway}/metrics"}
    for name in PROCESSES:
        record = json.loads((Path(stack.home) / "run" / f"{name}.launch.json").read_text())
        port = record["metrics_port"]
        assert isinstance(port, int) and port > 0, record
        urls[name] = f"http://127.0.0.1:{port}/metrics"
    assert len(set(urls.values())) == len(urls), urls
    return urls


async def scrape(url: str) -> Samples:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(url)
    assert response.status_code == 200, response.text[:300]
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value (0 when the scrape had none)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


async def submit(client: httpx.AsyncClient, spec: dict[str, Any]) -> str:
    response = await client.post("/v1/workflows", json={"workflow": spec})
    assert response.status_code == 202, response.text
    workflow_id: str = response.json()["id"]
    return workflow_id


async def streamed_while_open(client: httpx.AsyncClient, workflow_id: str,
                              gateway: str) -> float:
    """Read the workflow's event stream to its end; return the subscribers the gateway
    counted once the stream's first event came."""
    seen = -1.0
    async with client.stream("GET", f"/v1/workflows/{workflow_id}/events") as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("event:") and seen < 0:
                seen = value(await scrape(gateway), "headwater_sse_subscribers")
    return seen


async def test_every_service_counts_a_real_run(metered: Stack) -> None:
    urls = endpoints(metered)
    before = {name: await scrape(url) for name, url in urls.items()}
    async with httpx.AsyncClient(base_url=metered.gateway, timeout=30) as client:
        flaky = await submit(client, {"name": "m-flaky", "retry": RETRY, "nodes": [
            {"id": "f", "task": "e2e.flaky", "input": {"succeed_on": 2}}]})
        fatal = await submit(client, {"name": "m-fatal", "nodes": [
            {"id": "x", "task": "e2e.fatal"}]})
        slow = await submit(client, {"name": "m-slow", "nodes": [
            {"id": "s", "task": "e2e.sleep", "input": {"seconds": 2}}]})
        subscribers = await streamed_while_open(client, slow, urls["gateway"])
    statuses = [(await wait_status(metered, w))["status"] for w in (flaky, fatal, slow)]
    assert statuses == ["succeeded", "failed", "succeeded"]
    assert subscribers >= 1
    await check_coordinator(urls["coordinator"], before["coordinator"])
    await check_worker(urls["worker-cpu-1"], before["worker-cpu-1"])
    await check_projector(urls["projector"], before["projector"])
    after = await check_gateway(urls["gateway"], before["gateway"])
    routes = {dict(labels).get("route", "") for _, labels in after}
    assert not any(w in r for w in (flaky, fatal, slow) for r in routes)  # templates only


async def moved(url: str, what: str, check: Any) -> Samples:
    """Scrape ``url`` until ``check(samples)`` holds (the counts of a batch just carried
    out may come a moment after the status shows it)."""
    return await wait_until_async(lambda: scrape(url), 30, what, until=check, interval_s=0.3)


ATTEMPTS = "headwater_attempts_total"
ENDED = "headwater_workflow_duration_seconds"


async def check_coordinator(url: str, before: Samples) -> None:
    def grew(after: Samples) -> bool:
        return all(value(after, n, **labels) >= value(before, n, **labels) + least
                   for n, labels, least in (
                       (ATTEMPTS, {"outcome": "failed", "task": "e2e.flaky",
                                   "workflow": "m-flaky"}, 1),
                       (ATTEMPTS, {"outcome": "succeeded", "task": "e2e.flaky",
                                   "workflow": "m-flaky"}, 1),
                       (ATTEMPTS, {"outcome": "failed", "task": "e2e.fatal",
                                   "workflow": "m-fatal"}, 1),
                       (ATTEMPTS, {"outcome": "succeeded", "task": "e2e.sleep",
                                   "workflow": "m-slow"}, 1),
                       (f"{ENDED}_count", {"status": "succeeded", "workflow": "m-flaky"}, 1),
                       (f"{ENDED}_count", {"status": "succeeded", "workflow": "m-slow"}, 1),
                       (f"{ENDED}_count", {"status": "failed", "workflow": "m-fatal"}, 1),
                       ("headwater_coordinator_batch_size_records_count", {}, 3),
                       ("headwater_coordinator_batch_apply_seconds_count", {}, 3),
                       ("headwater_coordinator_history_events_total", {}, 12)))

    after = await moved(url, "the coordinator's attempts, workflows and batches", grew)
    slow = {"status": "succeeded", "workflow": "m-slow"}
    assert value(after, f"{ENDED}_sum", **slow) - value(before, f"{ENDED}_sum", **slow) >= 2.0
    assert value(after, "headwater_coordinator_intents_pending") == 0


async def check_worker(url: str, before: Samples) -> None:
    name = "headwater_task_run_seconds_count"

    def grew(after: Samples) -> bool:
        return all(value(after, name, queue="cpu", outcome=outcome, task=task)
                   >= value(before, name, queue="cpu", outcome=outcome, task=task) + 1
                   for outcome, task in (("succeeded", "e2e.flaky"), ("failed", "e2e.flaky"),
                                         ("failed", "e2e.fatal"), ("succeeded", "e2e.sleep")))

    after = await moved(url, "the worker's attempts timed", grew)
    slow = "headwater_task_run_seconds_bucket"
    labels = {"queue": "cpu", "outcome": "succeeded", "task": "e2e.sleep"}
    assert value(after, slow, le="1.0", **labels) < value(
        after, slow, le="+Inf", **labels)  # m-slow ran 2 s


async def check_projector(url: str, before: Samples) -> None:
    def grew(after: Samples) -> bool:
        return (value(after, "headwater_projector_events_total")
                >= value(before, "headwater_projector_events_total") + 12
                and value(after, "headwater_projector_batch_seconds_count")
                > value(before, "headwater_projector_batch_seconds_count"))

    after = await moved(url, "the projector's events", grew)
    assert ("headwater_projector_lag_events", frozenset()) in after


async def check_gateway(url: str, before: Samples) -> Samples:
    def grew(after: Samples) -> bool:
        requests = "headwater_http_requests_total"
        return (value(after, requests, method="POST", route="/v1/workflows", status="202")
                == value(before, requests, method="POST", route="/v1/workflows",
                         status="202") + 3
                and value(after, requests, method="GET", route="/v1/workflows/{workflow_id}",
                          status="200")
                > value(before, requests, method="GET", route="/v1/workflows/{workflow_id}",
                        status="200")
                and ("headwater_queue_backlog_dispatches",
                     frozenset({("queue", "cpu")})) in after)

    after = await moved(url, "the gateway's requests and queue gauges", grew)
    assert value(after, "headwater_queue_live_workers", queue="cpu") >= 1
    assert value(after, "headwater_sse_subscribers") == 0
    return after

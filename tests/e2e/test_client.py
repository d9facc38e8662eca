"""``headwater.client`` on the real stack, across restarts of its gateway (a graceful
one, then a SIGKILL): ``events`` resumes with ``Last-Event-ID`` and gets every event
once, in order; ``result`` returns the output; and the typed views."""

from __future__ import annotations

import os
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from stackkit import Stack
from test_shutdown import python

from headwater import errors
from headwater.client import Client
from ops import localstack
from ops.sandbox import free_port
from tests.polling import scaled, wait_until

STEPS: dict[str, Any] = {"name": "steps", "nodes": [
    {"id": f"s{i}", "task": "e2e.sleep", "input": {"seconds": 3},
     **({"needs": [f"s{i - 1}"]} if i else {})} for i in range(6)],
    "output": "${nodes.s5.output}"}


def restart(stack: Stack, gateway: localstack.Service, port: int, url: str,
            kill: bool) -> None:
    """Stop the gateway (SIGTERM, or SIGKILL with ``kill``) and start it again on its
    port, waiting until it is ready."""
    if kill:
        pid = localstack.read_pid(gateway.pid_file)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not localstack.alive(pid), 10, "the gateway killed")
    else:
        stack.stop(gateway)
    pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port)})
    localstack.wait_ready(f"{url}/ready", scaled(60), [pid])


def test_events_and_result_across_gateway_restarts(stack: Stack) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    gateway = localstack.Service("gateway-client", python("services.gateway"))
    pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port)})
    try:
        localstack.wait_ready(f"{url}/ready", scaled(60), [pid])
        with Client(url, retries=60) as hw, ThreadPoolExecutor(2) as pool:
            submitted = hw.submit(STEPS, id=f"client-{uuid.uuid4().hex[:8]}")
            assert submitted.created and submitted.status == "accepted"
            events = pool.submit(lambda: list(hw.events(submitted.id)))
            result = pool.submit(hw.result, submitted.id, scaled(120))
            wait_until(lambda: hw.get(submitted.id).seq >= 3, 30, "the run going")
            restart(stack, gateway, port, url, kill=False)
            going = wait_until(lambda: hw.get(submitted.id), 30, "the run going on",
                               until=lambda w: w.seq >= 8)
            assert not going.done  # else the SIGKILL would cut no stream
            restart(stack, gateway, port, url, kill=True)
            assert result.result(scaled(120)) == 3
            seen = events.result(scaled(60))
            workflow = hw.get(submitted.id)
            page = hw.list(name="steps", limit=5)
            by_name = check_definitions(hw)
            queues = {q.queue: q for q in hw.queues()}
            with pytest.raises(errors.NotFound):
                hw.get("no-such-run")
            with pytest.raises(errors.Unprocessable):
                hw.submit({"name": "bad", "nodes": [{"id": "a"}]})
    finally:
        stack.stop(gateway)
        stack.services.remove(gateway)
    assert [e.id for e in seen] == list(range(1, workflow.seq + 1))  # none lost or repeated
    assert seen[-1].type == "WorkflowSucceeded" and seen[-1].terminal
    assert workflow.status == "succeeded" and workflow.output == 3 and workflow.done
    assert submitted.id in {w.id for w in page.items}
    assert queues["cpu"].live_workers >= 1 and "e2e.sleep" in queues["cpu"].tasks
    assert by_name["run"].done and by_name["run"].output == 0.1
    streamed = by_name["stream"]
    assert streamed[0].type == "accepted" and streamed[-1].type == "WorkflowSucceeded"
    assert [e.id for e in streamed[1:]] == list(range(1, len(streamed)))


def check_definitions(hw: Client) -> dict[str, Any]:
    """Register a definition, run it waiting and streaming, then delete it."""
    name = f"short-{uuid.uuid4().hex[:8]}"
    spec = {"name": "short", "nodes": [{"id": "s", "task": "e2e.sleep",
                                        "input": {"seconds": "${input.seconds}"}}],
            "output": "${nodes.s.output}"}
    stored = hw.definitions.put(name, spec)
    assert (stored.name, stored.version) == (name, 1)
    assert hw.definitions.put(name, spec).version == 1  # the same body: the same version
    assert hw.definitions.get(name).raw["workflow"] == spec
    assert name in {d.name for d in hw.definitions.list()}
    run = hw.run(name, {"seconds": 0.1}, timeout=30)
    streamed = list(hw.run(name, {"seconds": 0.1}, mode="stream"))
    hw.definitions.delete(name)
    with pytest.raises(errors.Gone):
        hw.run(name, {"seconds": 0.1}, mode="async")
    return {"run": run, "stream": streamed}

"""The worker that ``python -m examples.hybrid`` starts is remembered by the local stack
(``ops.stackstate``), so that ``headwater up`` after ``down`` brings it back. A real
process stands in for the worker, a real HTTP server for the gateway."""

from __future__ import annotations

from pathlib import Path

from examples.hybrid import runner
from examples.hybrid.tasks import QUEUE, TASKS_MODULE
from ops import localstack, stackstate
from tests.unit.ops.conftest import SLEEPER, Gateway


def test_the_example_worker_is_remembered_with_its_environment(
        home: Path, gateway: Gateway) -> None:
    env = {"PYTHONPATH": "/somewhere"}
    localstack.start(localstack.Service(runner.WORKER, SLEEPER), env)  # as run before
    gateway.answers = [(200, {"queues": [{"queue": QUEUE, "live_workers": 1}]})]
    pid, started = runner.ensure_worker(gateway.url, timeout_s=10)
    assert not started and localstack.alive(pid)
    group, = stackstate.remembered()
    assert (group.queue, group.tasks, group.count, dict(group.env)) == (
        QUEUE, (TASKS_MODULE,), 1, env)
    assert [s.name for s in group.services()] == [runner.WORKER]  # what `up` starts

"""A coordinator stopped (SIGSTOP) past its session timeout with a batch in hand, then
resumed, on the real broker: the other coordinator has taken its partitions meanwhile,
and the resumed one must not write that batch with the state it held
(``services/coordinator/freeze.py``); every history stays one history."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

from consumer_groups import wait_group_size
from stackkit import Stack
from test_shutdown import _produce_submissions, eventually, python, whole_histories

from ops import localstack
from tests.polling import scaled


async def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"

def _resumed_log(service: localstack.Service) -> str:
    """What ``service`` logged from its fault point's stop on."""
    log = service.log_file.read_text(errors="replace")
    return log[log.index("coordinator.before_intent reached"):]


PAUSE_S = 14.0
"""The least time it stays stopped: past the 10 s session timeout, as a frozen container
or VM would be (and longer if the group takes longer to let it go)."""


async def test_a_coordinator_resumed_after_a_long_stop_writes_nothing_stale(
        own: Stack) -> None:
    """On a private stack: the restarted coordinator leaves ghosts behind in the groups
    of the coordinators and of the projection, which other tests would count."""
    stack = own
    second = localstack.Service("coordinator-paused", python("services.coordinator"))
    # It stops itself right before writing the intent of its 15th batch.
    stack.start(second, {"HEADWATER_FAULTS": "coordinator.before_intent=15:stop"})
    group = stack.topics.coordinator_app_id
    pid = None
    try:
        await wait_group_size(group, 2, "a second coordinator", 40)
        spec = {"name": "chain", "nodes": [
            {"id": f"n{i}", "task": "e2e.digest", "input": {"value": i, "seconds": 0.2},
             **({"needs": [f"n{i - 1}"]} if i else {})} for i in range(6)]}
        ids = [f"pause-{uuid.uuid4().hex[:8]}" for _ in range(40)]
        pid = localstack.read_pid(second.pid_file)
        assert pid is not None
        await _produce_submissions(stack, spec, ids)
        await eventually(lambda: _stopped(pid), "the fault point's SIGSTOP", 60)
        stopped_at = time.monotonic()
        await wait_group_size(group, 1, "the other coordinator alone (the stopped one let go)",
                              60, stable=True)
        # The stop itself (the fault, not a wait): at least PAUSE_S in all.
        await asyncio.sleep(max(0.0, PAUSE_S - (time.monotonic() - stopped_at)))
        os.kill(pid, signal.SIGCONT)
        resumed_at = time.monotonic()

        await whole_histories(stack, ids, timeout_s=90)
        # The batch in hand was refused, and the process rejoined as a new member. The
        # refusal may come after the other coordinator finished every history: the
        # intent's produce, sent before the stop, has to come back first.
        refused = ("Fenced: the process stood still for", "restarting: a batch failed half-way")

        async def said() -> bool:
            return all(line in _resumed_log(second) for line in refused)

        try:
            await eventually(said, "the resumed coordinator's refusal of its batch", 60)
        except TimeoutError:
            raise AssertionError(_resumed_log(second)[-3000:]) from None
        assert time.monotonic() - resumed_at < scaled(90)
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        stack.stop(second)
        stack.services.remove(second)
        await wait_group_size(group, 1, "the coordinator", 40, at_least=True)

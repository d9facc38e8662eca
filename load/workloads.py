"""The workflows the benchmarks run, and submitting them straight to Kafka."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from headwater.workflows.decorator import info_of
from load import noop_tasks
from services.common.clock import now_ms

TASK = "bench.noop"
Spec = dict[str, Any]


def chain(length: int, name: str = "bench-chain") -> Spec:
    """A chain of ``length`` noop tasks ``n0 -> n1 -> ...``."""
    nodes: list[dict[str, Any]] = [{"id": "n0", "task": TASK}]
    nodes += [{"id": f"n{k}", "task": TASK, "needs": [f"n{k - 1}"]} for k in range(1, length)]
    return {"name": name, "nodes": nodes}


def code_chain() -> Spec:
    """The spec document of a run of the code workflow ``load.noop_tasks.chain`` (one
    ``code`` node), submitted with ``code_input``: the same chain as ``chain`` in code."""
    info = info_of(noop_tasks.chain)
    if info is None:
        raise LookupError("load.noop_tasks.chain is not a registered @workflow")
    return info.spec()


def code_input(length: int) -> dict[str, int]:
    """The input of a ``code_chain`` run of ``length`` noop tasks."""
    return {"length": length}


def is_step(index: int | None) -> bool:
    """Whether a task (by its index) of a spec or code chain is one of the chain's noop
    tasks: a spec chain's tasks have no index; a code chain's one node runs its steps at
    odd indexes and its activations at even ones (``headwater/core/kinds/code``)."""
    return index is None or index % 2 == 1


def diamond(name: str = "bench-diamond") -> Spec:
    """Four noop tasks ``a -> (b, c) -> d``: a fan-out and a fan-in."""
    return {"name": name, "nodes": [
        {"id": "a", "task": TASK},
        {"id": "b", "task": TASK, "needs": ["a"]},
        {"id": "c", "task": TASK, "needs": ["a"]},
        {"id": "d", "task": TASK, "needs": ["b", "c"]},
    ]}


def fan_out(name: str = "bench-map") -> Spec:
    """One map node running a noop per item of ``input.items``."""
    return {"name": name, "nodes": [{"id": "m", "kind": "map", "over": "${input.items}",
                                     "task": TASK, "input": {"x": "${item}"}}]}


SKIP = {"run": False}
"""The input with which ``skipped`` finishes at once."""


def skipped(name: str = "bench-skipped") -> Spec:
    """One noop task that runs only when ``input.run`` is true: submitted with ``SKIP``,
    the coordinator skips it and the workflow succeeds in the submission's own step, with
    no dispatch and no worker (``ConditionEvaluated``, ``NodeFinished``,
    ``WorkflowSucceeded``)."""
    return {"name": name, "nodes": [{"id": "a", "task": TASK, "when": "${input.run} == true"}]}


def waiting(name: str = "bench-wait", signal: str = "never") -> Spec:
    """One ``wait`` node with no timeout: it waits for ``signal`` (which no benchmark
    sends) for ever, so the workflow stays in the table unfinished."""
    return {"name": name, "nodes": [{"id": "w", "kind": "wait", "signal": signal}]}


def new_id(tag: str) -> str:
    """A fresh workflow id, ``bench-<tag>-<hex>``."""
    return f"bench-{tag}-{uuid.uuid4().hex[:12]}"


def submission(workflow_id: str, spec: Spec, workflow_input: Any = None) -> bytes:
    """The encoded ``WorkflowSubmitted`` record, stamped now."""
    return codec.encode(ev.WorkflowSubmitted(workflow_id, spec, workflow_input, now_ms()))


async def submit(producer: AIOKafkaProducer, topics: Topics, workflow_id: str, spec: Spec,
                 workflow_input: Any = None) -> int:
    """Produce one submission and wait for the broker's ack.

    Returns:
        When it was sent, ms since the epoch.
    """
    sent = now_ms()
    await producer.send_and_wait(topics.submissions, submission(workflow_id, spec, workflow_input),
                                 key=workflow_id.encode())
    return sent


async def submit_all(producer: AIOKafkaProducer, topics: Topics, workflow_ids: Iterable[str],
                     spec: Spec, workflow_input: Any = None, window: int = 1000) -> None:
    """Produce one submission per id, pipelined: ``window`` sends are queued before their
    acks are awaited together, so a fill of many workflows is not one round trip each.

    Args:
        producer: a started producer.
        topics: the deployment's topic names.
        workflow_ids: the ids, each submitted once with ``spec`` and ``workflow_input``.
        window: sends in flight at most (at least 1).
    """
    acks: list[asyncio.Future[Any]] = []
    for wid in workflow_ids:
        acks.append(await producer.send(topics.submissions,
                                        submission(wid, spec, workflow_input),
                                        key=wid.encode()))
        if len(acks) >= max(window, 1):
            await asyncio.gather(*acks)
            acks.clear()
    await asyncio.gather(*acks)

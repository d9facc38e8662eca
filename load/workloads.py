"""The workflows the benchmarks run, and submitting them straight to Kafka."""

from __future__ import annotations

import uuid
from typing import Any

from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from services.common.clock import now_ms

TASK = "bench.noop"
Spec = dict[str, Any]


def chain(length: int, name: str = "bench-chain") -> Spec:
    """A chain of ``length`` noop tasks ``n0 -> n1 -> ...``."""
    nodes: list[dict[str, Any]] = [{"id": "n0", "task": TASK}]
    nodes += [{"id": f"n{k}", "task": TASK, "needs": [f"n{k - 1}"]} for k in range(1, length)]
    return {"name": name, "nodes": nodes}


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

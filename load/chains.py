"""Chains of noop tasks submitted a fixed gap apart, with the Kafka timestamps of every
step of every chain: the workers' reports, the coordinator's dispatches and its history
records. B3, B3c and B6 measure hops from these.

A chain is a spec (``load.workloads.chain``: nodes ``n0``, ``n1``, ...) or the same chain
in code (``load.noop_tasks.chain``: one node ``main`` whose steps run at odd indexes,
with an activation of the function at each even index, between two steps: sent to a
worker, or carried by the step's report before it, a continuation).

Every time here is a record's Kafka timestamp (CreateTime: set by the producer that sent
the record, as it sent it), never an ``at_ms`` inside a record: the coordinator stamps
the inputs it applies with its own clock, so a report's ``at_ms`` in the history says
when the coordinator applied it, not when the worker sent it. All the producers (the
workers, the coordinator) run on this machine, so their timestamps share one clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import step_index
from headwater.workflows.decorator import CODE_NODE
from load import workloads
from load.deploy import QUEUE
from load.kafka_io import Seen, Tail, producer
from ops.sandbox import Sandbox

Step = tuple[str, str, int | None]
"""A task of one chain: ``(workflow id, node id, index)`` (the index None in a spec
chain)."""
STARTED = "TaskStarted"
SUCCEEDED = "TaskSucceeded"
CODE_LEGS = ("to_activation", "activation_start", "activation", "decided")
"""The parts of a code chain's hop from task k's success report to task k+1's dispatch
(``samples``)."""
DISPATCH_WAIT_S = 10.0
"""How long after the last chain finished its dispatch records may still be arriving."""


@dataclass
class Stamps:
    """The first record of each kind per step, as read (``Seen``: its Kafka timestamp and
    the decoded value), and how the chains ended.

    Attributes:
        ids: the chains' workflow ids.
        reports: ``(report type name, step)`` -> the first such report on the reports
            topic (``TaskStarted``, ``TaskSucceeded``).
        history: ``(event type name, step)`` -> the first such history record.
        dispatches: step -> its first dispatch record on ``tasks.<queue>``.
        sent: the steps whose history records a dispatch sent to a worker (all but the
            activations a continuation decided: ``code.continuation.is_continued``).
        finished: chains with a terminal history record.
        failed: chains that ended other than ``WorkflowSucceeded``.
    """

    ids: set[str]
    reports: dict[tuple[str, Step], Seen] = field(default_factory=dict)
    history: dict[tuple[str, Step], Seen] = field(default_factory=dict)
    dispatches: dict[Step, Seen] = field(default_factory=dict)
    sent: set[Step] = field(default_factory=set)
    finished: int = 0
    failed: int = 0

    def see_report(self, seen: Seen) -> None:
        """Keep a ``TaskStarted`` or ``TaskSucceeded`` report of one of the chains."""
        body = seen.value
        if isinstance(body, ev.TaskStarted | ev.TaskSucceeded) and body.workflow_id in self.ids:
            self.reports.setdefault((type(body).__name__, _step(body)), seen)

    def see_event(self, seen: Seen) -> None:
        """Keep a task's history record; count a chain's terminal record."""
        event = seen.value
        if event.workflow_id not in self.ids:
            return
        body = event.body
        if isinstance(body, ev.TaskStarted | ev.TaskSucceeded):
            self.history.setdefault((type(body).__name__, _step(body)), seen)
        elif isinstance(body, ev.TaskDispatched) and not is_continued(body):
            self.sent.add(_step(body))
        elif event.terminal:
            self.finished += 1
            self.failed += event.type != "WorkflowSucceeded"

    def see_dispatch(self, seen: Seen) -> None:
        """Keep a dispatch record of one of the chains."""
        body = seen.value
        if isinstance(body, ev.TaskDispatched) and body.workflow_id in self.ids:
            self.dispatches.setdefault(_step(body), seen)


def _step(body: ev.TaskStarted | ev.TaskSucceeded | ev.TaskDispatched) -> Step:
    return body.workflow_id, body.node, body.index


@dataclass(frozen=True)
class Chains:
    """One run of chains: their ids in submission order, their length, whether they ran
    as code, and their stamps."""

    ids: list[str]
    length: int
    stamps: Stamps
    code: bool = False

    def step(self, wid: str, k: int) -> Step:
        """Noop task ``k`` of chain ``wid``."""
        return (wid, CODE_NODE, step_index(k)) if self.code else (wid, f"n{k}", None)

    def hops(self) -> Iterator[tuple[Step, Step]]:
        """``(task k, task k+1)`` of every chain, for k from 0 to ``length - 2``."""
        for wid in self.ids:
            for k in range(self.length - 1):
                yield self.step(wid, k), self.step(wid, k + 1)

    def report_ms(self, kind: str, step: Step) -> int:
        """The Kafka timestamp of the first ``kind`` report of ``step``, ms."""
        return self.stamps.reports[(kind, step)].timestamp_ms

    def dispatch_ms(self, step: Step) -> int:
        """The Kafka timestamp of the first dispatch record of ``step``, ms."""
        return self.stamps.dispatches[step].timestamp_ms


def samples(chains: Chains) -> dict[str, list[float]]:
    """Every hop of ``chains``, in ms, split where the records allow.

    Returns:
        ``hop``: task k's success report → task k+1's ``TaskStarted`` report;
        ``dispatch``: task k's success report → task k+1's dispatch record (the
        coordinator's side of the hop: reading the report, applying it, publishing);
        ``start``: that dispatch record → task k+1's ``TaskStarted`` report (the worker's
        side: fetching the dispatch and starting it); ``hop`` is their sum. And
        ``turnaround``: every task's ``TaskStarted`` report → its history record (the
        coordinator per input). All from Kafka timestamps. For chains in code, whose
        ``dispatch`` goes through the activation between the two tasks, also that
        side split (``CODE_LEGS``): ``to_activation`` (task k's success report → the
        activation's dispatch record), ``activation_start`` (→ its ``TaskStarted``
        report), ``activation`` (→ its success report: the worker running the function,
        its replay if any, and its decision) and ``decided`` (→ task k+1's dispatch
        record), for the hops whose activation went to a worker; ``continued`` counts
        (1 each) the hops whose activation task k's report carried instead.
    """
    out: dict[str, list[float]] = {"hop": [], "dispatch": [], "start": [], "turnaround": [],
                                   "continued": []}
    for done, nxt in chains.hops():
        success, started = chains.report_ms(SUCCEEDED, done), chains.report_ms(STARTED, nxt)
        out["hop"].append(started - success)
        out["dispatch"].append(chains.dispatch_ms(nxt) - success)
        out["start"].append(started - chains.dispatch_ms(nxt))
        if chains.code:
            wid, node, index = nxt
            act = (wid, node, None if index is None else index - 1)
            if act not in chains.stamps.sent:
                out["continued"].append(1)
                continue
            times = (success, chains.dispatch_ms(act), chains.report_ms(STARTED, act),
                     chains.report_ms(SUCCEEDED, act), chains.dispatch_ms(nxt))
            for leg, begin, end in zip(CODE_LEGS, times, times[1:], strict=False):
                out.setdefault(leg, []).append(end - begin)
    for (kind, step), seen in chains.stamps.history.items():
        if kind == STARTED:
            out["turnaround"].append(seen.timestamp_ms - chains.report_ms(STARTED, step))
    return out


@dataclass(frozen=True)
class Batch:
    """Chains to submit one after another.

    Attributes:
        count: chains to submit.
        length: noop tasks per chain.
        gap_s: pause between submissions, seconds.
        code: run the chain in code (``load.noop_tasks.chain``) instead of as a spec.
    """

    count: int
    length: int
    gap_s: float
    code: bool = False


async def run_chains(sandbox: Sandbox, batch: Batch, timeout_s: float, tag: str) -> Chains:
    """Submit ``batch.count`` chains of ``batch.length`` noop tasks ``batch.gap_s`` apart
    and read the reports, dispatches and history records of every step until all have
    finished.

    Args:
        sandbox: a ready deployment.
        batch: the chains.
        timeout_s: the longest the chains may take to finish, seconds.
        tag: names the workflow ids and the spec (``bench-<tag>``), and the errors.

    Raises:
        TimeoutError: the chains, or their dispatch and report records, did not all
            arrive in time.
        RuntimeError: a chain did not succeed.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    count, length, gap_s = batch.count, batch.length, batch.gap_s
    ids = [workloads.new_id(tag) for _ in range(count)]
    stamps = Stamps(set(ids))
    chains = Chains(ids, length, stamps, batch.code)
    tails = [Tail(bootstrap, sandbox.topics.events, on_record=stamps.see_event),
             Tail(bootstrap, sandbox.topics.tasks(QUEUE), on_record=stamps.see_dispatch),
             Tail(bootstrap, sandbox.topics.reports, on_record=stamps.see_report)]
    for tail in tails:
        await tail.start()
    send = producer(bootstrap)
    await send.start()
    try:
        spec = workloads.code_chain() if batch.code else workloads.chain(length, f"bench-{tag}")
        given = workloads.code_input(length) if batch.code else None
        for wid in ids:
            await workloads.submit(send, sandbox.topics, wid, spec, given)
            await asyncio.sleep(gap_s)
        what = f"{tag.upper()}: {count} chains {gap_s * 1000:.0f} ms apart"
        await tails[0].wait_until(lambda: stamps.finished >= count, timeout_s, what)
        await tails[1].wait_until(lambda: len(stamps.dispatches) >= len(stamps.sent),
                                  DISPATCH_WAIT_S, f"{what}: every dispatch record")
        await tails[2].wait_until(lambda: len(stamps.reports) >= 2 * len(stamps.sent),
                                  DISPATCH_WAIT_S, f"{what}: every started and success report")
    finally:
        await send.stop()
        for tail in tails:
            await tail.stop()
    if stamps.failed:
        raise RuntimeError(f"{tag.upper()}: {stamps.failed} of {count} workflows did not succeed")
    return chains

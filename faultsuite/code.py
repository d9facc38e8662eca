"""Code workflows in the fault suite: the ``code`` shape, the plans that kill the worker
running a ``@workflow``'s function, and the replay check of every code run.

The shape runs ``fault.code`` (``tests/e2e/fault_flows.py``, which the suite's workers
import): tasks, a gather, a task retried, a child workflow (``fault.code_child``), a
durable sleep, the signal ``approval`` (sent by the batch while it sleeps, so kept for
its wait) and a task failed for good that the function catches. Its spec is the
decorator's (``WorkflowInfo.spec``) with the suite's heartbeat timeout, so that an
activation lost with its worker is retried within seconds, and with the code version
its workers announce (``services.worker.workflows.version_of``): its activations and
its steps on ``cpu`` travel in that version's lane (``Topics.lane``), and so do its
child's (the worker pins a ``wf.call``'s child to its own version), while the kills
go on.

``CODE_POINTS`` are seven ways for the worker running a function to die, each a fault
point armed for the workflow's activations or its step task (``services/common/faults.py``,
``point@label``): as it takes an activation (``worker.after_start``), in the middle of a
replay (``worker.replaying``, on the worker that replaced one killed after reporting an
activation, whose cache of the run's instance died with it), once the function has
decided but before the decision is reported (``worker.before_outcome``), once it is
reported (``worker.after_outcome``), while a step's task runs, once a step has run and
its worker has decided the function's next activation with the instance it kept but
before the report that carries both is sent (``worker.before_outcome@fault.step``: the
step's attempt is lost with the continuation), and once that report is sent (the
replacement, with no instance kept, replays the run at its next activation). The
coordinator's own
points need nothing new: the batch has code workflows, so every run kills a coordinator
applying their inputs too.

``replay_differences`` is ``headwater replay`` of every code run and its children
(``ops.cli.replay.gather``): the history folded from the events topic against the
coordinator's table and the projection, which must agree. ``kills_during_code`` says
which kills came while code runs were in flight.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from faultsuite.shapes import HEARTBEAT_TIMEOUT_S, Sizes, Spec
from faultsuite.supervisor import Life
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import is_activation
from load.kafka_io import Seen
from ops.cli.endpoints import Endpoints
from ops.cli.replay import gather
from ops.sandbox import Sandbox
from services.worker.workflows import version_of

E2E_DIR = Path(__file__).resolve().parents[1] / "tests" / "e2e"
FLOWS = "fault_flows"
"""The module of the shape's ``@workflow``s (in ``tests/e2e``, on the workers' path)."""
WORKFLOW = "fault.code"
"""The shape's workflow (its activation task has its name)."""
CHILD_RUNS = "fault.code_child@?"
"""What each of its child runs records as its definition: a ``@workflow`` called by
``wf.call`` names its workflow, without a version."""
STEP_TASK = "fault.step"
"""The task of the shape's steps (no other shape runs it)."""
REPLAY_GRACE_S = 30.0
"""Seconds the table may lag the log in a replay check (it does not, once settled)."""


def code(s: Sizes) -> Spec:
    """The spec of a run of ``fault.code``: the decorator's, at the code version the
    suite's workers announce (they inherit this process's ``HEADWATER_CODE_VERSION``,
    else each names the digest of the function's source), with the suite's heartbeat
    timeout for its activations (``s`` is unused: the function fixes its own sizes)."""
    if str(E2E_DIR) not in sys.path:
        sys.path.append(str(E2E_DIR))
    from fault_flows import code as flow  # tests/e2e is on the path only from here

    from headwater.workflows.decorator import info_of

    info = info_of(flow)
    assert info is not None and info.name == WORKFLOW
    spec: dict[str, Any] = info.spec(version_of(
        info, os.environ.get("HEADWATER_CODE_VERSION") or None))
    spec["heartbeat_timeout"] = HEARTBEAT_TIMEOUT_S
    return spec


CODE_POINTS: dict[str, tuple[str, ...]] = {
    "code.activation_started": (f"worker.after_start@{WORKFLOW}",),
    "code.replaying": (f"worker.after_outcome@{WORKFLOW}", "worker.replaying"),
    "code.activation_decided": (f"worker.before_outcome@{WORKFLOW}",),
    "code.activation_reported": (f"worker.after_outcome@{WORKFLOW}",),
    "code.step_running": (f"worker.after_start@{STEP_TASK}",),
    "code.step_continued": (f"worker.before_outcome@{STEP_TASK}",),
    "code.continuation_reported": (f"worker.after_outcome@{STEP_TASK}", "worker.replaying"),
}
"""Each way to kill the worker running a function: the fault points its worker
processes are armed with in turn (a second point arms the process that replaced the
first one killed: ``code.replaying`` kills, after a reported activation, the worker that
replays the run's function next)."""
CODE_FIRST_HITS = (3, 6, 9)
"""The labelled pass that kills the first worker, per run (cycled): the ``fault.code``
activation or ``fault.step`` attempt (a run of the shape has a dozen of each)."""
CODE_LATER_HIT = 4
"""The labelled pass that kills each later worker."""


def code_faults(name: str, run: int = 0,
                kills: int = 1) -> tuple[str, list[str], tuple[str, ...]]:
    """The ``HEADWATER_FAULTS`` of the first worker, those of its later lives, and the
    causes of death to expect, for the code point ``name`` in run number ``run``.

    Raises:
        ValueError: an unknown code point.
    """
    if name not in CODE_POINTS:
        raise ValueError(f"unknown code point {name!r} (one of {list(CODE_POINTS)})")
    points = CODE_POINTS[name]
    first = f"{points[0]}={CODE_FIRST_HITS[run % len(CODE_FIRST_HITS)]}"
    if len(points) > 1:  # the replacement dies at its first pass of the second point
        return first, [f"{p}=1" for p in points[1:]], tuple(f"fault {p}" for p in points)
    later = [f"{points[0]}={CODE_LATER_HIT + 3 * i}" for i in range(kills - 1)]
    return first, later, (f"fault {points[0]}",)


def code_figures(records: Iterable[Record], runs: set[str]) -> dict[str, int]:
    """How much the code runs did, from their distinct history events: runs, activation
    attempts dispatched (even indexes of the code node), step attempts dispatched (odd:
    tasks and children), decisions recorded, the activations of those that a step's
    report carried (continued: no worker ran them), step attempts dispatched more than once
    (the audit's ``double_dispatches`` names them: a violation), and the identical copies
    of their events on the topic (a coordinator killed after publishing them published
    them again: its kill came while it applied a code run's inputs)."""
    seen: set[tuple[str, int]] = set()
    dispatched: Counter[tuple[str, str, int | None, int]] = Counter()
    decided = copies = continued = 0
    for r in records:
        e = r.value
        if not isinstance(e, ev.HistoryEvent) or e.workflow_id not in runs:
            continue
        if (e.workflow_id, e.seq) in seen:
            copies += 1
            continue
        seen.add((e.workflow_id, e.seq))
        b = e.body
        if isinstance(b, ev.TaskDispatched):
            dispatched[(e.workflow_id, b.node, b.index, b.attempt)] += 1
            continued += is_continued(b)
        elif isinstance(b, ev.TaskSucceeded) and is_activation(b.index):
            decided += 1
    return {"runs": len(runs),
            "activation_attempts": sum(1 for k in dispatched if is_activation(k[2])),
            "step_attempts": sum(1 for k in dispatched if not is_activation(k[2])),
            "decisions": decided,
            "continued_activations": continued,
            "steps_dispatched_twice": sum(1 for k, n in dispatched.items()
                                          if n > 1 and not is_activation(k[2])),
            "events_published_again": copies}


def kills_during_code(runs: Iterable[str], seen: Iterable[Seen],
                      deaths: Iterable[Life]) -> dict[str, dict[str, int]]:
    """Per cause of death (``fault coordinator.after_intent``, ...): how many of the
    run's kills came while a code run was in flight (between its first and its last
    history record on the topic, by their Kafka timestamps), and how many did not. A
    coordinator killed then applied the inputs of code runs, and a new one recovered
    their journals from its table."""
    ids = set(runs)
    spans: dict[str, list[int]] = {}
    for record in seen:
        wid = getattr(record.value, "workflow_id", None)
        if wid in ids:
            span = spans.setdefault(wid, [record.timestamp_ms, record.timestamp_ms])
            span[0], span[1] = min(span[0], record.timestamp_ms), max(span[1],
                                                                     record.timestamp_ms)
    out: dict[str, dict[str, int]] = {}
    for life in deaths:
        if life.ended_ms is None or life.cause == "unexpected exit":
            continue
        during = any(first <= life.ended_ms <= last for first, last in spans.values())
        counts = out.setdefault(life.cause.split(" (hit")[0], {"during": 0, "outside": 0})
        counts["during" if during else "outside"] += 1
    return out


async def replay_differences(sandbox: Sandbox, workflow_ids: Iterable[str],
                             grace_s: float = REPLAY_GRACE_S) -> tuple[int, list[str]]:
    """``headwater replay`` of each workflow on the sandbox's broker and database.

    Returns:
        How many were replayed, and a line per difference (none: every store agrees
        with its history).
    """
    env = sandbox.env
    ep = Endpoints(env["HEADWATER_KAFKA_BOOTSTRAP"], env["HEADWATER_TOPIC_PREFIX"],
                   env["HEADWATER_PG_DSN"])
    replayed, out = 0, []
    for wid in sorted(workflow_ids):
        report = await gather(ep, wid, grace_s)
        replayed += 1
        if not report.known:
            out.append(f"{wid}: replay found nothing of it")
        out += [f"{wid}: replay: {d.describe()}" for d in report.differences]
    return replayed, out

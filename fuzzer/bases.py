"""Valid input records, one builder per kind of input: what the mutations start from.

Each builder returns a ``Base``: the record as an input topic expects it (Avro
single-object encoding from ``headwater.codec``, or the JSON form of a submission with
its ``content-type`` header), keyed by its workflow id. Submissions name a fresh
workflow whose one node runs ``bench.noop`` on the sandbox's queue; control records and
reports name either a fresh workflow or one of the run's *targets* (running workflows
whose node waits on a queue no worker serves, so that reports about it are applied).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from headwater import codec
from headwater.core import events as ev
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE, Topics
from services.common.kafka.client import AVRO_HEADERS

NODE = "n"
SPEC: dict[str, Any] = {"name": "fuzz", "nodes": [{"id": NODE, "task": "bench.noop"}]}
"""A workflow that succeeds at once on the sandbox's workers."""
IDLE_QUEUE = "fuzz-idle"
TARGET_SPEC: dict[str, Any] = {
    "name": "fuzz-target",
    "retry": {"max_attempts": 1000, "backoff_base": 60, "backoff_max": 600},
    "nodes": [{"id": NODE, "task": "bench.noop", "queue": IDLE_QUEUE,
               "heartbeat_timeout": 86400}],
}
"""A workflow that stays running: its task waits on a queue that no worker serves."""
JSON_HEADERS: list[tuple[str, bytes]] = [(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())]


@dataclass(frozen=True)
class Base:
    """One valid input record.

    Attributes:
        kind: which builder made it (``submission-avro``, ``cancel``, ``TaskStarted``...).
        topic: the input topic it belongs on.
        key: the workflow id, UTF-8.
        value: the encoded record.
        headers: its headers (``content-type``).
        record: the record dataclass (None for a JSON submission, whose document is
            ``doc``).
        doc: the JSON submission's document.
    """

    kind: str
    topic: str
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    record: Any = None
    doc: dict[str, Any] = field(default_factory=dict)


def avro(kind: str, topic: str, record: Any) -> Base:
    """A ``Base`` of an Avro record keyed by its workflow id."""
    return Base(kind, topic, record.workflow_id.encode(), codec.encode(record),
                list(AVRO_HEADERS), record)


def json_submission(topic: str, doc: dict[str, Any]) -> Base:
    """A ``Base`` of a JSON submission document."""
    return Base("submission-json", topic, str(doc["workflow_id"]).encode(),
                orjson.dumps(doc), list(JSON_HEADERS), None, doc)


@dataclass
class Builders:
    """Makes valid records for one run.

    Args:
        topics: the sandbox's topic names.
        run_tag: a prefix that makes this run's workflow ids its own.
        targets: ids of the run's running target workflows.
        now_ms: the time the records carry, ms since the epoch.
    """

    topics: Topics
    run_tag: str
    targets: Sequence[str]
    now_ms: int
    _count: int = 0

    def fresh_id(self) -> str:
        """A workflow id no record has named yet."""
        self._count += 1
        return f"{self.run_tag}-{self._count}"

    def some_id(self, rng: random.Random) -> str:
        """A fresh id or, half the time, a target's."""
        if self.targets and rng.random() < 0.5:
            return rng.choice(list(self.targets))
        return self.fresh_id()

    def kinds(self) -> dict[str, Callable[[random.Random], Base]]:
        """Builder by kind, one per input record type (and both submission forms)."""
        reports = {cls.__name__: self._report(cls) for cls in REPORTS}
        return {"submission-avro": self.submission, "submission-json": self.submission_json,
                "cancel": self.cancel, "timer": self.timer, "pause": self.pause,
                "resume": self.resume, **reports}

    def submission(self, rng: random.Random) -> Base:
        """A ``WorkflowSubmitted`` of a fresh workflow."""
        record = ev.WorkflowSubmitted(self.fresh_id(), SPEC, {"i": rng.randrange(1000)},
                                      self.now_ms)
        return avro("submission-avro", self.topics.submissions, record)

    def submission_json(self, rng: random.Random) -> Base:
        """The JSON form of a submission of a fresh workflow."""
        doc = {"workflow_id": self.fresh_id(), "spec": SPEC, "input": {"i": rng.randrange(9)},
               "at_ms": self.now_ms}
        return json_submission(self.topics.submissions, doc)

    def cancel(self, rng: random.Random) -> Base:
        """A ``CancelRequested``."""
        record = ev.CancelRequested(self.some_id(rng), self.now_ms, "fuzz")
        return avro("cancel", self.topics.control, record)

    def pause(self, rng: random.Random) -> Base:
        """A ``PauseRequested``: with a request id half the time (the gateway always
        gives one; another producer may not), who asked and why."""
        record = ev.PauseRequested(self.some_id(rng), self.now_ms, self._request_id(rng),
                                   "fuzz", "fuzz pause")
        return avro("pause", self.topics.control, record)

    def resume(self, rng: random.Random) -> Base:
        """A ``ResumeRequested`` (as ``pause``)."""
        record = ev.ResumeRequested(self.some_id(rng), self.now_ms, self._request_id(rng),
                                    "fuzz")
        return avro("resume", self.topics.control, record)

    def _request_id(self, rng: random.Random) -> str:
        return f"{self.run_tag}-rq-{rng.randrange(10**6)}" if rng.random() < 0.5 else ""

    def timer(self, rng: random.Random) -> Base:
        """A ``TimerFired`` of a retry, a deadline or a lease timer."""
        timer_id = rng.choice([f"retry:{NODE}:2", f"deadline:{NODE}:1", f"lease:{NODE}:1"])
        record = ev.TimerFired(self.some_id(rng), timer_id, self.now_ms)
        return avro("timer", self.topics.control, record)

    def _report(self, cls: type[Any]) -> Callable[[random.Random], Base]:
        def build(rng: random.Random) -> Base:
            attempt = rng.choice((1, 1, 2))
            record = cls(self.some_id(rng), NODE, None, attempt, self.now_ms, **REPORTS[cls])
            return avro(cls.__name__, self.topics.reports, record)
        return build


REPORTS: dict[type[Any], dict[str, Any]] = {
    ev.TaskStarted: {"worker": "fuzz-worker"},
    ev.TaskProgressed: {"fraction": 0.5, "message": "half way"},
    ev.TaskHeartbeated: {},
    ev.TaskCheckpointed: {"checkpoint": {"done": 3}},
    ev.TaskOutputStreamed: {"chunk_seq": 0, "chunk": "token"},
    ev.TaskSucceeded: {"output": {"ok": True}},
    ev.TaskFailed: {"error": "boom", "error_type": "RuntimeError", "retryable": True},
}
"""Each report type and its fields beyond ``(workflow_id, node, index, attempt, at_ms)``."""

OTHER_TYPES: tuple[Any, ...] = (
    ev.TaskDispatched("w", NODE, None, 1, "bench.noop", "cpu", {}, 0),
    ev.NodeFinished("w", NODE, "succeeded", 0),
    ev.WorkflowCancelled("w", 0, "x"),
    ev.TaskCancelled("w", NODE, None, 1, 0, "x"),
    ev.WorkflowPaused("w", 0, "p", "fuzz", "x"),
    ev.DispatchRecalled("w", NODE, None, 1, 0),
)
"""Records that belong on no input topic (``wrong_type`` sends them, and input records
of another topic's kind)."""

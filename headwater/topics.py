"""Topic names, key formats and ids: every name Headwater puts on Kafka lives here."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "headwater"
DEFAULT_PARTITIONS = 8


@dataclass(frozen=True)
class Topics:
    """The topic names for one deployment (one ``prefix``).

    Tests give each run a fresh prefix so that runs never see each other's records.
    Input topics (submissions, control, reports) are keyed by workflow id and
    co-partitioned: same partition count, default murmur2 partitioner.
    """

    prefix: str = DEFAULT_PREFIX

    @property
    def submissions(self) -> str:
        """``WorkflowSubmitted`` records from the gateway or any producer."""
        return f"{self.prefix}.submissions"

    @property
    def control(self) -> str:
        """``CancelRequested`` and ``TimerFired`` records."""
        return f"{self.prefix}.control"

    @property
    def reports(self) -> str:
        """Worker reports: ``TaskStarted``, ``TaskProgressed``, ``TaskHeartbeated``,
        ``TaskCheckpointed``, ``TaskOutputStreamed``, ``TaskSucceeded``, ``TaskFailed``."""
        return f"{self.prefix}.reports"

    @property
    def worker_control(self) -> str:
        """``TaskCancelled`` records from the coordinator. Every worker reads every
        partition (no consumer group) and stops the attempts named there."""
        return f"{self.prefix}.worker-control"

    @property
    def events(self) -> str:
        """History events, one ``HistoryEvent`` per record, per-workflow ``seq``."""
        return f"{self.prefix}.events"

    @property
    def dlq(self) -> str:
        """Undecodable records: the original bytes and a ``reason`` header."""
        return f"{self.prefix}.dlq"

    def tasks(self, queue: str) -> str:
        """Dispatches for the worker pool ``queue`` (one consumer group per queue)."""
        return f"{self.prefix}.tasks.{queue}"

    @property
    def inputs(self) -> tuple[str, str, str]:
        """The coordinator's co-partitioned input topics."""
        return (self.submissions, self.control, self.reports)

    @property
    def coordinator_app_id(self) -> str:
        """Faust app id: the coordinator's consumer group and changelog topic prefix."""
        return f"{self.prefix}-coordinator"

    @property
    def table_changelog(self) -> str:
        """The compacted changelog topic of the coordinator's workflow table."""
        return f"{self.coordinator_app_id}-workflows-changelog"

    @property
    def projection_group(self) -> str:
        """The consumer group of the PostgreSQL projector."""
        return f"{self.prefix}-projection"

    def worker_group(self, queue: str) -> str:
        """Consumer group of the workers of ``queue``."""
        return f"{self.prefix}-worker-{queue}"


def task_key(node: str, index: int | None) -> str:
    """The key of one task within a workflow: ``node`` or ``node[index]`` for map items."""
    return node if index is None else f"{node}[{index}]"


def dispatch_id(workflow_id: str, node: str, index: int | None, attempt: int) -> str:
    """Deterministic dispatch id ``workflow_id/node[index]/attempt`` (DESIGN.md §3.3)."""
    return f"{workflow_id}/{task_key(node, index)}/{attempt}"


TABLE_KEY_SEP = "\x1f"
"""Separates the workflow id from the part in the coordinator table's keys (ids and task
keys never contain it)."""


def table_entry_key(workflow_id: str, part: str | None = None) -> bytes:
    """The coordinator table's key (and its changelog record's key) of a workflow's
    header (``part`` None), its definition (``state.DEFINITION``) or one of its tasks
    (``part`` = the task key): the workflow id, then ``TABLE_KEY_SEP`` and the part, UTF-8."""
    return (workflow_id if part is None else f"{workflow_id}{TABLE_KEY_SEP}{part}").encode()


def table_entry_workflow(key: bytes) -> str:
    """The workflow id of a coordinator table key made by ``table_entry_key``."""
    return key.split(TABLE_KEY_SEP.encode(), 1)[0].decode()


INTENT_KEY_PREFIX = f"{TABLE_KEY_SEP}wal{TABLE_KEY_SEP}".encode()
"""The coordinator table's keys of intents (``services/coordinator/wal.py``) start with it;
no workflow id is empty, so no workflow's key does."""


def intent_key(partition: int, chunk: int | None = None) -> bytes:
    """The coordinator table's key of a partition's intent head (``chunk`` None) or of
    its chunk number ``chunk``: ``INTENT_KEY_PREFIX``, the partition, then
    ``TABLE_KEY_SEP`` and the chunk."""
    tail = str(partition) if chunk is None else f"{partition}{TABLE_KEY_SEP}{chunk}"
    return INTENT_KEY_PREFIX + tail.encode()


def intent_partition(key: bytes) -> int | None:
    """The partition of an intent key (head or chunk); None for any other key."""
    if not key.startswith(INTENT_KEY_PREFIX):
        return None
    return int(key[len(INTENT_KEY_PREFIX):].split(TABLE_KEY_SEP.encode(), 1)[0])


DEADLINE_TIMER = "deadline"
LEASE_TIMER = "lease"


def task_timer_id(kind: str, key: str, attempt: int) -> str:
    """Id of a timer derived from a task's state: ``deadline:<task key>:<attempt>`` (its
    timeout) or ``lease:<task key>:<attempt>`` (its heartbeat timeout)."""
    return f"{kind}:{key}:{attempt}"


def parse_task_timer_id(timer_id: str) -> tuple[str, str, int] | None:
    """``(kind, task key, attempt)`` of a ``task_timer_id``, or None for any other id.

    Node ids cannot hold ``:`` (``spec._ID``), so the split is unambiguous."""
    kind, _, rest = timer_id.partition(":")
    key, _, attempt = rest.rpartition(":")
    if kind not in (DEADLINE_TIMER, LEASE_TIMER) or not key or not attempt.isdigit():
        return None
    return kind, key, int(attempt)


WORKFLOW_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,199}$"
"""Workflow ids: 1-200 characters, letters, digits and ``_.:-``, safe in URLs and keys."""
MAX_AT_MS = 253_402_300_799_999
"""The last millisecond of the year 9999: the latest time a record may carry."""

CONTENT_TYPE_HEADER = "content-type"
JSON_CONTENT_TYPE = "application/json"
AVRO_CONTENT_TYPE = "application/vnd.apache.avro"
REASON_HEADER = "reason"
SOURCE_TOPIC_HEADER = "source-topic"
VALUE_OMITTED_HEADER = "value-omitted"
"""On a dead letter sent without the original value (too large with its headers): the
value's size; ``source-topic``, ``source-partition`` and ``source-offset`` say where it is."""

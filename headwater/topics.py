"""Topic names and record headers: every topic and header name Headwater puts on Kafka.

The ids inside records (task keys, dispatch ids, timer ids) are the core's
(``headwater.core.ids``); the coordinator's table and intent keys are its own storage
(``services.coordinator.keys``)."""

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
        """``WorkflowSubmitted`` records from the gateway or any producer, and the
        ``ChildSubmitted`` records of child workflows (from their parent's coordinator)."""
        return f"{self.prefix}.submissions"

    @property
    def control(self) -> str:
        """``CancelRequested``, ``SignalSent`` (the gateway or any producer) and
        ``TimerFired`` records."""
        return f"{self.prefix}.control"

    @property
    def reports(self) -> str:
        """Worker reports: ``TaskStarted``, ``TaskProgressed``, ``TaskHeartbeated``,
        ``TaskCheckpointed``, ``TaskOutputStreamed``, ``TaskSucceeded``, ``TaskFailed``;
        a child workflow's start and end are reported to its parent the same way (by
        the child's coordinator)."""
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

    @property
    def workers(self) -> str:
        """``WorkerAnnounced`` records keyed by worker id (compacted, 1 partition): each
        worker at start, every few seconds, and stopping (then a tombstone)."""
        return f"{self.prefix}.workers"

    @property
    def definitions(self) -> str:
        """The definitions registry (compacted, 1 partition): ``DefinitionStored`` keyed
        ``name@version`` and ``DefinitionHead`` keyed ``name``
        (``headwater.core.definitions``)."""
        return f"{self.prefix}.definitions"

    @property
    def logs(self) -> str:
        """``TaskLogLines`` records keyed by workflow id: what task attempts logged and
        printed, in batches (the workers write it, the projector reads it into
        ``task_logs``). Not history, and the coordinator never reads it."""
        return f"{self.prefix}.logs"

    @property
    def logs_projection_group(self) -> str:
        """The consumer group of the projector's reader of ``logs``."""
        return f"{self.prefix}-projection-logs"

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

    @property
    def refusals_group(self) -> str:
        """The consumer group of the projector's reader of refused signals on ``dlq``
        (``services.projector.refusals``)."""
        return f"{self.prefix}-projection-refusals"

    def worker_group(self, queue: str) -> str:
        """Consumer group of the workers of ``queue``."""
        return f"{self.prefix}-worker-{queue}"


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

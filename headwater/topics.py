"""Topic names and record headers: every topic and header name Headwater puts on Kafka.

The ids inside records (task keys, dispatch ids, timer ids) are the core's
(``headwater.core.ids``); the coordinator's table and intent keys are its own storage
(``services.coordinator.keys``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from headwater.topic_parts import (
    LONG_NAME_MARK,
    VERSION_DIGEST_CHARS,
    lane_part,
    tag_part,
    tags_digest,
    unescaped,
    unescaped_tag,
    version_digest,
)

DEFAULT_PREFIX = "headwater"
DEFAULT_PARTITIONS = 8
MAX_TOPIC_CHARS = 249
"""The longest topic name Kafka takes."""
LANES = "lanes"
"""The word after the prefix in every lane's name (``Topics.lane``): lanes have a
namespace of their own, apart from ``tasks.<queue>``."""
NEEDS = "needs"
"""The word after the prefix in every selector topic's name (``Topics.needs``)."""
PRIORITY = "priority"
"""The word after the prefix in the name of every queue's topic of a priority band
(``Topics.priority``)."""
MAX_QUEUE_CHARS = 64
"""The longest queue name (``headwater.core.ids.QUEUE_PATTERN``)."""
MAX_PREFIX_CHARS = (MAX_TOPIC_CHARS - len(f".{LANES}.") - MAX_QUEUE_CHARS - 1
                    - len(LONG_NAME_MARK) - 2 * VERSION_DIGEST_CHARS - 1)
"""The longest topic prefix (142): with it, the lane of a 64-character queue still has
room for a workflow part cut short (``topic_parts.lane_part``), so no name passes
Kafka's 249."""


@dataclass(frozen=True)
class Lane:
    """What a lane's topic name says (``Topics.parse_lane``).

    Attributes:
        queue: the queue it belongs to.
        workflow_part: its workflow's part of the name (``lane_part``): compare with
            the part of a workflow's name, not with the name.
        digest: its code version's digest (``version_digest``).
    """

    queue: str
    workflow_part: str
    digest: str


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
    def triggers(self) -> str:
        """The triggers (compacted, 1 partition): ``TriggerStored`` keyed
        ``<tenant>/<name>`` (``headwater.trigger_records``)."""
        return f"{self.prefix}.triggers"

    def trigger_group(self, tenant: str | None, name: str) -> str:
        """The consumer group of a trigger's reader of its source topic: one per
        trigger, so its offsets outlive a gateway's restart and a trigger's new
        settings (the same name goes on where it stopped)."""
        return f"{self.prefix}-trigger-{tenant if tenant is not None else '-'}-{name}"

    @property
    def operations(self) -> str:
        """Bulk operations (compacted, 1 partition): ``OperationRecorded`` keyed by the
        operation's id, written as it starts and after each batch
        (``headwater.operations``)."""
        return f"{self.prefix}.operations"

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

    def is_own(self, topic: str) -> bool:
        """Whether ``topic`` is one Headwater writes for this deployment (its fixed
        topics, the queues', lanes', selectors' and priority bands', the internal
        ``<prefix>-...`` ones) or Kafka's own (``__...``): what a trigger may not read."""
        fixed = {self.submissions, self.control, self.reports, self.worker_control,
                 self.events, self.dlq, self.workers, self.definitions, self.triggers,
                 self.operations, self.logs, self.webhooks}
        families = (f"{self.prefix}.tasks.", f"{self.prefix}.{LANES}.",
                    f"{self.prefix}.{NEEDS}.", f"{self.prefix}.{PRIORITY}.",
                    f"{self.prefix}-", "__")
        return topic in fixed or topic.startswith(families)

    def tasks(self, queue: str) -> str:
        """Dispatches for the worker pool ``queue`` (one consumer group per queue)."""
        return f"{self.prefix}.tasks.{queue}"

    def lane(self, queue: str, workflow: str, code_version: str) -> str:
        """The lane of the code workflow ``workflow`` at ``code_version`` on ``queue``:
        ``<prefix>.lanes.<queue>.<workflow>.<digest of the version>``. A run that
        recorded a code version sends its activations, and its task steps on its own
        queue, there rather than to ``tasks.<queue>``, so that the workers of the code
        it started on run them (``services.coordinator.records.dispatch_topic``;
        ``services.worker.lanes``). The queue's and the workflow's parts are written by
        ``lane_part`` (no ``_`` in either, so no lane collides with another topic under
        Kafka's rule that ``.`` and ``_`` read alike); the name stays within Kafka's 249
        characters for any prefix up to ``MAX_PREFIX_CHARS``."""
        head = self.lane_head(queue)
        room = MAX_TOPIC_CHARS - len(head) - 1 - VERSION_DIGEST_CHARS
        return f"{head}{lane_part(workflow, room)}.{version_digest(code_version)}"

    def lane_head(self, queue: str) -> str:
        """What the name of every lane of ``queue`` starts with."""
        return f"{self.prefix}.{LANES}.{lane_part(queue, MAX_QUEUE_CHARS)}."

    def lanes_of(self, queue: str, workflow: str) -> str:
        """What the names of the lanes of ``workflow`` on ``queue`` start with (every
        version's): a name with this start and no further dot is one of them."""
        return self.lane(queue, workflow, "").rpartition(".")[0] + "."

    def parse_lane(self, topic: str) -> Lane | None:
        """The queue, workflow part and version digest a lane's name holds; None for a
        topic that is no lane of this prefix, or whose queue's part was cut short (a
        queue of 22 or more ``_`` and ``-``). A queue's part has no dot and a digest
        neither, so the workflow's part is what lies between (dots and all)."""
        head = f"{self.prefix}.{LANES}."
        if not topic.startswith(head):
            return None
        queue_part, dot, rest = topic[len(head):].partition(".")
        part, dot2, digest = rest.rpartition(".")
        queue = unescaped(queue_part)
        if not (dot and dot2 and queue and part):
            return None
        if len(digest) != VERSION_DIGEST_CHARS or digest.strip("0123456789abcdef"):
            return None
        return Lane(queue, part, digest)

    def needs(self, queue: str, tags: Iterable[str]) -> str:
        """The selector topic of ``queue`` for the tags ``tags``:
        ``<prefix>.needs.<queue>.<tag>.<tag>...``, the tags sorted, each once
        (``tag_part``). A node that requires tags (``NodeSpec.requires``) sends its
        dispatches there rather than to ``tasks.<queue>``
        (``services.coordinator.records.dispatch_topic``), and a worker of the queue
        reads it when it announces every one of the tags (``needs_of``). Tags that do
        not fit Kafka's 249 characters are named by their digest instead:
        ``<prefix>.needs.<queue>.-z<digest>`` (``tags_digest``; ``-z`` never begins a
        tag's part)."""
        head, own = self.needs_head(queue), sorted(set(tags))
        name = head + ".".join(tag_part(t) for t in own)
        if len(name) <= MAX_TOPIC_CHARS:
            return name
        return f"{head}{LONG_NAME_MARK}{tags_digest(own)}"

    def needs_head(self, queue: str) -> str:
        """What the name of every selector topic of ``queue`` starts with."""
        return f"{self.prefix}.{NEEDS}.{lane_part(queue, MAX_QUEUE_CHARS)}."

    def needs_of(self, queue: str, tags: Iterable[str]) -> frozenset[str]:
        """The selector topics of ``queue`` a worker announcing ``tags`` may read: one
        for each non-empty subset of them (``2**n - 1`` names; ``selectors.MAX_TAGS``
        bounds ``n``)."""
        own = sorted(set(tags))
        return frozenset(self.needs(queue, subset) for n in range(1, len(own) + 1)
                         for subset in itertools.combinations(own, n))

    def parse_needs(self, topic: str) -> tuple[str, tuple[str, ...] | None] | None:
        """The queue and the tags a selector topic's name holds (the tags None for one
        named by their digest); None for a topic that is no selector topic of this
        prefix."""
        head = f"{self.prefix}.{NEEDS}."
        if not topic.startswith(head):
            return None
        queue_part, dot, rest = topic[len(head):].partition(".")
        queue = unescaped(queue_part)
        if not (dot and queue and rest):
            return None
        if rest.startswith(LONG_NAME_MARK):
            return queue, None
        tags = [unescaped_tag(part) for part in rest.split(".")]
        if any(t is None for t in tags):
            return None
        return queue, tuple(t for t in tags if t is not None)

    def queue_of(self, topic: str) -> str | None:
        """The queue whose dispatches ``topic`` holds: its ``tasks.<queue>``, one of
        its lanes, selector topics or priority topics; None for any other topic."""
        head = self.tasks("")
        if topic.startswith(head) and len(topic) > len(head) and "." not in topic[len(head):]:
            return topic[len(head):]
        band = self.parse_priority(topic)
        if band is not None:
            return band[0]
        lane = self.parse_lane(topic)
        if lane is not None:
            return lane.queue
        needs = self.parse_needs(topic)
        return None if needs is None else needs[0]

    def priority(self, queue: str, band: int) -> str:
        """The topic of ``queue``'s dispatches of priority ``band`` (0-9, any but the
        default, ``headwater.core.priority``): ``<prefix>.priority.<queue>.<band>``.
        A run of another priority than the default sends its dispatches here rather
        than to ``tasks.<queue>`` (``services.coordinator.records.dispatch_topic``),
        and every worker of the queue reads each that exists
        (``services.worker.subscriptions``). A namespace of its own, as lanes have:
        ``tasks.<queue>.<band>`` could collide with the topic of a queue named
        ``<queue>_<band>`` under Kafka's rule that ``.`` and ``_`` read alike (a queue
        name has no ``.``, so no two of these collide)."""
        return f"{self.prefix}.{PRIORITY}.{queue}.{band}"

    def priorities_of(self, queue: str, bands: Iterable[int]) -> frozenset[str]:
        """The topics of ``queue`` for each of ``bands``."""
        return frozenset(self.priority(queue, b) for b in bands)

    def parse_priority(self, topic: str) -> tuple[str, int] | None:
        """The queue and the band a priority topic's name holds; None for a topic that
        is no priority topic of this prefix."""
        head = f"{self.prefix}.{PRIORITY}."
        if not topic.startswith(head):
            return None
        queue, dot, band = topic[len(head):].rpartition(".")
        if not (dot and queue) or "." in queue or len(band) != 1 or not band.isdigit():
            return None
        return queue, int(band)

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

    @property
    def webhooks(self) -> str:
        """The webhooks' definitions (compacted, 1 partition): ``WebhookStored`` keyed by
        name (``headwater.webhooks``)."""
        return f"{self.prefix}.webhooks"

    @property
    def webhooks_group(self) -> str:
        """The consumer group of the deliverer's reader of ``events``
        (``services.webhooks``)."""
        return f"{self.prefix}-webhooks"


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

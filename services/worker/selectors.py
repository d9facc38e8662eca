"""Which selector topics a worker reads: those of its queue whose tags it announces.

A node that requires tags (``requires: [gpu]``, ``headwater.core.selectors``) sends its
dispatches to its queue's selector topic for those tags, ``<prefix>.needs.<queue>.<tags>``
(``Topics.needs``; ``services.coordinator.records.dispatch_topic``), which the
coordinator creates on its first dispatch. A worker announcing tags T
(``HEADWATER_WORKER_TAGS``) reads, besides ``tasks.<queue>`` and its lanes, every
selector topic of its queue whose tags are a subset of T, in its queue's one consumer
group: Kafka's round-robin assignor (aiokafka's default) gives a topic's partitions only
to the members subscribed to it, so a dispatch requiring ``gpu`` goes to a worker
announcing ``gpu`` alone, and a worker without tags reads none of them. Dispatches of
nodes without requirements are unchanged (``tasks.<queue>``, read by every worker of
the queue).

The topics of its subsets are known from the start (``Topics.needs_of``, at most
``2**selectors.MAX_TAGS - 1`` names); which of them exist is found in the topic list
the worker looks at every ``lanes_s`` seconds (``listing``, ``watched``), as lanes
are, and the consumer subscribed again only when the set changed.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.worker.settings import Settings
from services.worker.watched import Watched, existing_topics


def selector_topics(own: frozenset[str], existing: Iterable[str]) -> frozenset[str]:
    """The selector topics a worker reads: those of its subsets (``own``:
    ``Topics.needs_of`` its queue and tags) that exist.

    Args:
        own: the selector topics of every non-empty subset of the worker's tags.
        existing: topic names (every topic the broker lists will do).
    """
    return existing_topics(own, existing)


class Selectors(Watched):
    """Says which selector topics to read now, by the topic list it is shown
    (``watched``).

    Args:
        settings: the worker's settings (queue, tags, topics).
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, settings.topics.needs_of(settings.queue, settings.tags),
                         f"selector topics (tags {','.join(settings.tags)})")

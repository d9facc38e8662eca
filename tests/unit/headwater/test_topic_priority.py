"""The topics of a queue's priority bands (``Topics.priority``): their names, read back,
and counted as the queue's dispatch topics (``Topics.queue_of``)."""

from __future__ import annotations

import pytest

from headwater.core.priority import BANDS
from headwater.topics import MAX_PREFIX_CHARS, MAX_TOPIC_CHARS, Topics

TOPICS = Topics("p")


def test_a_band_topic_names_its_queue_and_band() -> None:
    assert TOPICS.priority("gpu", 8) == "p.priority.gpu.8"
    assert TOPICS.parse_priority("p.priority.gpu.8") == ("gpu", 8)
    assert TOPICS.parse_priority("p.priority.a_b-c.0") == ("a_b-c", 0)
    assert TOPICS.queue_of("p.priority.gpu.8") == "gpu"
    assert TOPICS.priorities_of("gpu", BANDS) == {f"p.priority.gpu.{b}" for b in BANDS}


@pytest.mark.parametrize("topic", [
    "p.priority.gpu", "p.priority.gpu.10", "p.priority.gpu.x", "p.priority..8",
    "p.priority.a.b.8", "q.priority.gpu.8", "p.tasks.gpu", "p.needs.gpu.a100"])
def test_other_topics_are_no_band_topics(topic: str) -> None:
    assert TOPICS.parse_priority(topic) is None


def test_no_band_topic_collides_with_a_queues_topic_nor_outgrows_kafkas_limit() -> None:
    # ``tasks.cpu.8`` would read like the topic of a queue ``cpu_8`` to Kafka.
    assert TOPICS.priority("cpu", 8).replace("_", ".") != TOPICS.tasks("cpu_8").replace("_", ".")
    long = Topics("x" * MAX_PREFIX_CHARS)
    assert len(long.priority("q" * 64, 9)) <= MAX_TOPIC_CHARS

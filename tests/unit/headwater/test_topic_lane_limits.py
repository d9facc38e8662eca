"""Lane names against Kafka's limits on a whole topic name: at most 249 characters, and
no two topics whose names differ only by ``.`` and ``_`` (the broker refuses the
second: ``InvalidTopicError``, "collides with existing topic", as a broker of the
stack answers).

A topic the coordinator cannot create stops the batch that dispatches to it
(``FaustBus.topic`` raises once ``ensure_topics`` gives up), and the batch's intent is
carried out again after the restart, to fail the same way."""

from __future__ import annotations

import re

import pytest

from headwater.core.ids import QUEUE_PATTERN
from headwater.topic_parts import version_digest
from headwater.topics import MAX_PREFIX_CHARS, MAX_TOPIC_CHARS, Topics
from services.common.settings import CommonSettings

LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
QUEUE = "q" * 64


def kafka_collides(a: str, b: str) -> bool:
    """Kafka's rule: two different names that read the same with ``.`` as ``_``."""
    return a != b and a.replace(".", "_") == b.replace(".", "_")


@pytest.mark.parametrize("workflow", ["w", "w" * 300, "é" * 100])
def test_the_longest_prefix_gives_legal_lanes_on_the_longest_queue(workflow: str) -> None:
    lane = Topics("p" * MAX_PREFIX_CHARS).lane(QUEUE, workflow, "v" * 200)
    assert LEGAL.fullmatch(lane) and len(lane) <= MAX_TOPIC_CHARS, (len(lane), lane)


def test_a_longer_prefix_would_give_a_lane_over_kafkas_limit() -> None:
    """The bound is tight: one more character and a lane no longer fits (the name cut
    to its digest still passes 249), while the queue's tasks topic would."""
    topics = Topics("p" * (MAX_PREFIX_CHARS + 1))
    assert len(topics.tasks(QUEUE)) <= MAX_TOPIC_CHARS
    assert len(topics.lane(QUEUE, "w" * 300, "v")) > MAX_TOPIC_CHARS


@pytest.mark.parametrize("prefix", ["p" * (MAX_PREFIX_CHARS + 1), "", "a/b", "héé"])
def test_a_prefix_that_would_give_illegal_topic_names_is_refused_at_start(
        monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    monkeypatch.setenv("HEADWATER_TOPIC_PREFIX", prefix)
    with pytest.raises(ValueError, match=f"HEADWATER_TOPIC_PREFIX must be 1 to {MAX_PREFIX_CHARS}"):
        CommonSettings.common_from_env()


def test_the_longest_legal_prefix_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_TOPIC_PREFIX", "p-1.x_" * 23 + "abcd")
    assert CommonSettings.common_from_env()["prefix"] == "p-1.x_" * 23 + "abcd"


def test_no_queue_has_a_tasks_topic_that_collides_with_a_lane() -> None:
    topics = Topics("hw")
    digest = version_digest("v1")  # a code_version a spec may give by hand over HTTP
    queue = f"a_code_wf_{digest}"
    assert QUEUE_PATTERN.fullmatch(queue)  # a legal queue name, 26 characters
    assert not kafka_collides(topics.lane("a", "wf", "v1"), topics.tasks(queue))


def test_the_lanes_of_two_queues_never_collide() -> None:
    topics = Topics("hw")
    assert QUEUE_PATTERN.fullmatch("a_code_w")
    assert not kafka_collides(topics.lane("a_code_w", "x", "v1"),
                              topics.lane("a", "w.code.x", "v1"))

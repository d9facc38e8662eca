"""Selector topics (``Topics.needs``): one per (queue, set of tags), legal Kafka names
within 249 characters for any prefix a lane allows, read back by ``parse_needs`` and
``queue_of``; a worker's candidates are the topics of every subset of its tags."""

from __future__ import annotations

import re

import pytest

from headwater.core.selectors import MAX_TAGS
from headwater.topics import MAX_PREFIX_CHARS, MAX_TOPIC_CHARS, Topics

LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
TOPICS = Topics("p")


def test_a_set_of_tags_has_one_name_whatever_its_order() -> None:
    assert TOPICS.needs("cpu", ["gpu", "a100", "gpu"]) == "p.needs.cpu.a100.gpu"
    assert TOPICS.needs("cpu", ("a100", "gpu")) == TOPICS.needs("cpu", ["gpu", "a100"])
    assert TOPICS.needs("cpu", ["gpu"]) != TOPICS.needs("gpu", ["gpu"])


@pytest.mark.parametrize("tags", [["gpu"], ["a.b"], ["a", "b"], ["a_b"], ["a-b"], ["a-2eb"],
                                  ["org/model:v2", "llama-3.1_8b"]])
def test_names_are_legal_and_read_back(tags: list[str]) -> None:
    name = TOPICS.needs("my_queue-1", tags)
    assert LEGAL.fullmatch(name) and "_" not in name  # Kafka reads "_" like "."
    assert TOPICS.parse_needs(name) == ("my_queue-1", tuple(sorted(tags)))
    assert TOPICS.queue_of(name) == "my_queue-1"


def test_no_two_sets_share_a_name_even_as_kafka_reads_them() -> None:
    sets = [["a.b"], ["a", "b"], ["a_b"], ["a-b"], ["a-2eb"], ["ab"], ["a", "b", "c"]]
    names = [TOPICS.needs("q", s).replace(".", "_") for s in sets]
    assert len(set(names)) == len(sets)


def test_tags_too_long_for_a_name_are_named_by_their_digest() -> None:
    prefix = Topics("p" * MAX_PREFIX_CHARS)
    tags = [f"{'x' * 60}{i}" for i in range(MAX_TAGS)]
    name = prefix.needs("q" * 64, tags)
    assert LEGAL.fullmatch(name) and len(name) <= MAX_TOPIC_CHARS, len(name)
    assert prefix.parse_needs(name) == ("q" * 64, None)
    assert prefix.needs("q" * 64, reversed(tags)) == name
    assert prefix.needs("q" * 64, tags[1:]) != name


def test_other_topics_are_no_selector_topics() -> None:
    for topic in ["p.tasks.cpu", "p.needs.cpu.", "p.needs.cpu", "p.needs.cpu.a..b",
                  "p.needs.cpu.a_b", "p.needs.cpu.a-2", "p.needs.cpu.a-41", "q.needs.cpu.gpu",
                  "p.events"]:
        assert TOPICS.parse_needs(topic) is None, topic
    assert TOPICS.queue_of("p.tasks.cpu") == "cpu"


def test_a_worker_may_read_the_topic_of_each_subset_of_its_tags() -> None:
    found = TOPICS.needs_of("cpu", ["gpu", "a100", "fast"])
    assert len(found) == 7
    assert TOPICS.needs("cpu", ["gpu"]) in found
    assert TOPICS.needs("cpu", ["a100", "fast", "gpu"]) in found
    assert TOPICS.needs("cpu", ["tpu"]) not in found
    assert TOPICS.needs_of("cpu", []) == frozenset()
    assert len(TOPICS.needs_of("cpu", [f"t{i}" for i in range(MAX_TAGS)])) == 2**MAX_TAGS - 1

"""Lane topics (``Topics.lane``): legal Kafka names from which the queue, the workflow
and the version's digest are read back exactly, whatever the workflow's name."""

from __future__ import annotations

import re

import pytest

from headwater.topics import (
    MAX_TOPIC_CHARS,
    VERSION_DIGEST_CHARS,
    Lane,
    Topics,
    lane_part,
    version_digest,
)

TOPICS = Topics("hw-test")
LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def test_a_plain_name_is_kept_and_read_back() -> None:
    lane = TOPICS.lane("cpu", "bf.steps", "v1")
    assert lane == f"hw-test.lanes.cpu.bf.steps.{version_digest('v1')}"
    assert TOPICS.parse_lane(lane) == Lane("cpu", "bf.steps", version_digest("v1"))
    assert TOPICS.queue_of(lane) == "cpu"
    assert lane.startswith(TOPICS.lane_head("cpu"))


@pytest.mark.parametrize("workflow", [
    "bf.steps", "a", "a.b", "my_flow", "my-flow", "résumé.ß", "x" * 200, "é" * 200,
    "a_b", "a.5f", "a-5f", "_x"])
@pytest.mark.parametrize("queue", ["cpu", "gpu_a100-large" + "q" * 40, "q_1-x" * 12 + "abcd"])
def test_every_name_gives_a_legal_lane_of_its_own_workflow(workflow: str, queue: str) -> None:
    """A queue of 22 or more ``_`` and ``-`` has its part cut short: its lanes are
    still its own, but their names no longer say which queue they are of."""
    long_prefix = Topics("p" * 100)
    readable = len(lane_part(queue, 1000)) <= 64
    for topics in (TOPICS, long_prefix):
        lane = topics.lane(queue, workflow, "any version/" * 20)
        assert LEGAL.fullmatch(lane), lane
        assert len(lane) <= MAX_TOPIC_CHARS
        assert "_" not in lane[len(topics.prefix):]
        assert lane.startswith(topics.lanes_of(queue, workflow))
        assert "." not in lane[len(topics.lanes_of(queue, workflow)):]
        parsed = topics.parse_lane(lane)
        assert (parsed is not None and parsed.queue == queue) if readable else parsed is None


def test_names_that_differ_give_lanes_that_differ_even_modulo_dot_and_underscore() -> None:
    names = ["a_b", "a.b", "a-b", "a.5f", "a-5f", "a_5f", "x" * 300, "x" * 299 + "y"]
    parts = [lane_part(n, 150) for n in names]
    assert len(set(parts)) == len(names)
    assert len({p.replace(".", "_") for p in parts}) == len(names)  # Kafka's collision rule


def test_a_workflow_whose_name_extends_another_is_not_among_its_lanes() -> None:
    shorter = TOPICS.lanes_of("cpu", "a")
    longer = TOPICS.lane("cpu", "a.b", "v1")
    assert longer.startswith(shorter)  # by its start alone it would be
    assert "." in longer[len(shorter):]  # the dot left tells it is not


def test_versions_map_to_short_digests() -> None:
    assert len(version_digest("x" * 200)) == VERSION_DIGEST_CHARS
    assert version_digest("v1") != version_digest("v2")


@pytest.mark.parametrize("topic", [
    "hw-test.tasks.cpu", "hw-test.lanes.cpu", "hw-test.lanes.cpu.wf",
    "hw-test.tasks.cpu.wf.0123456789abcdef", "hw-test.lanes.cpu.wf.XYZ",
    "hw-test.lanes.cpu..0123456789abcdef", "other.lanes.cpu.wf.0123456789abcdef",
    "hw-test.lanes.a_b.wf.0123456789abcdef", "hw-test.lanes.a-zz.wf.0123456789abcdef",
    "hw-test.events"])
def test_what_is_no_lane_is_not_read_as_one(topic: str) -> None:
    assert TOPICS.parse_lane(topic) is None


def test_the_queue_of_a_tasks_topic_or_a_lane() -> None:
    assert TOPICS.queue_of("hw-test.tasks.cpu") == "cpu"
    assert TOPICS.queue_of(TOPICS.lane("gpu", "w.x.y", "v")) == "gpu"
    assert TOPICS.queue_of("hw-test.tasks.") is None
    assert TOPICS.queue_of("hw-test.tasks.cpu.junk") is None
    assert TOPICS.queue_of("hw-test.reports") is None
    assert TOPICS.queue_of(TOPICS.lane("gpu_a100-x", "w", "v")) == "gpu_a100-x"
    assert "_" not in TOPICS.lane("gpu_a100-x", "w_1", "v")

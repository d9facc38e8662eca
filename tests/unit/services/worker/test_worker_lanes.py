"""Which lanes a worker reads (``lanes.lanes_to_serve``): its own always; another
version's of a workflow it serves while no live worker of its queue announces that
version; never another workflow's, another queue's, or a lane that does not exist."""

from __future__ import annotations

from dataclasses import replace

from worker_fakes import settings

from headwater.announcement import AnnouncedWorkflow, WorkerAnnounced
from headwater.topics import Topics
from services.worker.lanes import Lanes, lanes_to_serve, own_versions, settled

TOPICS = Topics("unit-lanes")
AT = 1_700_000_000_000


def worker(worker_id: str, queue: str, *workflows: tuple[str, str]) -> WorkerAnnounced:
    return WorkerAnnounced(worker_id, queue, tuple(w for w, _ in workflows), 1, 0, "0", "h",
                           1, AT, AT, 1500, workflows=tuple(
                               AnnouncedWorkflow(w, {}, None, None, v) for w, v in workflows))


def lane(workflow: str, version: str, queue: str = "cpu") -> str:
    return TOPICS.lane(queue, workflow, version)


EXISTING = [TOPICS.tasks("cpu"), lane("wf", "v1"), lane("wf", "v2"), lane("wf", "v3"),
            lane("wf.x", "v1"), lane("other", "v1"), lane("wf", "v1", "gpu"), TOPICS.events]


def test_a_worker_reads_its_own_lanes_even_before_they_exist() -> None:
    got = lanes_to_serve(TOPICS, "cpu", {"wf": "v9", "wf.x": "v9"}, [], [])
    assert got == {lane("wf", "v9"), lane("wf.x", "v9")}


def test_it_adopts_the_lanes_of_versions_no_live_worker_serves() -> None:
    live = [worker("me", "cpu", ("wf", "v3")), worker("old", "cpu", ("wf", "v1"))]
    got = lanes_to_serve(TOPICS, "cpu", {"wf": "v3"}, live, EXISTING)
    assert got == {lane("wf", "v3"), lane("wf", "v2")}  # v1 has a live worker; v2 none


def test_a_worker_of_the_version_on_another_queue_does_not_count() -> None:
    live = [worker("old", "gpu", ("wf", "v1")), worker("v2", "cpu", ("wf", "v2"))]
    got = lanes_to_serve(TOPICS, "cpu", {"wf": "v3"}, live, EXISTING)
    assert got == {lane("wf", "v3"), lane("wf", "v1")}


def test_no_other_workflows_lanes_nor_another_queues() -> None:
    got = lanes_to_serve(TOPICS, "cpu", {"wf": "v3"}, [], EXISTING)
    assert got == {lane("wf", "v1"), lane("wf", "v2"), lane("wf", "v3")}  # not wf.x's
    assert lanes_to_serve(TOPICS, "gpu", {"wf": "v3"}, [], EXISTING) == {
        lane("wf", "v3", "gpu"), lane("wf", "v1", "gpu")}


def test_once_a_live_worker_serves_the_version_again_the_lane_is_left() -> None:
    alone = lanes_to_serve(TOPICS, "cpu", {"wf": "v3"}, [], EXISTING)
    back = lanes_to_serve(TOPICS, "cpu", {"wf": "v3"}, [
        worker("a", "cpu", ("wf", "v1")), worker("b", "cpu", ("wf", "v2"), ("other", "v1"))],
        EXISTING)
    assert lane("wf", "v1") in alone and back == {lane("wf", "v3")}


def test_own_versions_of_what_a_worker_announces() -> None:
    announced = worker("w", "cpu", ("a", "1"), ("b", "2")).workflows
    assert own_versions(announced) == {"a": "1", "b": "2"}


MINE = frozenset({lane("wf", "v3")})
OLD = lane("wf", "v1")


def test_a_lane_is_adopted_once_seen_unserved_for_the_grace_and_left_at_once() -> None:
    wanted = MINE | {OLD}
    first, since = settled(wanted, MINE, MINE, {}, 100.0, 2.0)
    assert first == MINE and since == {OLD: 100.0}  # seen unserved once: not yet
    second, since = settled(wanted, first, MINE, since, 101.0, 2.0)
    assert second == MINE  # a look too soon
    third, since = settled(wanted, second, MINE, since, 102.0, 2.0)
    assert third == wanted and since == {OLD: 100.0}
    kept, since = settled(wanted, third, MINE, since, 150.0, 2.0)
    assert kept == wanted
    left, since = settled(MINE, kept, MINE, since, 151.0, 2.0)  # a live v1 worker again
    assert left == MINE and since == {}


def test_a_lane_served_between_two_looks_is_never_adopted() -> None:
    first, since = settled(MINE | {OLD}, MINE, MINE, {}, 100.0, 2.0)
    served, since = settled(MINE, first, MINE, since, 102.0, 2.0)  # its worker announced
    again, since = settled(MINE | {OLD}, served, MINE, since, 104.0, 2.0)
    assert (first, served, again) == (MINE, MINE, MINE)  # its grace starts over


def test_a_lane_of_newer_code_is_not_adopted() -> None:
    """v3's workers are away (a restart): a worker of v1 does not take v3's runs, which
    may call tasks v1 lacks; it still takes v2's, older than its own."""
    got = lanes_to_serve(TOPICS, "cpu", {"wf": "v1"}, [], EXISTING, newer=[lane("wf", "v3")])
    assert got == {lane("wf", "v1"), lane("wf", "v2")}


async def test_newer_is_code_first_started_after_this_worker() -> None:
    lanes = Lanes(settings(), {"wf": "v2"})
    q, began = lanes.settings.queue, lanes.started_ms
    for worker_id, version, started in (("a", "v1", began - 60_000), ("b", "v3", began + 5),
                                        ("c", "v3", began + 9_000), ("d", "v4", began + 1),
                                        ("e", "v4", began - 1), ("f", "v2", began + 7)):
        lanes.heard(replace(worker(worker_id, q, ("wf", version)), started_at_ms=started))
    lanes.heard(replace(worker("g", f"{q}-other", ("wf", "v5")), started_at_ms=began + 3))
    # v4's first worker started before this one: older code, though another started after;
    # v2 is this worker's own; v5 is another queue's.
    assert lanes.newer() == {lanes.topics.lane(q, "wf", "v3")}


async def test_a_restarted_worker_does_not_count_its_code_newer_than_code_started_meanwhile(
        ) -> None:
    """An earlier worker of its own version (still announced) started before v3's."""
    lanes = Lanes(settings(), {"wf": "v2"})
    q, began = lanes.settings.queue, lanes.started_ms
    for worker_id, version, started in (("old-v2", "v2", began - 50_000),
                                        ("v3", "v3", began - 20_000),
                                        ("v1", "v1", began - 90_000)):
        lanes.heard(replace(worker(worker_id, q, ("wf", version)), started_at_ms=started))
    assert lanes.newer() == {lanes.topics.lane(q, "wf", "v3")}

"""The coordinator's records between cached attempts and their caches
(``services/coordinator/lookups.py``): a lookup and a release go to ``control`` keyed by
the cache's id, an answer to ``reports`` keyed by the attempt's workflow; the same event
gives the same records (a batch carried out again sends copies)."""

from __future__ import annotations

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from services.coordinator.lookups import lookup_records

CID = "cache::" + "ab" * 20
T0 = 1_700_000_000_000
TOPICS = Topics("t")


def test_a_lookup_and_a_release_go_to_the_cache_and_an_answer_to_the_attempt() -> None:
    (lookup,) = lookup_records(TOPICS, ev.TaskLookedUp("w1", "m", 3, 2, CID, "rag.embed", "k",
                                                       1000, True, T0))
    assert (lookup.topic, lookup.key) == (TOPICS.control, CID.encode())
    assert codec.decode(lookup.value) == ev.CacheLookedUp(CID, "w1/m[3]/2", "rag.embed", "k",
                                                          1000, True, T0)
    served = ev.CacheServed(CID, "w1/m[3]/2", True, T0, {"v": 1},
                            {"workflow_id": "w0", "node": "m", "index": 0, "attempt": 1},
                            900, 40)
    (answer,) = lookup_records(TOPICS, served)
    assert (answer.topic, answer.key, answer.workflow_id) == (TOPICS.reports, b"w1", CID)
    assert codec.decode(answer.value) == ev.CacheAnswered(
        "w1", "m", 3, 2, CID, True, T0, {"v": 1}, served.source, 900, 40)
    (release,) = lookup_records(TOPICS, ev.CacheReturned("w1", "m", 3, 2, CID, T0, True,
                                                         {"v": 2}, 500, 7))
    assert (release.topic, release.key) == (TOPICS.control, CID.encode())
    assert codec.decode(release.value) == ev.CacheReleased(
        CID, "w1/m[3]/2", T0, True, {"v": 2},
        {"workflow_id": "w1", "node": "m", "index": 3, "attempt": 2}, 500, 7)
    assert lookup_records(TOPICS, ev.CacheReturned("w1", "m", 3, 2, CID, T0)) == \
        lookup_records(TOPICS, ev.CacheReturned("w1", "m", 3, 2, CID, T0))
    assert lookup_records(TOPICS, ev.TaskStarted("w1", "m", 3, 2, T0, "wk")) == []

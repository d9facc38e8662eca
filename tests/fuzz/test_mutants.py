"""The fuzzer's Kafka side without a broker: every mutation applies to every kind of
input it is meant for, and the records are classified as the coordinator's decoder
would take them."""

from __future__ import annotations

import random

import pytest

from fuzzer.bases import Builders
from fuzzer.mutants import APPLIED, DLQ, Mutator, classify
from headwater.topics import Topics
from services.coordinator.homing import movable

TOPICS = Topics("fz")
ALWAYS_BAD = ("truncated", "trailing", "no_magic", "unknown_fingerprint", "wrong_type",
              "empty", "tombstone", "wrong_key", "null_key", "bad_at_ms",
              "huge", "wrong_content_type", "json_garbage")


def mutator() -> Mutator:
    return Mutator(Builders(TOPICS, "fz", ["fz-target"], 1_722_000_000_000), 8, 2 * 1024 * 1024)


@pytest.mark.parametrize("kind", sorted(mutator().builders.kinds()))
def test_every_mutation_of_every_kind_is_classified(kind: str) -> None:
    m = mutator()
    base = m.builders.kinds()[kind](random.Random(1))
    for name in m.mutations(base):
        mutant = m.mutate(base, name, random.Random(2), f"{kind}-{name}")
        if mutant is None:
            assert name in ("odd_value", "huge_valid"), name
            continue
        assert ("fuzz-case", f"{kind}-{name}".encode()) in mutant.headers
        if name in ALWAYS_BAD:
            assert mutant.expect == DLQ and mutant.why, (name, mutant.why)
        if name == "wrong_partition":  # moved home from submissions and control, not reports
            assert (mutant.expect == DLQ) == (not movable(TOPICS, mutant.topic)), mutant.topic
        assert not mutant.why.startswith("decoder raised"), mutant.why
        assert classify(TOPICS, 8, mutant)[0] == mutant.expect or name == "huge_valid"


def test_a_misplaced_record_is_bad_though_it_decodes() -> None:
    m, rng = mutator(), random.Random(3)
    mutant = m.mutate(m.builders.kinds()["TaskStarted"](rng), "wrong_partition", rng, "p")
    assert mutant is not None and mutant.expect == DLQ and mutant.why.startswith("misplaced")


def test_edges_cover_every_kind_and_mostly_decode() -> None:
    edges = mutator().edges(random.Random(4))
    assert {e.base for e in edges} == set(mutator().builders.kinds())
    assert sum(e.expect == APPLIED for e in edges) > len(edges) // 2
    assert len({e.key for e in edges}) == len(edges), "each about a workflow of its own"

"""A rollback's rules (``headwater.core.definitions.decide_rollback``): which version it
makes current, what it refuses, and how its head is ordered among the others
(``head_supersedes`` by revision first), so that a registry rebuilt from the topic, in
any order of its heads, ends on the rollback's version."""

from __future__ import annotations

import itertools

import pytest

from headwater.core.definitions import (
    Head,
    PutDecision,
    RollbackDecision,
    RollbackRefused,
    decide_put,
    decide_rollback,
    head_supersedes,
    next_revision,
)

A, B, C = "a" * 64, "b" * 64, "c" * 64
THREE = {1: A, 2: B, 3: C}


@pytest.mark.parametrize(("head", "to", "expected"), [
    (Head(3, revision=2), None, RollbackDecision(2, 3, changed=True)),
    (Head(3, revision=2), 1, RollbackDecision(1, 3, changed=True)),
    (Head(2, revision=3), None, RollbackDecision(1, 2, changed=True)),  # a second step back
    (Head(1, revision=4), 3, RollbackDecision(3, 1, changed=True)),  # forward again
    (Head(3, revision=2), 3, RollbackDecision(3, 3, changed=False)),  # current already
])
def test_decide_rollback(head: Head, to: int | None, expected: RollbackDecision) -> None:
    assert decide_rollback(head, THREE, to) == expected


@pytest.mark.parametrize(("head", "versions", "to", "missing", "words"), [
    (None, {}, None, True, "no such definition"),
    (Head(3, revision=2), THREE, 7, True, "no version 7"),
    (Head(1), {1: A}, None, False, "no earlier version"),
    (Head(3, deleted=True, revision=3), THREE, 1, False, "deleted"),
])
def test_decide_rollback_refuses(head: Head | None, versions: dict[int, str],
                                 to: int | None, missing: bool, words: str) -> None:
    with pytest.raises(RollbackRefused, match=words) as caught:
        decide_rollback(head, versions, to)
    assert caught.value.missing is missing


def test_a_put_after_a_rollback() -> None:
    rolled = Head(1, revision=3)
    assert decide_put(rolled, THREE, A) == PutDecision(1, created=False)  # the current body
    # Another body, the newest one's included, is numbered after the highest version.
    assert decide_put(rolled, THREE, C) == PutDecision(4, created=True)


def test_next_revision() -> None:
    assert next_revision(None) == 0
    assert next_revision(Head(4, revision=6)) == 7


def test_a_rollbacks_head_replaces_the_later_version_it_follows() -> None:
    assert head_supersedes(Head(1, revision=3), Head(3, revision=2))
    assert not head_supersedes(Head(3, revision=2), Head(1, revision=3))
    # heads written before revisions (all 0) keep their order by (version, deleted)
    assert head_supersedes(Head(1, revision=1), Head(2, deleted=True))


def test_heads_applied_in_any_order_end_on_the_rollback() -> None:
    history = [Head(1), Head(2, revision=1), Head(3, revision=2), Head(1, revision=3)]
    for order in itertools.permutations(history):
        head: Head | None = None
        for h in order:
            head = h if head_supersedes(h, head) else head
        assert head == Head(1, revision=3)

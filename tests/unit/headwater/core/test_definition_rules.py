"""The registry's pure rules: names and references, the digest of a body, which version a
PUT makes, and which head wins."""

from __future__ import annotations

import pytest

from headwater.core.definitions import (
    MAX_VERSION,
    DefinitionRefError,
    Head,
    PutDecision,
    Ref,
    check_name,
    decide_put,
    digest,
    head_supersedes,
    parse_ref,
    stored_key,
)

SPEC = {"name": "greet", "nodes": [{"id": "a", "task": "t.a"}]}


@pytest.mark.parametrize(("ref", "expected"), [
    ("billing", Ref("billing")),
    ("billing@3", Ref("billing", 3)),
    ("a", Ref("a")),
    ("A_b.c-9", Ref("A_b.c-9")),
    ("9lives@1", Ref("9lives", 1)),
    ("x" * 100, Ref("x" * 100)),
    (f"n@{MAX_VERSION}", Ref("n", MAX_VERSION)),
])
def test_good_references(ref: str, expected: Ref) -> None:
    assert parse_ref(ref) == expected
    assert str(parse_ref(ref)) == ref


@pytest.mark.parametrize(("ref", "message"), [
    ("", "is invalid"),
    ("x" * 101, "is invalid"),
    ("-leading", "is invalid"),
    (".", "is invalid"),
    ("..", "is invalid"),
    ("has space", "is invalid"),
    ("slash/name", "is invalid"),
    ("name@", "the version after @"),
    ("name@0", "the version after @"),
    ("name@03", "the version after @"),
    ("name@-1", "the version after @"),
    ("name@1.5", "the version after @"),
    (f"name@{MAX_VERSION + 1}", "the version after @"),
    ("name@3@4", "the version after @"),
    ("@3", "is invalid"),
])
def test_bad_references_say_what_a_good_one_is(ref: str, message: str) -> None:
    with pytest.raises(DefinitionRefError, match=message):
        parse_ref(ref)


def test_a_reference_must_be_a_string() -> None:
    with pytest.raises(DefinitionRefError, match="a string, not int"):
        parse_ref(3)  # type: ignore[arg-type]


def test_check_name_takes_no_version() -> None:
    assert check_name("billing") == "billing"
    with pytest.raises(DefinitionRefError, match=r"letters, digits and _\.-"):
        check_name("billing@3")


def test_digest_ignores_key_order_and_sees_every_change() -> None:
    reordered = {"nodes": [{"task": "t.a", "id": "a"}], "name": "greet"}
    assert digest(SPEC, None) == digest(reordered, None)
    assert len(digest(SPEC, None)) == 64
    assert digest(SPEC, None) != digest(SPEC, {"type": "object"})
    assert digest(SPEC, None) != digest({**SPEC, "name": "other"}, None)


A, B, C = "a" * 64, "b" * 64, "c" * 64


@pytest.mark.parametrize(("head", "versions", "body", "expected"), [
    # given no head, a PUT makes version 1
    (None, {}, A, PutDecision(1, True)),
    # the same body as the current version: that version, nothing new
    (Head(1), {1: A}, A, PutDecision(1, False)),
    (Head(2), {1: A, 2: B}, B, PutDecision(2, False)),
    # another body: the next version
    (Head(1), {1: A}, B, PutDecision(2, True)),
    # the body of an older version: applied again, it becomes the latest
    (Head(2), {1: A, 2: B}, A, PutDecision(3, True)),
    # after a DELETE, even the same body makes a new version (and the name live again)
    (Head(2, deleted=True), {1: A, 2: B}, B, PutDecision(3, True)),
    (Head(2, deleted=True), {1: A, 2: B}, C, PutDecision(3, True)),
    # a version claimed beyond the head (a write cut short) is not reused
    (Head(1), {1: A, 2: B}, C, PutDecision(3, True)),
    # a head whose version rows are gone (rebuilt in part): still after the head
    (Head(4), {}, A, PutDecision(5, True)),
])
def test_decide_put(head: Head | None, versions: dict[int, str], body: str,
                    expected: PutDecision) -> None:
    assert decide_put(head, versions, body) == expected


def test_decide_put_refuses_beyond_the_last_version() -> None:
    with pytest.raises(ValueError, match="versions"):
        decide_put(Head(MAX_VERSION), {MAX_VERSION: A}, B)


@pytest.mark.parametrize(("new", "old", "wins"), [
    (Head(1), None, True),
    (Head(2), Head(1), True),
    (Head(1), Head(2), False),
    (Head(2, deleted=True), Head(2), True),
    (Head(2), Head(2, deleted=True), False),
    (Head(3), Head(2, deleted=True), True),
    (Head(2), Head(2), False),
])
def test_head_supersedes(new: Head, old: Head | None, wins: bool) -> None:
    assert head_supersedes(new, old) is wins


def test_heads_applied_in_any_order_end_at_the_same_head() -> None:
    history = [Head(1), Head(2), Head(2, deleted=True), Head(3)]
    for order in (history, history[::-1], [history[2], history[0], history[3], history[1]]):
        head: Head | None = None
        for h in order:
            head = h if head_supersedes(h, head) else head
        assert head == Head(3)


def test_stored_key() -> None:
    assert stored_key("billing", 3) == "billing@3"

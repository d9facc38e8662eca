"""A submission's checks run on the event loop for a small body and in a worker thread
for a large one (``edge.cpu``); a submission with an id asks PostgreSQL once before its
claim whether the id is taken, by a claim or a retired run (``claims.lookup``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from gateway_harness import SPEC, FakePool, FakeProducer, Gateway

from headwater.core.idempotency import body_hash
from headwater.core.spec import parse_spec
from services.gateway.edge.cpu import INLINE_BODY_BYTES
from services.gateway.edge.problems import Problem
from services.gateway.runs import claims, submit
from services.gateway.runs.claims import FREE, LOOKUP, lookup, same_run_of


def on_loop() -> bool:
    """Whether the caller runs on an event loop (not in a worker thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def watch_checks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Record where the spec check and the hash of the request ran."""
    seen: list[tuple[str, bool]] = []

    def parse(spec: Any) -> Any:
        seen.append(("spec", on_loop()))
        return parse_spec(spec)

    def hashed(*args: Any) -> str:
        seen.append(("hash", on_loop()))
        return body_hash(*args)

    monkeypatch.setattr(submit, "parse_spec", parse)
    monkeypatch.setattr(submit, "body_hash", hashed)
    return seen


def test_a_small_body_is_checked_on_the_loop(gw: Gateway,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen = watch_checks(monkeypatch)
    gw.connect(FakePool())
    assert gw.client.post("/v1/workflows", json={"workflow": SPEC}).status_code == 202
    assert seen == [("hash", True), ("spec", True)]


def test_a_large_body_is_checked_in_a_thread(gw: Gateway,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen = watch_checks(monkeypatch)
    gw.connect(FakePool())
    body = {"workflow": SPEC, "input": {"pad": "x" * INLINE_BODY_BYTES}}
    assert gw.client.post("/v1/workflows", json=body).status_code == 202
    assert seen == [("hash", False), ("spec", False)]


def test_a_spec_with_children_inlined_is_checked_in_a_thread(
        gw: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child definition read from the registry: its size is not the body's."""
    seen = watch_checks(monkeypatch)
    parent = {"name": "parent", "nodes": [{"id": "child", "kind": "workflow",
                                           "definition": "child-flow"}]}

    async def inlined(pool: Any, spec: dict[str, Any], **_: Any) -> dict[str, Any]:
        assert spec == parent
        return dict(SPEC)  # the child's definition read from the registry, inlined

    monkeypatch.setattr(submit, "inline_children", inlined)
    gw.connect(FakePool())
    assert gw.client.post("/v1/workflows", json={"workflow": parent}).status_code == 202
    assert seen == [("hash", True), ("spec", False)]


@dataclass
class CountingPool(FakePool):
    """``FakePool`` that keeps every statement asked, in order."""

    asked: list[str] = field(default_factory=list)

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        self.asked.append(sql)
        return await super().fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self.asked.append(sql)
        return await super().fetchval(sql, *args)


def test_one_query_before_the_claim_of_a_given_id(gw: Gateway) -> None:
    pool, producer = CountingPool(), FakeProducer()
    gw.connect(pool, producer)
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC})
    assert response.status_code == 202, response.text
    assert pool.asked[0] == LOOKUP
    assert pool.asked[1].startswith("insert into workflows")
    assert len(pool.asked) == 2  # an inline spec: no pause of a definition to ask about
    assert [key for _, key, _ in producer.sent] == [b"w1"]


@dataclass
class LookupPool:
    """Answers ``LOOKUP`` with one row (``None``: nothing at all)."""

    row: dict[str, Any] | None
    asked: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        self.asked.append((sql, args))
        return self.row


def looked_up(claim: dict[str, Any] | None = None,
              retired: tuple[str, str | None, str | None] | None = None) -> dict[str, Any]:
    """A ``LOOKUP`` row: the claim's columns (null without one), the retired ones."""
    row = {c: None for c in claims.CLAIM_COLUMNS} | (claim or {})
    status, request_hash, hashed = retired or (None, None, None)
    return row | {"retired_status": status, "retired_request_hash": request_hash,
                  "retired_body_hash": hashed}


async def test_an_id_neither_claimed_nor_retired_is_free() -> None:
    pool = LookupPool(looked_up())
    assert await lookup(pool, "w1", "h") is FREE  # type: ignore[arg-type]
    assert pool.asked == [(LOOKUP, ("w1",))]


async def test_a_claimed_id_answers_with_its_row() -> None:
    claim = {"status": "running", "seq": 4, "request_hash": "h"}
    taken = await lookup(LookupPool(looked_up(claim)), "w1", "h")  # type: ignore[arg-type]
    assert (taken.row["status"], taken.answer) == ("running", None)


@pytest.mark.parametrize("hashes", [("h", None), (None, "h"), ("h", "other")])
async def test_a_retired_id_of_the_same_request_is_that_run(
        hashes: tuple[str | None, str | None]) -> None:
    pool = LookupPool(looked_up(retired=("succeeded", *hashes)))
    taken = await lookup(pool, "w1", "h")  # type: ignore[arg-type]
    assert taken.row is None
    assert taken.answer == claims.Accepted("w1", False, "succeeded")


async def test_a_retired_id_of_another_request_is_409() -> None:
    pool = LookupPool(looked_up(retired=("failed", "x", "y")))
    with pytest.raises(Problem) as raised:
        await lookup(pool, "w1", "h")  # type: ignore[arg-type]
    assert raised.value.status == 409
    assert "retention" in raised.value.detail


async def test_a_claim_wins_over_a_retired_row() -> None:
    pool = LookupPool(looked_up({"status": "accepted", "seq": 0}, ("failed", "x", "y")))
    taken = await lookup(pool, "w1", "h")  # type: ignore[arg-type]
    assert (taken.row["status"], taken.answer) == ("accepted", None)


async def test_a_row_with_a_hash_is_compared_on_the_loop_else_hashed_in_a_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def hashed(*args: Any) -> str:
        seen.append(on_loop())
        return body_hash(*args)

    monkeypatch.setattr(claims, "body_hash", hashed)
    kept = {"request_hash": "h", "body_hash": None}
    assert await same_run_of(kept, "h") is True
    assert seen == []  # compared, not hashed
    bare = {"request_hash": None, "body_hash": None, "spec": SPEC, "input": 1,
            "tenant": None}
    assert await same_run_of(bare, body_hash(SPEC, 1, None)) is True
    assert await same_run_of(bare, "other") is False
    assert seen == [False, False]

"""Retention deletes a run's ``blob_refs`` rows with its other rows, the same job then
collects the blobs no row names after a grace period (``collect``), and a projection
rebuild leaves the blob store alone (``rebuild.KEPT_APART``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.common.blobs import collect
from services.common.blobs.store import BLOBS_SCHEMA
from services.common.schema import SCHEMA
from services.projector import rebuild, retention


def test_retention_deletes_a_runs_references_with_its_rows() -> None:
    assert "blob_refs" in retention.RUN_TABLES
    statement = retention.purge_statement()
    assert ("delete from blob_refs where workflow_id in (select workflow_id from doomed)"
            in statement)


def test_collection_deletes_only_unreferenced_blobs_past_their_grace() -> None:
    statement = collect.collect_statement()
    assert statement.startswith("with doomed as (select digest from blobs b where")
    assert "not exists (select 1 from blob_refs r where r.digest = b.digest)" in statement
    assert "b.created_at < now() - $1::float8 * interval '1 second'" in statement
    assert "limit $2 for update skip locked" in statement
    assert statement.endswith("delete from blobs where digest in (select digest from doomed)"
                              " returning digest, size")
    # the chunks go with their blob
    assert "references blobs (digest) on delete cascade" in BLOBS_SCHEMA


class Conn:
    """Answers the collection's statement with batches of rows; ``log`` records each
    transaction's begin and commit and each statement."""

    def __init__(self, *batches: int) -> None:
        self.batches = list(batches)
        self.asked: list[tuple[Any, ...]] = []
        self.executed: list[tuple[str, tuple[Any, ...]]] = []
        self.log: list[str] = []

    async def execute(self, sql: str, *args: Any) -> str:
        self.executed.append((sql, args))
        return "DELETE 0"

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        self.log.append("begin")
        yield
        self.log.append("commit")

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        self.asked.append(args)
        self.log.append("delete rows")
        n = self.batches.pop(0)
        return [{"digest": f"sha256:{i}", "size": 10} for i in range(n)]


def test_the_objects_of_a_batch_go_after_its_rows_and_before_the_commit() -> None:
    conn = Conn(collect.BATCH, 2)
    dropped: list[list[str]] = []

    async def drop(digests: list[str]) -> None:
        dropped.append(digests)
        conn.log.append(f"drop {len(digests)}")

    assert asyncio.run(collect.collect_once(conn, 0.0, drop)) == (  # type: ignore[arg-type]
        collect.BATCH + 2, 10 * (collect.BATCH + 2))
    assert conn.log == ["begin", "delete rows", f"drop {collect.BATCH}", "commit",
                        "begin", "delete rows", "drop 2", "commit"]
    assert dropped[1] == ["sha256:0", "sha256:1"]


def test_collection_goes_on_until_a_batch_is_not_full() -> None:
    conn = Conn(collect.BATCH, collect.BATCH, 3)
    assert asyncio.run(collect.collect_once(conn, 60.0)) == (  # type: ignore[arg-type]
        2 * collect.BATCH + 3, 10 * (2 * collect.BATCH + 3))
    assert conn.asked == [(60.0, collect.BATCH)] * 3
    assert conn.executed == [(collect.ORPHANS, (60.0,))]  # orphan references first


def test_references_of_ids_no_run_holds_are_forgotten_after_the_grace() -> None:
    assert collect.ORPHANS.startswith("delete from blob_refs r where r.created_at < now()")
    assert "not exists (select 1 from workflows w where w.workflow_id = r.workflow_id)" \
        in collect.ORPHANS


def test_the_grace_period_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert collect.grace_from_env() == collect.DEFAULT_GRACE_S == 3600
    monkeypatch.setenv("HEADWATER_BLOB_GRACE_S", "5")
    assert collect.grace_from_env() == 5
    monkeypatch.setenv("HEADWATER_BLOB_GRACE_S", "-1")
    with pytest.raises(ValueError, match="HEADWATER_BLOB_GRACE_S"):
        collect.grace_from_env()


def test_a_rebuild_leaves_the_blob_store_alone() -> None:
    for table in ("blobs", "blob_chunks", "blob_refs"):
        assert table in rebuild.KEPT_APART
        assert table not in rebuild.LOCK_ORDER
        assert f"create table if not exists {table} " not in SCHEMA  # not in the copy
    kept = list(rebuild.KEPT_APART)
    assert kept.index("blob_chunks") < kept.index("blobs")  # dropped before what it names

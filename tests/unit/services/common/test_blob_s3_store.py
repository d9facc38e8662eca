"""``S3BlobStore`` with no server: the object is written inside the row's transaction,
before its commit, and only when the bucket does not hold it yet; reads stream the body
and a missing object is ``KeyError``; deletes go 1,000 keys a request. The bucket and the
database are stand-ins recording what they were asked, in order."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from headwater import blobs
from services.common.blobs.s3 import DELETE_BATCH, S3BlobStore, S3Objects, S3Settings

DATA = b'"' + b"x" * 100 + b'"'
DIGEST = blobs.digest_of(DATA)


class Body:
    def __init__(self, data: bytes) -> None:
        self.data, self.closed = data, False

    async def iter_chunks(self, size: int) -> AsyncIterator[bytes]:
        for i in range(0, len(self.data), 40):
            yield self.data[i:i + 40]

    def close(self) -> None:
        self.closed = True


class Bucket:
    """An S3 client's four calls over a dict."""

    def __init__(self, log: list[str]) -> None:
        self.objects: dict[str, bytes] = {}
        self.log = log
        self.deletes: list[int] = []

    async def head_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self.log.append(f"head {Key}")
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")
        return {}

    async def put_object(self, Bucket: str, Key: str, Body: bytes,
                         ContentType: str) -> dict[str, Any]:
        self.log.append(f"put {Key}")
        self.objects[Key] = Body
        return {}

    async def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "gone"}}, "GetObject")
        return {"Body": Body(self.objects[Key])}

    async def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        self.deletes.append(len(Delete["Objects"]))
        for key in Delete["Objects"]:
            self.objects.pop(key["Key"], None)
        return {}


class Conn:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        self.log.append("begin")
        yield
        self.log.append("commit")

    async def execute(self, sql: str, *args: Any) -> None:
        self.log.append(sql.split(" (")[0])


class Pool:
    def __init__(self, log: list[str]) -> None:
        self.conn = Conn(log)

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[Conn]:
        yield self.conn


def store() -> tuple[S3BlobStore, Bucket, list[str]]:
    log: list[str] = []
    bucket = Bucket(log)
    objects = S3Objects(bucket, S3Settings(endpoint="http://127.0.0.1:9", prefix="p/"))
    return S3BlobStore(Pool(log), objects), bucket, log  # type: ignore[arg-type]


def test_put_writes_the_object_before_its_row_commits_and_once() -> None:
    s, bucket, log = store()
    asyncio.run(s.put(DIGEST, DATA, "wf-1"))
    key = f"p/{DIGEST}"
    assert log == ["begin", "insert into blobs", f"head {key}", f"put {key}",
                   "insert into blob_refs", "commit"]
    assert bucket.objects == {key: DATA}
    log.clear()
    asyncio.run(s.put(DIGEST, DATA, "wf-2"))  # the same value again: a reference only
    assert log == ["begin", "insert into blobs", f"head {key}", "insert into blob_refs",
                   "commit"]


def test_reads_stream_the_object_and_a_missing_one_is_a_key_error() -> None:
    s, bucket, _ = store()
    bucket.objects[f"p/{DIGEST}"] = DATA

    async def chunks() -> list[bytes]:
        return [c async for c in s.chunks(DIGEST)]

    got = asyncio.run(chunks())
    assert len(got) == 3 and b"".join(got) == DATA
    assert asyncio.run(s.get(DIGEST)) == DATA
    bucket.objects.clear()
    with pytest.raises(KeyError):
        asyncio.run(s.get(DIGEST))


def test_deletes_go_a_thousand_keys_a_request() -> None:
    s, bucket, _ = store()
    digests = [blobs.digest_of(str(i).encode()) for i in range(DELETE_BATCH + 5)]
    asyncio.run(s.objects.delete(digests))
    assert bucket.deletes == [DELETE_BATCH, 5]

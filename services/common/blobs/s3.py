"""Blobs in an S3-compatible bucket (``HEADWATER_BLOB_STORE=s3``), through aiobotocore.

What a blob is about stays in PostgreSQL, as with the default store (``store.py``): its
``blobs`` row (size, when last stored: the grace period of the collection) and the
``blob_refs`` rows (which runs refer to it: the tenant scope of ``GET .../blobs/{digest}``
and projection retention). Only its bytes go to the bucket, one object per blob under
``<prefix><digest>`` (``blobs/sha256:...`` by default) instead of ``blob_chunks``.

A row never names a missing object: ``put`` writes the object inside the transaction
that writes (or refreshes) the row, before it commits, and it looks at the object, not
the row, to decide whether to upload, so a row left without its object (see
``collect.py``) is mended by the next put of the same value. The collection deletes the
objects of the rows it deletes before that deletion commits, under the rows' locks, so
a writer of the same digest waits for it and uploads again. An object with no row (a put
whose transaction failed after its upload) is harmless: nothing refers to it, and a
later put of the same value reuses it (content-addressed: the same key holds the same
bytes).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

from headwater import blobs
from services.common.blobs.store import CHUNK_BYTES
from services.common.settings import env_str, read_secret

__all__ = ["DELETE_BATCH", "S3BlobStore", "S3Objects", "S3Settings", "object_key", "open_s3",
           "s3_settings_from_env"]

DELETE_BATCH = 1000
"""Most keys one ``DeleteObjects`` request takes (S3's limit)."""
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""An S3 bucket name (the AWS rules: 3 to 63 lowercase letters, digits, dots, hyphens)."""
REGION_NAME = re.compile(r"[a-z0-9-]{1,40}")
KEY_PREFIX = re.compile(r"[A-Za-z0-9!_.*'()/-]{0,200}")
"""A key prefix: S3's safe characters only."""
MISSING = {"404", "NoSuchKey", "NotFound"}
"""Error codes of a missing object."""


@dataclass(frozen=True)
class S3Settings:
    """Where the S3 store keeps blobs.

    Attributes:
        endpoint: the S3 API's URL (``HEADWATER_S3_ENDPOINT``); None: AWS's own, from
            the region. With an endpoint, buckets are addressed by path
            (``http://host:port/bucket/key``), as S3-compatible servers expect.
        bucket: the bucket (``HEADWATER_S3_BUCKET``); it must exist.
        region: the region (``HEADWATER_S3_REGION``) requests are signed for.
        prefix: what every object key starts with (``HEADWATER_S3_PREFIX``).
        access_key: ``HEADWATER_S3_ACCESS_KEY[_FILE]``; None with ``secret_key``
            None: botocore's own chain (``AWS_*`` variables, a profile, an instance
            role).
        secret_key: ``HEADWATER_S3_SECRET_KEY[_FILE]``; never shown by ``repr``.
    """

    endpoint: str | None = None
    bucket: str = "headwater"
    region: str = "us-east-1"
    prefix: str = "blobs/"
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.endpoint is not None:
            url = urlsplit(self.endpoint)
            if url.scheme not in ("http", "https") or not url.hostname or url.path not in ("", "/"):
                raise ValueError("HEADWATER_S3_ENDPOINT must be an http:// or https:// URL "
                                 f"of a host (and port), got {self.endpoint!r}")
        if not BUCKET_NAME.fullmatch(self.bucket) or ".." in self.bucket:
            raise ValueError("HEADWATER_S3_BUCKET must be a bucket name (3 to 63 lowercase "
                             f"letters, digits, '.' or '-'), got {self.bucket!r}")
        if not REGION_NAME.fullmatch(self.region):
            raise ValueError(f"HEADWATER_S3_REGION must be a region name such as us-east-1, "
                             f"got {self.region!r}")
        if not KEY_PREFIX.fullmatch(self.prefix):
            raise ValueError("HEADWATER_S3_PREFIX may hold only letters, digits and "
                             f"!_.*'()/- (at most 200), got {self.prefix!r}")
        if (self.access_key is None) != (self.secret_key is None):
            given, wanted = (("ACCESS_KEY", "SECRET_KEY") if self.secret_key is None
                             else ("SECRET_KEY", "ACCESS_KEY"))
            raise ValueError(f"HEADWATER_S3_{given} is set but HEADWATER_S3_{wanted} "
                             "(or its _FILE) is not: set both, or neither for botocore's "
                             "own credentials")


def s3_settings_from_env() -> S3Settings:
    """The ``HEADWATER_S3_*`` settings (an empty variable counts as unset).

    Raises:
        ValueError: a bad value or half a key pair (the message names the variable).
    """
    return S3Settings(
        endpoint=env_str("S3_ENDPOINT", "").strip() or None,
        bucket=env_str("S3_BUCKET", "").strip() or "headwater",
        region=env_str("S3_REGION", "").strip() or "us-east-1",
        prefix=env_str("S3_PREFIX", "blobs/"),
        access_key=read_secret(env_str("S3_ACCESS_KEY", ""), env_str("S3_ACCESS_KEY_FILE", ""),
                               "S3_ACCESS_KEY"),
        secret_key=read_secret(env_str("S3_SECRET_KEY", ""), env_str("S3_SECRET_KEY_FILE", ""),
                               "S3_SECRET_KEY"),
    )


def object_key(prefix: str, digest: str) -> str:
    """The key of blob ``digest``'s object.

    Raises:
        ValueError: ``digest`` is not a blob's digest (no other key is ever made).
    """
    if not blobs.valid_digest(digest):
        raise ValueError(f"not a blob's digest: {digest!r}")
    return f"{prefix}{digest}"


def _missing(error: ClientError) -> bool:
    return str(error.response.get("Error", {}).get("Code", "")) in MISSING


class S3Objects:
    """The bucket's side: one object per blob.

    Args:
        client: an aiobotocore S3 client (open).
        settings: the bucket and key prefix.
        closer: closes the client (``close``), when these objects own it.
    """

    def __init__(self, client: Any, settings: S3Settings,
                 closer: contextlib.AsyncExitStack | None = None) -> None:
        self.client, self.settings = client, settings
        self.bucket = settings.bucket
        self._closer = closer

    def key(self, digest: str) -> str:
        """The object key of ``digest``."""
        return object_key(self.settings.prefix, digest)

    async def exists(self, digest: str) -> bool:
        """Whether the bucket holds ``digest``'s object."""
        try:
            await self.client.head_object(Bucket=self.bucket, Key=self.key(digest))
        except ClientError as e:
            if _missing(e):
                return False
            raise
        return True

    async def upload(self, digest: str, data: bytes) -> None:
        """Write ``digest``'s object (one request; S3 takes up to 5 GB so)."""
        await self.client.put_object(Bucket=self.bucket, Key=self.key(digest), Body=data,
                                     ContentType="application/json")

    async def chunks(self, digest: str) -> AsyncIterator[bytes]:
        """The object's bytes as they arrive, up to ``CHUNK_BYTES`` at a time (``KeyError``
        before the first when there is no such object)."""
        try:
            response = await self.client.get_object(Bucket=self.bucket, Key=self.key(digest))
        except ClientError as e:
            if _missing(e):
                raise KeyError(digest) from None
            raise
        body = response["Body"]
        try:
            async for chunk in body.iter_chunks(CHUNK_BYTES):
                yield chunk
        finally:
            body.close()

    async def delete(self, digests: list[str]) -> None:
        """Delete the objects of ``digests`` (those already gone count as deleted).

        Raises:
            RuntimeError: the bucket refused to delete one (named with its error).
        """
        for i in range(0, len(digests), DELETE_BATCH):
            keys = [{"Key": self.key(d)} for d in digests[i:i + DELETE_BATCH]]
            response = await self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
            if errors := response.get("Errors"):
                first = errors[0]
                raise RuntimeError(f"S3 bucket {self.bucket!r} did not delete {len(errors)} "
                                   f"blobs, e.g. {first.get('Key')}: {first.get('Code')} "
                                   f"{first.get('Message')}")

    async def close(self) -> None:
        """Close the client when these objects opened it."""
        if self._closer is not None:
            await self._closer.aclose()


class S3BlobStore:
    """Blobs' bytes in a bucket (``objects``), their rows in the projection's database
    (``pool``: the ``blobs`` and ``blob_refs`` tables)."""

    def __init__(self, pool: asyncpg.Pool, objects: S3Objects) -> None:
        self.pool, self.objects = pool, objects

    async def put(self, digest: str, data: bytes, workflow_id: str) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            # The row's lock first: a second writer of the digest waits here for the
            # first's commit (then the object is there), and a collection of it either
            # deleted it and its object before (then both are written anew) or skips it.
            await conn.execute(
                "insert into blobs (digest, size) values ($1, $2) on conflict (digest) "
                "do update set created_at = now()", digest, len(data))
            if not await self.objects.exists(digest):
                await self.objects.upload(digest, data)
            await conn.execute(
                "insert into blob_refs (workflow_id, digest) values ($1, $2) "
                "on conflict do nothing", workflow_id, digest)

    async def get(self, digest: str) -> bytes:
        return b"".join([chunk async for chunk in self.chunks(digest)])

    def chunks(self, digest: str) -> AsyncIterator[bytes]:
        return self.objects.chunks(digest)

    async def size(self, digest: str) -> int | None:
        value = await self.pool.fetchval("select size from blobs where digest = $1", digest)
        return None if value is None else int(value)

    async def close(self) -> None:
        """Close the client (the pool is its owner's)."""
        await self.objects.close()


async def open_s3(settings: S3Settings) -> S3Objects:
    """``S3Objects`` with a client of their own, once the bucket answered.

    Raises:
        RuntimeError: the bucket cannot be reached, does not exist or refuses these
            credentials (the message names the settings to look at).
    """
    config = AioConfig(
        s3={"addressing_style": "path" if settings.endpoint else "auto"},
        retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=10, read_timeout=120)
    stack = contextlib.AsyncExitStack()
    client = await stack.enter_async_context(get_session().create_client(
        "s3", endpoint_url=settings.endpoint, region_name=settings.region,
        aws_access_key_id=settings.access_key, aws_secret_access_key=settings.secret_key,
        config=config))
    try:
        await client.head_bucket(Bucket=settings.bucket)
    except (ClientError, BotoCoreError) as e:
        await stack.aclose()
        where = settings.endpoint or f"AWS S3 in {settings.region}"
        raise RuntimeError(
            f"S3 bucket {settings.bucket!r} at {where} does not answer ({e}); see "
            "HEADWATER_S3_ENDPOINT, HEADWATER_S3_BUCKET, HEADWATER_S3_REGION and "
            "HEADWATER_S3_ACCESS_KEY/HEADWATER_S3_SECRET_KEY") from None
    return S3Objects(client, settings, stack)

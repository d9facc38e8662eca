"""The S3 blob store (``HEADWATER_BLOB_STORE=s3``) against a real S3-compatible server.

A private SeaweedFS (``infra/seaweedfs.sh up``: ``weed mini`` built from the Go module
proxy, its own ``HEADWATER_HOME`` and ten free ports, stopped by its pid at the end)
holds the bucket; a private stack runs with the store set to it, the secret key read
from a file. A task returns 20 MB and the next one receives it whole, with a 3 MB input
stored by the gateway and read by a worker; ``GET .../blobs/{digest}`` streams the
output from the bucket; each blob is an object under the stack's prefix and none of its
bytes is in ``blob_chunks``; then the retention job (``services.projector.retention``,
as it runs in production) purges the run and deletes its blobs' rows and objects.

Without SeaweedFS (no Go to build it, a failed build or start) the module fails on CI
and is skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
from breakkit import wait_run
from stackkit import private_stack

from headwater import blobs
from ops.sandbox import Sandbox
from services.common.blobs.s3 import S3Objects, S3Settings, open_s3
from services.projector import retention
from tests.polling import scaled

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "infra" / "seaweedfs.sh"
MB = 1024 * 1024
ACCESS_KEY, SECRET_KEY, BUCKET = "headwater-e2e", "e2e-secret-key-s3", "headwater"


def ten_free_ports() -> int:
    """A port P such that P to P+9 are all free on 127.0.0.1 (the script's ten)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + 9 >= 65536:
            continue
        held: list[socket.socket] = []
        try:
            for port in range(base, base + 10):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError("no ten consecutive free ports")


def unavailable(message: str) -> None:
    """Fail on CI, skip elsewhere."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@dataclass(frozen=True)
class Server:
    """The private SeaweedFS: its S3 settings (the stack's prefix among them)."""

    settings: S3Settings
    key_file: Path

    def env(self) -> dict[str, str]:
        """The stack's ``HEADWATER_*`` settings for this store."""
        return {"HEADWATER_BLOB_STORE": "s3", "HEADWATER_S3_ENDPOINT": str(self.settings.endpoint),
                "HEADWATER_S3_BUCKET": self.settings.bucket,
                "HEADWATER_S3_REGION": self.settings.region,
                "HEADWATER_S3_PREFIX": self.settings.prefix,
                "HEADWATER_S3_ACCESS_KEY": ACCESS_KEY,
                "HEADWATER_S3_SECRET_KEY_FILE": str(self.key_file)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("seaweedfs")
    port = ten_free_ports()
    env = {**os.environ, "HEADWATER_HOME": str(home), "HEADWATER_S3_PORT": str(port),
           "HEADWATER_S3_BUCKET": BUCKET, "HEADWATER_S3_ACCESS_KEY": ACCESS_KEY,
           "HEADWATER_S3_SECRET_KEY": SECRET_KEY}
    started = time.monotonic()
    up = subprocess.run(["bash", str(SCRIPT), "up"], env=env, capture_output=True, text=True,
                        timeout=1800)
    if up.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True, timeout=60)
        unavailable(f"SeaweedFS did not start (`bash infra/seaweedfs.sh up`): "
                    f"{(up.stderr or up.stdout)[-1500:]}")
    print(f"\nSeaweedFS up in {time.monotonic() - started:.1f} s: {up.stdout.strip()}")
    key_file = home / "s3-secret"
    key_file.write_text(SECRET_KEY + "\n")
    key_file.chmod(0o600)
    settings = S3Settings(endpoint=f"http://127.0.0.1:{port}", bucket=BUCKET,
                          prefix=f"e2e-{uuid.uuid4().hex[:8]}/blobs/",
                          access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    try:
        yield Server(settings, key_file)
    finally:
        down = subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert down.returncode == 0, down.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None,
          server: Server) -> Iterator[Sandbox]:
    with private_stack(tmp_path_factory.mktemp("s3stack"), extra_env=server.env(),
                       more_tasks=("blob_tasks",)) as sandbox:
        yield sandbox


@contextlib.asynccontextmanager
async def bucket(server: Server) -> AsyncIterator[S3Objects]:
    objects = await open_s3(server.settings)
    try:
        yield objects
    finally:
        await objects.close()


async def _in_bucket(server: Server, *digests: str) -> dict[str, bool]:
    async with bucket(server) as objects:
        return {d: await objects.exists(d) for d in digests}


async def _rows(dsn: str, *digests: str) -> dict[str, tuple[int | None, int]]:
    """Each digest's ``blobs.size`` (None: no row) and how many ``blob_chunks`` it has."""
    conn = await asyncpg.connect(dsn)
    try:
        found: dict[str, tuple[int | None, int]] = {}
        for d in digests:
            size = await conn.fetchval("select size from blobs where digest = $1", d)
            chunks = await conn.fetchval("select count(*) from blob_chunks where digest = $1", d)
            found[d] = (None if size is None else int(size), int(chunks))
        return found
    finally:
        await conn.close()


def spec() -> dict[str, Any]:
    return {"name": "blobs.s3", "nodes": [
        {"id": "a", "task": "blob.make", "queue": "cpu", "input": {"mb": 20}},
        {"id": "b", "task": "blob.measure", "queue": "cpu", "needs": ["a"],
         "input": {"doc": "${nodes.a.output}"}},
        {"id": "c", "task": "blob.measure", "queue": "cpu", "input": {"doc": "${input.doc}"}}]}


def test_blobs_go_to_the_bucket_stream_back_and_are_collected_with_their_runs(
        stack: Sandbox, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    workflow_id = f"s3-{uuid.uuid4().hex[:10]}"
    given = "i" * (3 * MB)
    with httpx.Client(base_url=stack.gateway, timeout=120) as http:
        response = http.post("/v1/workflows", content=orjson.dumps(
            {"id": workflow_id, "workflow": spec(), "input": {"doc": given}}),
            headers={"Content-Type": "application/json"})
        assert response.status_code == 202, response.text[:500]
        began = time.monotonic()
        run = wait_run(http, workflow_id, 240)
        print(f"\n20 MB through S3: the run took {time.monotonic() - began:.1f} s")
        assert run["status"] == "succeeded", run
        made = "x" * (20 * MB)
        output = orjson.dumps(made)
        out_digest, in_digest = blobs.digest_of(output), blobs.digest_of(orjson.dumps(given))
        # the next task got the 20 MB whole, and the gateway's 3 MB input too
        assert run["output"]["b"] == {"length": 20 * MB,
                                      "sha256": hashlib.sha256(made.encode()).hexdigest()}
        assert run["output"]["c"]["length"] == 3 * MB
        assert run["input"]["doc"]["$blob"] == in_digest

        href = f"/v1/workflows/{workflow_id}/blobs/{out_digest}"
        with http.stream("GET", href) as streamed:
            assert streamed.status_code == 200
            assert streamed.headers["content-length"] == str(len(output))
            chunks = list(streamed.iter_bytes())
        assert b"".join(chunks) == output and len(chunks) > 1

    # the bytes are objects under the stack's prefix; PostgreSQL holds rows, no chunks
    assert asyncio.run(_in_bucket(server, out_digest, in_digest)) == {
        out_digest: True, in_digest: True}
    assert asyncio.run(_rows(stack.dsn, out_digest, in_digest)) == {
        out_digest: (len(output), 0), in_digest: (len(orjson.dumps(given)), 0)}

    # the retention job, as deployed: purge the (aged) run, collect its blobs' objects
    asyncio.run(_age(stack.dsn, workflow_id))
    for name, value in {**server.env(), "HEADWATER_PROJECTION_RETENTION": "purge",
                        "HEADWATER_PROJECTION_RETENTION_S": "600",
                        "HEADWATER_BLOB_GRACE_S": "0"}.items():
        monkeypatch.setenv(name, value)
    gone = asyncio.run(_retention_until_collected(stack.dsn, server, out_digest, in_digest))
    assert gone == {out_digest: False, in_digest: False}
    assert asyncio.run(_rows(stack.dsn, out_digest, in_digest)) == {
        out_digest: (None, 0), in_digest: (None, 0)}


async def _age(dsn: str, workflow_id: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("update workflows set updated_at = now() - interval '1 hour'"
                           " where workflow_id = $1", workflow_id)
    finally:
        await conn.close()


async def _retention_until_collected(dsn: str, server: Server,
                                     *digests: str) -> dict[str, bool]:
    """Run the retention job until the objects of ``digests`` are gone (or time is up);
    whether each is still in the bucket."""
    job = asyncio.create_task(retention.run(dsn, interval_s=1.0))
    deadline = time.monotonic() + scaled(60)
    try:
        while True:
            left = await _in_bucket(server, *digests)
            if not any(left.values()) or time.monotonic() > deadline or job.done():
                return left
            await asyncio.sleep(0.5)
    finally:
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job

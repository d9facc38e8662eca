"""PostgreSQL credentials: ``HEADWATER_PG_PASSWORD[_FILE]`` and ``HEADWATER_PG_SSLMODE``
against a real server that demands a password.

A private PostgreSQL (``infra/postgres.sh`` with its own port and directory, stopped by
the script's pid-file ``stop`` at the end) whose ``postgres`` role gets a password and
whose TCP connections then need it (``scram-sha-256`` in ``pg_hba.conf``, reloaded).
The server has no TLS, so ``sslmode=require`` must be refused: proof that the mode
reaches asyncpg.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from faultsuite.infra import PrivateInfra
from ops.sandbox import free_port
from services.common.db import connect, connect_pool
from services.common.settings import PgAuth

HBA = """\
local all all trust
host all all 127.0.0.1/32 scram-sha-256
"""
"""Password authentication over TCP (the PostgreSQL manual, "The pg_hba.conf File")."""


class Server:
    """The private server: a DSN without a password, and the password."""

    def __init__(self, infra: PrivateInfra, password: str) -> None:
        self.dsn = f"postgresql://postgres@127.0.0.1:{infra.pg_port}/headwater"
        self.password = password


def require_postgres_binaries() -> None:
    """Fail on CI (skip elsewhere) without a PostgreSQL server to start."""
    if shutil.which("pg_ctl") or any(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("needs PostgreSQL's server binaries (pg_ctl)", pytrace=False)
    pytest.skip("needs PostgreSQL's server binaries (pg_ctl)")


async def _demand_password(dsn: str, password: str, hba: Path) -> None:
    conn = await asyncpg.connect(dsn)  # still trusted
    try:
        await conn.execute(f"alter role postgres password '{password}'")
        hba.write_text(HBA)
        assert await conn.fetchval("select pg_reload_conf()")
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    require_postgres_binaries()
    home = Path(tempfile.mkdtemp(prefix="hw-pgauth-"))
    # The broker's ports are never used: this instance runs PostgreSQL alone.
    infra = PrivateInfra(home, free_port(), free_port(), free_port(),
                         Path(f"/var/tmp/hw-pg-{uuid.uuid4().hex[:10]}"))
    try:
        infra.start_postgres()
        password = secrets.token_urlsafe(16)
        found = Server(infra, password)
        asyncio.run(_demand_password(found.dsn, password, infra.pg_dir / "data" / "pg_hba.conf"))
        yield found
    finally:
        infra.stop()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(infra.pg_dir, ignore_errors=True)


async def test_the_password_setting_lets_a_pool_in(server: Server) -> None:
    pool = await connect_pool(server.dsn, timeout_s=10, auth=PgAuth(server.password))
    try:
        assert await pool.fetchval("select count(*) from workflows") == 0
    finally:
        await pool.close()


async def test_no_or_a_wrong_password_is_refused_without_showing_it(server: Server) -> None:
    with pytest.raises(asyncpg.InvalidPasswordError):
        await connect(server.dsn, auth=PgAuth())
    with pytest.raises(asyncpg.InvalidPasswordError) as refused:
        await connect_pool(server.dsn, timeout_s=10, auth=PgAuth("wrong-password"))
    assert "wrong-password" not in str(refused.value)


async def test_the_password_file_from_the_environment(server: Server, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "pg-password"
    secret.write_text(server.password + "\n")
    monkeypatch.delenv("HEADWATER_PG_PASSWORD", raising=False)
    monkeypatch.delenv("HEADWATER_PG_SSLMODE", raising=False)
    monkeypatch.setenv("HEADWATER_PG_PASSWORD_FILE", str(secret))
    conn = await connect(server.dsn)
    try:
        assert await conn.fetchval("select current_user") == "postgres"
    finally:
        await conn.close()


async def test_the_dsns_own_password_wins(server: Server) -> None:
    wrong = server.dsn.replace("postgres@", "postgres:wrong-password@")
    with pytest.raises(asyncpg.InvalidPasswordError):
        await connect(wrong, auth=PgAuth(server.password))


async def test_the_sslmode_reaches_the_connection(server: Server) -> None:
    conn = await connect(server.dsn, auth=PgAuth(server.password, "disable"))
    await conn.close()
    with pytest.raises(ConnectionError, match="rejected SSL upgrade"):
        await connect(server.dsn, auth=PgAuth(server.password, "require"))

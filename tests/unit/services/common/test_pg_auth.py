"""``services.common.db``'s PostgreSQL credentials: what is added to a DSN when
connecting, and what of a DSN may be logged."""

from __future__ import annotations

import pytest

from services.common.db import connect_kwargs, dsn_password, redact_dsn
from services.common.settings import PgAuth

DSN = "postgresql://headwater@db.internal:5432/headwater"


def test_the_password_is_added_when_the_dsn_has_none() -> None:
    assert connect_kwargs(DSN, PgAuth("pw")) == {"password": "pw"}


@pytest.mark.parametrize("dsn", ["postgresql://headwater:inline@db:5432/headwater",
                                 "postgresql://db/headwater?user=headwater&password=inline"])
def test_the_dsns_password_wins(dsn: str) -> None:
    assert dsn_password(dsn) == "inline"
    assert connect_kwargs(dsn, PgAuth("pw", "require")) == {"ssl": "require"}


def test_nothing_is_added_by_default() -> None:
    assert connect_kwargs(DSN, PgAuth()) == {}


def test_the_environment_is_read_when_no_auth_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_PG_PASSWORD", "from-env")
    monkeypatch.setenv("HEADWATER_PG_SSLMODE", "verify-ca")
    monkeypatch.delenv("HEADWATER_PG_PASSWORD_FILE", raising=False)
    assert connect_kwargs(DSN) == {"password": "from-env", "ssl": "verify-ca"}


def test_a_bad_sslmode_names_the_variable() -> None:
    with pytest.raises(ValueError, match="HEADWATER_PG_SSLMODE must be one of disable, allow"):
        PgAuth(sslmode="yes")


@pytest.mark.parametrize(("dsn", "shown"), [
    (DSN, DSN),
    ("postgresql://u:s3cr%40t@db:5432/hw?sslmode=require", "postgresql://u:***@db:5432/hw?sslmode=require"),
    ("postgresql://db/hw?user=u&password=s3cret", "postgresql://db/hw?user=u&password=***"),
])
def test_a_redacted_dsn_has_no_password(dsn: str, shown: str) -> None:
    assert redact_dsn(dsn) == shown

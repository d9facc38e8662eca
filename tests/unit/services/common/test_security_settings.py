"""The Kafka and PostgreSQL security settings as read from ``HEADWATER_*`` variables:
``kafka_security_from_env``, ``pg_auth_from_env`` and their place in ``CommonSettings``,
the CLI's endpoints and ``TopicReader``."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
import typer

from ops.cli.endpoints import endpoints
from services.common.kafka.security import KafkaSecurity
from services.common.settings import (
    CommonFields,
    CommonSettings,
    PgAuth,
    kafka_security_from_env,
    pg_auth_from_env,
)
from services.common.topic_reader import TopicReader

SASL_ENV = {"HEADWATER_KAFKA_SECURITY_PROTOCOL": "sasl_plaintext",
            "HEADWATER_KAFKA_SASL_MECHANISM": "scram-sha-256",
            "HEADWATER_KAFKA_SASL_USERNAME": "svc"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No security setting of the machine's own leaks into a test."""
    for name in ("KAFKA_SECURITY_PROTOCOL", "KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME",
                 "KAFKA_SASL_PASSWORD", "KAFKA_SASL_PASSWORD_FILE", "KAFKA_SSL_CAFILE",
                 "KAFKA_SSL_CERTFILE", "KAFKA_SSL_KEYFILE", "PG_PASSWORD", "PG_PASSWORD_FILE",
                 "PG_SSLMODE"):
        monkeypatch.delenv(f"HEADWATER_{name}", raising=False)


def setenv(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def test_nothing_set_is_plaintext_and_no_credentials() -> None:
    assert kafka_security_from_env() == KafkaSecurity()
    assert pg_auth_from_env() == PgAuth()
    fields = CommonSettings.common_from_env()
    assert fields["kafka_security"] == KafkaSecurity() and fields["pg_auth"] == PgAuth()


def test_sasl_from_the_environment_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "pw"})
    assert kafka_security_from_env() == KafkaSecurity("SASL_PLAINTEXT", "SCRAM-SHA-256",
                                                      "svc", "pw")


def test_the_password_from_a_file_without_its_line_break(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-a-secret\n")
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD_FILE": str(secret)})
    assert kafka_security_from_env().sasl_password == "from-a-secret"


@pytest.mark.parametrize(("env", "named"), [
    ({"HEADWATER_KAFKA_SECURITY_PROTOCOL": "kerberos"}, "HEADWATER_KAFKA_SECURITY_PROTOCOL"),
    (SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD or HEADWATER_KAFKA_SASL_PASSWORD_FILE"),
    ({**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "pw", "HEADWATER_KAFKA_SASL_USERNAME": ""},
     "HEADWATER_KAFKA_SASL_USERNAME must be set"),
    ({**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "pw",
      "HEADWATER_KAFKA_SASL_PASSWORD_FILE": "/etc/hostname"}, "not both"),
    ({**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD_FILE": "/no/such/file"},
     "HEADWATER_KAFKA_SASL_PASSWORD_FILE names '/no/such/file'"),
    ({"HEADWATER_KAFKA_SSL_CAFILE": "/etc/hostname"}, "HEADWATER_KAFKA_SSL_CAFILE is set but"),
    ({"HEADWATER_KAFKA_SECURITY_PROTOCOL": "SSL", "HEADWATER_KAFKA_SSL_KEYFILE": "/no/key.pem"},
     "HEADWATER_KAFKA_SSL_KEYFILE names"),
    ({"HEADWATER_PG_SSLMODE": "on"}, "HEADWATER_PG_SSLMODE must be one of"),
    ({"HEADWATER_PG_PASSWORD_FILE": "/no/such/file"}, "HEADWATER_PG_PASSWORD_FILE names"),
    ({"HEADWATER_PG_PASSWORD": "x", "HEADWATER_PG_PASSWORD_FILE": "/etc/hostname"},
     "set HEADWATER_PG_PASSWORD or HEADWATER_PG_PASSWORD_FILE, not both"),
])
def test_bad_settings_fail_at_start_up_naming_the_variable(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: str) -> None:
    setenv(monkeypatch, env)
    with pytest.raises(ValueError, match=named):
        CommonSettings(**CommonSettings.common_from_env())


def test_an_empty_password_file_is_refused(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    empty = tmp_path / "password"
    empty.write_text("\n")
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD_FILE": str(empty)})
    with pytest.raises(ValueError, match=r"HEADWATER_KAFKA_SASL_PASSWORD_FILE names .* empty"):
        kafka_security_from_env()


def test_pg_auth_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "pgpass"
    secret.write_text("pg-secret\r\n")
    setenv(monkeypatch, {"HEADWATER_PG_PASSWORD_FILE": str(secret),
                         "HEADWATER_PG_SSLMODE": "Verify-Full"})
    assert pg_auth_from_env() == PgAuth("pg-secret", "verify-full")


def test_no_password_in_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "kafka-pw",
                         "HEADWATER_PG_PASSWORD": "pg-pw"})
    text = repr(CommonSettings(**CommonSettings.common_from_env()))
    assert "kafka-pw" not in text and "pg-pw" not in text
    assert "SASL_PLAINTEXT" in text


def test_common_fields_are_the_settings_init_fields() -> None:
    init = {f.name for f in dataclasses.fields(CommonSettings) if f.init}
    assert set(typing.get_type_hints(CommonFields)) == init
    assert set(CommonSettings.common_from_env()) == init


def test_the_cli_endpoints_carry_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "pw",
                         "HEADWATER_PG_SSLMODE": "require"})
    ep = endpoints(None, "headwater", None)
    assert ep.kafka_security.sasl_username == "svc" and ep.pg_auth.sslmode == "require"


def test_the_cli_endpoints_refuse_bad_settings_with_a_message(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    setenv(monkeypatch, {"HEADWATER_KAFKA_SECURITY_PROTOCOL": "TLS"})
    with pytest.raises(typer.Exit):
        endpoints(None, "headwater", None)
    assert "HEADWATER_KAFKA_SECURITY_PROTOCOL must be one of" in capsys.readouterr().out


async def test_a_topic_reader_reads_the_environment_unless_given_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(monkeypatch, {**SASL_ENV, "HEADWATER_KAFKA_SASL_PASSWORD": "pw"})
    from_env = TopicReader("127.0.0.1:1")
    assert from_env.security.sasl_username == "svc"
    assert from_env.consumer._client._security_protocol == "SASL_PLAINTEXT"
    assert from_env.admin._client._security_protocol == "SASL_PLAINTEXT"
    given = TopicReader("127.0.0.1:1", security=KafkaSecurity())
    assert given.consumer._client._security_protocol == "PLAINTEXT"

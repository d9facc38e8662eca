"""``headwater keys create``, ``headwater whoami`` and the token of every command: the
key's token printed once with its keys-file line (which admits it), ``--file`` creating
the file mode 0600 and refusing one anybody may write, the token sent from ``--token``
or ``HEADWATER_TOKEN``, and a 401 or 403 told in one line (what to set), exit 2."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ops.cli.app import app
from services.common.auth.tokens import KeysFile, parse_keys
from tests.unit.ops.conftest import Gateway

TOKEN = "hwk_0123456789ab_" + "s" * 43


@pytest.fixture(autouse=True)
def no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """No token in the environment; the one ``--token`` sets is gone after the test."""
    monkeypatch.setenv("HEADWATER_TOKEN", "")
    monkeypatch.delenv("HEADWATER_TOKEN")


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300", **(env or {})})


def made(output: str) -> tuple[str, str]:
    """The token and the line ``keys create`` printed."""
    lines = dict(line.split(":", 1) for line in output.splitlines() if ":" in line
                 and line.split(":", 1)[0] in ("token", "line"))
    return lines["token"].strip(), lines["line"].strip()


def test_keys_create_prints_a_token_its_line_admits(tmp_path: Path) -> None:
    result = invoke("keys", "create", "--tenant", "acme", "--role", "submit")
    assert result.exit_code == 0, result.output
    token, line = made(result.stdout)
    assert result.stdout.count(token) == 1  # once
    assert line.endswith(" acme submit") and token not in line
    keys = tmp_path / "keys"
    keys.write_text(line + "\n")
    me = KeysFile(keys).verify(token)
    assert (me.tenant, me.role) == ("acme", "submit")


def test_keys_create_refuses_a_bad_role_or_tenant() -> None:
    bad_role = invoke("keys", "create", "--tenant", "acme", "--role", "root")
    assert bad_role.exit_code == 2 and "one of read, submit, admin" in bad_role.output
    bad_tenant = invoke("keys", "create", "--tenant", "a b", "--role", "read")
    assert bad_tenant.exit_code == 2 and "tenant" in bad_tenant.output
    assert "Traceback" not in bad_role.output + bad_tenant.output


def test_keys_create_file_is_created_0600_and_appended_to(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    first = invoke("keys", "create", "--tenant", "acme", "--role", "read", "--file", str(keys))
    assert first.exit_code == 0, first.output
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    keys.write_text(keys.read_text().rstrip("\n") + "  # no newline at the end")
    second = invoke("keys", "create", "--tenant", "*", "--role", "submit", "--file", str(keys))
    assert second.exit_code == 0, second.output
    entries = parse_keys(keys.read_text())
    assert sorted((e.tenant, e.role) for e in entries.values()) == [
        ("*", "submit"), ("acme", "read")]
    for result in (first, second):
        token, line = made(result.stdout)
        assert token not in keys.read_text() and line in keys.read_text()
    assert f"appended to {keys}" in second.stderr


def test_keys_create_refuses_a_file_anybody_may_write_and_warns_of_readers(
        tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("")
    os.chmod(keys, 0o666)
    refused = invoke("keys", "create", "--tenant", "acme", "--role", "read", "--file",
                     str(keys))
    assert refused.exit_code == 2 and "writable by anybody" in refused.output
    assert keys.read_text() == "" and "token:" not in refused.output
    os.chmod(keys, 0o644)
    warned = invoke("keys", "create", "--tenant", "acme", "--role", "read", "--file",
                    str(keys))
    assert warned.exit_code == 0 and "readable by others" in warned.stderr
    assert len(parse_keys(keys.read_text())) == 1


def test_keys_create_does_not_append_to_a_file_that_is_no_keys_file(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("some notes\n")
    os.chmod(other, 0o600)
    result = invoke("keys", "create", "--tenant", "acme", "--role", "read", "--file",
                    str(other))
    assert result.exit_code == 2 and "line 1" in result.output, result.output
    assert other.read_text() == "some notes\n"


def auth_on(path: str, auth: str | None) -> tuple[int, dict[str, Any]]:
    """A gateway with auth on: it takes ``TOKEN`` (tenant acme, role read)."""
    if auth != f"Bearer {TOKEN}":
        detail = "no Authorization header" if auth is None else "unknown or revoked API key"
        return 401, {"title": "Unauthorized", "status": 401, "detail": detail}
    if path.startswith("/v1/whoami"):
        return 200, {"auth": True, "tenant": "acme", "role": "read",
                     "subject": "0123456789ab"}
    if path.startswith("/v1/workflows") and path.endswith("/cancel"):
        return 403, {"title": "Forbidden", "status": 403, "role": "read", "needs": "submit",
                     "detail": "the token's role is read; this needs submit"}
    if path.startswith("/v1/queues"):
        return 200, {"queues": []}
    return 200, {"items": [], "next_cursor": None}


@pytest.fixture
def guarded(gateway: Gateway) -> Gateway:
    """The stand-in gateway (``conftest``) with auth on."""
    gateway.guard = auth_on
    return gateway


def test_every_command_sends_the_token_of_the_option_or_the_environment(
        guarded: Gateway) -> None:
    by_option = invoke("--token", TOKEN, "whoami", "--gateway", guarded.url)
    assert by_option.exit_code == 0, by_option.output
    assert "tenant acme, role read" in by_option.output
    by_env = invoke("list", "--gateway", guarded.url, env={"HEADWATER_TOKEN": TOKEN})
    assert by_env.exit_code == 0, by_env.output
    queues = invoke("--token", TOKEN, "queues", "--gateway", guarded.url)
    assert queues.exit_code == 0, queues.output
    assert guarded.authorizations == [f"Bearer {TOKEN}"] * 3, guarded.authorizations


@pytest.mark.parametrize("args", [["whoami"], ["list"], ["status", "wf-1"], ["queues"]])
def test_a_401_says_what_to_set_in_one_line(guarded: Gateway, args: list[str]) -> None:
    result = invoke(*args, "--gateway", guarded.url)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    assert "401 no Authorization header" in result.output
    assert "set HEADWATER_TOKEN" in result.output and "Traceback" not in result.output
    wrong = invoke("--token", "hwk_bad", *args, "--gateway", guarded.url)
    assert wrong.exit_code == 2 and "401 unknown or revoked API key" in wrong.output


def test_a_403_names_the_role_needed(guarded: Gateway) -> None:
    result = invoke("--token", TOKEN, "cancel", "wf-1", "--gateway", guarded.url)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    assert "403 the token's role is read; this needs submit" in result.output
    assert "whoami" in result.output

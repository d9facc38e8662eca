"""``headwater keys list`` and ``headwater keys revoke``: a keys file's keys shown by id,
tenant and role; a key revoked by id or token (the file written again whole, comments
and other keys kept, its mode too), never the last one; and a revoke with a create at
once loses neither."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.keys import append_line, locked
from services.common.auth.tokens import KeysFile, new_key, parse_keys


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300", **(env or {})})


def keys_file(tmp_path: Path, *who: tuple[str, str]) -> tuple[Path, list[str]]:
    """A keys file (mode 0600) with a comment and a key per ``(tenant, role)``; the
    tokens."""
    made = [new_key(tenant, role) for tenant, role in who]
    path = tmp_path / "keys"
    path.write_text("# the services' key first\n" + "".join(f"{line}\n" for _, line in made))
    path.chmod(0o600)
    return path, [token for token, _ in made]


def key_id(token: str) -> str:
    return token.split("_")[1]


def test_list_shows_each_key_by_id_tenant_and_role(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, ("*", "submit"), ("acme", "admin"))
    result = invoke("keys", "list", "--file", str(path))
    assert result.exit_code == 0, result.output
    rows = [[cell for cell in line.split() if cell != "│"] for line in result.stdout.splitlines()
            if key_id(tokens[0]) in line or key_id(tokens[1]) in line]
    assert rows == [[key_id(tokens[0]), "*", "submit"], [key_id(tokens[1]), "acme", "admin"]]
    assert "sha256" not in result.stdout and "2 keys in" in result.stderr
    as_json = invoke("keys", "list", "--json", env={"HEADWATER_AUTH_KEYS_FILE": str(path)})
    assert json.loads(as_json.stdout) == [
        {"key": key_id(tokens[0]), "tenant": "*", "role": "submit"},
        {"key": key_id(tokens[1]), "tenant": "acme", "role": "admin"}]


def test_list_without_a_file_or_of_no_keys_file_says_so(tmp_path: Path) -> None:
    none = invoke("keys", "list")
    assert none.exit_code == 2 and "HEADWATER_AUTH_KEYS_FILE" in none.stdout
    bad = tmp_path / "bad"
    bad.write_text("not a key\n")
    refused = invoke("keys", "list", "--file", str(bad))
    assert refused.exit_code == 2 and "line 1: not '<key id>" in refused.stdout


def test_revoke_by_id_or_token_keeps_the_rest_and_the_mode(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, ("*", "submit"), ("acme", "admin"), ("acme", "read"))
    before = path.read_text().splitlines()
    result = invoke("keys", "revoke", key_id(tokens[1]), "--file", str(path))
    assert result.exit_code == 0, result.output
    assert f"revoked key {key_id(tokens[1])} (tenant acme, role admin)" in result.stdout
    assert path.read_text().splitlines() == [before[0], before[1], before[3]]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KeysFile(path).verify(tokens[2]).role == "read"
    by_token = invoke("keys", "revoke", tokens[2], "--file", str(path))
    assert by_token.exit_code == 0, by_token.output
    assert set(parse_keys(path.read_text())) == {key_id(tokens[0])}
    assert [p.name for p in tmp_path.iterdir()] == ["keys"]  # no file left beside it


def test_revoke_refuses_an_unknown_key_and_the_last_one(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, ("*", "submit"))
    text = path.read_text()
    unknown = invoke("keys", "revoke", "ffffffffffff", "--file", str(path))
    assert unknown.exit_code == 1 and "no key ffffffffffff in" in unknown.stdout
    last = invoke("keys", "revoke", key_id(tokens[0]), "--file", str(path))
    assert last.exit_code == 2 and "is the last key" in last.stdout, last.output
    assert path.read_text() == text
    missing = invoke("keys", "revoke", key_id(tokens[0]), "--file", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "no keys file" in missing.stdout


def test_a_revoke_and_a_create_at_once_lose_neither(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, ("*", "submit"), ("acme", "admin"))
    token, line = new_key("beta", "read")
    with locked(path):  # a revoke holds the lock; the create waits for it
        appender = threading.Thread(target=append_line, args=(path, line))
        appender.start()
        appender.join(0.2)
        assert appender.is_alive()
        fd = os.open(path.with_name("swap"), os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as out:  # what revoke does: another file renamed over
            out.write("".join(ln for ln in path.read_text().splitlines(keepends=True)
                              if key_id(tokens[1]) not in ln))
        os.replace(path.with_name("swap"), path)
    appender.join(5)
    assert set(parse_keys(path.read_text())) == {key_id(tokens[0]), key_id(token)}

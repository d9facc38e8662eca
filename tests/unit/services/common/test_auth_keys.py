"""API keys (``services.common.auth.tokens``): ``new_key``, the keys file's lines
(``parse_keys``: every malformed line, duplicates, comments) and ``KeysFile`` (verify a
good, unknown, revoked or malformed token; read again when the file changes, at most
once every ``RELOAD_S``; a file gone bad keeps the keys read last)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from services.common.auth import tokens as auth
from services.common.auth.tokens import AuthError, KeysFile, Principal, new_key, parse_keys

ID = "0123456789ab"
DIGEST = "sha256:" + "a" * 64


class Clock:
    """``auth.time`` with a ``monotonic`` the test moves (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(auth, "time", SimpleNamespace(monotonic=c.monotonic))
    return c


def write(path: Path, *lines: str) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


# new_key


@pytest.mark.parametrize("tenant", ["acme", "*", "A", "a" * 100, "t-1.x_y"])
@pytest.mark.parametrize("role", ["read", "submit", "admin"])
def test_a_new_key_is_a_token_and_the_line_that_admits_it(tenant: str, role: str) -> None:
    token, line = new_key(tenant, role)
    m = re.fullmatch(r"hwk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}", token)
    assert m is not None, token
    key_id, digest, got_tenant, got_role = line.split(" ")
    assert (key_id, got_tenant, got_role) == (m[1], tenant, role)
    assert digest == "sha256:" + hashlib.sha256(token.encode()).hexdigest()
    assert token not in line
    entry = parse_keys(line)[key_id]
    assert (entry.tenant, entry.role) == (tenant, role)


def test_new_keys_differ() -> None:
    tokens = [new_key("acme", "read")[0] for _ in range(50)]
    assert len(set(tokens)) == 50
    assert len({t[4:16] for t in tokens}) == 50  # the key ids too


@pytest.mark.parametrize("role", ["owner", "Admin", "", "read "])
def test_a_new_key_of_an_unknown_role_is_refused(role: str) -> None:
    with pytest.raises(ValueError, match=r"role .*one of read, submit, admin"):
        new_key("acme", role)


@pytest.mark.parametrize("tenant", ["", "-acme", ".acme", "a b", "a/b", "**", "a" * 101, "é"])
def test_a_new_key_of_a_bad_tenant_is_refused(tenant: str) -> None:
    with pytest.raises(ValueError, match=r"tenant"):
        new_key(tenant, "read")


# parse_keys


def test_blank_lines_and_comments_are_skipped() -> None:
    text = (f"# the keys of acme\n\n   \n\t\n{ID} {DIGEST} acme read  # ci's key\n"
            f"   # indented comment\n{'b' * 12}   {DIGEST}\t*   admin\n#{ID} x\n")
    keys = parse_keys(text)
    assert sorted(keys) == [ID, "b" * 12]
    assert (keys[ID].tenant, keys[ID].role, keys[ID].digest) == ("acme", "read", "a" * 64)
    assert (keys["b" * 12].tenant, keys["b" * 12].role) == ("*", "admin")


def test_an_empty_file_has_no_keys() -> None:
    assert parse_keys("") == {}
    assert parse_keys("# nothing yet\n\n") == {}


MALFORMED = {
    "one field": ID,
    "no tenant or role": f"{ID} {DIGEST}",
    "no role": f"{ID} {DIGEST} acme",
    "an extra field": f"{ID} {DIGEST} acme read extra",
    "key id of 11 hex": f"{ID[:11]} {DIGEST} acme read",
    "key id of 13 hex": f"{ID}c {DIGEST} acme read",
    "key id upper case": f"{ID.upper()} {DIGEST} acme read",
    "key id not hex": f"{'z' * 12} {DIGEST} acme read",
    "no sha256: prefix": f"{ID} {'a' * 64} acme read",
    "another hash": f"{ID} sha1:{'a' * 40} acme read",
    "digest of 63 hex": f"{ID} sha256:{'a' * 63} acme read",
    "digest of 65 hex": f"{ID} sha256:{'a' * 65} acme read",
    "digest upper case": f"{ID} sha256:{'A' * 64} acme read",
    "unknown role": f"{ID} {DIGEST} acme owner",
    "role upper case": f"{ID} {DIGEST} acme Admin",
    "tenant starting with -": f"{ID} {DIGEST} -acme read",
    "tenant of 101 characters": f"{ID} {DIGEST} {'a' * 101} read",
    "tenant **": f"{ID} {DIGEST} ** read",
    "tenant with a slash": f"{ID} {DIGEST} a/b read",
    "fields out of order": f"{DIGEST} {ID} acme read",
    "a token instead of a line": new_key("acme", "read")[0],
}


@pytest.mark.parametrize("line", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_line_is_refused_with_its_number(line: str) -> None:
    text = f"# header\n{ID} {DIGEST} acme read\n\n{line}\n"
    with pytest.raises(ValueError, match=r"^keys\.txt line 4: not '<key id> sha256:") as e:
        parse_keys(text, "keys.txt")
    assert "sha256:<64 hex> <tenant> <read|submit|admin>" in str(e.value)


def test_the_default_source_is_named() -> None:
    with pytest.raises(ValueError, match=r"^keys file line 1:"):
        parse_keys("nonsense")


def test_a_key_id_twice_is_refused_with_the_second_line() -> None:
    text = f"{ID} {DIGEST} acme read\n# again\n{ID} sha256:{'b' * 64} other admin\n"
    with pytest.raises(ValueError, match=rf"line 3: key id {ID} given twice"):
        parse_keys(text)


def test_the_same_digest_under_two_ids_is_two_keys() -> None:
    keys = parse_keys(f"{ID} {DIGEST} acme read\n{'c' * 12} {DIGEST} acme read\n")
    assert len(keys) == 2


# KeysFile.verify


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, str]]]:
    keys = {"acme": new_key("acme", "submit"), "ops": new_key("*", "admin")}
    path = tmp_path / "keys"
    write(path, "# keys", *(line for _, line in keys.values()))
    return path, keys


def test_a_good_key_is_its_tenant_and_role(
        two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, keys = two
    kf = KeysFile(path)
    token = keys["acme"][0]
    assert kf.verify(token) == Principal("acme", "submit", token[4:16])
    ops = kf.verify(keys["ops"][0])
    assert ops.every_tenant and ops.role == "admin"


def test_an_unknown_key_is_refused(two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, _ = two
    token = new_key("acme", "admin")[0]
    with pytest.raises(AuthError, match=r"unknown or revoked API key") as e:
        KeysFile(path).verify(token)
    assert token not in str(e.value)


def test_a_known_key_id_with_another_secret_is_refused(
        two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, keys = two
    good = keys["acme"][0]
    forged = good[:17] + ("A" if good[17] != "A" else "B") + good[18:]
    with pytest.raises(AuthError, match=r"unknown or revoked API key"):
        KeysFile(path).verify(forged)


@pytest.mark.parametrize("token", [
    "", "hwk_", "hwk_0123456789ab", "hwk_0123456789ab_", "hwk_0123456789ab_" + "x" * 42,
    "hwk_0123456789ab_" + "x" * 44, "hwk_0123456789AB_" + "x" * 43,
    "hwk_0123456789a_" + "x" * 43, "hwk_0123456789ab_" + "x" * 42 + "=",
    "HWK_0123456789ab_" + "x" * 43, " hwk_0123456789ab_" + "x" * 43, "eyJhbGciOi.x.y"])
def test_a_malformed_token_is_refused_without_reading(tmp_path: Path, token: str) -> None:
    path = tmp_path / "keys"
    write(path)
    kf = KeysFile(path)
    path.unlink()  # a malformed token is refused before the file is looked at
    with pytest.raises(AuthError, match=r"not a Headwater API key"):
        kf.verify(token)


def test_a_missing_or_malformed_file_fails_at_start(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        KeysFile(tmp_path / "absent")
    bad = tmp_path / "bad"
    write(bad, "nonsense")
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))} line 1"):
        KeysFile(bad)


# KeysFile reloads


def test_a_revoked_key_stops_working_after_reload_s(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, keys = two
    kf = KeysFile(path)
    acme, ops = keys["acme"][0], keys["ops"][0]
    assert kf.verify(acme).tenant == "acme"
    write(path, keys["ops"][1])  # acme's line deleted
    clock.now += auth.RELOAD_S / 2
    assert kf.verify(acme).tenant == "acme"  # not looked at again yet
    clock.now += auth.RELOAD_S / 2
    with pytest.raises(AuthError, match=r"unknown or revoked"):
        kf.verify(acme)
    assert kf.verify(ops).every_tenant


def test_a_key_added_works_after_reload_s(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, _ = two
    kf = KeysFile(path)
    token, line = new_key("beta", "read")
    with path.open("a") as f:
        f.write(line + "\n")
    with pytest.raises(AuthError):
        kf.verify(token)
    clock.now += auth.RELOAD_S
    assert kf.verify(token) == Principal("beta", "read", token[4:16])


def test_a_file_gone_malformed_keeps_the_last_good_keys(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, keys = two
    kf = KeysFile(path)
    acme = keys["acme"][0]
    write(path, keys["ops"][1], "half a line")  # acme revoked, but the file is bad
    clock.now += auth.RELOAD_S
    assert kf.verify(acme).tenant == "acme"  # the last good keys still hold
    write(path, keys["ops"][1])  # mended: the revocation takes effect
    clock.now += auth.RELOAD_S
    with pytest.raises(AuthError, match=r"unknown or revoked"):
        kf.verify(acme)


def test_a_file_gone_missing_keeps_the_last_good_keys(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, keys = two
    kf = KeysFile(path)
    path.unlink()
    clock.now += auth.RELOAD_S
    assert kf.verify(keys["acme"][0]).tenant == "acme"
    write(path, keys["acme"][1])
    clock.now += auth.RELOAD_S
    with pytest.raises(AuthError):
        kf.verify(keys["ops"][0])


def test_an_unchanged_file_is_not_read_again(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path, keys = two
    kf = KeysFile(path)
    reads: list[str] = []
    real = auth.parse_keys

    def parse(text: str, source: str) -> dict[str, Any]:
        reads.append(source)
        return real(text, source)

    monkeypatch.setattr(auth, "parse_keys", parse)
    for _ in range(3):
        clock.now += auth.RELOAD_S
        kf.verify(keys["acme"][0])
    assert reads == []


def test_a_key_rotated_by_a_same_size_rewrite_is_seen(
        clock: Clock, tmp_path: Path) -> None:
    old, new = new_key("acme", "read"), new_key("acme", "read")
    path = tmp_path / "keys"
    write(path, old[1])
    kf = KeysFile(path)
    before = path.stat()
    write(path, new[1])  # the same length: one key replaced by another
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # within one tick
    clock.now += auth.RELOAD_S
    with pytest.raises(AuthError):
        kf.verify(old[0])


def test_a_token_the_keys_miss_reads_the_file_again_soon(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]]) -> None:
    path, _ = two
    kf = KeysFile(path)
    token, line = new_key("beta", "read")
    with path.open("a") as f:
        f.write(line + "\n")
    clock.now += 2 * auth.MISS_RELOAD_S  # far less than RELOAD_S
    assert kf.verify(token).tenant == "beta"


def test_a_file_caught_empty_mid_rewrite_keeps_its_keys_and_says_so_once(
        clock: Clock, two: tuple[Path, dict[str, tuple[str, str]]],
        caplog: pytest.LogCaptureFixture) -> None:
    path, keys = two
    kf = KeysFile(path)
    path.write_text("")  # truncated by an in-place rewrite, not written yet
    for _ in range(3):
        clock.now += auth.RELOAD_S
        assert kf.verify(keys["acme"][0]).tenant == "acme"
    said = [r for r in caplog.records if "holds no key" in r.getMessage()]
    assert len(said) == 1, caplog.records
    write(path, keys["ops"][1])  # written: acme's line is gone
    clock.now += auth.RELOAD_S
    with pytest.raises(AuthError, match=r"unknown or revoked"):
        kf.verify(keys["acme"][0])

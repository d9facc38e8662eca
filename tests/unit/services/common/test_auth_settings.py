"""The auth settings as read from ``HEADWATER_AUTH*`` and ``HEADWATER_TOKEN``
(``services.common.auth.settings``): every value of ``HEADWATER_AUTH``, keys file and
JWT key combinations, each refusal (the message names the variable), and a service's
own token (``service_auth_from_env``, ``ServiceAuth.headers``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.common.auth.settings import (
    ServiceAuth,
    auth_on,
    authenticator_from_env,
    service_auth_from_env,
)
from services.common.auth.tokens import Authenticator, KeysFile, new_key

SECRET = "k" * 64
"""An HMAC key long enough for every HMAC algorithm (RFC 7518 §3.2)."""
VARIABLES = ("AUTH", "AUTH_KEYS_FILE", "AUTH_JWT_KEY", "AUTH_JWT_KEY_FILE",
             "AUTH_JWT_ALGORITHMS", "AUTH_JWT_AUDIENCE", "AUTH_JWT_ISSUER",
             "AUTH_JWT_LEEWAY_S", "TOKEN")
HMAC = ("HS256", "HS384", "HS512")
PUBLIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
          "EdDSA")


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(f"HEADWATER_{name}", raising=False)


def env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name, value in values.items():
        monkeypatch.setenv(f"HEADWATER_{name}", value)


def public_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def keys_file(tmp_path: Path, *keys: tuple[str, str]) -> Path:
    path = tmp_path / "keys"
    path.write_text("".join(line + "\n" for _, line in keys))
    return path


# HEADWATER_AUTH


@pytest.mark.parametrize("value", ["on", "ON", "On", "1", "true", "TRUE", "yes"])
def test_auth_on_values(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    env(monkeypatch, AUTH=value)
    assert auth_on()


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no", ""])
def test_auth_off_values(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    env(monkeypatch, AUTH=value)
    assert not auth_on()
    assert authenticator_from_env() is None


def test_auth_is_off_by_default() -> None:
    assert not auth_on()
    assert authenticator_from_env() is None


@pytest.mark.parametrize("value", ["maybe", "enabled", "2", " on", "of"])
def test_another_auth_value_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    env(monkeypatch, AUTH=value)
    with pytest.raises(ValueError, match=r"^HEADWATER_AUTH must be on or off, got"):
        auth_on()
    with pytest.raises(ValueError, match=r"^HEADWATER_AUTH must be on or off"):
        authenticator_from_env()


def test_off_ignores_the_other_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="off", AUTH_JWT_KEY="short", AUTH_KEYS_FILE="/nonexistent")
    assert authenticator_from_env() is None


def test_on_without_keys_or_a_jwt_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on")
    with pytest.raises(ValueError, match=r"neither HEADWATER_AUTH_KEYS_FILE nor "
                                         r"HEADWATER_AUTH_JWT_KEY\(_FILE\) is set"):
        authenticator_from_env()


# The keys file


def test_a_keys_file_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = new_key("acme", "read")
    env(monkeypatch, AUTH="on", AUTH_KEYS_FILE=str(keys_file(tmp_path, key)))
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is None and found.keys is not None
    assert found.token(key[0]).tenant == "acme"


@pytest.mark.parametrize("name", ["absent", "dir"])
def test_an_unreadable_keys_file_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    (tmp_path / "dir").mkdir()
    path = tmp_path / name
    env(monkeypatch, AUTH="on", AUTH_KEYS_FILE=str(path))
    with pytest.raises(ValueError, match=rf"^HEADWATER_AUTH_KEYS_FILE {path}: "
                                         r"(No such file or directory|Is a directory)$"):
        authenticator_from_env()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_a_keys_file_without_read_permission_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = keys_file(tmp_path, new_key("acme", "read"))
    path.chmod(0)
    env(monkeypatch, AUTH="on", AUTH_KEYS_FILE=str(path))
    with pytest.raises(ValueError, match=r"Permission denied"):
        authenticator_from_env()


def test_a_malformed_keys_file_is_refused_with_its_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(new_key("acme", "read")[1] + "\nnot a key\n")
    env(monkeypatch, AUTH="on", AUTH_KEYS_FILE=str(path))
    with pytest.raises(ValueError, match=rf"^{path} line 2: not '<key id>"):
        authenticator_from_env()


# The JWT key


def test_an_hmac_key_takes_every_hmac_algorithm_by_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET)
    found = authenticator_from_env()
    assert found is not None and found.keys is None and found.jwt_key is not None
    key = found.jwt_key
    assert (key.key, key.algorithms, key.audience, key.issuer, key.leeway_s) == (
        SECRET, HMAC, None, None, 30.0)
    token = jwt.encode({"tenant": "acme", "role": "read", "exp": int(time.time()) + 60},
                       SECRET, algorithm="HS256")
    assert found.token(token).role == "read"


def test_a_pem_key_takes_every_public_key_algorithm_by_default(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "jwt.pem"
    path.write_text("\n" + public_pem() + "\n\n")
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY_FILE=str(path))
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is not None
    assert found.jwt_key.algorithms == PUBLIC
    assert found.jwt_key.key.startswith("-----BEGIN PUBLIC KEY-----")  # stripped
    assert found.jwt_key.key.endswith("-----END PUBLIC KEY-----")


def test_the_jwt_options_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_ALGORITHMS=" HS512 , HS256,",
        AUTH_JWT_AUDIENCE="headwater", AUTH_JWT_ISSUER="https://idp", AUTH_JWT_LEEWAY_S="2.5")
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is not None
    key = found.jwt_key
    assert (key.algorithms, key.audience, key.issuer, key.leeway_s) == (
        ("HS512", "HS256"), "headwater", "https://idp", 2.5)


def test_a_jwt_key_file_is_read_and_stripped(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "public.pem"
    path.write_text(f"  {public_pem()}\n")
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY_FILE=str(path))
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is not None
    assert found.jwt_key.key == path.read_text().strip()


def test_a_jwt_key_file_holds_a_pem_public_key_never_a_secret(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text(SECRET)
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY_FILE=str(path))
    with pytest.raises(ValueError, match=r"not a PEM public key .* an HMAC secret goes in "
                                         r"HEADWATER_AUTH_JWT_KEY$"):
        authenticator_from_env()


def test_a_public_key_without_its_pem_lines_is_no_secret(
        monkeypatch: pytest.MonkeyPatch) -> None:
    body = "".join(public_pem().strip().splitlines()[1:-1])  # as some providers show it
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=body)
    with pytest.raises(ValueError, match=r"is a public key without its PEM lines"):
        authenticator_from_env()


@pytest.mark.parametrize("pem", ["-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
                                 "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"])
def test_a_pem_that_is_no_public_key_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                pem: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=pem)
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_JWT_KEY: not a PEM public key"):
        authenticator_from_env()


def test_keys_and_a_jwt_key_together(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET,
        AUTH_KEYS_FILE=str(keys_file(tmp_path, new_key("acme", "read"))))
    found = authenticator_from_env()
    assert found is not None and found.keys is not None and found.jwt_key is not None


def test_a_jwt_key_and_a_jwt_key_file_are_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text(SECRET)
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_KEY_FILE=str(path))
    with pytest.raises(ValueError, match=r"set HEADWATER_AUTH_JWT_KEY or "
                                         r"HEADWATER_AUTH_JWT_KEY_FILE, not both"):
        authenticator_from_env()


def test_an_unreadable_jwt_key_file_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "absent"
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY_FILE=str(path))
    with pytest.raises(ValueError, match=rf"^HEADWATER_AUTH_JWT_KEY_FILE {path}: No such file"):
        authenticator_from_env()


def test_an_empty_jwt_key_file_is_refused(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_text("\n")
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY_FILE=str(path))
    with pytest.raises(ValueError, match=r"empty: not a PEM public key"):
        authenticator_from_env()


@pytest.mark.parametrize("secret", ["k" * 31, "short", "é" * 15])
def test_a_short_hmac_key_is_refused(monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=secret)
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_JWT_KEY: \d+ bytes, too short for "
                                         r"HS256, HS384, HS512 \(RFC 7518 §3.2"):
        authenticator_from_env()


def test_an_hmac_key_of_32_bytes_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY="é" * 16, AUTH_JWT_ALGORITHMS="HS256")
    assert authenticator_from_env() is not None


def test_an_hmac_key_shorter_than_its_algorithm_s_hash_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY="k" * 32, AUTH_JWT_ALGORITHMS="HS256,HS512")
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_JWT_KEY: 32 bytes, too short for "
                                         r"HS512 \("):
        authenticator_from_env()


def test_a_32_byte_key_takes_only_hs256_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY="k" * 48)
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is not None
    assert found.jwt_key.algorithms == ("HS256", "HS384")
    env(monkeypatch, AUTH_JWT_KEY="k" * 32)
    found = authenticator_from_env()
    assert found is not None and found.jwt_key is not None
    assert found.jwt_key.algorithms == ("HS256",)


@pytest.mark.parametrize("algorithms", ["HS256", "HS256,RS256", "none"])
def test_a_pem_key_with_an_hmac_algorithm_is_refused(
        monkeypatch: pytest.MonkeyPatch, algorithms: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=public_pem(), AUTH_JWT_ALGORITHMS=algorithms)
    with pytest.raises(ValueError, match=r"^HEADWATER_AUTH_JWT_ALGORITHMS: .*cannot verify "
                                         r"with a public key; take from RS256"):
        authenticator_from_env()


@pytest.mark.parametrize(("algorithms", "named"), [
    ("RS256", "RS256"), ("HS256,ES256,PS512", "ES256, PS512"), ("none", "none"),
    ("hs256", "hs256")])
def test_an_hmac_key_with_a_public_key_algorithm_is_refused(
        monkeypatch: pytest.MonkeyPatch, algorithms: str, named: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_ALGORITHMS=algorithms)
    with pytest.raises(ValueError, match=rf"^HEADWATER_AUTH_JWT_ALGORITHMS: {named} cannot "
                                         r"verify with an HMAC key; take from HS256, HS384, "
                                         r"HS512$"):
        authenticator_from_env()


def test_no_algorithm_given_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_ALGORITHMS=" , ,")
    with pytest.raises(ValueError, match=r"^HEADWATER_AUTH_JWT_ALGORITHMS: none given"):
        authenticator_from_env()


@pytest.mark.parametrize("leeway", ["abc", "30s", "1,5"])
def test_a_leeway_not_a_number_is_refused(monkeypatch: pytest.MonkeyPatch, leeway: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_LEEWAY_S=leeway)
    with pytest.raises(ValueError, match=rf"^HEADWATER_AUTH_JWT_LEEWAY_S must be a finite "
                                         rf"number of seconds >= 0, got '{leeway}'"):
        authenticator_from_env()


@pytest.mark.parametrize("leeway", ["nan", "inf", "-1"])
def test_a_leeway_not_finite_or_negative_is_refused(
        monkeypatch: pytest.MonkeyPatch, leeway: str) -> None:
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, AUTH_JWT_LEEWAY_S=leeway)
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_JWT_LEEWAY_S"):
        authenticator_from_env()


# service_auth_from_env, ServiceAuth


def test_off_a_service_needs_no_token_and_sends_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert service_auth_from_env("gateway") == ServiceAuth(None, None)
    env(monkeypatch, TOKEN="anything")
    found = service_auth_from_env("gateway")
    assert found == ServiceAuth(None, "anything") and found.headers == []


def test_on_a_service_without_headwater_token_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env(monkeypatch, AUTH="on",
        AUTH_KEYS_FILE=str(keys_file(tmp_path, new_key("*", "admin"))))
    with pytest.raises(ValueError, match=r"^HEADWATER_AUTH is on: the coordinator needs "
                                         r"HEADWATER_TOKEN, a token for tenant '\*'"):
        service_auth_from_env("coordinator")
    env(monkeypatch, TOKEN="")
    with pytest.raises(ValueError, match=r"needs HEADWATER_TOKEN"):
        service_auth_from_env("coordinator")


def test_on_a_token_that_does_not_authenticate_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    unknown = new_key("*", "admin")[0]
    env(monkeypatch, AUTH="on", TOKEN=unknown,
        AUTH_KEYS_FILE=str(keys_file(tmp_path, new_key("*", "admin"))))
    with pytest.raises(ValueError, match=r"^HEADWATER_TOKEN does not authenticate: unknown or "
                                         r"revoked API key$") as e:
        service_auth_from_env("gateway")
    assert unknown not in str(e.value)


@pytest.mark.parametrize(("tenant", "role", "message"), [
    ("acme", "admin", "tenant 'acme' as admin"), ("acme", "submit", "tenant 'acme' as submit"),
    ("*", "read", "tenant '\\*' as read")])
def test_on_a_token_not_for_every_tenant_and_submit_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tenant: str, role: str,
        message: str) -> None:
    key = new_key(tenant, role)
    env(monkeypatch, AUTH="on", TOKEN=key[0], AUTH_KEYS_FILE=str(keys_file(tmp_path, key)))
    with pytest.raises(ValueError, match=rf"^HEADWATER_TOKEN is for {message}; the gateway "
                                         r"needs tenant '\*' and role submit or admin"):
        service_auth_from_env("gateway")


@pytest.mark.parametrize("role", ["submit", "admin"])
def test_on_a_token_for_every_tenant_that_submits_passes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, role: str) -> None:
    key = new_key("*", role)
    env(monkeypatch, AUTH="on", TOKEN=key[0], AUTH_KEYS_FILE=str(keys_file(tmp_path, key)))
    found = service_auth_from_env("gateway")
    assert found.authenticator is not None and found.token == key[0]
    assert found.headers == [("authorization", f"Bearer {key[0]}".encode())]


def test_on_a_jwt_service_token_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    token = jwt.encode({"tenant": "*", "role": "submit", "exp": int(time.time()) + 60},
                       SECRET, algorithm="HS256")
    env(monkeypatch, AUTH="on", AUTH_JWT_KEY=SECRET, TOKEN=token)
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_JWT_EVERY_TENANT is off"):
        service_auth_from_env("coordinator")
    env(monkeypatch, AUTH_JWT_EVERY_TENANT="on")
    assert service_auth_from_env("coordinator").headers == [
        ("authorization", f"Bearer {token}".encode())]


def test_headers_need_an_authenticator_and_a_token(tmp_path: Path) -> None:
    authenticator = Authenticator(KeysFile(keys_file(tmp_path)), None)
    assert ServiceAuth(authenticator, None).headers == []
    assert ServiceAuth(None, "t").headers == []
    assert ServiceAuth(authenticator, "t").headers == [("authorization", b"Bearer t")]

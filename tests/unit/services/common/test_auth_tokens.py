"""JWTs, the ``Authorization`` header and principals (``services.common.auth.tokens``):
``JwtKey`` (HS256; expiry and ``nbf`` with leeway; a wrong key; ``alg: none``; missing or
bad claims; audience and issuer; RS256 and ES256 with PEM public keys made here),
``Authenticator.header`` (RFC 6750 §2.1: missing, another scheme, any case of
``Bearer``, extra spaces) and ``Principal.may``/``sees``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from services.common.auth.tokens import (
    OPEN,
    ROLES,
    Authenticator,
    AuthError,
    JwtKey,
    KeysFile,
    Principal,
    new_key,
)

SECRET = "s" * 32
HS = JwtKey(SECRET, ("HS256",))
PUBLIC = ("RS256", "ES256")


def claims(**extra: Any) -> dict[str, Any]:
    """Good claims (an hour left), changed by ``extra`` (None: left out)."""
    doc = {"tenant": "acme", "role": "submit", "sub": "ci", "exp": int(time.time()) + 3600,
           **extra}
    return {k: v for k, v in doc.items() if v is not None}


def hs(**extra: Any) -> str:
    return jwt.encode(claims(**extra), SECRET, algorithm="HS256")


def pem(private: Any) -> tuple[Any, str]:
    """``private`` and its public key's PEM text."""
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# JwtKey, HMAC


def test_a_good_hs256_token_is_its_tenant_role_and_subject() -> None:
    assert HS.verify(hs()) == Principal("acme", "submit", "ci")
    every = JwtKey(SECRET, ("HS256",), every_tenant=True)
    assert every.verify(hs(tenant="*", role="admin")).every_tenant


def test_tenant_star_from_a_jwt_needs_the_setting() -> None:
    with pytest.raises(AuthError, match=r"tenant '\*' is not taken from a JWT"):
        HS.verify(hs(tenant="*", role="admin"))


def test_a_token_without_sub_has_the_subject_jwt() -> None:
    assert HS.verify(hs(sub=None)).subject == "jwt"


def test_an_expired_token_is_refused_past_the_leeway() -> None:
    now = int(time.time())
    with pytest.raises(AuthError, match=r"^JWT: Signature has expired"):
        HS.verify(hs(exp=now - 31))
    assert HS.verify(hs(exp=now - 20)).tenant == "acme"  # within 30 s of skew
    strict = JwtKey(SECRET, ("HS256",), leeway_s=0)
    with pytest.raises(AuthError, match=r"expired"):
        strict.verify(hs(exp=now - 2))


def test_a_token_not_valid_yet_is_refused_past_the_leeway() -> None:
    now = int(time.time())
    with pytest.raises(AuthError, match=r"^JWT: The token is not yet valid"):
        HS.verify(hs(nbf=now + 60))
    assert HS.verify(hs(nbf=now + 20)).tenant == "acme"


def test_a_token_signed_with_another_key_is_refused() -> None:
    token = jwt.encode(claims(), "o" * 32, algorithm="HS256")
    with pytest.raises(AuthError, match=r"^JWT: Signature verification failed"):
        HS.verify(token)


def test_a_tampered_payload_is_refused() -> None:
    header, _, signature = hs().split(".")
    payload = b64(json.dumps(claims(tenant="*", role="admin")).encode())
    with pytest.raises(AuthError, match=r"Signature verification failed"):
        HS.verify(f"{header}.{payload}.{signature}")


def test_alg_none_is_refused_even_when_listed() -> None:
    unsigned = jwt.encode(claims(), "", algorithm="none")
    with pytest.raises(AuthError, match=r"^JWT: The specified alg value is not allowed"):
        HS.verify(unsigned)
    with pytest.raises(AuthError, match=r"^JWT:"):
        JwtKey(SECRET, ("none",)).verify(unsigned)
    with pytest.raises(AuthError, match=r"^JWT:"):  # with its signature cut off
        HS.verify(hs().rsplit(".", 1)[0] + ".")


def test_an_algorithm_not_listed_is_refused() -> None:
    long = "l" * 64  # RFC 7518 §3.2: HS512 takes a key of 64 bytes or more
    token = jwt.encode(claims(), long, algorithm="HS512")
    with pytest.raises(AuthError, match=r"alg value is not allowed"):
        JwtKey(long, ("HS256",)).verify(token)
    assert JwtKey(long, ("HS256", "HS512")).verify(token).role == "submit"


@pytest.mark.parametrize("claim", ["exp", "tenant", "role"])
def test_a_missing_required_claim_is_refused(claim: str) -> None:
    with pytest.raises(AuthError, match=rf"^JWT: Token is missing the \"{claim}\" claim"):
        HS.verify(hs(**{claim: None}))


@pytest.mark.parametrize("role", ["owner", "Admin", "READ", "", 1, ["admin"], True])
def test_a_bad_role_claim_is_refused(role: Any) -> None:
    with pytest.raises(AuthError, match=r"^JWT: the role claim is not one of read, submit"):
        HS.verify(hs(role=role))


@pytest.mark.parametrize("tenant", ["", "-acme", "a b", "**", "a" * 101, 7, ["acme"], {}])
def test_a_bad_tenant_claim_is_refused(tenant: Any) -> None:
    with pytest.raises(AuthError, match=r"^JWT: the tenant claim is not a tenant name"):
        HS.verify(hs(tenant=tenant))


@pytest.mark.parametrize("token", ["", "x", "a.b", "a.b.c", "hwk_x.y.z", "...."])
def test_garbage_is_refused(token: str) -> None:
    with pytest.raises(AuthError, match=r"^JWT: "):
        HS.verify(token)


def test_the_audience_is_required_when_set() -> None:
    key = JwtKey(SECRET, ("HS256",), audience="headwater")
    assert key.verify(hs(aud="headwater")).tenant == "acme"
    assert key.verify(hs(aud=["other", "headwater"])).tenant == "acme"
    with pytest.raises(AuthError, match=r"Audience doesn't match|Invalid audience"):
        key.verify(hs(aud="other"))
    with pytest.raises(AuthError, match='missing the "aud" claim'):
        key.verify(hs())


def test_a_token_with_an_audience_is_refused_when_none_is_set() -> None:
    with pytest.raises(AuthError, match=r"Invalid audience"):
        HS.verify(hs(aud="headwater"))


def test_the_issuer_is_required_when_set() -> None:
    key = JwtKey(SECRET, ("HS256",), issuer="https://idp.example")
    assert key.verify(hs(iss="https://idp.example")).tenant == "acme"
    with pytest.raises(AuthError, match=r"Invalid issuer"):
        key.verify(hs(iss="https://evil.example"))
    with pytest.raises(AuthError, match='missing the "iss" claim'):
        key.verify(hs())
    assert HS.verify(hs(iss="anyone")).tenant == "acme"  # not asked for: not checked


# JwtKey, public keys


@pytest.mark.parametrize(("alg", "make"), [
    ("RS256", lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    ("ES256", lambda: ec.generate_private_key(ec.SECP256R1()))])
def test_a_public_key_verifies_its_private_key_s_tokens(alg: str, make: Any) -> None:
    private, public = pem(make())
    key = JwtKey(public, PUBLIC)
    assert key.verify(jwt.encode(claims(role="read"), private, algorithm=alg)) == Principal(
        "acme", "read", "ci")
    other, _ = pem(make())
    with pytest.raises(AuthError, match=r"^JWT: Signature verification failed"):
        key.verify(jwt.encode(claims(), other, algorithm=alg))


def test_a_token_of_another_key_type_is_refused() -> None:
    private, _ = pem(ec.generate_private_key(ec.SECP256R1()))
    _, rsa_public = pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    with pytest.raises(AuthError, match=r"^JWT: "):
        JwtKey(rsa_public, PUBLIC).verify(jwt.encode(claims(), private, algorithm="ES256"))


def test_an_hmac_token_keyed_with_the_public_key_is_refused() -> None:
    """The algorithm confusion attack: HS256 signed with the public key's PEM text."""
    _, public = pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims(tenant="*", role="admin")).encode())
    mac = hmac.new(public.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    with pytest.raises(AuthError, match=r"alg value is not allowed"):
        JwtKey(public, PUBLIC).verify(f"{head}.{body}.{b64(mac)}")


# Authenticator


@pytest.fixture
def both(tmp_path: Path) -> tuple[Authenticator, str]:
    """An authenticator of a keys file (one key of acme, read) and ``HS``."""
    token, line = new_key("acme", "read")
    path = tmp_path / "keys"
    path.write_text(line + "\n")
    return Authenticator(KeysFile(path), HS), token


def test_neither_keys_nor_a_jwt_key_is_refused() -> None:
    with pytest.raises(ValueError, match=r"HEADWATER_AUTH_KEYS_FILE nor HEADWATER_AUTH_JWT_KEY"):
        Authenticator(None, None)


@pytest.mark.parametrize("value", [
    "Bearer {t}", "bearer {t}", "BEARER {t}", "bEaReR {t}", "Bearer   {t}", "  Bearer {t}  ",
    "Bearer {t}\t"])
def test_a_bearer_header_in_any_case_and_spacing_passes(
        both: tuple[Authenticator, str], value: str) -> None:
    authenticator, key = both
    assert authenticator.header(value.format(t=key)).tenant == "acme"
    assert authenticator.header(value.format(t=hs())).role == "submit"


@pytest.mark.parametrize("value", [None, ""])
def test_no_header_is_refused(both: tuple[Authenticator, str], value: str | None) -> None:
    with pytest.raises(AuthError, match=r"^no Authorization header: send 'Authorization: "
                                        r"Bearer <token>'"):
        both[0].header(value)


@pytest.mark.parametrize("value", [
    "Basic {t}", "Token {t}", "Bearer", "Bearer ", "Bearer    ", "{t}", "Bearer\t{t}",
    "Bearer:{t}", "Bearers {t}", " "])
def test_another_scheme_or_no_token_is_refused(
        both: tuple[Authenticator, str], value: str) -> None:
    authenticator, key = both
    with pytest.raises(AuthError, match=r"is not 'Bearer <token>'") as e:
        authenticator.header(value.format(t=key))
    assert key not in str(e.value)


def test_a_bad_token_in_a_good_header_is_refused(both: tuple[Authenticator, str]) -> None:
    authenticator, key = both
    with pytest.raises(AuthError, match=r"unknown or revoked API key") as e:
        authenticator.header(f"Bearer {key[:-1]}{'A' if key[-1] != 'A' else 'B'}")
    assert key[17:] not in str(e.value)
    with pytest.raises(AuthError, match=r"^JWT: Signature verification failed"):
        authenticator.header("Bearer " + jwt.encode(claims(), "o" * 32, algorithm="HS256"))


def test_each_kind_of_token_needs_its_kind_configured(tmp_path: Path) -> None:
    token, line = new_key("acme", "read")
    path = tmp_path / "keys"
    path.write_text(line + "\n")
    with pytest.raises(AuthError, match=r"API keys are not configured"):
        Authenticator(None, HS).token(token)
    with pytest.raises(AuthError, match=r"JWTs are not configured"):
        Authenticator(KeysFile(path), None).token(hs())
    assert Authenticator(KeysFile(path), None).token(token).tenant == "acme"


# Principal


@pytest.mark.parametrize("have", ROLES)
@pytest.mark.parametrize("need", ROLES)
def test_a_role_allows_itself_and_the_roles_below(have: str, need: str) -> None:
    assert Principal("acme", have, "k").may(need) is (ROLES.index(have) >= ROLES.index(need))


def test_the_role_order_is_read_submit_admin() -> None:
    assert ROLES == ("read", "submit", "admin")
    admin = Principal("acme", "admin", "k")
    assert all(admin.may(r) for r in ROLES)
    read = Principal("acme", "read", "k")
    assert not read.may("submit") and not read.may("admin")


@pytest.mark.parametrize(("tenant", "sees"), [
    ("acme", True), ("beta", False), (None, False), ("*", False), ("ACME", False)])
def test_a_tenant_sees_only_its_own(tenant: str | None, sees: bool) -> None:
    assert Principal("acme", "admin", "k").sees(tenant) is sees
    assert not Principal("acme", "admin", "k").every_tenant


@pytest.mark.parametrize("tenant", ["acme", "beta", None, "*"])
def test_every_tenant_sees_everything(tenant: str | None) -> None:
    assert Principal("*", "read", "k").sees(tenant)
    assert OPEN.sees(tenant) and OPEN.every_tenant and OPEN.may("admin")

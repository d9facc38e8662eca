"""The auth settings (``HEADWATER_AUTH*`` and ``HEADWATER_TOKEN``), read once at start.

``HEADWATER_AUTH`` is ``off`` by default (the local stack: no tokens, ``tenant`` a free
label) and ``on`` in the Kubernetes manifests. On, the gateway takes only requests with
a valid bearer token, and the coordinator only submissions on Kafka whose
``authorization`` header holds one; the gateway and the coordinator then need a token
of their own for every tenant (``HEADWATER_TOKEN``), which they put on the submissions
they produce.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from pathlib import Path

from services.common.auth.tokens import EVERY_TENANT, Authenticator, AuthError, JwtKey, KeysFile
from services.common.settings import OFF, ON, env_str

_HMAC = ("HS256", "HS384", "HS512")
_PUBLIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
           "EdDSA")


_HMAC_MIN_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
"""The shortest key of each HMAC algorithm: its hash's size (RFC 7518 §3.2)."""


def _long_enough(key: str, algorithms: tuple[str, ...], chosen: bool) -> tuple[str, ...]:
    """The HMAC ``algorithms`` ``key`` is long enough for (RFC 7518 §3.2).

    Raises:
        ValueError: none, or (``chosen``: given by ``HEADWATER_AUTH_JWT_ALGORITHMS``)
            one it is too short for.
    """
    size = len(key.encode())
    short = [a for a in algorithms if size < _HMAC_MIN_BYTES[a]]
    if short and (chosen or len(short) == len(algorithms)):
        raise ValueError(f"HEADWATER_AUTH_JWT_KEY: {size} bytes, too short for "
                         f"{', '.join(short)} (RFC 7518 §3.2: HS256 takes 32 bytes or more, "
                         "HS384 48, HS512 64)")
    return tuple(a for a in algorithms if a not in short)


def auth_on() -> bool:
    """``HEADWATER_AUTH``: ``on`` or ``off`` (default).

    Raises:
        ValueError: another value (the message names the variable).
    """
    return _on_off("AUTH")


def _key_text() -> str | None:
    """The JWT key's text: ``HEADWATER_AUTH_JWT_KEY``, or the PEM in
    ``HEADWATER_AUTH_JWT_KEY_FILE`` (None: neither)."""
    key = env_str("AUTH_JWT_KEY", "") or None
    path = env_str("AUTH_JWT_KEY_FILE", "") or None
    if key and path:
        raise ValueError("set HEADWATER_AUTH_JWT_KEY or HEADWATER_AUTH_JWT_KEY_FILE, not both")
    if path is None:
        return key
    try:
        key = Path(path).read_text().strip()
    except OSError as e:
        raise ValueError(f"HEADWATER_AUTH_JWT_KEY_FILE {path}: {e.strerror}") from None
    if not key.startswith("-----BEGIN"):
        raise ValueError(f"HEADWATER_AUTH_JWT_KEY_FILE {path}: not a PEM public key "
                         "('-----BEGIN PUBLIC KEY-----'); an HMAC secret goes in "
                         "HEADWATER_AUTH_JWT_KEY")
    return key


def _algorithms(key: str, public: bool) -> tuple[str, ...]:
    """``HEADWATER_AUTH_JWT_ALGORITHMS``, checked against the key (default: every one
    the key can verify)."""
    given = env_str("AUTH_JWT_ALGORITHMS", "") or None
    allowed = _PUBLIC if public else _HMAC  # never an HMAC "secret" that is a public key
    algorithms = tuple(a.strip() for a in given.split(",") if a.strip()) if given else allowed
    wrong = [a for a in algorithms if a not in allowed]
    if wrong or not algorithms:
        raise ValueError(f"HEADWATER_AUTH_JWT_ALGORITHMS: {', '.join(wrong) or 'none given'} "
                         f"cannot verify with {'a public' if public else 'an HMAC'} key; "
                         f"take from {', '.join(allowed)}")
    return algorithms if public else _long_enough(key, algorithms, given is not None)


def _leeway_s() -> float:
    """``HEADWATER_AUTH_JWT_LEEWAY_S``: finite and >= 0 (nan or inf would take any exp)."""
    leeway = env_str("AUTH_JWT_LEEWAY_S", "") or "30"
    try:
        leeway_s = float(leeway)
    except ValueError:
        leeway_s = math.nan
    if not math.isfinite(leeway_s) or leeway_s < 0:
        raise ValueError("HEADWATER_AUTH_JWT_LEEWAY_S must be a finite number of seconds "
                         f">= 0, got {leeway!r}")
    return leeway_s


def _on_off(name: str) -> bool:
    """``HEADWATER_<name>``: ``on`` or ``off`` (default)."""
    raw = (env_str(name, "") or "off").lower()
    if raw not in ON + OFF:
        raise ValueError(f"HEADWATER_{name} must be on or off, got {raw!r}")
    return raw in ON


def _jwt_key() -> JwtKey | None:
    """The JWT key of ``HEADWATER_AUTH_JWT_KEY`` or ``HEADWATER_AUTH_JWT_KEY_FILE``, and
    the ``HEADWATER_AUTH_JWT_*`` settings that go with it."""
    key = _key_text()
    if not key:
        return None
    public = key.startswith("-----BEGIN")
    check_key(key, public)
    return JwtKey(key, _algorithms(key, public), env_str("AUTH_JWT_AUDIENCE", "") or None,
                  env_str("AUTH_JWT_ISSUER", "") or None, _leeway_s(),
                  _on_off("AUTH_JWT_EVERY_TENANT"))


def check_key(key: str, public: bool) -> None:
    """Refuse a JWT key that is not what it claims: a PEM that is no public key (a
    certificate, a private key, a broken body), or an HMAC secret that is a public key
    without its PEM lines (whoever has the public key could sign with it).

    Raises:
        ValueError: naming ``HEADWATER_AUTH_JWT_KEY``.
    """
    from cryptography.hazmat.primitives import serialization

    if public:
        try:
            serialization.load_pem_public_key(key.encode())
        except (ValueError, TypeError) as e:
            raise ValueError("HEADWATER_AUTH_JWT_KEY: not a PEM public key (BEGIN PUBLIC "
                             f"KEY; a certificate or a private key is not taken): {e}") from None
        return
    try:
        serialization.load_der_public_key(base64.b64decode(key, validate=True))
    except (ValueError, TypeError, binascii.Error):
        return  # not a public key: a secret
    raise ValueError("HEADWATER_AUTH_JWT_KEY is a public key without its PEM lines: give it "
                     "as PEM (-----BEGIN PUBLIC KEY-----), never as an HMAC secret")


def authenticator_from_env() -> Authenticator | None:
    """The authenticator, or None when ``HEADWATER_AUTH`` is off.

    Variables: ``HEADWATER_AUTH_KEYS_FILE`` (API keys, ``services.common.auth.tokens``);
    ``HEADWATER_AUTH_JWT_KEY`` or ``_FILE`` (an HMAC secret of 32 bytes or more, or a
    PEM public key), ``HEADWATER_AUTH_JWT_ALGORITHMS`` (comma-separated; default every
    HMAC or every public-key algorithm, as the key is), ``HEADWATER_AUTH_JWT_AUDIENCE``,
    ``HEADWATER_AUTH_JWT_ISSUER``, ``HEADWATER_AUTH_JWT_LEEWAY_S`` (30).

    Raises:
        ValueError: a bad value, an unreadable or malformed keys file, or auth on with
            neither keys nor a JWT key (the message names the variable).
    """
    if not auth_on():
        return None
    keys = None
    path = env_str("AUTH_KEYS_FILE", "") or None
    if path:
        try:
            keys = KeysFile(Path(path))
        except OSError as e:
            raise ValueError(f"HEADWATER_AUTH_KEYS_FILE {path}: {e.strerror}") from None
    return Authenticator(keys, _jwt_key())


@dataclass(frozen=True)
class ServiceAuth:
    """A service's side of auth: how it checks tokens, and the token it sends.

    Attributes:
        authenticator: None when auth is off.
        token: ``HEADWATER_TOKEN`` (None: unset), checked at start when auth is on.
    """

    authenticator: Authenticator | None
    token: str | None

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        """The ``authorization`` Kafka header of the service's token (none when off)."""
        if self.authenticator is None or self.token is None:
            return []
        return [("authorization", f"Bearer {self.token}".encode())]


def service_auth_from_env(service: str) -> ServiceAuth:
    """The auth of a service that produces submissions (gateway, coordinator).

    Raises:
        ValueError: the settings are bad, or auth is on and ``HEADWATER_TOKEN`` is not a
            valid token for every tenant (``*``) with the ``submit`` role or above.
    """
    authenticator = authenticator_from_env()
    token = env_str("TOKEN", "") or None
    if authenticator is None:
        return ServiceAuth(None, token)
    if token is None:
        raise ValueError(f"HEADWATER_AUTH is on: the {service} needs HEADWATER_TOKEN, a token "
                         f"for tenant '{EVERY_TENANT}' (headwater keys create --tenant '*')")
    try:
        me = authenticator.token(token)
    except AuthError as e:
        raise ValueError(f"HEADWATER_TOKEN does not authenticate: {e}") from None
    if not me.every_tenant or not me.may("submit"):
        raise ValueError(f"HEADWATER_TOKEN is for tenant {me.tenant!r} as {me.role}; the "
                         f"{service} needs tenant '{EVERY_TENANT}' and role submit or admin")
    return ServiceAuth(authenticator, token)

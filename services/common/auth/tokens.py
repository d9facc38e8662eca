"""Bearer tokens: who calls, for which tenant, in which role.

A token is an API key (``hwk_<key id>_<secret>``, stored hashed in a keys file) or a
JWT verified against a configured key (RFC 7519; PyJWT). Either way it is bound to one
tenant and one role:

- ``read``: reads the tenant's runs, definitions, schedules and queues;
- ``submit``: also submits, cancels and signals them;
- ``admin``: also writes the tenant's definitions and schedules.

The tenant ``*`` is every tenant: an operator's token, and the one the services put on
the records they produce (``HEADWATER_TOKEN``). A token of one tenant sees nothing of
another's; what it asks of another tenant's id is answered as for an id that does not
exist (``services.gateway.auth.scope``).

The keys file has one key per line, ``<key id> sha256:<hex digest of the whole
token> <tenant> <role>``; blank lines and ``#`` comments are skipped. It is read again
when it changes (at most once a second), so a key is revoked by deleting its line.
API keys are 32 random bytes, so one SHA-256 is the right hash (a slow password hash
adds nothing to a secret that cannot be guessed), compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

ROLES = ("read", "submit", "admin")
"""The roles, each allowing what the one before it does and more."""
EVERY_TENANT = "*"
"""The tenant of a token that acts for every tenant (an operator's, the services')."""
KEY_PREFIX = "hwk_"
_KEY = re.compile(r"hwk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
_LINE = re.compile(r"([0-9a-f]{12})\s+sha256:([0-9a-f]{64})\s+(\S+)\s+(read|submit|admin)")
_TENANT = re.compile(r"\*|[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")
log = logging.getLogger("headwater.auth")
RELOAD_S = 1.0
"""How often the keys file is checked for changes at most, seconds."""
MISS_RELOAD_S = 0.05
"""How soon after the last read a token the keys do not hold reads the file again,
seconds: a key added (or a file being rewritten) is seen at once, and bad tokens cannot
make every request read it."""


_DERIVED = re.compile(r".*:.*|call-[0-9a-f]{40}")


def derived_id(workflow_id: str) -> bool:
    """Whether ``workflow_id`` has a form Headwater derives (``ids.child_id``
    ``<parent>:<node>:<attempt>``, a schedule's ``schedule:<name>:<n>`` and its fires,
    ``headwater.client.calls.child_id``): a tenant taking one could hold another tenant's child
    or schedule run hostage (its parent would meet a conflict)."""
    return _DERIVED.fullmatch(workflow_id) is not None


class AuthError(Exception):
    """A token that does not authenticate; the message says why (never the token)."""


@dataclass(frozen=True)
class Principal:
    """Who a request or a record comes from.

    Attributes:
        tenant: the tenant it acts for; ``EVERY_TENANT`` for all of them.
        role: one of ``ROLES``.
        subject: the key id, or the JWT's ``sub`` (for logs).
    """

    tenant: str
    role: str
    subject: str

    @property
    def every_tenant(self) -> bool:
        """Whether it acts for every tenant."""
        return self.tenant == EVERY_TENANT

    def may(self, role: str) -> bool:
        """Whether its role allows what ``role`` allows."""
        return ROLES.index(self.role) >= ROLES.index(role)

    def sees(self, tenant: str | None) -> bool:
        """Whether a run (or definition) of ``tenant`` is its to see."""
        return self.every_tenant or tenant == self.tenant


OPEN = Principal(EVERY_TENANT, "admin", "anonymous")
"""The principal of every request when auth is off: everything, as before tenants."""


def check_tenant(tenant: str) -> str:
    """``tenant`` when it is ``*`` or a name like a definition's; raises ValueError."""
    if not _TENANT.fullmatch(tenant):
        raise ValueError(f"tenant {tenant[:40]!r}: '*' or 1-100 characters A-Z a-z 0-9 _ . -,"
                         " starting with a letter or digit")
    return tenant


def new_key(tenant: str, role: str) -> tuple[str, str]:
    """A new API key for ``tenant`` and ``role``.

    Returns:
        ``(token, line)``: the token to give its user (shown once), and the keys file's
        line that admits it.

    Raises:
        ValueError: a bad tenant or role.
    """
    if role not in ROLES:
        raise ValueError(f"role {role!r}: one of {', '.join(ROLES)}")
    check_tenant(tenant)
    key_id = secrets.token_hex(6)
    token = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    return token, f"{key_id} sha256:{_digest(token)} {tenant} {role}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class _Entry:
    digest: str
    tenant: str
    role: str


def parse_keys(text: str, source: str = "keys file") -> dict[str, _Entry]:
    """The keys of a keys file's text, by key id.

    Raises:
        ValueError: a line that is not a key (its number named), or a key id twice.
    """
    keys: dict[str, _Entry] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.fullmatch(line)
        if m is None or not _TENANT.fullmatch(m[3]):
            raise ValueError(f"{source} line {number}: not '<key id> sha256:<64 hex> "
                             "<tenant> <read|submit|admin>'")
        if m[1] in keys:
            raise ValueError(f"{source} line {number}: key id {m[1]} given twice")
        keys[m[1]] = _Entry(m[2], m[3], m[4])
    return keys


class KeysFile:
    """The API keys of a keys file, read again when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: bytes | None = None
        self._checked = -RELOAD_S
        self._keys: dict[str, _Entry] = {}
        self._fault = ""
        self._reload()

    def _reload(self) -> None:
        """Read the file when it changed.

        Raises:
            OSError: unreadable.
            ValueError: malformed, or without a key when it had some (a file being
                rewritten in place: truncated, not yet written).
        """
        self._checked = time.monotonic()
        data = self.path.read_bytes()  # small, read at most once a RELOAD_S
        stamp = hashlib.sha256(data).digest()  # a same-size rewrite is seen too
        if stamp != self._stamp:
            keys = parse_keys(data.decode(), str(self.path))
            if not keys and self._keys:
                raise ValueError(f"{self.path} holds no key (being written?)")
            self._keys, self._stamp = keys, stamp

    def _refresh(self, after_s: float) -> None:
        """Read the file again if it was read ``after_s`` seconds ago or more. A file
        gone bad keeps the keys read last, and says so once."""
        if time.monotonic() - self._checked < after_s:
            return
        try:
            self._reload()
        except (OSError, ValueError) as e:
            if str(e) != self._fault:
                log.warning("keys file %s not read, the keys read before stay: %s",
                            self.path, e)
            self._fault = str(e)
        else:
            self._fault = ""

    def verify(self, token: str) -> Principal:
        """The principal of an API key.

        Raises:
            AuthError: malformed, unknown or revoked.
        """
        m = _KEY.fullmatch(token)
        if m is None:
            raise AuthError("not a Headwater API key")
        self._refresh(RELOAD_S)
        entry = self._match(m[1], token)
        if entry is None:  # a key just added, or a file caught mid-write: read it now
            self._refresh(MISS_RELOAD_S)
            entry = self._match(m[1], token)
        if entry is None:
            raise AuthError("unknown or revoked API key")
        return Principal(entry.tenant, entry.role, m[1])

    def _match(self, key_id: str, token: str) -> _Entry | None:
        entry = self._keys.get(key_id)
        if entry is None or not hmac.compare_digest(entry.digest, _digest(token)):
            return None
        return entry


@dataclass(frozen=True)
class JwtKey:
    """How JWTs are verified.

    Attributes:
        key: the HMAC secret, or a PEM public key (RSA or EC).
        algorithms: the ``alg`` values taken (never ``none``).
        audience: the ``aud`` required, or None.
        issuer: the ``iss`` required, or None.
        leeway_s: clock skew allowed on ``exp`` and ``nbf``, seconds.
        every_tenant: whether a JWT may claim tenant ``*`` (off: an identity provider's
            tokens act for one tenant each; the services use API keys).
    """

    key: str
    algorithms: tuple[str, ...]
    audience: str | None = None
    issuer: str | None = None
    leeway_s: float = 30.0
    every_tenant: bool = False

    def verify(self, token: str) -> Principal:
        """The principal of a JWT: its ``tenant`` and ``role`` claims (``exp`` required).

        Raises:
            AuthError: a bad signature, expired, or a missing or bad claim.
        """
        try:
            claims: dict[str, Any] = jwt.decode(
                token, self.key, algorithms=list(self.algorithms), audience=self.audience,
                issuer=self.issuer, leeway=self.leeway_s,
                options={"require": ["exp", "tenant", "role"]})
        except jwt.PyJWTError as e:
            raise AuthError(f"JWT: {e}") from None
        tenant, role = claims["tenant"], claims["role"]
        if not isinstance(tenant, str) or not _TENANT.fullmatch(tenant):
            raise AuthError("JWT: the tenant claim is not a tenant name or '*'")
        if tenant == EVERY_TENANT and not self.every_tenant:
            raise AuthError("JWT: tenant '*' is not taken from a JWT "
                            "(HEADWATER_AUTH_JWT_EVERY_TENANT is off)")
        if role not in ROLES:
            raise AuthError(f"JWT: the role claim is not one of {', '.join(ROLES)}")
        return Principal(tenant, role, str(claims.get("sub", "jwt")))


class Authenticator:
    """Verifies bearer tokens against the configured API keys and JWT key."""

    def __init__(self, keys: KeysFile | None, jwt_key: JwtKey | None) -> None:
        if keys is None and jwt_key is None:
            raise ValueError("HEADWATER_AUTH is on but neither HEADWATER_AUTH_KEYS_FILE nor "
                             "HEADWATER_AUTH_JWT_KEY(_FILE) is set: no token could pass")
        self.keys = keys
        self.jwt_key = jwt_key

    def token(self, token: str) -> Principal:
        """The principal of a token (an API key, or else a JWT).

        Raises:
            AuthError: it is neither a valid key nor a valid JWT.
        """
        if token.startswith(KEY_PREFIX):
            if self.keys is None:
                raise AuthError("API keys are not configured (HEADWATER_AUTH_KEYS_FILE)")
            return self.keys.verify(token)
        if self.jwt_key is None:
            raise AuthError("not an API key, and JWTs are not configured "
                            "(HEADWATER_AUTH_JWT_KEY)")
        return self.jwt_key.verify(token)

    def header(self, value: str | None) -> Principal:
        """The principal of an ``Authorization`` value, ``Bearer <token>`` (RFC 6750
        §2.1; the scheme is case-insensitive, RFC 9110 §11.1).

        Raises:
            AuthError: no header, another scheme, or a bad token.
        """
        if not value:
            raise AuthError("no Authorization header: send 'Authorization: Bearer <token>'")
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("the Authorization header is not 'Bearer <token>'")
        return self.token(token.strip())


def bearer(token: str) -> str:
    """The ``Authorization`` value of ``token``."""
    return f"Bearer {token}"


def env_token() -> str | None:
    """``HEADWATER_TOKEN``: the token a service puts on what it produces and a client
    sends (None: unset or empty)."""
    return os.environ.get("HEADWATER_TOKEN") or None

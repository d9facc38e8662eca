"""The definitions registry's rules: what a definition's name and a reference to one
look like, the digest of a registered body, and which version a ``PUT`` makes.

A definition is a workflow spec (and, optionally, a JSON Schema of its input) stored
under a name. Each ``PUT`` of a body that differs from the current version makes the
next version (1, 2, 3, ...); the same body again is the same version. ``DELETE`` marks
the name deleted (no new runs; the versions stay readable); a ``PUT`` after it makes a
new version and the name live again. A rollback (``decide_rollback``) makes an earlier
version current: new runs of the name use it, runs already started keep the version they
recorded; the next ``PUT`` of another body makes a new version (numbered after the
highest) current again.

Names are one namespace for every tenant. A definition belongs to the tenant that
registered its name (``owner``), or to none: shared, registered by a principal of every
tenant (an operator's token, or any request while auth is off). A tenant sees its own
definitions and the shared ones; it writes only its own (``write_refusal``). The
records (``DefinitionStored``, keyed
``name@version``; ``DefinitionHead``, keyed ``name``) go to the compacted
``definitions`` topic, the registry's source of truth; the gateway's PostgreSQL tables
are a projection of it (``services/gateway/definitions/registry.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$"
"""A definition's name: 1-100 characters, letters, digits and ``_.-``, starting with a
letter or digit (safe in a URL path and a Kafka key; never ``.`` or ``..``)."""
MAX_VERSION = 2**31 - 1
"""The highest version (an Avro ``int``, as ``kinds.workflow.records.MAX_VERSION``)."""
_NAME = re.compile(NAME_PATTERN)
_VERSION = re.compile(r"[1-9][0-9]{0,9}")


class DefinitionRefError(ValueError):
    """Raised by ``parse_ref`` and ``check_name`` for a malformed name or reference; the
    message says what a good one looks like."""


@dataclass(frozen=True)
class Ref:
    """A reference to a definition: its name and a version, or None for the latest."""

    name: str
    version: int | None = None

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


def check_name(name: str) -> str:
    """``name`` if it is a valid definition name.

    Raises:
        DefinitionRefError: it is not (the message quotes ``NAME_PATTERN``'s rule).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DefinitionRefError(
            f"definition name {name!r} is invalid: 1-100 letters, digits and _.- "
            "starting with a letter or digit")
    return name


def parse_ref(ref: str) -> Ref:
    """Parse ``"name"`` (the latest version) or ``"name@3"`` (version 3).

    Args:
        ref: the reference, as a submission or a ``kind: workflow`` node gives it.

    Returns:
        The name and the version (None: the latest).

    Raises:
        DefinitionRefError: a bad name, or a version that is not an integer from 1 to
            ``MAX_VERSION``.
    """
    if not isinstance(ref, str):
        raise DefinitionRefError(f"a definition reference is a string, not {type(ref).__name__}")
    name, at, version = ref.partition("@")
    check_name(name)
    if not at:
        return Ref(name)
    if not _VERSION.fullmatch(version) or int(version) > MAX_VERSION:
        raise DefinitionRefError(
            f"definition reference {ref!r}: the version after @ must be an integer from 1 "
            f"to {MAX_VERSION} (such as \"{name}@3\")")
    return Ref(name, int(version))


def digest(workflow: Any, input_schema: Any) -> str:
    """SHA-256 (hex) of the canonical JSON (keys sorted, orjson) of a definition's body:
    two bodies with the same spec and input schema have the same digest, whatever the
    order of their keys.

    Raises:
        TypeError: a value that is not JSON (orjson's ``JSONEncodeError``).
    """
    doc = {"workflow": workflow, "input_schema": input_schema}
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class Head:
    """A name's current version and whether the name is deleted.

    Attributes:
        version: the current version (the latest, unless a rollback made an earlier one
            current).
        deleted: the name is deleted.
        revision: how many times the head changed before (``head_supersedes``).
    """

    version: int
    deleted: bool = False
    revision: int = 0


@dataclass(frozen=True)
class PutDecision:
    """What a ``PUT`` does: ``created`` a new ``version`` (201), or it is the current
    version already (200, nothing written)."""

    version: int
    created: bool


def decide_put(head: Head | None, versions: Mapping[int, str], body_digest: str) -> PutDecision:
    """The version a ``PUT`` of a body with digest ``body_digest`` makes.

    The same body as the current version of a live name is that version (idempotent);
    any other body, a body equal to an older version (applying it again makes it the
    latest), and any body after a ``DELETE`` make the next version.

    Args:
        head: the name's head (None: a name never registered).
        versions: every version of the name known -> its digest.
        body_digest: ``digest`` of the body.

    Returns:
        The decision.

    Raises:
        ValueError: the name already has ``MAX_VERSION`` versions.
    """
    if head is not None and not head.deleted and versions.get(head.version) == body_digest:
        return PutDecision(head.version, created=False)
    latest = max([*versions, head.version if head else 0, 0])
    if latest >= MAX_VERSION:
        raise ValueError(f"the definition already has {MAX_VERSION} versions")
    return PutDecision(latest + 1, created=True)


def head_supersedes(new: Head, old: Head | None) -> bool:
    """Whether head ``new`` replaces ``old`` (applying heads in any order, or twice,
    ends at the same head).

    Every change of a head counts one more ``revision`` than the head it replaces, so
    heads are ordered by it first: a rollback's head (an earlier version) replaces the
    one before it. Heads written before revisions (all 0) are ordered as they were:
    versions only grew, and a version was deleted at most once and never undeleted, so
    by ``(version, deleted)``.
    """
    return old is None or ((new.revision, new.version, new.deleted)
                           > (old.revision, old.version, old.deleted))


def next_revision(head: Head | None) -> int:
    """The ``revision`` of the head that replaces ``head`` (None: the name's first)."""
    return 0 if head is None else head.revision + 1


class RollbackRefused(ValueError):
    """Raised by ``decide_rollback`` when no version can be made current: the name is
    deleted, it has no version before the current one, or the version asked for does
    not exist. ``missing`` is True for a version that does not exist (404), False
    otherwise (409)."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class RollbackDecision:
    """What a rollback does: make ``version`` current (``changed``), or nothing, it is
    current already; ``previous`` is the version that was current."""

    version: int
    previous: int
    changed: bool


def decide_rollback(head: Head | None, versions: Mapping[int, str],
                    to: int | None = None) -> RollbackDecision:
    """The version a rollback makes current.

    Args:
        head: the name's head (None: a name never registered).
        versions: every version of the name known -> its digest.
        to: the version to make current; None: the highest version below the current
            one.

    Returns:
        The decision (``changed`` False when ``to`` is current already).

    Raises:
        RollbackRefused: no such name or version (``missing``), a deleted name, or no
            version before the current one.
    """
    if head is None:
        raise RollbackRefused("no such definition", missing=True)
    if head.deleted:
        raise RollbackRefused(f"the definition is deleted (its last version is "
                              f"{head.version}); register a version with PUT first")
    if to is None:
        earlier = [v for v in versions if v < head.version]
        if not earlier:
            raise RollbackRefused(f"version {head.version} is the first: there is no "
                                  "earlier version to roll back to")
        to = max(earlier)
    elif to not in versions:
        raise RollbackRefused(f"the definition has no version {to} (its versions are "
                              f"1 to {max(versions, default=0)})", missing=True)
    return RollbackDecision(to, head.version, changed=to != head.version)


FOREIGN = "foreign"
"""``write_refusal``: the name is another tenant's (a ``PUT`` is 409, the name taken;
anything else answers as for a name that does not exist)."""
SHARED = "shared"
"""``write_refusal``: the name is shared, written only by a principal of every tenant."""


def visible(owner: str | None, tenant: str | None) -> bool:
    """Whether a definition of ``owner`` (None: shared) is visible to ``tenant``.

    Args:
        owner: the definition's tenant, or None (shared).
        tenant: the reader's tenant, or None for a principal of every tenant.
    """
    return tenant is None or owner is None or owner == tenant


def write_refusal(exists: bool, owner: str | None, tenant: str | None) -> str | None:
    """Why ``tenant`` may not write (``PUT`` or ``DELETE``) a name, or None: it may.

    Args:
        exists: whether the name was ever registered (deleted names too: a name stays
            its tenant's, so that its versions keep meaning what they meant).
        owner: the name's tenant, or None (shared); ignored when not ``exists``.
        tenant: the writer's tenant, or None for a principal of every tenant (who
            writes every definition).

    Returns:
        None, ``FOREIGN`` (another tenant's) or ``SHARED`` (shared, and ``tenant`` is
        one tenant).
    """
    if tenant is None or not exists or owner == tenant:
        return None
    return SHARED if owner is None else FOREIGN


def new_owner(exists: bool, owner: str | None, tenant: str | None) -> str | None:
    """The tenant of a version written by ``tenant`` (None: every tenant): the name's
    when it exists (a principal of every tenant writing a tenant's definition leaves it
    that tenant's), else the writer's (None: shared)."""
    return owner if exists else tenant


def stored_key(name: str, version: int) -> str:
    """The Kafka key of a ``DefinitionStored``: ``name@version``."""
    return f"{name}@{version}"


@dataclass(frozen=True)
class DefinitionStored:
    """A definition's version, on the ``definitions`` topic (key ``name@version``).

    Attributes:
        name: the definition's name.
        version: its version, from 1.
        spec: the workflow spec, a JSON document.
        input_schema: the JSON Schema its input must match, or None.
        digest: ``digest(spec, input_schema)``.
        at_ms: when the version was registered, ms since the Unix epoch.
        tenant: the tenant the definition belongs to; None: shared by every tenant
            (``owner``).
    """

    name: str
    version: int
    spec: Any
    input_schema: Any
    digest: str
    at_ms: int
    tenant: str | None = None


@dataclass(frozen=True)
class DefinitionHead:
    """A name's current version, on the ``definitions`` topic (key ``name``).

    Attributes:
        name: the definition's name.
        version: the current version (the latest, unless rolled back).
        deleted: True once the name is deleted (no new runs).
        at_ms: when the head changed, ms since the Unix epoch.
        tenant: the tenant the definition belongs to; None: shared (``owner``).
        revision: how many times the head changed before (``head_supersedes``).
    """

    name: str
    version: int
    deleted: bool
    at_ms: int
    tenant: str | None = None
    revision: int = 0

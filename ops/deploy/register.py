"""The definitions a deploy registers through the gateway (``PUT
/v1/definitions/{name}``, ``Client.definitions``): each ``@workflow`` of the module, as
its workers will announce it (the same body, so the gateway's registration from their
announcements makes no other version), and each spec definition it exposes.

``intent`` says, without writing, what registering a body would do, from the gateway's
current version of the name: nothing (the same body is current), or a new version
numbered after the highest. ``register`` writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater import errors
from headwater.core.definitions import digest
from ops.deploy.discover import Definition

if TYPE_CHECKING:
    from headwater.client import Client


@dataclass(frozen=True)
class Intent:
    """What registering one definition does (or did).

    Attributes:
        name: the definition's name.
        digest: its body's digest.
        version: the version it is (or would be); None: not known (the gateway was
            not asked, or did not answer).
        created: a new version (False: the same body is current already).
        code_version: a ``@workflow``'s code version, or None.
    """

    name: str
    digest: str
    version: int | None
    created: bool
    code_version: str | None = None

    def describe(self) -> str:
        """One line: ``name: new version 3 (digest 0a1b2c3d4e5f)``."""
        what = ("version ?" if self.version is None
                else f"{'new ' if self.created else 'current '}version {self.version}")
        if not self.created and self.version is not None:
            what += ", unchanged"
        code = f", code {self.code_version}" if self.code_version else ""
        return f"{self.name}: {what} (digest {self.digest[:12]}{code})"


def body_digest(d: Definition) -> str:
    """The registry's digest of the definition's body."""
    return digest(d.workflow, d.input_schema)


def intent(client: Client | None, d: Definition) -> Intent:
    """What registering ``d`` would do, asking ``client``'s gateway for the name's
    current version (None: not asked; the version is then unknown).

    Raises:
        HeadwaterHTTPError: the gateway refused the read (401, 403, 5xx).
        GatewayUnreachable: it did not answer.
    """
    mine = body_digest(d)
    if client is None:
        return Intent(d.name, mine, None, True, d.code_version)
    try:
        current = client.definitions.get(d.name)
    except errors.NotFound:
        return Intent(d.name, mine, 1, True, d.code_version)
    except errors.Gone as e:  # deleted: a PUT makes the next version
        last = e.body.get("version")
        return Intent(d.name, mine, last + 1 if isinstance(last, int) else None, True,
                      d.code_version)
    if current.digest == mine:
        return Intent(d.name, mine, current.version, False, d.code_version)
    latest = int(current.raw.get("latest", current.version))
    return Intent(d.name, mine, latest + 1, True, d.code_version)


def register(client: Client, d: Definition) -> Intent:
    """Register ``d`` (``PUT``): the version the gateway answered, new or not (the
    name's current version read first: the same body is no new version).

    Raises:
        HeadwaterHTTPError: the gateway refused it (422 naming each fault, 403, 409).
        GatewayUnreachable: it did not answer.
    """
    before = intent(client, d)
    stored = client.definitions.put(d.name, d.workflow, input_schema=d.input_schema)
    created = before.created or stored.version != before.version
    return Intent(d.name, stored.digest, stored.version, created, d.code_version)

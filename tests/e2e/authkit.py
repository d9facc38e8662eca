"""Helpers of the e2e tests that run a stack with auth on (``HEADWATER_AUTH=on``): API
keys written to a keys file, the environment that makes a stack take them, and an HTTP
client per key."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx

from services.common.auth.tokens import new_key

Grant = tuple[str, str]
"""A key's tenant (``*``: every tenant) and role."""
SERVICE = "service"
"""The name of the key a secured stack's own services use (its ``HEADWATER_TOKEN``):
it must be a key of every tenant."""


def write_keys(directory: Path, grants: Mapping[str, Grant]) -> tuple[dict[str, str], Path]:
    """A new API key per entry of ``grants``, by name, and the keys file (mode 600, in
    ``directory``) that admits them."""
    made = {name: new_key(*grant) for name, grant in grants.items()}
    path = directory / "keys"
    path.write_text("".join(line + "\n" for _, line in made.values()))
    path.chmod(0o600)
    return {name: token for name, (token, _) in made.items()}, path


def secured_env(tokens: Mapping[str, str], path: Path) -> dict[str, str]:
    """The environment of a stack with auth on: its keys file, and the ``SERVICE`` key
    for its own services."""
    return {"HEADWATER_AUTH": "on", "HEADWATER_AUTH_KEYS_FILE": str(path),
            "HEADWATER_TOKEN": tokens[SERVICE]}


def clients(base_url: str, tokens: Mapping[str, str], timeout: float,
            anonymous: bool = False) -> dict[str, httpx.Client]:
    """An HTTP client per key, by its name, and ``"none"`` without a token when
    ``anonymous``."""
    made = {name: httpx.Client(base_url=base_url, timeout=timeout,
                               headers={"Authorization": f"Bearer {token}"})
            for name, token in tokens.items()}
    if anonymous:
        made["none"] = httpx.Client(base_url=base_url, timeout=timeout)
    return made


def async_clients(base_url: str, tokens: Mapping[str, str], timeout: float,
                  anonymous: bool = False) -> dict[str, httpx.AsyncClient]:
    """``clients``, asynchronous."""
    made = {name: httpx.AsyncClient(base_url=base_url, timeout=timeout,
                                    headers={"Authorization": f"Bearer {token}"})
            for name, token in tokens.items()}
    if anonymous:
        made["none"] = httpx.AsyncClient(base_url=base_url, timeout=timeout)
    return made

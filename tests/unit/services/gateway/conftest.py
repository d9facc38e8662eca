"""Fixtures of the gateway's unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_harness import Gateway, gateway


@pytest.fixture
def gw() -> Iterator[Gateway]:
    """A gateway app under ``TestClient``, not yet connected (see ``Gateway.connect``)."""
    with gateway() as g:
        yield g

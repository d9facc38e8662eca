"""A client's defaults: where it finds the gateway when given no URL, and how it reads
a spec it is given by name."""

from __future__ import annotations

import pytest

from headwater.client import Client
from headwater.client.http import default_url, load_workflow


def test_the_url_setting_wins_then_the_port_then_8080(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_GATEWAY_URL", raising=False)
    monkeypatch.delenv("HEADWATER_GATEWAY_PORT", raising=False)
    assert default_url() == "http://127.0.0.1:8080"
    monkeypatch.setenv("HEADWATER_GATEWAY_PORT", "18080")
    assert default_url() == "http://127.0.0.1:18080"
    monkeypatch.setenv("HEADWATER_GATEWAY_URL", "http://gw.example:9000/")
    assert default_url() == "http://gw.example:9000/"
    with Client() as hw:
        assert hw.base_url == "http://gw.example:9000"
    with Client("http://other:1") as hw:
        assert hw.base_url == "http://other:1"


def test_a_port_that_is_not_a_number_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_GATEWAY_URL", raising=False)
    monkeypatch.setenv("HEADWATER_GATEWAY_PORT", "80a")
    with pytest.raises(ValueError, match="HEADWATER_GATEWAY_PORT must be a port number"):
        default_url()


def test_a_spec_file_that_does_not_exist_is_named_not_parsed() -> None:
    with pytest.raises(FileNotFoundError, match=r"no workflow file 'flows/nope\.yaml'"):
        load_workflow("flows/nope.yaml")
    with pytest.raises(ValueError, match="must be a mapping"):
        load_workflow("just words")
    assert load_workflow("name: a\nnodes: []\n") == {"name": "a", "nodes": []}

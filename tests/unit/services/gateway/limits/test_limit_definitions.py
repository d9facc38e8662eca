"""``PUT /v1/limits/{key}``'s body: the ``LimitDefined`` records it gives, and the
faults it names (``services/gateway/limits/define.py``)."""

from __future__ import annotations

import orjson
import pytest

from headwater.core import events as ev
from services.common.auth.tokens import OPEN, Principal
from services.gateway.edge.problems import Problem
from services.gateway.limits.define import definitions


def _defined(key: str, body: object, me: Principal = OPEN) -> list[ev.LimitDefined]:
    return definitions(key, orjson.dumps(body), me)


def test_both_kinds_and_a_definition_taken_back() -> None:
    got = _defined("openai", {"concurrency": {"limit": 3}, "rate_limit": {"per_minute": 500}})
    assert [(r.workflow_id, r.kind, r.key, r.limit, r.window_ms) for r in got] == [
        ("limit::concurrency:openai", "concurrency", "openai", 3, 0),
        ("limit::rate:openai", "rate", "openai", 500, 60_000)]
    (back,) = _defined("acme corp", {"rate_limit": None})
    assert back.limit == 0 and back.kind == "rate" and back.workflow_id.startswith(
        "limit::rate::")  # a key that is no plain text: its digest


@pytest.mark.parametrize(("body", "fault"), [
    ([], "body: an object with concurrency and/or rate_limit"),
    ({}, "body: an object with concurrency and/or rate_limit"),
    ({"concurency": {"limit": 2}}, "body: an object with concurrency and/or rate_limit"),
    ({"concurrency": {"limit": 0}}, "body: concurrency: limit must be an integer from 1"),
    ({"concurrency": {"limit": 2, "window_s": 3}}, "unknown field 'window_s'"),
    ({"rate_limit": {"limit": 5}}, "window_s must be a number of seconds"),
    ({"rate_limit": 5}, "rate_limit: must be an object or null"),
])
def test_a_bad_body_is_422_naming_the_fault(body: object, fault: str) -> None:
    with pytest.raises(Problem) as caught:
        _defined("k", body)
    assert caught.value.status == 422 and fault in str(caught.value.detail), caught.value.detail


def test_a_tenants_token_may_not_define_a_shared_key() -> None:
    with pytest.raises(Problem) as caught:
        _defined("k", {"concurrency": {"limit": 1}}, Principal("A", "admin", "key-1"))
    assert caught.value.status == 403

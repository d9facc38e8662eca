"""Labels (``headwater.core.labels``): what a key and a value may be, how many a run
carries, how a submission's are merged over its spec's, and how a spec refuses bad
ones (every fault named, as any spec fault)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.labels import (
    MAX_LABELS,
    label_faults,
    labels_of,
    parse_selector,
    with_labels,
)
from headwater.core.spec import parse_spec
from headwater.errors import SpecError

SPEC: dict[str, Any] = {"name": "w", "nodes": [{"id": "a", "task": "t.a"}]}


@pytest.mark.parametrize("labels", [
    {}, {"team": "search"}, {"app.kubernetes.io/name": "x-y_z"}, {"env": ""},
    {"day": "2026-12-06", "by": "ana@corp", "ref": "a:b/c"},
    {f"k{i}": "v" for i in range(MAX_LABELS)},
])
def test_valid_labels_have_no_fault(labels: dict[str, str]) -> None:
    assert label_faults(labels) == []


@pytest.mark.parametrize(("labels", "fault"), [
    (["team"], "labels: must be an object of string keys to string values"),
    ({"": "x"}, "labels: key '' must be 1 to 63 of"),
    ({"-team": "x"}, "labels: key '-team' must be 1 to 63 of"),
    ({"te am": "x"}, "labels: key 'te am' must be"),
    ({"k" * 64: "x"}, "labels: key 'kkkk"),
    ({"team": "a b"}, "labels: team: value 'a b' must be a string of"),
    ({"team": 3}, "labels: team: value 3 must be a string of"),
    ({"team": "v" * 129}, "labels: team: value 'vvv"),
    ({f"k{i}": "v" for i in range(MAX_LABELS + 1)}, f"labels: at most {MAX_LABELS} labels"),
])
def test_a_bad_label_is_named(labels: Any, fault: str) -> None:
    faults = label_faults(labels)
    assert faults and faults[0].startswith(fault), faults


def test_a_submissions_labels_are_merged_over_the_specs_by_key() -> None:
    spec = {**SPEC, "labels": {"team": "a", "env": "prod"}}
    assert with_labels(spec, {"team": "b", "run": "1"})["labels"] == {
        "team": "b", "env": "prod", "run": "1"}
    assert with_labels(SPEC, {"team": "b"}) == {**SPEC, "labels": {"team": "b"}}
    assert with_labels(spec, None) == spec and with_labels(spec, {}) == spec
    assert spec["labels"] == {"team": "a", "env": "prod"}  # not changed in place


def test_a_recorded_specs_labels() -> None:
    assert labels_of({**SPEC, "labels": {"team": "a"}}) == {"team": "a"}
    assert labels_of(SPEC) == {} and labels_of(None) == {} and labels_of("x") == {}
    assert labels_of({**SPEC, "labels": {"bad key": "a"}}) == {}


def test_a_spec_carries_labels_and_refuses_bad_ones() -> None:
    parse_spec({**SPEC, "labels": {"team": "a"}})
    with pytest.raises(SpecError) as info:
        parse_spec({**SPEC, "labels": {"team": "a b", "ok": "1", "bad key": "x"}})
    assert info.value.faults == [
        "labels: team: value 'a b' must be a string of 0 to 128 of A-Z a-z 0-9 . _ - : @ /",
        "labels: key 'bad key' must be 1 to 63 of A-Z a-z 0-9 . _ - /, starting with a "
        "letter or digit"]


@pytest.mark.parametrize(("text", "selector"), [
    ("team:search", ("team", "search")), ("team", ("team", None)), ("team:", ("team", "")),
    ("ref:a:b", ("ref", "a:b")), (":x", None), ("bad key:x", None), ("team:a b", None),
])
def test_a_query_selector(text: str, selector: tuple[str, str | None] | None) -> None:
    assert parse_selector(text) == selector

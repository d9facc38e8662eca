"""Input references: parsing, finding and resolving ``${...}``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from headwater.blobs import MAX_PATH
from headwater.core.refs import Ref, by_reference, item_of, iter_refs, parse_ref, resolve
from headwater.errors import InputReferenceError

PARSE_TABLE: list[tuple[str, Ref | str | None]] = [
    ("plain text", None),
    ("", None),
    ("$input", None),
    ("{input}", None),
    ("${input}", Ref("input", None, ())),
    ("${input.a.b}", Ref("input", None, ("a", "b"))),
    ("${ input.a }", Ref("input", None, ("a",))),
    ("${item}", Ref("item", None, ())),
    ("${item.name}", Ref("item", None, ("name",))),
    ("${index}", Ref("index", None, ())),
    ("${nodes.x.output}", Ref("nodes", "x", ())),
    ("${nodes.my-node_2.output.k.0}", Ref("nodes", "my-node_2", ("k", "0"))),
    ("${nodes.x}", "expected ${nodes.<id>.output...}, got ${nodes.x}"),
    ("${nodes.x.result}", "expected ${nodes.<id>.output...}, got ${nodes.x.result}"),
    ("${env.HOME}", "unknown reference root 'env' in ${env.HOME}"),
    ("a ${input.x}", "malformed reference"),
    ("${input.x} b", "malformed reference"),
    ("${}", "malformed reference"),
    ("${input.x", "malformed reference"),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE, ids=[t or "<empty>" for t, _ in
                                                                  PARSE_TABLE])
def test_parse_ref(text: str, expected: Ref | str | None) -> None:
    assert parse_ref(text) == expected


def test_iter_refs_finds_every_reference_at_any_depth() -> None:
    template = {"a": "${input.a}", "b": [1, {"c": "${nodes.n.output}"}, ["${item}"]],
                "d": "plain", "e": "x ${bad}", "f": None, "g": 3.5}
    found = dict(iter_refs(template))
    assert found == {
        "${input.a}": Ref("input", None, ("a",)),
        "${nodes.n.output}": Ref("nodes", "n", ()),
        "${item}": Ref("item", None, ()),
        "x ${bad}": "malformed reference",
    }
    assert list(iter_refs("${index}")) == [("${index}", Ref("index", None, ()))]
    assert list(iter_refs(None)) == []


def test_iter_refs_handles_deep_nesting_iteratively() -> None:
    template: Any = "${input}"
    for _ in range(5_000):
        template = [template]
    assert [raw for raw, _ in iter_refs(template)] == ["${input}"]


WORKFLOW_INPUT = {"q": "query", "nested": {"list": [10, {"k": "v"}]}, "none": None}
OUTPUTS = {"a": {"rows": [1, 2, 3]}, "b": None, "c": [{"x": 1}]}

RESOLVE_TABLE: list[tuple[str, Any, Any]] = [
    ("whole input", "${input}", WORKFLOW_INPUT),
    ("input key", "${input.q}", "query"),
    ("list index", "${input.nested.list.1.k}", "v"),
    ("null value", "${input.none}", None),
    ("node output", "${nodes.a.output}", {"rows": [1, 2, 3]}),
    ("node output path", "${nodes.a.output.rows.2}", 3),
    ("null node output", "${nodes.b.output}", None),
    ("list output", "${nodes.c.output.0.x}", 1),
    ("item", "${item}", {"name": "it"}),
    ("item path", "${item.name}", "it"),
    ("index", "${index}", 4),
    ("plain string", "no refs", "no refs"),
    ("number", 42, 42),
    ("nested template", {"x": ["${input.q}", {"y": "${index}"}], "z": True},
     {"x": ["query", {"y": 4}], "z": True}),
]


@pytest.mark.parametrize(("template", "expected"), [r[1:] for r in RESOLVE_TABLE],
                         ids=[r[0] for r in RESOLVE_TABLE])
def test_resolve(template: Any, expected: Any) -> None:
    assert resolve(template, WORKFLOW_INPUT, OUTPUTS, {"name": "it"}, 4) == expected


def test_resolve_does_not_modify_the_template() -> None:
    template = {"x": ["${input.q}", {"y": "${nodes.a.output}"}]}
    before = copy.deepcopy(template)
    out = resolve(template, WORKFLOW_INPUT, OUTPUTS)
    assert template == before
    assert out == {"x": ["query", {"y": {"rows": [1, 2, 3]}}]}
    assert out is not template and out["x"] is not template["x"]


RESOLVE_ERRORS: list[tuple[str, str]] = [
    ("${input.missing}", "${input.missing}: no key 'missing'"),
    ("${input.q.deeper}", "no key 'deeper'"),
    ("${input.nested.list.9}", "no key '9'"),
    ("${input.nested.list.-1}", "no key '-1'"),
    ("${nodes.zzz.output}", "${nodes.zzz.output}: node 'zzz' has no output"),
    ("${nodes.a.output.nope}", "no key 'nope'"),
    ("${nodes.b.output.x}", "no key 'x'"),
    ("${item.name.more}", "no key 'more'"),
    ("x ${input.q}", "malformed reference"),
    ("${env.X}", "unknown reference root"),
]


@pytest.mark.parametrize(("template", "message"), RESOLVE_ERRORS, ids=[t for t, _ in
                                                                        RESOLVE_ERRORS])
def test_resolve_errors(template: str, message: str) -> None:
    with pytest.raises(InputReferenceError) as info:
        resolve({"wrapped": [template]}, WORKFLOW_INPUT, OUTPUTS, {"name": "it"}, 0)
    assert message in str(info.value)


def test_index_is_none_outside_a_map() -> None:
    assert resolve("${index}", None, {}) is None
    assert resolve("${item}", None, {}) is None


def test_non_ascii_digit_key_on_a_list_is_a_reference_error() -> None:
    with pytest.raises(InputReferenceError):
        resolve("${input.items.²}", {"items": [1, 2, 3]}, {})


BLOB = {"$blob": "sha256:" + "0f" * 32, "bytes": 300_000}
"""A value stored by reference (``headwater.blobs``)."""


def test_a_value_stored_by_reference_is_passed_whole() -> None:
    outputs = {"x": BLOB, "y": {"doc": BLOB, "n": 2}}
    assert resolve("${nodes.x.output}", None, outputs) == BLOB
    assert resolve({"d": "${nodes.y.output.doc}", "n": "${nodes.y.output.n}"}, None,
                   outputs) == {"d": BLOB, "n": 2}


@pytest.mark.parametrize(("template", "path"), [
    ("${nodes.x.output.field}", ["field"]),
    ("${nodes.y.output.doc.0}", ["0"]),
    ("${nodes.y.output.doc.a.b-c.7}", ["a", "b-c", "7"]),
    ("${input.big.k}", ["k"]),
])
def test_selecting_through_a_value_stored_by_reference_gives_a_path_reference(
        template: str, path: list[str]) -> None:
    outputs = {"x": BLOB, "y": {"doc": BLOB}}
    assert resolve(template, {"big": BLOB}, outputs) == {**BLOB, "path": path}


def test_selecting_through_a_path_reference_extends_its_path() -> None:
    item = {**BLOB, "path": [3]}
    assert resolve({"t": "${item.text}", "i": "${index}", "w": "${item}"}, None, {},
                   item=item, index=3) == {"t": {**BLOB, "path": [3, "text"]}, "i": 3,
                                           "w": item}


def test_a_selection_drops_the_item_count_and_the_href() -> None:
    listed = {**BLOB, "items": 10, "href": "/v1/workflows/w/blobs/x"}
    assert resolve("${input.docs.2}", {"docs": listed}, {}) == {**BLOB, "path": ["2"]}


def test_a_path_too_long_for_a_reference_fails_the_reference() -> None:
    deep = {**BLOB, "path": ["k"] * MAX_PATH}
    with pytest.raises(InputReferenceError) as info:
        resolve("${item.more}", None, {}, item=deep)
    assert str(info.value).startswith("${item.more}: a path of 65 keys")


def test_a_selection_is_the_same_each_time() -> None:
    outputs = {"y": {"doc": BLOB}}
    first = resolve("${nodes.y.output.doc.a.0}", None, outputs)
    assert first == resolve("${nodes.y.output.doc.a.0}", None, outputs)
    assert outputs == {"y": {"doc": BLOB}}


def test_an_item_of_a_list_stored_by_reference_is_a_path_reference() -> None:
    listed = {**BLOB, "items": 5}
    assert item_of(listed, 4) == {**BLOB, "path": [4]}
    assert item_of(["a", "b"], 1) == "b"


def test_the_error_for_a_comparison_says_the_coordinator_does_not_hold_it() -> None:
    message = str(by_reference("${nodes.x.output.a}", {**BLOB, "path": ["a"]}))
    assert message.startswith("${nodes.x.output.a}: the value is stored by reference (a part")
    assert "cannot compare what it does not hold" in message
    assert "HEADWATER_BLOB_THRESHOLD_BYTES" in message


def test_a_dict_that_only_looks_like_a_reference_is_walked() -> None:
    lookalike = {"$blob": "not a digest", "bytes": 3}
    assert resolve("${input.v.bytes}", {"v": lookalike}, {}) == 3

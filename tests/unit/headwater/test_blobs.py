"""Payloads by reference, the pure part (``headwater/blobs.py``): which parts of a value
become references, and that resolving gives the value back."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater import blobs

T = 1024


def test_a_small_value_is_left_as_it_is() -> None:
    value = {"a": 1, "s": "x" * 100}
    out, found = blobs.offload(value, T)
    assert out is value and found == {}


def test_a_large_field_goes_by_reference_and_small_ones_stay_inline() -> None:
    value = {"small": 7, "name": "n", "big": "x" * 5000}
    out, found = blobs.offload(value, T)
    assert out["small"] == 7 and out["name"] == "n"
    assert blobs.is_ref(out["big"]) and out["big"]["bytes"] == 5002
    assert found == {out["big"]["$blob"]: orjson.dumps("x" * 5000)}
    assert out["big"]["$blob"] == blobs.digest_of(orjson.dumps("x" * 5000))
    assert blobs.resolve(out, found) == value


def test_many_small_items_over_the_threshold_together_become_one_reference() -> None:
    value = [{"i": i} for i in range(200)]
    out, found = blobs.offload(value, T)
    assert blobs.is_ref(out) and len(found) == 1
    assert blobs.resolve(out, found) == value


def test_a_blob_may_hold_references_and_resolve_follows_them() -> None:
    value = [{"i": i, "s": "y" * 2000} for i in range(3)]
    out, found = blobs.offload(value, T)
    assert blobs.is_ref(out) is False  # three references, one per item, fit inline
    assert [blobs.is_ref(x["s"]) for x in out] == [True, True, True]
    assert len(found) == 1  # the same string three times: stored once
    nested, found2 = blobs.offload([{"s": "z" * 2000, "i": i} for i in range(60)], T)
    assert blobs.is_ref(nested)
    inner = orjson.loads(found2[nested["$blob"]])
    assert all(blobs.is_ref(x["s"]) for x in inner)
    assert blobs.resolve(nested, found2) == [{"s": "z" * 2000, "i": i} for i in range(60)]


def test_the_same_content_has_the_same_digest() -> None:
    a, fa = blobs.offload({"v": "q" * 3000}, T)
    b, fb = blobs.offload(["q" * 3000], T)
    assert a["v"] == b[0] and fa == fb


def test_a_reference_passed_along_is_not_stored_again() -> None:
    ref = blobs.make_ref(blobs.digest_of(b'"x"'), 3)
    out, found = blobs.offload({"r": ref, "pad": "p" * 2000}, T)
    assert out["r"] == ref and blobs.is_ref(out["pad"]) and len(found) == 1


@pytest.mark.parametrize("value", [
    {"$blob": "sha256:" + "0" * 64},
    {"$blob": "sha256:" + "0" * 63, "bytes": 3},
    {"$blob": "md5:" + "0" * 64, "bytes": 3},
    {"$blob": "sha256:" + "0" * 64, "bytes": True},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "other": 1},
    {"$blob": "sha256:" + "G" * 64, "bytes": 3},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "items": -1},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "items": "4"},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "items": False},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": []},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": "a.b"},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": ["a", -1]},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": ["a", 1.5]},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": ["a", None]},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": [True]},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": ["k"] * (blobs.MAX_PATH + 1)},
    {"$blob": "sha256:" + "0" * 64, "bytes": 3, "path": ["k" * (blobs.MAX_PATH_KEY + 1)]},
])
def test_what_is_not_a_reference(value: Any) -> None:
    assert not blobs.is_ref(value)
    assert blobs.resolve(value, {}) == value


def test_an_href_is_part_of_a_reference_but_not_of_a_record() -> None:
    ref = {**blobs.make_ref("sha256:" + "a" * 64, 9), "href": "/v1/workflows/w/blobs/x"}
    assert blobs.is_ref(ref)
    assert blobs.without_hrefs({"x": [ref]}) == {"x": [blobs.make_ref("sha256:" + "a" * 64, 9)]}
    parted = {**ref, "path": ["a", 2], "items": 3}
    assert blobs.without_hrefs(parted) == {"$blob": "sha256:" + "a" * 64, "bytes": 9,
                                           "path": ["a", 2], "items": 3}


def test_a_missing_blob_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        blobs.resolve(blobs.make_ref("sha256:" + "b" * 64, 9), {})


def test_no_threshold_means_nothing_by_reference() -> None:
    value = "x" * 10_000
    assert blobs.offload(value, 0) == (value, {})


def test_what_is_not_json_is_refused() -> None:
    with pytest.raises(TypeError):
        blobs.offload({"x": object()}, T)


D = "sha256:" + "0" * 64


@pytest.mark.parametrize("value", [
    {"$blob": D, "bytes": 3, "items": 0},
    {"$blob": D, "bytes": 3, "path": ["a", 0, "b-c", "7"]},
    {"$blob": D, "bytes": 3, "path": ["k"] * blobs.MAX_PATH, "href": "/x"},
    {"$blob": D, "bytes": 3, "path": [4], "items": 2},
])
def test_a_reference_may_have_an_item_count_and_a_path(value: Any) -> None:
    assert blobs.is_ref(value)
    assert list(blobs.refs_in({"v": [value]})) == [value]


def test_a_list_stored_by_reference_has_its_item_count() -> None:
    out, _ = blobs.offload([{"i": i} for i in range(200)], T)
    assert out["items"] == 200 and set(out) == {"$blob", "bytes", "items"}
    doc, _ = blobs.offload({str(i): i for i in range(200)}, T)
    assert set(doc) == {"$blob", "bytes"}
    text, _ = blobs.offload("x" * 5000, T)
    assert set(text) == {"$blob", "bytes"}
    nested, _ = blobs.offload({"docs": [{"i": i} for i in range(200)], "n": 1}, T)
    assert nested["docs"]["items"] == 200 and nested["n"] == 1


def test_select_extends_the_path_and_drops_the_count_and_href() -> None:
    ref = {**blobs.make_ref(D, 9, items=3), "href": "/x"}
    one = blobs.select(ref, [2])
    assert one == {"$blob": D, "bytes": 9, "path": [2]}
    assert blobs.select(one, ["text"]) == {"$blob": D, "bytes": 9, "path": [2, "text"]}
    with pytest.raises(ValueError):
        blobs.select({**ref, "path": ["k"] * blobs.MAX_PATH}, ["more"])


def test_a_path_reference_resolves_to_its_part() -> None:
    value = [{"text": f"t{i}", "tags": ["a", "b"]} for i in range(200)]
    ref, found = blobs.offload(value, T)
    assert blobs.resolve(blobs.select(ref, [7]), found) == value[7]
    assert blobs.resolve(blobs.select(ref, [7, "text"]), found) == "t7"
    assert blobs.resolve(blobs.select(ref, ["7", "tags", "1"]), found) == "b"
    both = {"a": blobs.select(ref, [0, "text"]), "b": blobs.select(ref, [199]), "c": 1}
    assert blobs.resolve(both, found) == {"a": "t0", "b": value[199], "c": 1}


def test_a_path_goes_through_the_references_inside_a_blob() -> None:
    value = {f"k{i}": {"s": "z" * 2000, "i": i} for i in range(60)}
    ref, found = blobs.offload(value, T)
    assert blobs.is_ref(ref) and b'"$blob"' in found[ref["$blob"]]
    assert blobs.resolve(blobs.select(ref, ["k5", "s"]), found) == "z" * 2000
    assert blobs.resolve(blobs.select(ref, ["k5"]), found) == value["k5"]
    assert blobs.resolve(blobs.select(ref, ["k59", "i"]), found) == 59


@pytest.mark.parametrize(("path", "message"), [
    (["missing"], "no missing in the value stored by reference as blob {d}: a list of 3 "
                  "items has no item 'missing'"),
    ([5], "no [5] in the value stored by reference as blob {d}: a list of 3 items has no "
          "item 5"),
    ([1, "nope"], "no [1].nope in the value stored by reference as blob {d}: no key 'nope'"),
    ([1, "text", "x"], "no [1].text.x in the value stored by reference as blob {d}: str has "
                       "no key 'x'"),
])
def test_a_path_the_value_has_not_is_a_path_error(path: list[Any], message: str) -> None:
    data = orjson.dumps([{"text": "a"}, {"text": "b"}, {"text": "c"}])
    d = blobs.digest_of(data)
    with pytest.raises(blobs.BlobPathError) as info:
        blobs.resolve({"$blob": d, "bytes": len(data), "path": path}, {d: data})
    assert str(info.value) == message.format(d=d)
    assert info.value.digest == d and info.value.path == path


def test_an_index_reads_a_list_only() -> None:
    data = orjson.dumps({"0": "zero"})
    d = blobs.digest_of(data)
    assert blobs.resolve({"$blob": d, "bytes": 1, "path": ["0"]}, {d: data}) == "zero"
    with pytest.raises(blobs.BlobPathError):
        blobs.resolve({"$blob": d, "bytes": 1, "path": [0]}, {d: data})


def test_a_path_error_is_not_a_missing_blob() -> None:
    assert not issubclass(blobs.BlobPathError, KeyError)

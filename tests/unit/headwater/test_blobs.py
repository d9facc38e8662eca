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
])
def test_what_is_not_a_reference(value: Any) -> None:
    assert not blobs.is_ref(value)
    assert blobs.resolve(value, {}) == value


def test_an_href_is_part_of_a_reference_but_not_of_a_record() -> None:
    ref = {**blobs.make_ref("sha256:" + "a" * 64, 9), "href": "/v1/workflows/w/blobs/x"}
    assert blobs.is_ref(ref)
    assert blobs.without_hrefs({"x": [ref]}) == {"x": [blobs.make_ref("sha256:" + "a" * 64, 9)]}


def test_a_missing_blob_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        blobs.resolve(blobs.make_ref("sha256:" + "b" * 64, 9), {})


def test_no_threshold_means_nothing_by_reference() -> None:
    value = "x" * 10_000
    assert blobs.offload(value, 0) == (value, {})


def test_what_is_not_json_is_refused() -> None:
    with pytest.raises(TypeError):
        blobs.offload({"x": object()}, T)

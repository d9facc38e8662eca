"""``headwater.webhooks``: a delivery's signature is the HMAC-SHA256, keyed by the
secret, of ``<timestamp>.<body>``; ``verify`` takes a good one (and returns the delivery
id) and refuses a changed body, another secret, a stale or future timestamp and missing
or malformed headers, each with its reason."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from headwater.webhooks import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureError,
    signature,
    signed_headers,
    verify,
)

SECRET = "s3cret-of-sixteen-chars"
BODY = b'{"id":"d_1","event":"run.failed"}'
NOW = 1_780_000_000


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), b"1780000000." + BODY, hashlib.sha256).hexdigest()
    assert signature(SECRET, NOW, BODY) == f"v1={expected}"


def test_signed_headers_carry_the_delivery_event_timestamp_and_signature() -> None:
    headers = signed_headers(SECRET, NOW, BODY, "d_1", "run.failed")
    assert headers == {DELIVERY_HEADER: "d_1", "Headwater-Event": "run.failed",
                       TIMESTAMP_HEADER: "1780000000",
                       SIGNATURE_HEADER: signature(SECRET, NOW, BODY),
                       "Content-Type": "application/json"}


def test_verify_takes_a_good_delivery_whatever_the_headers_case() -> None:
    headers = {k.lower(): v for k, v in signed_headers(SECRET, NOW, BODY, "d_1", "e").items()}
    assert verify(SECRET, headers, BODY, NOW + 10) == "d_1"
    several = {**headers, "headwater-signature": "v1=00, " + headers["headwater-signature"]}
    assert verify(SECRET, several, BODY, NOW) == "d_1"  # one of several (a rotation)


@pytest.mark.parametrize(("secret", "body", "now", "fault"), [
    (SECRET, BODY + b" ", NOW, "does not match"),
    ("another-secret-16", BODY, NOW, "does not match"),
    (SECRET, BODY, NOW + 301, "from now, over 300 s"),
    (SECRET, BODY, NOW - 301, "from now, over 300 s"),
])
def test_verify_refuses_a_changed_body_another_secret_and_old_timestamps(
        secret: str, body: bytes, now: int, fault: str) -> None:
    headers = signed_headers(SECRET, NOW, BODY, "d_1", "e")
    with pytest.raises(SignatureError, match=fault):
        verify(secret, headers, body, now)


def test_verify_refuses_missing_and_malformed_headers() -> None:
    headers = signed_headers(SECRET, NOW, BODY, "d_1", "e")
    for name in (DELIVERY_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER):
        with pytest.raises(SignatureError, match="missing"):
            verify(SECRET, {k: v for k, v in headers.items() if k != name}, BODY, NOW)
    with pytest.raises(SignatureError, match="not an integer"):
        verify(SECRET, {**headers, TIMESTAMP_HEADER: "soon"}, BODY, NOW)
    with pytest.raises(SignatureError, match="over 60 s"):
        verify(SECRET, headers, BODY, NOW + 61, tolerance_s=60)

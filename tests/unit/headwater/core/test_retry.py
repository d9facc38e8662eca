"""Retry policy: backoff delays and parsing (``headwater.core.retry``)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.retry import (
    MAX_ATTEMPTS_LIMIT,
    RetryPolicy,
    backoff_seconds,
    parse_retry,
    unit_fraction,
)

DELAY_TABLE: list[tuple[str, RetryPolicy, int, float]] = [
    ("first retry is the base", RetryPolicy(5, 1.0, 60.0, 2.0), 1, 1.0),
    ("doubles", RetryPolicy(5, 1.0, 60.0, 2.0), 2, 2.0),
    ("doubles again", RetryPolicy(5, 1.0, 60.0, 2.0), 4, 8.0),
    ("last below the cap", RetryPolicy(9, 1.0, 60.0, 2.0), 6, 32.0),
    ("capped", RetryPolicy(9, 1.0, 60.0, 2.0), 7, 60.0),
    ("cap exactly a power", RetryPolicy(9, 1.0, 8.0, 2.0), 4, 8.0),
    ("one below an exact power cap", RetryPolicy(9, 1.0, 8.0, 2.0), 3, 4.0),
    ("triples", RetryPolicy(9, 0.5, 100.0, 3.0), 3, 4.5),
    ("multiplier 1 is constant", RetryPolicy(9, 3.0, 60.0, 1.0), 8, 3.0),
    ("multiplier below 1 is constant", RetryPolicy(9, 3.0, 60.0, 0.5), 5, 3.0),
    ("multiplier 0", RetryPolicy(9, 3.0, 60.0, 0.0), 2, 3.0),
    ("base 0 is no delay", RetryPolicy(9, 0.0, 60.0, 2.0), 5, 0.0),
    ("base above the cap", RetryPolicy(9, 90.0, 60.0, 2.0), 1, 60.0),
    ("base equal to the cap", RetryPolicy(9, 60.0, 60.0, 2.0), 3, 60.0),
    ("attempt 0 acts like 1", RetryPolicy(9, 2.0, 60.0, 2.0), 0, 2.0),
    ("base 300 s, cap 3600 s", RetryPolicy(10_000, 300.0, 3600.0, 2.0), 4, 2400.0),
    ("base 300 s, cap reached", RetryPolicy(10_000, 300.0, 3600.0, 2.0), 5, 3600.0),
]


@pytest.mark.parametrize(("policy", "failed", "expected"), [r[1:] for r in DELAY_TABLE],
                         ids=[r[0] for r in DELAY_TABLE])
def test_backoff_without_jitter(policy: RetryPolicy, failed: int, expected: float) -> None:
    assert backoff_seconds(policy, failed, "wf/a/1") == pytest.approx(expected)


def test_every_attempt_up_to_10000_stays_under_the_cap_without_overflow() -> None:
    policy = RetryPolicy(max_attempts=10_000, backoff_base=300.0, backoff_max=3600.0,
                         multiplier=2.0, jitter=0.5)
    delays = [backoff_seconds(policy, k, f"wf/a/{k}") for k in range(1, 10_001)]
    assert all(0.0 <= d <= 3600.0 for d in delays)
    assert max(delays) == 3600.0


@pytest.mark.parametrize("multiplier", [2.0, 10.0, 1e6, 1e300])
@pytest.mark.parametrize("failed", [1001, 10_000, MAX_ATTEMPTS_LIMIT, 10**12])
def test_huge_exponents_do_not_overflow(multiplier: float, failed: int) -> None:
    policy = RetryPolicy(MAX_ATTEMPTS_LIMIT, 300.0, 3600.0, multiplier, 0.0)
    assert backoff_seconds(policy, failed, "wf/a/1") == 3600.0
    jittered = RetryPolicy(MAX_ATTEMPTS_LIMIT, 300.0, 3600.0, multiplier, 1.0)
    assert 0.0 <= backoff_seconds(jittered, failed, "wf/a/1") <= 3600.0


@pytest.mark.parametrize("jitter", [0.1, 0.5, 1.0])
def test_jitter_bounds_and_spread(jitter: float) -> None:
    policy = RetryPolicy(5, 10.0, 1000.0, 2.0, jitter)
    raw = 20.0  # failed attempt 2
    delays = [backoff_seconds(policy, 2, f"wf-{i}/n/2") for i in range(500)]
    assert all(raw * (1 - jitter) <= d <= raw * (1 + jitter) for d in delays)
    assert min(delays) < raw * (1 - jitter / 2) and max(delays) > raw * (1 + jitter / 2)


def test_jitter_is_capped_at_backoff_max() -> None:
    policy = RetryPolicy(5, 10.0, 10.0, 2.0, 1.0)
    delays = [backoff_seconds(policy, 1, f"wf-{i}/n/1") for i in range(200)]
    assert all(0.0 <= d <= 10.0 for d in delays)
    assert 50 < delays.count(10.0) < 150  # spread above the cap is cut back to it
    assert min(delays) < 5.0


def test_jitter_is_deterministic_per_dispatch_id() -> None:
    policy = RetryPolicy(5, 10.0, 1000.0, 2.0, 0.9)
    assert backoff_seconds(policy, 3, "wf/a[2]/3") == backoff_seconds(policy, 3, "wf/a[2]/3")
    assert unit_fraction("x") == unit_fraction("x")
    fractions = {unit_fraction(f"k{i}") for i in range(1000)}
    assert len(fractions) == 1000
    assert all(0.0 <= f < 1.0 for f in fractions)


# -- parse_retry ------------------------------------------------------------------------

DEFAULT = RetryPolicy(2, 1.0, 30.0, 2.0, 0.0)


def test_parse_retry_none_keeps_the_default() -> None:
    faults: list[str] = []
    assert parse_retry(None, DEFAULT, "retry", faults) is DEFAULT
    assert faults == []


def test_parse_retry_overrides_only_the_given_fields() -> None:
    faults: list[str] = []
    raw = {"max_attempts": 10_000, "jitter": 1, "backoff_base": 0}
    assert parse_retry(raw, DEFAULT, "retry", faults) == RetryPolicy(10_000, 0.0, 30.0, 2.0, 1.0)
    assert faults == []


PARSE_FAULTS: list[tuple[Any, str]] = [
    ([1, 2], "where: must be a mapping"),
    ({"max_attempts": 0}, "max_attempts must be an integer in 1..1000000"),
    ({"max_attempts": MAX_ATTEMPTS_LIMIT + 1}, "max_attempts must be an integer"),
    ({"max_attempts": 3.0}, "max_attempts must be an integer"),
    ({"max_attempts": False}, "max_attempts must be an integer"),
    ({"backoff_base": -0.5}, "backoff_base must be a finite non-negative number"),
    ({"backoff_max": None}, "backoff_max must be a finite non-negative number"),
    ({"multiplier": True}, "multiplier must be a finite non-negative number"),
    ({"jitter": 1.01}, "jitter must be within [0, 1]"),
    ({"jitter": -0.1}, "jitter must be a finite non-negative number"),
    ({"backoff_base": 31}, "backoff_max must be >= backoff_base"),
    ({"delay": 3}, "where: unknown field 'delay'"),
]


@pytest.mark.parametrize(("raw", "message"), PARSE_FAULTS, ids=[m for _, m in PARSE_FAULTS])
def test_parse_retry_faults(raw: Any, message: str) -> None:
    faults: list[str] = []
    policy = parse_retry(raw, DEFAULT, "where", faults)
    assert any(message in f for f in faults), faults
    assert isinstance(policy, RetryPolicy)


def test_parse_retry_reports_every_bad_field() -> None:
    faults: list[str] = []
    parse_retry({"max_attempts": 0, "jitter": 5, "x": 1}, DEFAULT, "r", faults)
    assert len(faults) == 3

"""``services/webhooks/backoff.py``: after a failed attempt the next waits
``backoff * 2**(n-1)``, at most ``backoff_max``, lengthened by a jitter of under 10 %
derived from the delivery id; a 2xx delivers; the last failed attempt is dead with the
outcome as its reason."""

from __future__ import annotations

import pytest

from services.webhooks.backoff import (
    JITTER,
    Next,
    Outcome,
    Policy,
    after,
    delay_ms,
    jitter_fraction,
    schedule_ms,
)

POLICY = Policy(max_attempts=5, backoff_ms=1000, backoff_max_ms=5000)


def test_waits_double_up_to_the_most_with_a_jitter_of_under_ten_percent() -> None:
    waits = schedule_ms(POLICY, "d_1")
    bases = [1000, 2000, 4000, 5000]
    assert len(waits) == POLICY.max_attempts - 1
    for wait, base in zip(waits, bases, strict=True):
        assert base <= wait < base * (1 + JITTER) + 1


def test_the_jitter_is_the_same_for_the_same_delivery_and_spreads_others() -> None:
    assert schedule_ms(POLICY, "d_1") == schedule_ms(POLICY, "d_1")
    fractions = {round(jitter_fraction(f"d_{i}", 1), 6) for i in range(50)}
    assert len(fractions) > 40 and all(0 <= f < JITTER for f in fractions)


def test_a_huge_attempt_number_stays_at_the_most() -> None:
    assert 5000 <= delay_ms(10_000, 1000, 5000, "d") < 5500


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_a_2xx_delivers(status: int) -> None:
    assert after(1, Outcome(status), 0, POLICY, "d") == Next("delivered")
    assert after(5, Outcome(status), 0, POLICY, "d") == Next("delivered")


@pytest.mark.parametrize("outcome", [Outcome(500), Outcome(404), Outcome(302), Outcome(199),
                                     Outcome(None, "ConnectError: refused")])
def test_anything_else_is_tried_again_at_its_time(outcome: Outcome) -> None:
    then = after(2, outcome, 10_000, POLICY, "d_7")
    assert then == Next("pending", 10_000 + delay_ms(2, 1000, 5000, "d_7"))


def test_the_last_attempt_is_dead_with_the_reason() -> None:
    assert after(5, Outcome(503), 0, POLICY, "d") == Next(
        "dead", reason="after 5 attempts: HTTP 503")
    assert after(5, Outcome(None, "ReadTimeout: timed out"), 0, POLICY, "d") == Next(
        "dead", reason="after 5 attempts: ReadTimeout: timed out")
    assert after(1, Outcome(None), 0, Policy(max_attempts=1), "d").reason == (
        "after 1 attempts: no answer")


def test_a_410_is_dead_at_once() -> None:
    assert after(1, Outcome(410), 0, POLICY, "d") == Next(
        "dead", reason="after 1 attempts: HTTP 410 (gone: not tried again)")

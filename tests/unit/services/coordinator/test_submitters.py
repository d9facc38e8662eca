"""Who may submit, cancel and signal on Kafka (``services.coordinator.submitters``) and
where the token goes: ``producer_fault`` for each case, the header's name in any case,
``without_authorization``; ``FaustBus`` dead letters drop the ``authorization`` header
and only records for ``submissions`` carry the coordinator's own; ``BatchEffects`` with
``auth`` dead-letters an input without a good token and steps one with it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.topics import Topics
from services.common.auth.tokens import Authenticator, KeysFile, bearer, new_key
from services.common.kafka.client import AVRO_HEADERS
from services.common.settings import CommonSettings
from services.coordinator.bus import FaustBus
from services.coordinator.effects import BatchEffects
from services.coordinator.records import DeadLetter, InputRecord, Outgoing
from services.coordinator.store import TableStore
from services.coordinator.submitters import (
    TWICE,
    authorization,
    producer_fault,
    without_authorization,
)

SPEC = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}
AT = 1_700_000_000_000
TOPICS = Topics("unit")


def submitted(tenant: str | None = "A") -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted("wf-1", SPEC, {}, AT, tenant)


def child(tenant: str | None = "A") -> ev.ChildSubmitted:
    return ev.ChildSubmitted("wf-1.c", "wf-1", "n", None, 1, SPEC, {}, AT, tenant)


def run_of(tenant: str | None) -> WorkflowState:
    state = step(None, submitted(tenant)).state
    assert state is not None
    return state


CANCEL = ev.CancelRequested("wf-1", AT, "enough")
SIGNAL = ev.SignalSent("wf-1", "go", AT)
TIMER = ev.TimerFired("wf-1", "retry:a:2", AT)


@pytest.fixture
def auth(tmp_path: Path) -> tuple[Authenticator, dict[str, str]]:
    """An authenticator and tokens: ``A-read``, ``A-submit``, ``A-admin``, ``*-submit``,
    ``*-read``."""
    keys = {f"{t}-{r}": new_key(t, r) for t, r in [
        ("A", "read"), ("A", "submit"), ("A", "admin"), ("*", "submit"), ("*", "read")]}
    path = tmp_path / "keys"
    path.write_text("".join(line + "\n" for _, line in keys.values()))
    return Authenticator(KeysFile(path), None), {k: t for k, (t, _) in keys.items()}


def headers(token: str, name: str = "authorization") -> list[tuple[str, bytes]]:
    return [*AVRO_HEADERS, (name, bearer(token).encode())]


# producer_fault


@pytest.mark.parametrize("given", [None, [], [("content-type", b"avro/binary")],
                                   [("authorization", None)]])
@pytest.mark.parametrize("record", [submitted(), child(), CANCEL, SIGNAL, TIMER])
def test_no_authorization_header_is_unauthenticated(
        auth: tuple[Authenticator, dict[str, str]], given: Any, record: Any) -> None:
    fault = producer_fault(auth[0], given, record, run_of("A"))
    assert fault == ("unauthenticated: the record has no authorization header; "
                     f"HEADWATER_AUTH is on, so a {type(record).__name__} carries "
                     "'authorization: Bearer <token>'")


@pytest.mark.parametrize("value", [b"", b"Bearer", b"Basic eA==", b"Bearer hwk_nope",
                                   b"Bearer " + b"hwk_0123456789ab_" + b"x" * 43, b"\xff\xfe"])
def test_a_bad_token_is_unauthenticated(
        auth: tuple[Authenticator, dict[str, str]], value: bytes) -> None:
    fault = producer_fault(auth[0], [("authorization", value)], submitted(), None)
    assert fault is not None and fault.startswith("unauthenticated: ")
    assert "hwk_0123456789ab_xxx" not in fault


@pytest.mark.parametrize("who", ["A-read", "*-read"])
@pytest.mark.parametrize("record", [submitted(), CANCEL, SIGNAL])
def test_a_read_token_is_forbidden(auth: tuple[Authenticator, dict[str, str]],
                                   who: str, record: Any) -> None:
    fault = producer_fault(auth[0], headers(auth[1][who]), record, run_of("A"))
    assert fault == (f"forbidden: the token's role is read; a {type(record).__name__} "
                     "needs submit or admin")


@pytest.mark.parametrize("record", [submitted("A"), submitted("B"), submitted(None),
                                    child("A"), child(None), CANCEL, SIGNAL, TIMER])
@pytest.mark.parametrize("owner", [None, "B"])
def test_every_tenant_sends_anything(auth: tuple[Authenticator, dict[str, str]],
                                     record: Any, owner: str | None) -> None:
    state = None if owner is None else run_of(owner)
    assert producer_fault(auth[0], headers(auth[1]["*-submit"]), record, state) is None


@pytest.mark.parametrize("who", ["A-submit", "A-admin"])
def test_a_tenant_submits_for_its_tenant(auth: tuple[Authenticator, dict[str, str]],
                                         who: str) -> None:
    assert producer_fault(auth[0], headers(auth[1][who]), submitted("A"), None) is None
    assert producer_fault(auth[0], headers(auth[1][who]), submitted("A"),
                          run_of("A")) is None


@pytest.mark.parametrize("record", [child("A"), child(None), child("B"), TIMER])
def test_a_child_or_a_timer_by_a_tenant_token_is_refused(
        auth: tuple[Authenticator, dict[str, str]], record: Any) -> None:
    fault = producer_fault(auth[0], headers(auth[1]["A-admin"]), record, run_of("A"))
    assert fault == (f"forbidden: a {type(record).__name__} comes from a coordinator, "
                     "whose token is for every tenant")


@pytest.mark.parametrize(("tenant", "names"), [
    ("B", "names 'B'"), ("a", "names 'a'"), ("*", "names '*'"), (None, "names no tenant")])
def test_a_tenant_token_naming_another_tenant_is_refused(
        auth: tuple[Authenticator, dict[str, str]], tenant: str | None, names: str) -> None:
    fault = producer_fault(auth[0], headers(auth[1]["A-submit"]), submitted(tenant), None)
    assert fault == (f"tenant: the token is for tenant 'A' and the record {names}; a "
                     "submission names its token's tenant (\"tenant\": 'A')")


@pytest.mark.parametrize("record", [CANCEL, SIGNAL])
def test_a_tenant_cancels_and_signals_its_own_runs(
        auth: tuple[Authenticator, dict[str, str]], record: Any) -> None:
    assert producer_fault(auth[0], headers(auth[1]["A-submit"]), record, run_of("A")) is None


@pytest.mark.parametrize("record", [CANCEL, SIGNAL])
@pytest.mark.parametrize("owner", ["B", None, "*", "missing"])
def test_a_tenant_cancels_or_signals_no_other_run_and_is_told_nothing(
        auth: tuple[Authenticator, dict[str, str]], record: Any, owner: str) -> None:
    state = None if owner == "missing" else run_of(owner)
    fault = producer_fault(auth[0], headers(auth[1]["A-submit"]), record, state)
    assert fault == (f"tenant: the token is for tenant 'A', and workflow wf-1 is no run of "
                     f"it (a {type(record).__name__} of a tenant's token goes to its own "
                     "runs, once they exist)")


@pytest.mark.parametrize("name", ["authorization", "Authorization", "AUTHORIZATION",
                                  "aUtHoRiZaTiOn"])
def test_the_header_name_is_matched_in_any_case(
        auth: tuple[Authenticator, dict[str, str]], name: str) -> None:
    assert producer_fault(auth[0], headers(auth[1]["A-submit"], name), submitted(),
                          None) is None
    assert authorization([(name, b"Bearer t")]) == "Bearer t"


def test_one_authorization_header_counts_and_two_are_neither() -> None:
    assert authorization([("x", b"1"), ("Authorization", b"one")]) == "one"
    assert authorization([("Authorization", b"one"), ("authorization", b"two")]) == TWICE
    assert authorization([("authorizations", b"x")]) is None


def test_without_authorization_drops_it_in_any_case_and_keeps_the_rest() -> None:
    given = [("content-type", b"avro/binary"), ("Authorization", b"Bearer a"),
             ("traceparent", b"00-x"), ("AUTHORIZATION", b"Bearer b"), ("authorization", b"c"),
             ("authorization-hint", b"kept")]
    assert without_authorization(given) == [
        ("content-type", b"avro/binary"), ("traceparent", b"00-x"),
        ("authorization-hint", b"kept")]
    assert without_authorization([]) == []


# FaustBus


class Topic:
    """A faust topic whose ``send`` records its keyword arguments."""

    def __init__(self, name: str, sent: list[tuple[str, dict[str, Any]]]) -> None:
        self.name, self.sent = name, sent

    async def send(self, **kwargs: Any) -> Any:
        self.sent.append((self.name, kwargs))
        return _done()


async def _done() -> None:
    return None


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    async def send(self, *args: Any) -> Any:
        self.sent.append(args)
        return _done()


class App:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.producer = Producer()
        self.made: list[str] = []  # topics the bus had created

    def topic(self, name: str, **kwargs: Any) -> Topic:
        return Topic(name, self.sent)

    async def make_topics(self, settings: CommonSettings, names: Iterable[str]) -> None:
        self.made.extend(names)


def faust_bus(auth: list[tuple[str, bytes]]) -> tuple[FaustBus, App]:
    settings = CommonSettings(**CommonSettings.common_from_env())
    app = App()
    return FaustBus(app, settings, auth, make_topics=app.make_topics), app


async def test_a_dead_letter_never_keeps_the_token() -> None:
    bus, app = faust_bus([])
    record = InputRecord(bus.topics.submissions, 0, 5, b"wf", b"v", [
        ("content-type", b"avro/binary"), ("Authorization", b"Bearer hwk_secret"),
        ("authorization", b"Bearer other"), ("traceparent", b"00-t")])
    await bus.publish([], [DeadLetter(record, "unauthenticated: no")])
    [(topic, sent)] = app.sent
    assert topic == bus.topics.dlq
    names = [k for k, _ in sent["headers"]]
    assert "Authorization" not in names and "authorization" not in names
    assert all(b"hwk_secret" not in v and b"other" not in v for _, v in sent["headers"])
    kept = dict(sent["headers"])
    assert kept["traceparent"] == b"00-t" and kept["reason"] == b"unauthenticated: no"
    assert sent["value"] == b"v"


async def test_only_submissions_and_control_carry_the_coordinator_s_token() -> None:
    token = [("authorization", b"Bearer svc")]
    bus, app = faust_bus(token)
    t, before = bus.topics, list(AVRO_HEADERS)
    records = [Outgoing(t.submissions, b"c", b"1", "wf"), Outgoing(t.events, b"wf", b"2", "wf"),
               Outgoing(t.worker_control, b"wf", b"3", "wf"),
               Outgoing(t.submissions, b"d", b"4", "wf", (("traceparent", b"00-x"),)),
               Outgoing(t.events, b"wf", b"5", "wf", (("traceparent", b"00-y"),)),
               Outgoing(t.control, b"wf", b"6", "wf")]
    await bus.publish(records, [])
    got = {args[2]: (args[0], list(args[5])) for args in app.producer.sent}
    assert got == {
        b"1": (t.submissions, [*AVRO_HEADERS, *token]),
        b"2": (t.events, AVRO_HEADERS),
        b"3": (t.worker_control, AVRO_HEADERS),
        b"4": (t.submissions, [*AVRO_HEADERS, *token, ("traceparent", b"00-x")]),
        b"5": (t.events, [*AVRO_HEADERS, ("traceparent", b"00-y")]),
        b"6": (t.control, [*AVRO_HEADERS, *token])}
    assert before == AVRO_HEADERS  # never changed in place
    assert app.made == [t.submissions, t.control]  # created on first use, once each


async def test_a_control_record_carries_the_coordinator_s_token() -> None:
    token = [("authorization", b"Bearer svc")]
    bus, app = faust_bus(token)
    await bus.send_control(ev.TimerFired("wf-1", "retry:a:2", AT))
    [(topic, sent)] = app.sent
    assert topic == bus.topics.control
    assert list(sent["headers"]) == [*AVRO_HEADERS, *token]


async def test_without_auth_submissions_carry_no_token() -> None:
    bus, app = faust_bus([])
    await bus.publish([Outgoing(bus.topics.submissions, b"c", b"1", "wf")], [])
    [args] = app.producer.sent
    assert list(args[5]) == AVRO_HEADERS


# BatchEffects with auth


class Table:
    """What ``TableStore`` uses of a faust table, in memory."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.changelog_topic = SimpleNamespace(get_topic_name=lambda: "unit-changelog")

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def keys(self) -> list[bytes]:
        return list(self.data)

    def partition_for_key(self, key: bytes) -> int:
        return 0


def effects(authenticator: Authenticator) -> BatchEffects:
    return BatchEffects(TOPICS, TableStore(Table()), 16 << 20, lambda wid: 0,
                        auth=authenticator)


def submission(record: Any, given: list[tuple[str, bytes]], offset: int = 0,
               topic: str = TOPICS.submissions) -> InputRecord:
    return InputRecord(topic, 0, offset, record.workflow_id.encode(), codec.encode(record),
                       given)


@pytest.mark.parametrize(("who", "tenant", "reason"), [
    (None, "A", "unauthenticated: the record has no authorization header"),
    ("unknown", "A", "unauthenticated: unknown or revoked API key"),
    ("A-read", "A", "forbidden: the token's role is read"),
    ("A-submit", "B", "tenant: the token is for tenant 'A' and the record names 'B'")])
def test_a_submission_without_a_good_token_is_dead_lettered_and_not_stepped(
        auth: tuple[Authenticator, dict[str, str]], who: str | None, tenant: str,
        reason: str) -> None:
    authenticator, tokens = auth
    tokens = {**tokens, "unknown": new_key("A", "admin")[0]}
    record = submitted(tenant)
    given = [] if who is None else headers(tokens[who])
    fx = effects(authenticator)
    fx.add(submission(record, given))
    [dead] = fx.dead
    assert dead.reason.startswith(reason), dead.reason
    assert fx.touched == {} and fx.out == [] and fx.encoded == []


@pytest.mark.parametrize("who", ["A-submit", "*-submit"])
def test_a_submission_with_a_good_token_is_stepped(
        auth: tuple[Authenticator, dict[str, str]], who: str) -> None:
    authenticator, tokens = auth
    fx = effects(authenticator)
    fx.add(submission(submitted("A"), headers(tokens[who])))
    assert fx.dead == []
    assert fx.touched["wf-1"].tenant == "A"
    assert isinstance(fx.out[0].body, ev.WorkflowAccepted), fx.out
    assert fx.encoded, "its history and dispatch are to be published"


def test_a_child_needs_the_coordinator_s_token(
        auth: tuple[Authenticator, dict[str, str]]) -> None:
    authenticator, tokens = auth
    fx = effects(authenticator)
    fx.add(submission(child("A"), headers(tokens["A-admin"])))
    [dead] = fx.dead
    assert dead.reason.startswith("forbidden: a ChildSubmitted comes from a coordinator")
    assert fx.touched == {}


@pytest.mark.parametrize(("owner", "stepped"), [("A", True), ("B", False)])
def test_a_tenant_s_cancel_is_stepped_only_for_its_own_run(
        auth: tuple[Authenticator, dict[str, str]], owner: str, stepped: bool) -> None:
    authenticator, tokens = auth
    fx = effects(authenticator)
    fx.add(submission(submitted(owner), headers(tokens["*-submit"])))
    before = len(fx.out)
    fx.add(submission(CANCEL, headers(tokens["A-submit"]), 0, TOPICS.control))
    assert (len(fx.out) > before) is stepped, fx.out
    assert [d.reason.split(",")[0] for d in fx.dead] == (
        [] if stepped else ["tenant: the token is for tenant 'A'"])


def test_without_auth_a_submission_needs_no_token() -> None:
    fx = BatchEffects(TOPICS, TableStore(Table()), 16 << 20, lambda wid: 0)
    fx.add(submission(submitted("A"), []))
    assert fx.dead == [] and "wf-1" in fx.touched


def test_credentials_under_other_names_or_in_odd_values_are_dropped_too() -> None:
    key = b"hwk_0123456789ab_" + b"x" * 43
    given = [("authorization ", b"Bearer a"), ("authorisation", b"Bearer b"),
             ("x-api-key", key), ("X-Auth-Token", b"t"), ("note", b"Bearer c"),
             ("note2", b"see " + key), ("content-type", b"application/json")]
    assert without_authorization(given) == [("content-type", b"application/json")]


def test_two_authorization_headers_are_refused_not_chosen_between(
        auth: tuple[Authenticator, dict[str, str]]) -> None:
    authenticator, tokens = auth
    headers = [("authorization", bearer(tokens["*-submit"]).encode()),
               ("Authorization", bearer(tokens["A-read"]).encode())]
    fault = producer_fault(authenticator, headers, submitted(), None)
    assert fault is not None and "two authorization headers" in fault


@pytest.mark.parametrize("wid", ["acme-parent:c:1", "schedule:nightly:1",
                                 "p:one:call.0", "call-" + "a" * 40])
def test_a_tenant_token_may_not_take_a_derived_id(
        auth: tuple[Authenticator, dict[str, str]], wid: str) -> None:
    authenticator, tokens = auth
    record = ev.WorkflowSubmitted(wid, SPEC, {}, AT, "A")
    headers = [("authorization", bearer(tokens["A-submit"]).encode())]
    fault = producer_fault(authenticator, headers, record, None)
    assert fault is not None and fault.startswith("forbidden: workflow id"), fault
    every = [("authorization", bearer(tokens["*-submit"]).encode())]
    assert producer_fault(authenticator, every, record, None) is None


OTHERS = {"$blob": "sha256:" + "ab" * 32, "bytes": 12}
"""A reference to a blob some other tenant's run stored (a digest is no permission)."""


@pytest.mark.parametrize("record", [
    ev.WorkflowSubmitted("wf-1", SPEC, {"doc": OTHERS}, AT, "A"),
    ev.WorkflowSubmitted("wf-1", SPEC, {"docs": [{**OTHERS, "path": [0]}]}, AT, "A"),
    ev.WorkflowSubmitted("wf-1", {**SPEC, "output": OTHERS}, {}, AT, "A"),
    ev.SignalSent("wf-1", "go", AT, fields={"doc": OTHERS})])
def test_a_tenant_token_may_not_pass_a_reference_on_kafka(
        auth: tuple[Authenticator, dict[str, str]], record: Any) -> None:
    # the gateway takes a reference only when a run of the submitter's tenant refers to
    # its blob; on Kafka nothing can check that, and the run's worker would resolve it
    fault = producer_fault(auth[0], headers(auth[1]["A-submit"]), record, run_of("A"))
    assert fault is not None and fault.startswith("forbidden: ") and "sha256:abab" in fault
    # the gateway's records (its token is for every tenant) carry the references it checked
    assert producer_fault(auth[0], headers(auth[1]["*-submit"]), record, run_of("A")) is None


def test_a_tenant_token_passes_values_that_only_look_like_references(
        auth: tuple[Authenticator, dict[str, str]]) -> None:
    plain = ev.WorkflowSubmitted("wf-1", SPEC, {"doc": {"$blob": "mine", "bytes": 1}}, AT, "A")
    assert producer_fault(auth[0], headers(auth[1]["A-submit"]), plain, None) is None

"""Workers' announcements (``services.worker.announce``): the Avro record, liveness, and
each worker's last record as compaction keeps it."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace

import fastavro
import orjson
import pytest
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from headwater import announcement, codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.worker.announce import (
    LIVE_INTERVALS,
    Announcer,
    WorkerAnnounced,
    decode_announcement,
    encode_announcement,
    is_live,
    latest,
    package_version,
    serving_at,
)
from services.worker.settings import Settings

AT = 1_722_000_000_000
RECORD = WorkerAnnounced("host-1-42", "gpu", ("embed", "ränk"), 4, 2, "0.1.0", "host-1", 42,
                         AT - 60_000, AT, 5000)


def test_round_trip_and_tombstone() -> None:
    assert decode_announcement(encode_announcement(RECORD)) == RECORD
    stopping = replace(RECORD, stopping=True, tasks=())
    assert decode_announcement(encode_announcement(stopping)) == stopping
    assert decode_announcement(None) is None


def test_header_is_the_crc64_fingerprint_of_the_schema_file() -> None:
    doc = orjson.loads((codec.schema_dir() / "WorkerAnnounced.avsc").read_bytes())
    canonical = to_parsing_canonical_form(parse_schema(doc, _write_hint=False))
    expected = b"\xc3\x01" + bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    assert encode_announcement(RECORD)[:codec.HEADER_SIZE] == expected


def test_the_record_is_headwaters_and_the_codecs() -> None:
    assert WorkerAnnounced is announcement.WorkerAnnounced
    assert encode_announcement(RECORD) == codec.encode(RECORD)
    assert codec.decode(encode_announcement(RECORD)) == RECORD


@pytest.mark.parametrize(("data", "message"), [
    (b"", "no C3 01 marker"), (b"garbage", "no C3 01 marker"),
    (codec.encode(ev.TimerFired("wf", "t", AT)), "a TimerFired record, not a WorkerAnnounced"),
    (codec.fingerprint_header("DefinitionHead") + b"\x00",
     "a DefinitionHead record, not a WorkerAnnounced"),
    (encode_announcement(RECORD)[:-3], "bad WorkerAnnounced body"),
    (encode_announcement(RECORD) + b"\x00", "1 trailing bytes after WorkerAnnounced")])
def test_decode_refuses_what_is_not_an_announcement(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_announcement(data)


def test_a_field_beyond_an_avro_int_does_not_encode() -> None:
    with pytest.raises(ValueError, match="pid: 4294967296 is beyond an Avro int"):
        encode_announcement(replace(RECORD, pid=2**32))


def test_a_body_from_another_avro_writer_decodes_and_a_truncated_one_is_refused() -> None:
    doc = orjson.loads((codec.schema_dir() / "WorkerAnnounced.avsc").read_bytes())
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parse_schema(doc), {**RECORD.__dict__,
                                                        "tasks": list(RECORD.tasks)})
    body = codec.fingerprint_header("WorkerAnnounced") + buf.getvalue()
    assert decode_announcement(body) == RECORD
    with pytest.raises(DecodeError, match="bad WorkerAnnounced body"):
        decode_announcement(body[:-1])


def test_live_for_three_intervals_and_never_while_stopping() -> None:
    window = LIVE_INTERVALS * RECORD.interval_ms
    assert is_live(RECORD, AT, AT + window - 1)
    assert not is_live(RECORD, AT, AT + window)
    assert not is_live(replace(RECORD, stopping=True), AT, AT)


def test_latest_keeps_each_workers_last_record_and_forgets_tombstoned_ones() -> None:
    other = replace(RECORD, worker_id="w2", queue="cpu", tasks=("t",))
    newer = replace(RECORD, in_flight=4, at_ms=AT + 5000)
    pairs = [(b"host-1-42", encode_announcement(RECORD)), (b"w2", encode_announcement(other)),
             (b"bad", b"garbage"), (b"host-1-42", encode_announcement(newer)), (b"w2", None)]
    assert latest(pairs) == {"host-1-42": newer}


def test_serving_judges_each_worker_by_its_own_time_never_later_than_now() -> None:
    old = replace(RECORD, worker_id="old", queue="cpu", at_ms=AT - 60_000)
    ahead = replace(RECORD, worker_id="ahead", queue="io", tasks=("x",), at_ms=AT + 10**9)
    found = {r.worker_id: r for r in (RECORD, old, ahead)}
    assert serving_at(found, AT + 1000) == {"gpu": {"embed", "ränk"}, "io": {"x"}}


def test_the_version_is_the_installed_packages() -> None:
    import importlib.metadata

    assert package_version() == importlib.metadata.version("headwater")


class FakeProducer:
    """Records ``(key, decoded value)`` of each record sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, WorkerAnnounced | None]] = []
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True

    async def send_and_wait(self, topic: str, value: bytes | None, key: bytes,
                            headers: object = None) -> None:
        assert topic == "p.workers"
        self.sent.append((key, decode_announcement(value)))


async def test_announcer_at_start_every_interval_at_once_when_stopping_then_tombstone() -> None:
    settings = Settings(prefix="p", worker_id="w-1", queue="gpu", concurrency=3,
                        announce_s=0.05)
    running = [0]
    announcer = Announcer(settings, ["b", "a"], lambda: running[0])
    producer = FakeProducer()
    announcer.producer = producer  # type: ignore[assignment]
    async with announcer:
        assert len(producer.sent) == 1  # sent before serving begins
        running[0] = 2
        await asyncio.sleep(0.18)
        announcer.mark_stopping()
        await asyncio.sleep(0.01)
        assert producer.sent[-1][1] is not None and producer.sent[-1][1].stopping
    keys = {k for k, _ in producer.sent}
    records = [r for _, r in producer.sent]
    assert keys == {b"w-1"} and records[-1] is None and producer.stopped
    first = records[0]
    assert first is not None and (first.queue, first.tasks, first.concurrency) == (
        "gpu", ("a", "b"), 3)
    assert first.interval_ms == 50 and first.in_flight == 0 and not first.stopping
    assert any(r is not None and r.in_flight == 2 and not r.stopping for r in records[1:])
    assert records[-2] is not None and records[-2].stopping

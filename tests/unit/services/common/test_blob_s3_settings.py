"""The S3 blob store's settings (``HEADWATER_BLOB_STORE=s3``, ``HEADWATER_S3_*``) and its
object keys, with no server: what is read, the defaults, and a bad value refused when a
service starts with a message naming the variable (never the secret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.blobs import claims
from services.common.blobs.s3 import S3Settings, object_key, s3_settings_from_env

DIGEST = "sha256:" + "ab" * 32


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BLOB_STORE", "S3_ENDPOINT", "S3_BUCKET", "S3_REGION", "S3_PREFIX",
                 "S3_ACCESS_KEY", "S3_ACCESS_KEY_FILE", "S3_SECRET_KEY", "S3_SECRET_KEY_FILE"):
        monkeypatch.delenv(f"HEADWATER_{name}", raising=False)


def test_postgresql_is_the_default_store(monkeypatch: pytest.MonkeyPatch) -> None:
    assert claims.store_from_env() is None
    monkeypatch.setenv("HEADWATER_BLOB_STORE", " PostgreSQL ")
    assert claims.store_from_env() is None


def test_s3_reads_its_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t\n")
    monkeypatch.setenv("HEADWATER_BLOB_STORE", "s3")
    monkeypatch.setenv("HEADWATER_S3_ENDPOINT", "http://127.0.0.1:18333")
    monkeypatch.setenv("HEADWATER_S3_BUCKET", "payloads")
    monkeypatch.setenv("HEADWATER_S3_REGION", "eu-west-1")
    monkeypatch.setenv("HEADWATER_S3_PREFIX", "prod/blobs/")
    monkeypatch.setenv("HEADWATER_S3_ACCESS_KEY", "AKIA1")
    monkeypatch.setenv("HEADWATER_S3_SECRET_KEY_FILE", str(secret))
    got = claims.store_from_env()
    assert got == S3Settings("http://127.0.0.1:18333", "payloads", "eu-west-1", "prod/blobs/",
                             "AKIA1", "s3cr3t")
    assert "s3cr3t" not in repr(got) and "AKIA1" not in repr(got)


def test_s3_defaults_are_aws_with_botocores_own_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_BLOB_STORE", "s3")
    assert claims.store_from_env() == S3Settings(None, "headwater", "us-east-1", "blobs/",
                                                 None, None)


@pytest.mark.parametrize(("name", "value", "named"), [
    ("BLOB_STORE", "minio", "HEADWATER_BLOB_STORE='minio': postgresql or s3"),
    ("S3_ENDPOINT", "127.0.0.1:8333", "HEADWATER_S3_ENDPOINT must be an http"),
    ("S3_ENDPOINT", "ftp://host", "HEADWATER_S3_ENDPOINT must be an http"),
    ("S3_ENDPOINT", "http://host/bucket", "HEADWATER_S3_ENDPOINT must be an http"),
    ("S3_BUCKET", "My_Bucket", "HEADWATER_S3_BUCKET must be a bucket name"),
    ("S3_BUCKET", "ab", "HEADWATER_S3_BUCKET must be a bucket name"),
    ("S3_BUCKET", "a..b", "HEADWATER_S3_BUCKET must be a bucket name"),
    ("S3_REGION", "EU West", "HEADWATER_S3_REGION must be a region name"),
    ("S3_PREFIX", "blobs\\", "HEADWATER_S3_PREFIX may hold only"),
    ("S3_ACCESS_KEY", "AKIA1", "HEADWATER_S3_ACCESS_KEY is set but HEADWATER_S3_SECRET_KEY"),
    ("S3_SECRET_KEY", "hush", "HEADWATER_S3_SECRET_KEY is set but HEADWATER_S3_ACCESS_KEY"),
    ("S3_SECRET_KEY_FILE", "/nonexistent/key", "HEADWATER_S3_SECRET_KEY_FILE names"),
])
def test_a_bad_setting_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, name: str,
                                            value: str, named: str) -> None:
    if name != "BLOB_STORE":
        monkeypatch.setenv("HEADWATER_BLOB_STORE", "s3")
    monkeypatch.setenv(f"HEADWATER_{name}", value)
    with pytest.raises(ValueError) as refused:
        claims.store_from_env()
    assert named in str(refused.value)
    assert "hush" not in str(refused.value)


def test_a_key_and_its_file_are_not_both_taken(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    (tmp_path / "k").write_text("x")
    monkeypatch.setenv("HEADWATER_S3_ACCESS_KEY", "a")
    monkeypatch.setenv("HEADWATER_S3_ACCESS_KEY_FILE", str(tmp_path / "k"))
    with pytest.raises(ValueError, match="set HEADWATER_S3_ACCESS_KEY or "
                                         "HEADWATER_S3_ACCESS_KEY_FILE, not both"):
        s3_settings_from_env()


def test_the_services_refuse_a_bad_store_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Claims.from_settings`` (the worker's) reads the store's settings at once, not at
    the first large value."""
    from services.common.settings import CommonSettings

    monkeypatch.setenv("HEADWATER_BLOB_STORE", "s3")
    monkeypatch.setenv("HEADWATER_S3_BUCKET", "Bad Bucket")
    with pytest.raises(ValueError, match="HEADWATER_S3_BUCKET"):
        claims.Claims.from_settings(CommonSettings())


def test_an_object_key_is_the_prefix_and_the_digest() -> None:
    assert object_key("blobs/", DIGEST) == f"blobs/{DIGEST}"
    assert object_key("", DIGEST) == DIGEST
    for bad in ("sha256:12", "../etc/passwd", f"{DIGEST}/x", DIGEST.upper()):
        with pytest.raises(ValueError, match="not a blob's digest"):
            object_key("blobs/", bad)

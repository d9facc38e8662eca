"""``services.common.kafka.security``: what a ``KafkaSecurity`` refuses, and the keyword
arguments aiokafka's clients and faust are built with."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import faust
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from services.common.kafka.security import (
    KafkaSecurity,
    aiokafka_security,
    faust_credentials,
    raise_if_refused,
)

SASL = {"sasl_mechanism": "PLAIN", "sasl_username": "svc", "sasl_password": "s3cret-pw"}


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed certificate and its key (``openssl req -x509``), as PEM files."""
    if shutil.which("openssl") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("needs the openssl command", pytrace=False)
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("pem")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return {"cert": str(cert), "key": str(key)}


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"protocol": "TLS"}, "HEADWATER_KAFKA_SECURITY_PROTOCOL"),
    ({"protocol": "sasl_ssl"}, "HEADWATER_KAFKA_SECURITY_PROTOCOL"),
    ({"protocol": "SASL_PLAINTEXT", **SASL, "sasl_mechanism": None},
     "HEADWATER_KAFKA_SASL_MECHANISM must be set"),
    ({"protocol": "SASL_PLAINTEXT", **SASL, "sasl_mechanism": "GSSAPI"},
     "HEADWATER_KAFKA_SASL_MECHANISM must be one of"),
    ({"protocol": "SASL_SSL", **SASL, "sasl_username": None},
     "HEADWATER_KAFKA_SASL_USERNAME must be set"),
    ({"protocol": "SASL_SSL", **SASL, "sasl_password": ""},
     "HEADWATER_KAFKA_SASL_PASSWORD or HEADWATER_KAFKA_SASL_PASSWORD_FILE"),
    ({"sasl_mechanism": "PLAIN"}, "HEADWATER_KAFKA_SASL_MECHANISM is set but"),
    ({"protocol": "SSL", "sasl_username": "svc"}, "HEADWATER_KAFKA_SASL_USERNAME is set but"),
    ({"sasl_password": "s3cret-pw"}, "HEADWATER_KAFKA_SASL_PASSWORD is set but"),
    ({"protocol": "SSL", "ssl_cafile": "/no/such/ca.pem"}, "HEADWATER_KAFKA_SSL_CAFILE names"),
    ({"protocol": "SASL_SSL", **SASL, "ssl_certfile": "/no/such.pem"},
     "HEADWATER_KAFKA_SSL_CERTFILE names"),
])
def test_bad_combinations_name_the_variable(kwargs: dict[str, str | None], named: str) -> None:
    with pytest.raises(ValueError, match=named) as caught:
        KafkaSecurity(**kwargs)  # type: ignore[arg-type]
    assert "s3cret-pw" not in str(caught.value)


def test_tls_files_need_a_tls_protocol_and_a_key_needs_its_certificate(
        pem: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"HEADWATER_KAFKA_SSL_CAFILE is set but .* PLAINTEXT"):
        KafkaSecurity(ssl_cafile=pem["cert"])
    with pytest.raises(ValueError, match="HEADWATER_KAFKA_SSL_KEYFILE is set without"):
        KafkaSecurity("SSL", ssl_keyfile=pem["key"])
    # A certificate whose key is in the same file needs no key file.
    KafkaSecurity("SSL", ssl_certfile=pem["cert"])


def test_a_directory_is_not_a_readable_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"HEADWATER_KAFKA_SSL_CAFILE names .* not a readable"):
        KafkaSecurity("SSL", ssl_cafile=str(tmp_path))


def test_the_password_is_not_in_the_repr() -> None:
    security = KafkaSecurity("SASL_PLAINTEXT", **SASL)
    assert "s3cret-pw" not in repr(security)
    assert "svc" in repr(security)


def test_plaintext_is_the_default_and_adds_nothing_else() -> None:
    assert aiokafka_security(KafkaSecurity()) == {"security_protocol": "PLAINTEXT"}
    assert faust_credentials(KafkaSecurity()) is None


def test_sasl_plaintext_gives_aiokafkas_sasl_arguments_and_no_tls() -> None:
    kwargs = aiokafka_security(KafkaSecurity("SASL_PLAINTEXT", "SCRAM-SHA-256", "svc", "pw"))
    assert kwargs == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
                      "sasl_plain_username": "svc", "sasl_plain_password": "pw"}


def test_ssl_gives_a_verifying_context_with_the_client_certificate(pem: dict[str, str]) -> None:
    security = KafkaSecurity("SSL", ssl_cafile=pem["cert"], ssl_certfile=pem["cert"],
                             ssl_keyfile=pem["key"])
    kwargs = aiokafka_security(security)
    assert set(kwargs) == {"security_protocol", "ssl_context"}
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "localhost"),),)]
    # One context per set of files, however many clients are built.
    assert aiokafka_security(security)["ssl_context"] is context


def test_a_file_that_is_not_pem_fails_naming_the_variables(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    security = KafkaSecurity("SSL", ssl_cafile=str(bogus))
    with pytest.raises(ValueError, match="cannot load the TLS files of HEADWATER_KAFKA_SSL_CAFILE"):
        aiokafka_security(security)


def test_a_key_that_does_not_match_fails(pem: dict[str, str], tmp_path: Path) -> None:
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
                    "-out", str(other)], check=True, capture_output=True, timeout=60)
    security = KafkaSecurity("SSL", ssl_certfile=pem["cert"], ssl_keyfile=str(other))
    with pytest.raises(ValueError,
                       match="HEADWATER_KAFKA_SSL_CERTFILE, HEADWATER_KAFKA_SSL_KEYFILE"):
        aiokafka_security(security)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_faust_credentials_mean_what_the_aiokafka_arguments_mean(
        protocol: str, pem: dict[str, str]) -> None:
    """faust turns its credentials into aiokafka's arguments itself: they must be ours."""
    sasl = SASL if protocol.startswith("SASL") else {}
    tls = {"ssl_cafile": pem["cert"]} if "SSL" in protocol else {}
    security = KafkaSecurity(protocol, **sasl, **tls)  # type: ignore[arg-type]
    theirs = credentials_to_aiokafka_auth(faust_credentials(security))
    ours = aiokafka_security(security)
    assert {k: v for k, v in theirs.items() if v is not None} == ours


def test_faust_gets_sasl_or_ssl_credentials(pem: dict[str, str]) -> None:
    sasl_ssl = faust_credentials(KafkaSecurity("SASL_SSL", **{**SASL, "sasl_mechanism":
                                                               "SCRAM-SHA-512"},
                                               ssl_cafile=pem["cert"]))
    assert isinstance(sasl_ssl, faust.SASLCredentials)
    assert (sasl_ssl.protocol.value, sasl_ssl.mechanism.value) == ("SASL_SSL", "SCRAM-SHA-512")
    assert isinstance(faust_credentials(KafkaSecurity("SSL")), faust.SSLCredentials)


async def test_every_client_takes_the_arguments(pem: dict[str, str]) -> None:
    """aiokafka refuses unknown or inconsistent arguments when a client is built."""
    for security in (KafkaSecurity(), KafkaSecurity("SASL_PLAINTEXT", **SASL),  # type: ignore[arg-type]
                     KafkaSecurity("SASL_SSL", **SASL, ssl_cafile=pem["cert"])):  # type: ignore[arg-type]
        kwargs = aiokafka_security(security)
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", **kwargs)
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **kwargs)
        admin = AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1", **kwargs)
        assert producer.client._security_protocol == security.protocol
        assert consumer._client._security_protocol == security.protocol
        assert admin._client._security_protocol == security.protocol


async def test_an_unreachable_broker_is_not_a_refusal() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        await raise_if_refused(f"127.0.0.1:{port}", KafkaSecurity("SASL_PLAINTEXT", **SASL),  # type: ignore[arg-type]
                               timeout_s=2)

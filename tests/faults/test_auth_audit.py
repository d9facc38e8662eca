"""The auth checks of the fault runs (``faultsuite.auth``) on keys and records made up
here: the keys file admits the services' token for every tenant and the suite's for its
tenant alone; a submission dead-lettered for its token and a run of another tenant are
violations, other dead letters only figures. No services needed."""

from __future__ import annotations

import os
from pathlib import Path

from faultsuite.auth import (
    TENANT,
    auth_faults,
    client_headers,
    client_token,
    dead_letter_reasons,
    keys_in,
    submission_tokens,
)
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.topics import REASON_HEADER
from services.common.auth.tokens import Authenticator, KeysFile


def _dead(reason: str | None) -> Record:
    headers = ((REASON_HEADER, reason.encode()),) if reason is not None else ()
    return Record(0, 0, "wf", None, b"", headers)


def test_the_keys_admit_the_services_for_every_tenant_and_the_suite_for_its_own(
        tmp_path: Path) -> None:
    keys = keys_in(tmp_path)
    auth = Authenticator(KeysFile(keys.keys_file), None)
    services = auth.token(keys.service_token)
    suite = auth.token(keys.client_token)
    assert (services.every_tenant, services.role) == (True, "submit")
    assert (suite.tenant, suite.role) == (TENANT, "admin")
    assert keys.env()["HEADWATER_TOKEN"] == keys.service_token
    assert keys.client_token not in keys.keys_file.read_text()  # hashes only


def test_the_suite_token_is_sent_only_inside_the_block(tmp_path: Path) -> None:
    before = os.environ.get("HEADWATER_TOKEN")
    keys = keys_in(tmp_path)
    with client_token(keys.client_token):
        assert client_headers() == {"Authorization": f"Bearer {keys.client_token}"}
    assert os.environ.get("HEADWATER_TOKEN") == before


def test_a_submission_refused_for_its_token_is_a_violation() -> None:
    reasons = dead_letter_reasons([
        _dead("unauthenticated: the record has no authorization header; ..."),
        _dead("decode: not Avro"), _dead(None)])
    assert reasons == {"unauthenticated": 1, "decode": 1, "none": 1}
    assert auth_faults(reasons, {}, TENANT) == [
        "1 submissions dead-lettered as unauthenticated (for their token)"]


def test_a_run_of_another_tenant_is_a_violation_only_with_auth_on() -> None:
    tenants = {"fb-chain-000": TENANT, "fb-child-001:c:0": None}
    assert auth_faults({}, tenants, TENANT) == [
        f"fb-child-001:c:0: runs as tenant None, not the suite's {TENANT!r}"]
    assert auth_faults({}, tenants, None) == []


def test_a_submission_without_a_token_is_a_violation_only_with_auth_on() -> None:
    child = ev.ChildSubmitted("c", "p", "n", None, 1, {}, None, 0, TENANT)
    tokens = submission_tokens([
        Record(0, 0, "c", child, b"", (("Authorization", b"Bearer x"),)),
        Record(0, 1, "c", child, b"", ())])
    assert tokens == {"ChildSubmitted with token": 1, "ChildSubmitted without token": 1}
    assert auth_faults({}, {}, TENANT, tokens) == [
        "1 records on the submissions topic: ChildSubmitted without token"]
    assert auth_faults({}, {}, None, tokens) == []

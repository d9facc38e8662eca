"""The gateway answers while Kafka and PostgreSQL are unreachable: alive, not ready."""

from __future__ import annotations

from fastapi.testclient import TestClient

from services.gateway.app import create_app
from services.gateway.settings import Settings

UNREACHABLE = Settings(bootstrap="127.0.0.1:9", pg_dsn="postgresql://postgres@127.0.0.1:9/x")


def test_health_is_200_and_ready_is_503_problem_until_connected() -> None:
    with TestClient(create_app(UNREACHABLE)) as client:
        assert client.get("/health").status_code == 200
        for path in ("/ready", "/v1/workflows/x", "/v1/workflows"):
            response = client.get(path)
            assert response.status_code == 503, path
            assert response.headers["content-type"] == "application/problem+json"
            assert response.headers["retry-after"] == "1"
            assert response.json()["title"] == "Not ready"

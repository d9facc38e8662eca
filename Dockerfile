# Headwater services image (coordinator, gateway, worker); see infra/docker-compose.yml.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # The Avro schemas are not part of the installed package; point at the copy.
    HEADWATER_SCHEMA_DIR=/app/schemas/avro

WORKDIR /app
COPY . .
# [examples]: the demo worker runs examples.stdlib_search (needs rank-bm25).
RUN pip install ".[examples]"

# Non-root at runtime.
RUN useradd --system --uid 10001 headwater
USER headwater

# Each compose service passes its own `python -m services.<name> ...` command.
CMD ["python", "-m", "services.coordinator"]

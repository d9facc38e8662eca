# Headwater services image: one image; by default one process runs everything:
#   headwater serve --queue Q --tasks M             the gateway, a coordinator, the
#                                                   projector and the workers of the named
#                                                   queues (services/serve/app.py); API on
#                                                   :8080, /health and /ready on :9180
# or one process per container, chosen by the command:
#   python -m services.gateway                      HTTP API on :8080 (/health, /ready)
#   python -m services.coordinator                  faust app; state under HEADWATER_DATA_DIR
#   python -m services.projector                    events -> PostgreSQL (coordinator with
#                                                   HEADWATER_PROJECTION=off)
#   python -m services.worker --queue Q --tasks M   one worker pool (queue)
# infra/docker-compose.small.yml runs `headwater serve` beside Kafka and PostgreSQL (the
# small deployment); infra/docker-compose.yml runs each service apart; infra/k8s/ has the
# Kubernetes manifests. The services without HTTP answer /health and /ready beside
# /metrics on their metrics port (HEADWATER_METRICS_PORT).
# Build from the repository root: docker build -t headwater:local .
# Task code of your own: build FROM this image, pip install your package, and name its
# module in the worker's --tasks.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A virtual environment, copied whole into the runtime stage (same base image, so its
# interpreter links stay valid); no build tools or sources reach the runtime image.
RUN python -m venv /opt/headwater
WORKDIR /src
COPY pyproject.toml README.md ./
COPY headwater headwater
COPY services services
COPY ops ops
COPY examples examples
# [examples]: the demo workers import examples.stdlib_search.tasks (rank-bm25) and
# examples.hybrid.tasks (python-debian).
RUN /opt/headwater/bin/pip install ".[examples]"

FROM ${PYTHON_IMAGE}
# HEADWATER_SCHEMA_DIR: the Avro schemas are not part of the installed package.
# HEADWATER_DATA_DIR: the coordinator's faust data directory; HEADWATER_HOME: other local
# state (the CLI's and the examples'); both on the one writable directory, /data.
# HEADWATER_GATEWAY_HOST: in a container the gateway listens on every interface.
ENV PATH=/opt/headwater/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HEADWATER_SCHEMA_DIR=/opt/headwater/schemas/avro \
    HEADWATER_DATA_DIR=/data/coordinator \
    HEADWATER_HOME=/data \
    HEADWATER_GATEWAY_HOST=0.0.0.0 \
    HEADWATER_GATEWAY_PORT=8080

# Non-root at runtime, with a numeric uid and gid (so Kubernetes' runAsNonRoot can check
# it), owning the data directory. A named volume or an emptyDir mounted on /data starts
# with this ownership (Docker copies it from the image; Kubernetes applies fsGroup).
RUN groupadd --system --gid 10001 headwater \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin headwater \
 && install -d -m 0770 -o 10001 -g 10001 /data /data/coordinator

COPY --from=build /opt/headwater /opt/headwater
COPY schemas/avro /opt/headwater/schemas/avro

WORKDIR /data
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8080
# The small deployment's one process (the example's tasks on queue cpu); each compose
# service and Kubernetes Deployment of the full stack passes its own command.
CMD ["headwater", "serve", "--queue", "cpu", "--tasks", "examples.stdlib_search.tasks"]

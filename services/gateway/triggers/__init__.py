"""Kafka topics as triggers: ``PUT/GET/DELETE /v1/triggers/{name}`` and the consumers
that turn each record of a trigger's topic into one run of its definition."""

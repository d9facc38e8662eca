"""Kafka for every service: clients, topics and broker checks (``client``) and the
SASL/TLS settings they connect with (``security``)."""

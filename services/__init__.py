"""Headwater's services: coordinator, gateway and worker, plus what they share."""

"""Schedules: their routes, generations and reads."""

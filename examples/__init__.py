"""Example workflows for Headwater."""

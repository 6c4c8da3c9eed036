"""Prefect flows: wiring only. Each builds the settings once and calls tasks."""

"""Scheduling: pipelines, the coordinator, workers."""

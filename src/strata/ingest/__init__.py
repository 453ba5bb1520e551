"""Ingestion with truth maintenance: extract -> gate -> conflict -> persist."""

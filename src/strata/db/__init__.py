"""Database access: one pool per process, transactions that carry history context."""

from strata.db.pool import Database, get_database, translate_errors

__all__ = ["Database", "get_database", "translate_errors"]

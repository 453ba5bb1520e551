from strata.api.routes import access, audit, health, ingest, memories, review, search

__all__ = ["access", "audit", "health", "ingest", "memories", "review", "search"]

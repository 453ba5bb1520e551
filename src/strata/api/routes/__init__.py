from strata.api.routes import access, audit, health, memories

__all__ = ["access", "audit", "health", "memories"]

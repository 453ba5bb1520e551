"""strata: a memory engine for AI agents that knows which of its memories are still true."""

__version__ = "0.1.0"

"""Lifecycle: memory strength (decay) and the scheduled job that promotes, expires, archives
and sweeps (see :mod:`strata.lifecycle.run`).

The job is imported on first use: its statements live in the write path
(:mod:`strata.write.lifecycle`), which needs :mod:`.decay` from this package.
"""

from strata.lifecycle.decay import strength

__all__ = ["LifecycleRun", "run_lifecycle", "strength"]


def __getattr__(name: str):
    if name in ("LifecycleRun", "run_lifecycle"):
        from strata.lifecycle import run

        return getattr(run, name)
    raise AttributeError(f"module 'strata.lifecycle' has no attribute {name!r}")

"""Lifecycle: memory strength (decay) and the scheduled job that promotes, expires, archives
and sweeps (see :mod:`strata.lifecycle.run`)."""

from strata.lifecycle.decay import strength
from strata.lifecycle.run import LifecycleRun, run_lifecycle

__all__ = ["LifecycleRun", "run_lifecycle", "strength"]

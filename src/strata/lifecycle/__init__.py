"""Lifecycle: the scheduled job that promotes, expires, archives and sweeps (see
:mod:`strata.lifecycle.run`); memory strength is :mod:`strata.decay`, a pure leaf module,
since the archival rule in :mod:`strata.write.lifecycle` uses it too."""

from strata.decay import strength
from strata.lifecycle.run import LifecycleRun, run_lifecycle

__all__ = ["LifecycleRun", "run_lifecycle", "strength"]

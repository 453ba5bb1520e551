"""Maintenance of a store as a whole: the scheduled lifecycle job that promotes, expires,
archives and sweeps (``lifecycle``), re-embedding every vector (``reindex``), and a tenant's
export and import (``transfer``). Memory strength is :mod:`strata.write.decay`, since the
archival rule in :mod:`strata.write.lifecycle` uses it too."""

"""A Lambda function's init without the cyclic garbage collector, and what it built frozen.

Every ``functions/*/handler.py`` calls :func:`begin` before its first heavy import and
:func:`end` as its last statement. Importing a function's code allocates some 100,000
container objects (modules, classes, pydantic schemas, FastAPI routes) that live as long as
the process, and CPython's collector, run every 700 net allocations, walks them again and
again: an API function's import here ran ~155 collections, one of them full, 40-70 ms of a
~450 ms import (the MCP function: ~265, two full, ~140 ms of ~1.1 s), and between them they
found ~800 unreachable objects.

:func:`begin` turns the collector off; :func:`end` moves everything alive into the permanent
generation (``gc.freeze``) and turns it back on, so the collections that follow, during
requests, never walk init's objects either: the work is gone, not postponed. The price: the
few hundred cyclic garbage objects init left are never freed (peak memory unchanged, 54 MB
for an API function). If init raises between the two, the collector stays off in a process
that can only answer with the init error.

Only where ``LAMBDA_TASK_ROOT`` is set (the Lambda runtime sets it): tests and the local
server import the same handlers in long-lived processes whose garbage must stay collectable.
"""

from __future__ import annotations

import gc
import os

_paused = False


def begin() -> None:
    """Turn the cyclic collector off for the rest of init (on Lambda, and if it was on)."""
    global _paused
    if os.environ.get("LAMBDA_TASK_ROOT") and gc.isenabled():
        gc.disable()
        _paused = True


def end() -> None:
    """Freeze what init built and turn the collector back on, if :func:`begin` turned it off."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False

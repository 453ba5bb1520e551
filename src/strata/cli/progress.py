"""Progress bars for long CLI operations (import, reindex, eval, lifecycle): drawn on stderr
when it is a terminal, silent when it is piped or redirected (tqdm's ``disable=None``), so
scripts reading the JSON report on stdout never see them."""

from __future__ import annotations

import sys
from typing import Any


def bar(desc: str, total: int | None = None, unit: str = "row") -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None, file=sys.stderr, leave=False,
                dynamic_ncols=True)

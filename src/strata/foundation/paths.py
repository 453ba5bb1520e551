"""Paths are ltree values (``users.alice``, ``shared.project_x``); the empty path is the
tenant root. These pure helpers mirror ltree's ``<@`` so a decision made in Python and one
made in SQL agree."""

from __future__ import annotations

import re

from strata.foundation.errors import InvalidInput
from strata.foundation.fields import MAX_PATH_LEN, PATH_PATTERN  # the API's schema states the same

_PATH = re.compile(PATH_PATTERN)


def validate_path(value: str, *, field: str = "path", allow_root: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput("path must be a string", field=field)
    if value == "" and allow_root:
        return value
    if len(value) > MAX_PATH_LEN or not _PATH.fullmatch(value):
        raise InvalidInput(
            "path must be dot-separated labels of letters, digits, '_' or '-' (e.g. users.alice)",
            field=field,
        )
    return value


def is_within(path: str, ancestor: str) -> bool:
    """``path <@ ancestor``: path equals ancestor or lies in its subtree."""
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")

"""Search's ``meta`` filter: equality by containment, and comparison operators per key.

``{"team": "core"}`` keeps memories whose meta holds ``team: "core"`` (``meta @> filter``: a
nested object matches when the stored one contains it). A key whose value is an object made
*only* of operator names is a condition instead::

    {"priority": {"gte": 2, "lt": 5}, "team": {"in": ["core", "infra"]}, "draft": {"exists": false}}

Operators: ``eq`` / ``ne`` (any JSON value; ``ne`` also keeps memories without the key),
``gt`` / ``gte`` / ``lt`` / ``lte`` (a number or a string: a stored value of another type
never matches -- "10" is not greater than 9, true is not a number), ``in`` (a non-empty list
of scalars; a stored value equal to one of them), ``exists`` (true or false). Conditions on
several keys, and several operators on one key, must all hold. An object mixing operator
names with other keys, an unknown operator or a value of the wrong type is a 422 naming
``meta.<key>``: a filter that cannot mean what it says is refused, never silently empty.
Conditions apply to top-level keys.

:func:`split` turns a request's ``meta`` into the containment object and the conditions;
:data:`CONDITIONS_SQL` evaluates the conditions (a JSON list, one bound parameter) against
``m.meta`` inside the search statement's WHERE, so they filter before ranking and LIMIT.
"""

from __future__ import annotations

from typing import Any

from strata.foundation.errors import InvalidInput

__all__ = ["CONDITIONS_SQL", "OPERATORS", "split"]

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "exists")
_ORDERED = ("gt", "gte", "lt", "lte")
MAX_IN = 100

# One row per condition; the memory passes when none fails. A comparison first requires the
# same JSON type: jsonb orders across types (a boolean sorts above every number). Each operand
# travels wrapped in a one-element array (see split): jsonb_to_recordset reads a JSON null
# field as SQL NULL, which equals nothing, while ``[null] -> 0`` is the JSON null itself.
CONDITIONS_SQL = """NOT EXISTS (
        SELECT 1 FROM (SELECT r.key, r.op, r.val -> 0 AS val
                       FROM jsonb_to_recordset(%(meta_ops)s::jsonb)
                         AS r(key text, op text, val jsonb)) c
        WHERE NOT coalesce(CASE c.op
            WHEN 'eq' THEN m.meta -> c.key = c.val
            WHEN 'ne' THEN (m.meta -> c.key) IS DISTINCT FROM c.val
            WHEN 'exists' THEN (m.meta ? c.key) = (c.val = 'true'::jsonb)
            WHEN 'in' THEN m.meta ? c.key AND c.val @> jsonb_build_array(m.meta -> c.key)
            ELSE jsonb_typeof(m.meta -> c.key) = jsonb_typeof(c.val) AND CASE c.op
                WHEN 'gt' THEN m.meta -> c.key > c.val
                WHEN 'gte' THEN m.meta -> c.key >= c.val
                WHEN 'lt' THEN m.meta -> c.key < c.val
                WHEN 'lte' THEN m.meta -> c.key <= c.val
            END
        END, false))"""


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_condition(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and any(k in OPERATORS for k in value)


def _check(key: str, op: str, value: Any) -> None:
    field = f"meta.{key}"
    if op in _ORDERED:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput(f"{op} compares with a number or a string", field=field)
    elif op == "in":
        if not isinstance(value, list) or not value:
            raise InvalidInput("in takes a non-empty list", field=field)
        if len(value) > MAX_IN:
            raise InvalidInput(f"in takes at most {MAX_IN} values", field=field)
        if not all(_scalar(v) for v in value):
            raise InvalidInput("in takes strings, numbers, booleans or null", field=field)
    elif op == "exists" and not isinstance(value, bool):
        raise InvalidInput("exists takes true or false", field=field)


def split(meta: dict[str, Any] | None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(containment, conditions)`` for a request's ``meta``: the keys to match by
    containment (or None), and one ``{"key", "op", "val": [operand]}`` per operator (the
    operand wrapped: see CONDITIONS_SQL)."""
    if not meta:
        return None, []
    contains: dict[str, Any] = {}
    conditions: list[dict[str, Any]] = []
    for key, value in meta.items():
        if not _is_condition(value):
            contains[key] = value
            continue
        unknown = [k for k in value if k not in OPERATORS]
        if unknown:
            raise InvalidInput(
                f"unknown operator {unknown[0]!r} (an object of operators takes only "
                f"{', '.join(OPERATORS)})", field=f"meta.{key}")
        for op, operand in value.items():
            _check(key, op, operand)
            conditions.append({"key": key, "op": op, "val": [operand]})
    return contains or None, conditions

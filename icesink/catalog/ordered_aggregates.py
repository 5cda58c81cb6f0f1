"""Postgres's aggregates that take their rows in an order, `string_agg(x, ',' ORDER BY y)` and
`array_agg(x ORDER BY y)`, which SQLite 3.40 cannot: collected, then sorted as Postgres sorts (NULLs last
ascending, first descending, unless said otherwise; numbers before text, as SQLite orders mixed values)."""
from __future__ import annotations

import json


def _sort_key(nulls_high: bool):
    """A key SQLite's values sort by (numbers before text before bytes); NULL above the rest when `nulls_high`."""
    def key(value):
        if value is None:
            return (nulls_high, 0, 0)
        return (not nulls_high, 0 if isinstance(value, (int, float)) else 1 if isinstance(value, str) else 2, value)
    return key


class OrderedAggregate:
    """icesink_ordered_agg(kind, distinct, spec, value, separator, key…): `kind` 'string' (NULL values skipped, joined
    by `separator`) or 'array' (JSON, NULLs kept); `spec` a letter pair per key, A or D then F or L (NULLs first or
    last); `distinct` keeps each value once (Postgres orders DISTINCT by the value itself). NULL over no rows."""

    def __init__(self):
        self.rows: list[tuple[tuple, object]] = []
        self.call = None

    def step(self, kind, distinct, spec, value, separator, *keys):
        self.call = kind, distinct, spec, separator
        if kind != "string" or value is not None:
            self.rows.append((keys, value))

    def finalize(self):
        if not self.rows:
            return None
        kind, distinct, spec, separator = self.call
        rows = self.rows
        # a stable sort per key, the last first: ties keep the order the later keys gave them
        for index, pair in reversed(list(enumerate(spec.split(",")))):
            descending, nulls_first = pair[0] == "D", pair[1] == "F"
            key = _sort_key(nulls_first == descending)  # sorted, then reversed when descending
            rows.sort(key=lambda row: key(row[0][index]), reverse=descending)
        values = [value for _, value in rows]
        if distinct:
            values = list(dict.fromkeys(values))
        if kind == "string":
            return (separator or "").join(str(v) for v in values)
        return json.dumps(values, separators=(",", ":"))

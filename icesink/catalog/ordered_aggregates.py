"""Postgres's aggregates that take their rows in an order, `string_agg(x, ',' ORDER BY y)` and
`array_agg(x ORDER BY y)`, which SQLite 3.40 cannot: collected, then sorted as Postgres sorts (NULLs last
ascending, first descending, unless said otherwise; numbers before text, as SQLite orders mixed values)."""
from __future__ import annotations

import json
from functools import cmp_to_key


def _rank(value) -> int:
    return 0 if isinstance(value, (int, float)) else 1 if isinstance(value, str) else 2


def _compare(a, b, descending: bool, nulls_first: bool) -> int:
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (1 if a is None else -1) * (-1 if nulls_first else 1)
    ranked = (_rank(a), a) if _rank(a) == _rank(b) else (_rank(a), 0)
    other = (_rank(b), b) if _rank(a) == _rank(b) else (_rank(b), 0)
    order = (ranked > other) - (ranked < other)
    return -order if descending else order


class OrderedAggregate:
    """icesink_ordered_agg(kind, distinct, spec, value, separator, key…): `kind` 'string' (NULL values skipped, joined
    by `separator`) or 'array' (JSON, NULLs kept); `spec` a letter pair per key, A or D then F or L (NULLs first or
    last); `distinct` keeps each value once (Postgres orders DISTINCT by the value itself). NULL over no rows."""

    def __init__(self):
        self.rows: list[tuple[tuple, object]] = []
        self.kind = self.spec = self.separator = None
        self.distinct = 0

    def step(self, kind, distinct, spec, value, separator, *keys):
        self.kind, self.distinct, self.spec, self.separator = kind, distinct, spec, separator
        if kind == "string" and value is None:
            return
        self.rows.append((keys, value))

    def finalize(self):
        if not self.rows:
            return None
        orders = [(pair[0] == "D", pair[1] == "F") for pair in self.spec.split(",")]

        def compare(a, b) -> int:
            for x, y, (descending, nulls_first) in zip(a[0], b[0], orders):
                found = _compare(x, y, descending, nulls_first)
                if found:
                    return found
            return 0
        values = [value for _, value in sorted(self.rows, key=cmp_to_key(compare))]
        if self.distinct:
            seen, kept = set(), []
            for value in values:
                if value not in seen:
                    seen.add(value)
                    kept.append(value)
            values = kept
        if self.kind == "string":
            return (self.separator or "").join(str(v) for v in values)
        return json.dumps(values, separators=(",", ":"))

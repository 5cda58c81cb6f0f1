"""LOAD GENERATOR TPCH's rows, computed a column at a time (numpy and Arrow), deterministic given the SCALE FACTOR.

As Materialize's generator does: tick 1 is the snapshot of all eight tables (row counts from the scale factor as in
TPC-H's dbgen: 10,000 suppliers, 200,000 parts, 150,000 customers and 1,500,000 orders per unit, at least one of
each, four partsupp rows per part, 1–7 lineitems per order, sparse order keys); then, with a TICK INTERVAL, each
tick replaces one order and its lineitems with new values under the same order key (a retraction of the old rows and
an insertion of the new). Materialize draws from one random stream; here a value is a hash of (column, key,
version), so any tick's rows are computed without the ticks before it: update u replaces order (A·u + B) mod
orders, its (u // orders + 1)-th version. Values follow dbgen's distributions, not its exact text.
"""
from __future__ import annotations

import hashlib
import math
import random
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SNAPSHOT_TICK = 1
ORDERS_PER_PART = 50_000  # orders per snapshot partition (lineitems: 1–7 each)
ROWS_PER_PART = 200_000  # rows per snapshot partition of the other tables
START_DAY = 8036  # 1992-01-01, days since 1970-01-01
CURRENT_DAY = 9298  # 1995-06-17: lineitems received by then are returned or accepted, shipped after it open
REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
NATIONS = (("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2),
           ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2),
           ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
           ("UNITED STATES", 1))
COLOURS = ("almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood burnished "
           "chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim dodger drab firebrick "
           "floral forest frosted gainsboro ghost goldenrod green grey honeydew hot indian ivory khaki lace "
           "lavender lawn lemon light lime linen magenta maroon medium metallic midnight mint misty moccasin navajo "
           "navy olive orange orchid pale papaya peach peru pink plum powder puff purple red rose rosy royal "
           "saddle salmon sandy seashell sienna sky slate smoke snow spring steel tan thistle tomato turquoise "
           "violet wheat white yellow").split()
TYPES = (("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"),
         ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"), ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER"))
CONTAINERS = (("SM", "LG", "MED", "JUMBO", "WRAP"), ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"))
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
INSTRUCTIONS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_WORDS = ("furiously", "quickly", "carefully", "blithely", "slyly", "final", "regular", "express", "pending",
          "ironic", "special", "bold", "even", "silent", "unusual", "packages", "deposits", "requests", "accounts",
          "instructions", "theodolites", "foxes", "pinto", "beans", "ideas", "dependencies", "platelets", "asymptotes",
          "courts", "dolphins", "sleep", "wake", "haggle", "nag", "use", "boost", "affix", "detect", "integrate",
          "above", "among", "across", "after", "along", "the", "about")


def counts(scale_factor: float) -> dict[str, int]:
    """Rows of each table with a key of its own (lineitem's follow from the orders)."""
    def scaled(per_unit: int) -> int:
        return max(1, math.floor(scale_factor * per_unit))
    return {"supplier": scaled(10_000), "part": scaled(200_000), "partsupp": 4 * scaled(200_000),
            "customer": scaled(150_000), "orders": scaled(1_500_000), "clerk": scaled(1_000), "nation": 25,
            "region": 5}


def _salt(name: str) -> np.uint64:
    return np.uint64(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big"))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit moves every output bit."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform(column: str, keys: np.ndarray, versions, low: int, high: int) -> np.ndarray:
    """A value in [low, high] for each (key, version), fixed by the column's name."""
    with np.errstate(over="ignore"):
        mixed = _mix(_mix(keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.asarray(versions, np.uint64))
                     ^ _salt(column))
    return (low + (mixed % np.uint64(high - low + 1)).astype(np.int64)).astype(np.int64)


def _pick(column: str, keys, versions, choices) -> pa.Array:
    return pa.array(choices).take(pa.array(uniform(column, keys, versions, 0, len(choices) - 1)))


@lru_cache(maxsize=None)
def _texts(low: int, high: int) -> pa.Array:
    """1,024 sentences of dbgen-like words, `low` to `high` characters long."""
    rng, found = random.Random(f"{low}-{high}"), []
    for _ in range(1024):
        target, words = rng.randint(low, high), []
        while len(" ".join(words)) < target:
            words.append(rng.choice(_WORDS))
        found.append(" ".join(words)[:target].rstrip() or "x")
    return pa.array(found)


def _text(column: str, keys, versions, low: int, high: int) -> pa.Array:
    return _texts(low, high).take(pa.array(uniform(column, keys, versions, 0, 1023)))


def _numbered(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.utf8_lpad(pc.cast(pa.array(numbers), pa.string()), 9, "0"), "")


def _joined(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*[p if isinstance(p, str) else pc.cast(p, pa.string()) for p in parts], "")


def _money(cents: np.ndarray) -> pa.Array:
    """numeric(15,2) from whole cents."""
    return pa.array(cents.astype(np.int64)).cast(pa.decimal128(19, 0)).view(pa.decimal128(19, 2))


def _date(days: np.ndarray) -> pa.Array:
    return pa.array(days.astype(np.int32), pa.date32())


def _phone(column: str, keys, nations: np.ndarray) -> pa.Array:
    return _joined(pa.array(nations + 10), "-", pa.array(uniform(column + "1", keys, 0, 100, 999)), "-",
                   pa.array(uniform(column + "2", keys, 0, 100, 999)), "-",
                   pa.array(uniform(column + "3", keys, 0, 1000, 9999)))


def suppkeys(parts: np.ndarray, r, suppliers: int) -> np.ndarray:
    """The r-th (0–3) supplier of each part: four different ones when there are at least four suppliers."""
    return (parts + r * max(1, suppliers // 4)) % suppliers + 1


def retail_cents(parts: np.ndarray) -> np.ndarray:
    return 90_000 + (parts // 10) % 20_001 + 100 * (parts % 1_000)


def order_key(index: np.ndarray) -> np.ndarray:
    """dbgen's sparse keys: of each 32 keys, the first 8 are used (1–7, 32–39, 64–71, …) for indexes from 1."""
    return ((index >> 3) << 5) + (index & 7)


def line_counts(index: np.ndarray, versions) -> np.ndarray:
    return uniform("o_lines", index, versions, 1, 7)


def _orders(index: np.ndarray, versions: np.ndarray, n: dict) -> tuple[dict, dict]:
    """Columns of the orders at these indexes (from 1) in these versions, and of their lineitems, in order."""
    keys = order_key(index)
    custkey = uniform("o_custkey", index, versions, 0, n["customer"] - n["customer"] // 3 - 1)
    custkey = custkey + custkey // 2 + 1  # every third customer places no order, as in dbgen
    orderdate = START_DAY + uniform("o_orderdate", index, versions, 1, 2405)
    lines = line_counts(index, versions)
    owner = np.repeat(np.arange(len(index)), lines)
    first = np.cumsum(lines) - lines
    number = np.arange(len(owner)) - first[owner] + 1
    line_key, line_version = index[owner] * 8 + number, versions[owner]
    partkey = uniform("l_partkey", line_key, line_version, 1, n["part"])
    suppkey = suppkeys(partkey, uniform("l_supp", line_key, line_version, 0, 3), n["supplier"])
    quantity = uniform("l_quantity", line_key, line_version, 1, 50)
    discount = uniform("l_discount", line_key, line_version, 0, 10)
    tax = uniform("l_tax", line_key, line_version, 0, 8)
    shipdate = orderdate[owner] + uniform("l_shipdate", line_key, line_version, 1, 121)
    receiptdate = shipdate + uniform("l_receiptdate", line_key, line_version, 1, 30)
    commitdate = orderdate[owner] + uniform("l_commitdate", line_key, line_version, 30, 90)
    extended = quantity * retail_cents(partkey)
    returned = pa.array(np.where(uniform("l_returnflag", line_key, line_version, 0, 1) == 0, "R", "A"))
    charged = (extended * (100 + tax) * (100 - discount) + 5_000) // 10_000  # in cents, half up
    total = np.add.reduceat(charged, first) if len(charged) else np.zeros(0, np.int64)
    open_lines = shipdate > CURRENT_DAY
    opened = np.add.reduceat(open_lines.astype(np.int64), first) if len(owner) else np.zeros(0, np.int64)
    orders = {
        "o_orderkey": pa.array(keys), "o_custkey": pa.array(custkey),
        "o_orderstatus": pa.array(np.where(opened == lines, "O", np.where(opened == 0, "F", "P"))),
        "o_totalprice": _money(total), "o_orderdate": _date(orderdate),
        "o_orderpriority": _pick("o_orderpriority", index, versions, PRIORITIES),
        "o_clerk": _numbered("Clerk#", uniform("o_clerk", index, versions, 1, n["clerk"])),
        "o_shippriority": pa.array(np.zeros(len(index), np.int32)),
        "o_comment": _text("o_comment", index, versions, 19, 78)}
    lineitem = {
        "l_orderkey": pa.array(keys[owner]), "l_partkey": pa.array(partkey), "l_suppkey": pa.array(suppkey),
        "l_linenumber": pa.array(number.astype(np.int32)), "l_quantity": _money(quantity * 100),
        "l_extendedprice": _money(extended), "l_discount": _money(discount), "l_tax": _money(tax),
        "l_returnflag": pc.if_else(pa.array(receiptdate <= CURRENT_DAY), returned, "N"),
        "l_linestatus": pa.array(np.where(open_lines, "O", "F")),
        "l_shipdate": _date(shipdate), "l_commitdate": _date(commitdate), "l_receiptdate": _date(receiptdate),
        "l_shipinstruct": _pick("l_shipinstruct", line_key, line_version, INSTRUCTIONS),
        "l_shipmode": _pick("l_shipmode", line_key, line_version, MODES),
        "l_comment": _text("l_comment", line_key, line_version, 10, 43)}
    return orders, lineitem


def _table(relation: str, first: int, last: int, n: dict) -> dict:
    """Snapshot rows first..last-1 of a table other than orders and lineitem, by column."""
    keys = np.arange(first + 1, last + 1, dtype=np.int64)
    if relation == "region":
        return {"r_regionkey": pa.array(keys - 1), "r_name": pa.array(REGIONS).take(pa.array(keys - 1)),
                "r_comment": _text("r_comment", keys, 0, 31, 115)}
    if relation == "nation":
        return {"n_nationkey": pa.array(keys - 1), "n_name": pa.array([NATIONS[k - 1][0] for k in keys]),
                "n_regionkey": pa.array([NATIONS[k - 1][1] for k in keys], pa.int64()),
                "n_comment": _text("n_comment", keys, 0, 31, 114)}
    if relation in ("supplier", "customer"):
        p = relation[0] + "_"
        nations = uniform(p + "nationkey", keys, 0, 0, 24)
        found = {p + ("suppkey" if p == "s_" else "custkey"): pa.array(keys),
                 p + "name": _numbered("Supplier#" if p == "s_" else "Customer#", keys),
                 p + "address": _text(p + "address", keys, 0, 10, 40), p + "nationkey": pa.array(nations),
                 p + "phone": _phone(p + "phone", keys, nations),
                 p + "acctbal": _money(uniform(p + "acctbal", keys, 0, -99_999, 999_999))}
        if p == "c_":
            found["c_mktsegment"] = _pick("c_mktsegment", keys, 0, SEGMENTS)
        found[p + "comment"] = _text(p + "comment", keys, 0, 25 if p == "s_" else 29, 100 if p == "s_" else 116)
        return found
    if relation == "part":
        m, b = uniform("p_mfgr", keys, 0, 1, 5), uniform("p_brand", keys, 0, 1, 5)
        return {"p_partkey": pa.array(keys),
                "p_name": pc.binary_join_element_wise(*[_pick(f"p_name{i}", keys, 0, COLOURS) for i in range(5)],
                                                      " "),
                "p_mfgr": _joined("Manufacturer#", pa.array(m)), "p_brand": _joined("Brand#", pa.array(m),
                                                                                    pa.array(b)),
                "p_type": pc.binary_join_element_wise(*[_pick(f"p_type{i}", keys, 0, t) for i, t in enumerate(TYPES)],
                                                      " "),
                "p_size": pa.array(uniform("p_size", keys, 0, 1, 50)),
                "p_container": pc.binary_join_element_wise(
                    *[_pick(f"p_container{i}", keys, 0, c) for i, c in enumerate(CONTAINERS)], " "),
                "p_retailprice": _money(retail_cents(keys)), "p_comment": _text("p_comment", keys, 0, 5, 22)}
    if relation == "partsupp":  # four rows per part
        parts, r = (keys - 1) // 4 + 1, (keys - 1) % 4
        return {"ps_partkey": pa.array(parts), "ps_suppkey": pa.array(suppkeys(parts, r, n["supplier"])),
                "ps_availqty": pa.array(uniform("ps_availqty", keys, 0, 1, 9999)),
                "ps_supplycost": _money(uniform("ps_supplycost", keys, 0, 100, 100_000)),
                "ps_comment": _text("ps_comment", keys, 0, 49, 198)}
    raise ValueError(f"LOAD GENERATOR TPCH has no table {relation}")


def snapshot_parts(relation: str, scale_factor: float) -> list[tuple[int, int, int]]:
    """The snapshot of `relation` in pieces (first unit, last unit, sequence of its first row): units are orders for
    orders and lineitem, rows for the rest."""
    n = counts(scale_factor)
    if relation in ("orders", "lineitem"):
        bounds = list(range(0, n["orders"], ORDERS_PER_PART)) + [n["orders"]]
        if relation == "orders":
            return [(a, b, a) for a, b in zip(bounds, bounds[1:])]
        lines = line_counts(np.arange(1, n["orders"] + 1, dtype=np.int64), 0)
        before = np.concatenate([[0], np.cumsum(lines)])
        return [(a, b, int(before[a])) for a, b in zip(bounds, bounds[1:])]
    bounds = list(range(0, n[relation], ROWS_PER_PART)) + [n[relation]]
    return [(a, b, a) for a, b in zip(bounds, bounds[1:])]


def snapshot_rows(relation: str, scale_factor: float, first: int, last: int) -> dict:
    """Columns of the snapshot piece first..last (see snapshot_parts)."""
    n = counts(scale_factor)
    if relation in ("orders", "lineitem"):
        index = np.arange(first + 1, last + 1, dtype=np.int64)
        orders, lineitem = _orders(index, np.zeros(len(index), np.int64), n)
        return orders if relation == "orders" else lineitem
    return _table(relation, first, last, n)


def updated_order(update: int, orders: int) -> tuple[int, int]:
    """(order index from 1, its new version) that update `update` (from 0) replaces."""
    step = next(a for a in (1_000_003, 999_983, 7_919, 1) if math.gcd(a, orders) == 1)
    return (step * (update % orders) + 12_345) % orders + 1, update // orders + 1


def update_rows(relation: str, scale_factor: float, tick: int) -> tuple[dict, np.ndarray] | None:
    """The columns of tick `tick`'s changes to `relation` (ticks after the snapshot), and each row's diff."""
    if relation not in ("orders", "lineitem") or tick <= SNAPSHOT_TICK:
        return None
    n = counts(scale_factor)
    index, version = updated_order(tick - SNAPSHOT_TICK - 1, n["orders"])
    columns = _orders(np.array([index, index], np.int64), np.array([version - 1, version], np.int64), n)
    found = columns[0] if relation == "orders" else columns[1]
    if relation == "orders":
        return found, np.array([-1, 1], np.int32)
    lines = line_counts(np.array([index, index], np.int64), np.array([version - 1, version], np.int64))
    return found, np.concatenate([np.full(lines[0], -1, np.int32), np.full(lines[1], 1, np.int32)])


def rows_in_tick(relation: str, scale_factor: float, tick: int) -> int:
    if tick == SNAPSHOT_TICK:
        parts = snapshot_parts(relation, scale_factor)
        if relation == "lineitem":
            first, last, start = parts[-1]
            return start + int(line_counts(np.arange(first + 1, last + 1, dtype=np.int64), 0).sum())
        return parts[-1][1] if parts else 0
    found = update_rows(relation, scale_factor, tick)
    return 0 if found is None else len(found[1])

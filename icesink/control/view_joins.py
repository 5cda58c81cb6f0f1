"""Planning a sink on a materialized view that joins relations (engine/sources/joined_view.py runs it).

The view's key comes from one relation, the *driving* one: its GROUP BY reads that relation's columns alone, or,
without GROUP BY, the key is that relation's primary key and every other relation is looked up by its own primary
key (so each driving row gives at most one row). A change of the driving relation touches the key its row had or
has; a change of another relation touches the keys of the driving rows it joins, found by following the join's
equalities from it to the driving relation through the other relations' current rows. Whatever a view row's value
was derived from, the changed row nearest the driving row on that path reaches it through rows that did not
change, so every key a change can move is recomputed (docs/views.md, "Joins")."""
from __future__ import annotations

from collections import deque

from sqlglot import exp

from ..catalog.store import CatalogObject
from ..engine.tables import storage_name
from ..engine.values import INT_RANGES
from ..model.descriptors import ViewInput, ViewSide
from .sqlite_sql import distinct_on_terms, sqlite_sql
from .view_inputs import (CHANGES, OFFSET, TOUCHED, TOUCHED_ALIAS, TS, Relation, _index_key, _refuse, _same,
                          group_column, index_keys, index_order, key_column)

FIRST_ALIAS = "_icesink_first"
COVERED = 4  # columns an index of a view's key takes beyond the key, so that a batch reads no row of the table


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _aliases(node: exp.Expression) -> set[str]:
    return {c.table for c in node.find_all(exp.Column)}


def _sqlite_ordered(value: exp.Expression, desc: bool) -> exp.Ordered:
    """An ORDER BY term with NULLs where SQLite puts them (an index's order; NULLs are placed by a term of their
    own)."""
    return exp.Ordered(this=value, desc=desc, nulls_first=not desc)


class Joins:
    """The join graph of a view's query (`tree`, its columns qualified by their relations' aliases)."""

    def __init__(self, view: CatalogObject, tree: exp.Select, relations: list[Relation], pos: int):
        self.view, self.tree, self.relations, self.pos = view, tree, relations, pos
        self.by_alias = {r.alias: r for r in relations}
        self.nodes = {node.alias_or_name: node for node in
                      [tree.args["from_"].this, *(j.this for j in tree.args.get("joins") or [])]}
        self.conditions = [c for j in tree.args.get("joins") or [] for c in _conjuncts(j.args.get("on"))]
        where = tree.args.get("where")
        self.conditions += _conjuncts(where.this if where is not None else None)
        # an equality between expressions over one relation each links the two: (alias, alias, condition)
        self.edges = []
        for condition in self.conditions:
            if isinstance(condition, exp.EQ):
                left, right = _aliases(condition.left), _aliases(condition.right)
                if len(left) == 1 and len(right) == 1 and left != right and "" not in left | right:
                    self.edges.append((left.pop(), right.pop(), condition))
        self.driving: str | None = None
        self.parent: dict[str, str] = {}
        self.order: list[str] = []

    def key(self, group_keys: list[exp.Expression] | None,
            distinct: list[exp.Expression] | None = None) -> list[exp.Expression]:
        """The view's key, as expressions over the driving relation, which this chooses; `distinct`: the columns of
        a SELECT DISTINCT, its key when no relation's primary key keys it."""
        if group_keys is None and distinct is not None:
            driving = next((r for r in self.relations if self._looks_up_the_others(r)), None)
            kept = {(o.table, o.name) for o in distinct if isinstance(o, exp.Column)}
            if driving is None or not all((driving.alias, c) in kept for c in driving.obj.descriptor.primary_key):
                group_keys = distinct
        if group_keys is not None:
            used = set().union(*(_aliases(k) for k in group_keys))
            if len(used) != 1 or "" in used:
                _refuse(self.view, "groups by columns of more than one of the relations it joins" if len(used) > 1
                        else "groups by no column of the relations it joins", self.pos)
            self.driving, keys = used.pop(), group_keys
        else:
            self.driving = next((r.alias for r in self.relations if self._looks_up_the_others(r)), None)
            if self.driving is None and len(self.relations) == 1:
                _refuse(self.view, f"has no GROUP BY, over '{self.relations[0].obj.name}', which has no primary key",
                        self.pos)
            if self.driving is None:
                _refuse(self.view, "joins a relation by other columns than its primary key, without GROUP BY", self.pos)
            keys = [exp.column(c, table=self.driving, quoted=True)
                    for c in self.by_alias[self.driving].obj.descriptor.primary_key]
        driving = self.by_alias[self.driving]
        if driving.side == "LEFT":
            _refuse(self.view, f"takes its key from '{driving.obj.name}', the right side of a LEFT JOIN", self.pos)
        if self._left_joins() and driving is not self.relations[0]:
            _refuse(self.view, f"takes its key from '{driving.obj.name}', which is not the first relation of a query "
                    "with LEFT JOIN", self.pos)
        self._paths()
        return keys

    def _left_joins(self) -> bool:
        return any(r.side == "LEFT" for r in self.relations)

    def _looks_up_the_others(self, first: Relation) -> bool:
        """Whether, from each row of `first`, every other relation is joined by its whole primary key (so the view
        has at most one row per row of `first`)."""
        if not first.obj.descriptor.primary_key:
            return False
        known, pending = {first.alias}, [r for r in self.relations if r is not first]
        while pending:
            found = next((r for r in pending if r.obj.descriptor.primary_key and all(
                self._equated(r.alias, column, known) for column in r.obj.descriptor.primary_key)), None)
            if found is None:
                return False
            known.add(found.alias)
            pending.remove(found)
        return True

    def _equated(self, alias: str, column: str, known: set[str]) -> bool:
        for condition in self.conditions:
            if isinstance(condition, exp.EQ):
                for this, other in ((condition.left, condition.right), (condition.right, condition.left)):
                    if (isinstance(this, exp.Column) and this.table == alias and this.name == column
                            and _aliases(other) and _aliases(other) <= known):
                        return True
        return False

    def _paths(self) -> None:
        """Each relation's way to the driving one along the joins' equalities (breadth first, so shortest)."""
        self.order, seen, queue = [self.driving], {self.driving}, deque([self.driving])
        while queue:
            here = queue.popleft()
            for a, b, _ in self.edges:
                for this, other in ((a, b), (b, a)):
                    if this == here and other not in seen:
                        seen.add(other)
                        self.parent[other] = here
                        self.order.append(other)
                        queue.append(other)
        unjoined = [r for r in self.relations if r.alias not in seen]
        if unjoined:
            _refuse(self.view, f"joins '{unjoined[0].obj.name}' to the other relations without an equality", self.pos)

    # ------------------------------------------------------------ the statements
    def touched(self, keys: list[exp.Expression], sides: dict[str, tuple]) -> None:
        """Adds, per table, the queries of the keys its changes touch (one a alias) and the columns they read to
        `sides` (table id -> (table, queries, columns))."""
        for r in self.relations:
            select, used = self._touched(r.alias, keys)
            _, selects, columns = sides.setdefault(r.obj.id, (r.obj, [], set()))
            selects.append(select)
            columns.update(used)

    def indexes(self, keys: list[exp.Expression]) -> set[tuple[str, str]]:
        """(table, expressions) of the indexes a batch looks rows up by: the key's, on the driving table, and each
        join column's that is not the first of its table's primary key."""
        found = {(self.by_alias[self.driving].obj.id, ", ".join(self.index_keys(keys)))}
        for _, _, condition in self.edges:
            for side in (condition.left, condition.right):
                relation = self.by_alias[side.table].obj if isinstance(side, exp.Column) else None
                primary = relation.descriptor.primary_key if relation is not None else ()
                if relation is not None and primary[:1] != (side.name,):
                    found.add((relation.id, _index_key(side)))
        return found

    def index_keys(self, keys: list[exp.Expression]) -> tuple[str, ...]:
        """The driving relation's index, as CREATE INDEX takes it: the key's expressions, then a DISTINCT ON's order
        within a key (`first_row_order`), or else the other columns of the relation (or those the query reads), up
        to COVERED of them, so that a touched key's rows are read from the index alone: a group's rows lie together
        there, where the table holds them wherever they were written (100,000 groups of 30 events in plain SQLite:
        0.84 s against 8.6 s, for writes a third dearer)."""
        order = self.first_row_order(keys)
        if order is not None:
            return index_keys(keys) + tuple(_index_key(term.this) + (" DESC" if term.args["desc"] else "")
                                            for term in order)
        indexed = index_keys(keys)
        table = self.by_alias[self.driving].obj.descriptor
        keyed = [k.name for k in keys if isinstance(k, exp.Column)]
        if table.primary_key and keyed[:len(table.primary_key)] == list(table.primary_key):
            return indexed  # the table itself is in the key's order, its rows together
        known = {*table.primary_key, *keyed}  # the primary key is in every index of the table already
        read = {c.name for c in self.tree.find_all(exp.Column) if c.table == self.driving}
        # every column of a narrow table, so that views keyed alike share one index, which the table's writes keep;
        # else those the query reads, in the table's order
        for wanted in (lambda name: True, lambda name: name in read):
            others = [_index_key(exp.column(c.name, table=self.driving, quoted=True)) for c in table.columns
                      if c.name not in known and wanted(c.name)]
            if len(others) <= COVERED:
                return indexed + tuple(others)
        return indexed

    def first_row_order(self, keys: list[exp.Expression]) -> list[exp.Ordered] | None:
        """For a DISTINCT ON over one relation ordered by its columns, that order within a key as SQLite sorts it
        (each nullable column's NULLs placed by a term of their own, as Postgres places them), which an index on the
        key and these terms gives in order: each touched key's first row is then one seek, however many rows the key
        has (no term: any row of the key is its first). None when a key's rows are ranked whole (a join, or an ORDER
        BY of an expression)."""
        distinct = self.tree.args.get("distinct")
        if distinct is None or distinct.args.get("on") is None or len(self.relations) != 1:
            return None
        nullable = {c.name for c in self.by_alias[self.driving].obj.descriptor.columns if c.nullable}
        terms = []
        for value, item in distinct_on_terms(self.tree)[1]:
            if any(_same(value, k) for k in keys):
                continue  # the same within a key
            if not isinstance(value, exp.Column) or value.table != self.driving:
                return None
            if value.name in nullable:
                terms.append(_sqlite_ordered(exp.Is(this=value.copy(), expression=exp.Null()),
                                             bool(item.args.get("nulls_first"))))
            terms.append(_sqlite_ordered(value.copy(), bool(item.args.get("desc"))))
        return terms

    def _first_row(self, keys: list[exp.Expression], order: list[exp.Ordered],
                   touched_key: list[exp.Column]) -> exp.Expression:
        """The condition that joins a touched key to its first row by `order`: the row's identity (its primary key, or
        rowid) equals the first found through the index on the key and the order, among the rows the view keeps."""
        alias = self.driving

        def as_first(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and node.table == alias:
                node = node.copy()
                node.set("table", exp.to_identifier(FIRST_ALIAS))
            return node
        names = self.by_alias[alias].obj.descriptor.primary_key or ("rowid",)
        conditions = [exp.NullSafeEQ(this=k.transform(as_first), expression=touched_key[i].copy())
                      for i, k in enumerate(keys)] + [c.transform(as_first) for c in self.conditions]
        first = exp.select(*[exp.column(n, table=FIRST_ALIAS, quoted=n != "rowid") for n in names]).from_(
            exp.Table(this=self.nodes[alias].this.copy(), alias=exp.TableAlias(this=exp.to_identifier(FIRST_ALIAS))))
        first = first.where(exp.and_(*conditions))
        if order:  # else any row of the key is its first
            first = first.order_by(*[t.transform(as_first) for t in order])
        first = first.limit(1)
        row = [exp.column(n, table=alias, quoted=n != "rowid") for n in names]
        return exp.EQ(this=row[0] if len(row) == 1 else exp.Tuple(expressions=row), expression=first.subquery())

    def table(self, alias: str) -> exp.Table:
        return exp.Table(this=exp.to_identifier(storage_name(self.by_alias[alias].obj.id)),
                         alias=exp.TableAlias(this=exp.to_identifier(alias)))

    def _touched(self, alias: str, keys: list[exp.Expression]) -> tuple[exp.Select, set[str]]:
        """The keys the changes of relation `alias` touch (its changes read as `alias`, the relations on its way to
        the driving one as they are now), and the columns of its changes that takes."""
        path = [alias]
        while path[-1] != self.driving:
            path.append(self.parent[path[-1]])
        on_path = set(path)
        conditions = [c for a, b, c in self.edges if a in on_path and b in on_path]
        select = exp.select(*[k.copy().as_(key_column(i)) for i, k in enumerate(keys)],
                            exp.Max(this=exp.column(OFFSET, table=alias)).as_(OFFSET),
                            exp.Max(this=exp.column(TS, table=alias)).as_(TS))
        select = select.from_(exp.Table(this=exp.to_identifier(CHANGES), db=exp.to_identifier("temp"),
                                        alias=exp.TableAlias(this=exp.to_identifier(alias))))
        for other in path[1:]:
            select = select.join(self.table(other), join_type="CROSS")
        if conditions:
            select = select.where(exp.and_(*[c.copy() for c in conditions]))
        select = select.group_by(*[exp.Literal.number(i + 1) for i in range(len(keys))])
        used = {c.name for c in select.find_all(exp.Column) if c.table == alias} - {OFFSET, TS}
        return select, used

    @staticmethod
    def union(selects: list[exp.Select], width: int) -> str:
        """One relation's touched keys: a self-join reads its changes once per alias."""
        if len(selects) == 1:
            return sqlite_sql(selects[0])
        union = _union_all(selects)
        names = [key_column(i) for i in range(width)]
        outer = exp.select(*[exp.column(n) for n in names], exp.Max(this=exp.column(OFFSET)).as_(OFFSET),
                           exp.Max(this=exp.column(TS)).as_(TS)).from_(union.subquery("_icesink_u"))
        return sqlite_sql(outer.group_by(*[exp.Literal.number(i + 1) for i in range(width)]))

    def query_tree(self, keys: list[exp.Expression]) -> exp.Select:
        """The view's query for the touched keys alone: the touched keys are the outer loop, the driving relation
        is looked up by its key's index, and the others by their join columns' indexes."""
        restricted = self.tree.copy()
        touched_key = [exp.column(key_column(i), table=TOUCHED_ALIAS) for i in range(len(keys))]

        def as_touched(node: exp.Expression) -> exp.Expression:
            found = next((i for i, k in enumerate(keys) if node == k), None)
            return node if found is None else touched_key[found].copy()
        restricted.set("expressions", [e.transform(as_touched) for e in restricted.expressions])
        for part in ("group", "having"):
            if restricted.args.get(part) is not None:
                restricted.set(part, restricted.args[part].transform(as_touched))
        group = restricted.args.get("group")
        if group is not None and all(e in touched_key for e in group.expressions):
            # one group per touched key, read in the touched table's order: grouped by its rows, SQLite sorts none
            restricted.set("group", exp.Group(expressions=[exp.column("rowid", table=TOUCHED_ALIAS)]))
        first_row = self.first_row_order(keys)
        if first_row is not None:
            on = self._first_row(keys, first_row, touched_key)
            for part in ("distinct", "order", "where"):  # the first row found is the key's row
                restricted.set(part, None)
        else:
            on = exp.and_(*[exp.NullSafeEQ(this=k.copy(), expression=exp.column(key_column(i), table=TOUCHED_ALIAS))
                            for i, k in enumerate(keys)])
        touched = exp.Table(this=exp.to_identifier(TOUCHED), db=exp.to_identifier("temp"),
                            alias=exp.TableAlias(this=exp.to_identifier(TOUCHED_ALIAS)))
        restricted.set("from_", exp.From(this=touched))
        driving = exp.Join(this=self.nodes[self.driving].copy(), kind="CROSS", on=on)
        if self._left_joins():  # the driving relation is the first: the joins stay as written, after it
            restricted.set("joins", [driving, *(j.copy() for j in self.tree.args.get("joins") or [])])
        else:  # inner joins: in the order that reaches each relation from the driving one, conditions in WHERE
            restricted.set("joins", [driving, *(exp.Join(this=self.nodes[a].copy(), kind="CROSS")
                                                for a in self.order[1:])])
            if self.conditions and first_row is None:
                restricted.set("where", exp.Where(this=exp.and_(*[c.copy() for c in self.conditions])))
        restricted.set("expressions", restricted.expressions + [k.as_(group_column(i))
                                                                for i, k in enumerate(touched_key)])
        return restricted


def view_input(branches: list[tuple[Joins, list[exp.Expression]]], key_outputs, indexed: tuple[str, ...],
               whole: exp.Expression) -> ViewInput:
    """The statements of a view over `branches` (a query's, or each of a UNION's, with its key): the keys a table's
    changes touch in any branch, every branch's rows for the touched keys, and the whole view (`whole`: the
    branches' queries, each column of them named, combined as the view combines them)."""
    sides: dict[str, tuple] = {}
    indexes: set[tuple[str, str]] = set()
    for joins, keys in branches:
        joins.touched(keys, sides)
        indexes |= joins.indexes(keys)
    first, keys = branches[0]
    width = len(keys)
    driving = first.by_alias[first.driving].obj
    made = {table_id: ViewSide(table_id, tuple(c.name for c in table.descriptor.columns if c.name in columns),
                               Joins.union(selects, width))
            for table_id, (table, selects, columns) in sides.items()}
    mine = made.pop(driving.id)
    indexes.discard((driving.id, ", ".join(indexed)))
    query = _union_all([joins.query_tree(keys) for joins, keys in branches])
    # a key to recompute when changes touch none, so that the commit records them: the first row's, read at once
    any_key = exp.select(*[k.copy().as_(key_column(i)) for i, k in enumerate(keys)],
                         exp.Placeholder().as_(OFFSET), exp.Placeholder().as_(TS)).from_(
        first.table(first.driving)).limit(1)
    one_table = len(branches) == 1 and not made
    return ViewInput(driving.id, mine.changed_columns, mine.touched_sql, sqlite_sql(query), key_outputs, indexed,
                     tuple(made.values()), join_indexes=tuple(sorted(indexes)), any_key_sql=sqlite_sql(any_key),
                     whole_sql=sqlite_sql(whole), split_sql=_split(whole, keys) if len(branches) == 1 else "",
                     share_column=_share_column(keys, driving) if one_table else "")


def _share_column(keys: list[exp.Expression], table: CatalogObject) -> str:
    """A column of `table` that is one of the key's expressions and holds integers or text (two equal values of
    either are the same in the log), by which a batch's partitions share its keys, an integer first (its share is
    SQLite's arithmetic, text's a function's call). A change of another relation, or of a UNION's other query,
    touches keys by what it joins, not by a value of its own: such a view's batches are cut by offsets."""
    types = {c.name: c.type for c in table.descriptor.columns}
    columns = [k.name for k in keys if isinstance(k, exp.Column) and (types.get(k.name) in INT_RANGES
                                                                     or types.get(k.name) == "text")]
    return min(columns, key=lambda name: types[name] == "text", default="")


def _split(whole: exp.Expression, keys: list[exp.Expression]) -> str:
    """The whole view's rows whose key has its index's first expression between :lo and :hi: a first batch computes
    ranges of them on every core, each range's groups whole. (A UNION's queries may index their keys in different
    orders: it is computed in one piece.)"""
    ordered = index_order(keys)
    if not ordered or not isinstance(whole, exp.Select):
        return ""
    bounded = exp.Between(this=ordered[0].copy(), low=exp.Placeholder(this="lo"), high=exp.Placeholder(this="hi"))
    return sqlite_sql(whole.copy().where(bounded))


def _union_all(selects: list[exp.Select]) -> exp.Expression:
    union = selects[0]
    for other in selects[1:]:
        union = exp.union(union, other, distinct=False)
    return union

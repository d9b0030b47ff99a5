"""A node's inventories beyond the classic classes, and its traits.

``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` are columns of ``compute_nodes``;
the other classes a node has (``PCPU``, ``CUSTOM_*``...) are rows of
``compute_node_inventories``, and its traits rows of
``compute_node_traits`` (see :mod:`scheduler.db.inventories`). A
HostState carries them as ``inventories`` (``{class: ClassInventory}``)
and ``traits`` (a frozenset), read here for the nodes a refresh reads:
both tables in one ``UNION ALL`` statement, every row of them on a full
load, those of the nodes read otherwise (``compute_node_id IN (...)``,
in chunks; one array on PostgreSQL), and nothing at all when a refresh
read no node. A node without such rows costs nothing but its share of
that statement::

    extras = node_extras.read(session, node_ids=[1, 2])
    state.inventories, state.traits = extras.of(1)
"""

import collections
import functools
import sys

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from scheduler.db import api as db_api
from scheduler.db import models

# A node's inventory of one class beyond the classic three, Placement's
# fields; ``used`` is what claims hold of it.
ClassInventory = collections.namedtuple(
    'ClassInventory',
    'total reserved min_unit max_unit step_size allocation_ratio used')
# The values of a node without such classes or traits (shared: a
# HostState is read-only).
NO_INVENTORIES = {}
NO_TRAITS = frozenset()

# Node ids per statement of a read by ids (expanding IN lists); beyond
# ALL_ABOVE ids, every row is read instead (one statement).
ID_CHUNK = 500
ALL_ABOVE = 5000

_INVENTORY = models.ComputeNodeInventory.__table__
_TRAIT = models.ComputeNodeTrait.__table__
_intern = sys.intern


def checked_inventories(inventories):
    """``{class: ClassInventory}`` of ``{class: ClassInventory, or a
    tuple or dict of its seven fields}`` (a HostState built by hand).

    :raises ValueError: an inventory without exactly those fields.
    """
    if not inventories:
        return NO_INVENTORIES
    checked = {}
    for name, inventory in inventories.items():
        try:
            if isinstance(inventory, dict):
                inventory = ClassInventory(**inventory)
            else:
                inventory = ClassInventory._make(inventory)
        except (TypeError, ValueError):
            raise ValueError(
                'The %s inventory must have the fields %s, not %r.'
                % (name, ', '.join(ClassInventory._fields), inventory)
            ) from None
        checked[name] = inventory
    return checked


def with_extra_used(state, extra):
    """``state.inventories`` with ``extra``'s ``{class: amount}`` added to
    the classes' ``used`` (a new dict; the others shared).

    :raises ValueError: a class the node has no inventory of.
    """
    inventories = dict(state.inventories)
    for name, amount in extra.items():
        inventory = inventories.get(name)
        if inventory is None:
            raise ValueError(
                'Node %s (%s) has no inventory of resource class %s to take '
                '%s of; it has %s.'
                % (state.nodename, state.uuid, name, amount,
                   ', '.join(sorted(inventories))
                   or 'none beyond VCPU, MEMORY_MB and DISK_GB'))
        inventories[name] = inventory._replace(used=inventory.used + amount)
    return inventories


class Extras(collections.namedtuple('Extras', 'inventories traits')):
    """What a read found: ``{node id: {class: ClassInventory}}`` and
    ``{node id: frozenset of traits}`` (nodes without rows absent)."""

    def of(self, node_id):
        """``(inventories, traits)`` of one node (shared empty values for
        a node without rows)."""
        return (self.inventories.get(node_id, NO_INVENTORIES),
                self.traits.get(node_id, NO_TRAITS))

    def update(self, other):
        """Add ``other``'s nodes (a cell's read) to these."""
        self.inventories.update(other.inventories)
        self.traits.update(other.traits)


def none():
    """Extras of no node."""
    return Extras({}, {})


@functools.cache
def _statement(with_ids, arrays=False):
    """Both tables' rows, as ``(node id, name, total, reserved, min_unit,
    max_unit, step_size, allocation_ratio, used)``; a trait's row has a
    NULL total (never NULL in an inventory's). ``with_ids``: only those
    of the list parameter ``ids`` (an expanding IN, or with ``arrays``
    a PostgreSQL array compared with ``= ANY``)."""
    fields = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
              'allocation_ratio', 'used')
    inventories = sa.select(
        _INVENTORY.c.compute_node_id.label('node'),
        _INVENTORY.c.resource_class.label('name'),
        *(_INVENTORY.c[field] for field in fields))
    traits = sa.select(
        _TRAIT.c.compute_node_id.label('node'), _TRAIT.c.trait.label('name'),
        *(sa.cast(sa.null(), _INVENTORY.c[field].type).label(field)
          for field in fields))
    if with_ids:
        inventories = inventories.where(
            _one_of(_INVENTORY.c.compute_node_id, arrays))
        traits = traits.where(_one_of(_TRAIT.c.compute_node_id, arrays))
    return sa.union_all(inventories, traits)


def _one_of(column, arrays):
    if not arrays:
        return column.in_(sa.bindparam('ids', expanding=True))
    return column == sa.any_(sa.bindparam(
        'ids', type_=postgresql.ARRAY(column.type)))


def read(connection, node_ids=None, offset=0):
    """The Extras of ``node_ids`` (None: of every node) in the database
    of ``connection`` (a Session or a Core connection), keyed by node id
    plus ``offset`` (a cell's cache ids). No statement for no ids; on
    psycopg2 one statement on the driver's own cursor (SQLAlchemy's
    execution costs more CPU than the round trip)."""
    if node_ids is not None and not node_ids:
        return none()
    if hasattr(connection, 'get_bind'):
        connection = connection.connection()
    if connection.dialect.driver == 'psycopg2':
        if node_ids is None:
            query, params = _compiled(connection.dialect, False), {}
        else:
            query, params = driver_read(connection.dialect, node_ids)
        return extras_of(db_api.driver_rows_batched(connection, query,
                                                    params), offset)
    if node_ids is None:
        return extras_of(connection.execute(_statement(False)), offset)
    ids = sorted(set(node_ids))
    if len(ids) > ALL_ABOVE:
        wanted = {node + offset for node in ids}
        found = read(connection, None, offset)
        return Extras(*({node: value for node, value in part.items()
                         if node in wanted} for part in found))
    rows = []
    for start in range(0, len(ids), ID_CHUNK):
        rows.extend(connection.execute(
            _statement(True), {'ids': ids[start:start + ID_CHUNK]}))
    return extras_of(rows, offset)


def ids_to_read(rows, held=None, offset=0):
    """The node ids (minus ``offset``) of the node ``rows`` whose extras
    a refresh reads: those whose row it takes, not the rows it holds at
    that generation already (``held``: ``{cache id: generation}``, read
    without a lock; a row it holds is dropped when applied, whatever
    else the refresh read of it)."""
    if not held:
        return [row.id - offset for row in rows]
    get = held.get
    return [row.id - offset for row in rows
            if get(row.id) != row.generation]


# Keyed on the dialect: one per cell engine; bounded, as engines come back.
@functools.lru_cache(maxsize=64)
def _compiled(dialect, with_ids=True):
    return str(_statement(with_ids, arrays=True).compile(dialect=dialect))


def driver_read(dialect, node_ids):
    """``(query string, parameters)`` of :func:`read` by ids for
    psycopg2's own cursor (one array of ids, every length one statement),
    for :mod:`scheduler.host_cache.cell_reads`; :func:`extras_of` makes
    its rows Extras."""
    return _compiled(dialect), {
        'ids': '{%s}' % ','.join(map(str, sorted(set(node_ids))))}


def extras_of(rows, offset=0):
    """The Extras of rows of :func:`_statement`, node ids plus
    ``offset``. Equal trait sets and inventories are one object each."""
    inventories, traits = {}, {}
    for node, name, total, *fields in rows:
        node += offset
        if total is None:
            traits.setdefault(node, set()).add(_intern(name))
            continue
        reserved, min_unit, max_unit, step, ratio, used = fields
        inventories.setdefault(node, {})[_intern(name)] = ClassInventory(
            total, reserved, min_unit, max_unit, step, float(ratio), used)
    shared = {}
    for node, names in traits.items():
        names = frozenset(names)
        traits[node] = shared.setdefault(names, names)
    for node, classes in inventories.items():
        key = tuple(sorted(classes.items()))
        inventories[node] = shared.setdefault(key, classes)
    return Extras(inventories, traits)

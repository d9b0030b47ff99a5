"""A node's inventory of every resource class, and its traits.

``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` live in their columns of
``compute_nodes`` (``vcpus``, ``reserved_vcpus``, ``cpu_allocation_ratio``,
``vcpus_used``...); every other class a compute reports (``PCPU``, a
baremetal node's ``CUSTOM_*`` class, the additional inventories of its
provider config files) in ``compute_node_inventories``, and its traits
in ``compute_node_traits``. :func:`node_inventories` presents both as
one Placement-shaped inventory per node::

    with db_api.reader() as session:
        inventory = inventories.node_inventories(session, [node_id])
    # {node_id: {'VCPU': {'total': 16, 'reserved': 0, 'min_unit': 1,
    #                     'max_unit': 16, 'step_size': 1,
    #                     'allocation_ratio': 4.0, 'used': 2}, ...,
    #            'PCPU': {...}}}

The conductor writes a compute's report with :func:`report` in the
transaction of its ``compute_node_update``; claims change ``used``
(:mod:`scheduler.db.class_claims`), a report never does.
"""

import sqlalchemy as sa

from oslo_log import log as logging

from scheduler.db import claims
from scheduler.db import models

LOG = logging.getLogger(__name__)

_NODE = models.ComputeNode.__table__
_INVENTORY = models.ComputeNodeInventory.__table__
_TRAIT = models.ComputeNodeTrait.__table__

# Placement's largest integer field, and the defaults of an inventory's
# optional fields (Placement's own).
MAX_INT = 0x7FFFFFFF
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}

# The classic classes: resource class -> the claims' resource field
# (see scheduler.db.claims.RESOURCE_COLUMNS for their columns).
CLASSIC = {'VCPU': 'vcpus', 'MEMORY_MB': 'memory_mb', 'DISK_GB': 'disk_gb'}
CLASSIC_CLASSES = tuple(CLASSIC)


def with_defaults(inventory):
    """One class's reported ``inventory`` with Placement's defaults for
    the fields it leaves out."""
    return dict(DEFAULTS, **inventory)


def report(session, node_id, inventories=None, traits=None):
    """Make the node's other classes and traits those reported.

    ``inventories``: ``{class: {total, reserved, min_unit, max_unit,
    step_size, allocation_ratio}}`` of the classes beyond the classic
    three (checked by the conductor; missing fields take
    :data:`DEFAULTS`); None leaves them as they are (a compute older
    than ConductorAPI 1.5). A class no longer reported goes, unless
    allocations still hold some of it: as Placement refuses to delete
    an inventory in use, its row then stays as it was (a WARNING says
    so). ``used`` is never written here.

    ``traits``: the node's traits, replacing the ones it had; None
    leaves them as they are.
    """
    if inventories is not None:
        _report_inventories(session, node_id, inventories)
    if traits is not None:
        _report_traits(session, node_id, set(traits))


def _report_inventories(session, node_id, inventories):
    existing = {row.resource_class: row for row in session.execute(
        sa.select(_INVENTORY).where(_INVENTORY.c.compute_node_id == node_id))}
    for name in sorted(set(existing) - set(inventories)):
        row = existing[name]
        if row.used:
            LOG.warning('Node %s no longer reports %s, but allocations '
                        'hold %d of it: its inventory stays until they '
                        'are released', node_id, name, row.used)
            continue
        session.execute(sa.delete(_INVENTORY)
                        .where(_INVENTORY.c.id == row.id))
    for name in sorted(inventories):
        values = with_defaults(inventories[name])
        values = {field: values[field] for field in FIELDS}
        row = existing.get(name)
        if row is None:
            session.execute(sa.insert(_INVENTORY).values(
                compute_node_id=node_id, resource_class=name, used=0,
                **values))
        elif any(getattr(row, field) != value
                 for field, value in values.items()):
            session.execute(sa.update(_INVENTORY)
                            .where(_INVENTORY.c.id == row.id)
                            .values(**values))


def _report_traits(session, node_id, traits):
    existing = set(session.execute(
        sa.select(_TRAIT.c.trait)
        .where(_TRAIT.c.compute_node_id == node_id)).scalars())
    gone = existing - traits
    if gone:
        session.execute(sa.delete(_TRAIT).where(
            _TRAIT.c.compute_node_id == node_id,
            _TRAIT.c.trait.in_(sorted(gone))))
    new = traits - existing
    if new:
        session.execute(sa.insert(_TRAIT), [
            {'compute_node_id': node_id, 'trait': trait}
            for trait in sorted(new)])


def _chunks(ids, size=500):
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def _classic(row):
    """The classic classes of a node's row with a total, Placement-shaped
    (a class of total 0 is not an inventory: Nova reports none)."""
    found = {}
    for name, field in CLASSIC.items():
        used, total, ratio, reserved, option = claims.RESOURCE_COLUMNS[field]
        amount = row._mapping[total]
        if not amount:
            continue
        found[name] = {
            'total': amount, 'reserved': row._mapping[reserved],
            'min_unit': 1, 'max_unit': amount, 'step_size': 1,
            'allocation_ratio': (row._mapping[ratio]
                                 or claims.default_ratio(option)),
            'used': row._mapping[used]}
    return found


def node_inventories(session, node_ids):
    """``{node id: {class: {total, reserved, min_unit, max_unit,
    step_size, allocation_ratio, used}}}`` of the given nodes (unknown
    ids are absent): the classic classes from the node's columns (those
    with a total; a ratio the node never recorded is the one claims use,
    see :func:`scheduler.db.claims.default_ratio`), the others from
    their rows."""
    columns = {column for field in CLASSIC.values()
               for column in claims.RESOURCE_COLUMNS[field][:4]}
    found = {}
    for chunk in _chunks(node_ids):
        for row in session.execute(
                sa.select(_NODE.c.id, *(_NODE.c[name]
                                        for name in sorted(columns)))
                .where(_NODE.c.id.in_(chunk))):
            found[row.id] = _classic(row)
        for row in session.execute(
                sa.select(_INVENTORY).where(
                    _INVENTORY.c.compute_node_id.in_(chunk))):
            if row.compute_node_id in found:
                found[row.compute_node_id][row.resource_class] = {
                    field: getattr(row, field)
                    for field in FIELDS + ('used',)}
    return found


def node_inventory(session, node_id):
    """The full inventory of one node (see :func:`node_inventories`);
    None for a node that does not exist."""
    return node_inventories(session, [node_id]).get(node_id)


def node_traits(session, node_ids):
    """``{node id: frozenset of traits}`` of the given nodes that have
    traits."""
    found = {}
    for chunk in _chunks(node_ids):
        for row in session.execute(
                sa.select(_TRAIT.c.compute_node_id, _TRAIT.c.trait)
                .where(_TRAIT.c.compute_node_id.in_(chunk))):
            found.setdefault(row.compute_node_id, set()).add(row.trait)
    return {node_id: frozenset(traits) for node_id, traits in found.items()}

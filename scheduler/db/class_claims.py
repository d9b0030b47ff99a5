"""Claims of the resource classes beyond VCPU, MEMORY_MB and DISK_GB.

A node's ``PCPU``, a baremetal node's ``CUSTOM_BAREMETAL_GOLD`` or a
provider config's ``CUSTOM_FPGA`` live in ``compute_node_inventories``,
one row per node and class; what an allocation holds of them lives in
``allocation_items``, one row per allocation and class. A claim of such
amounts (``{class: amount}``) is, in the claim's transaction and after
the node's own conditional UPDATE (which locks the node's row, so that
every writer of the node's classes takes its turn in one order), one
conditional UPDATE per class, in class name order::

    UPDATE compute_node_inventories SET used = used + :amount
    WHERE compute_node_id = :node AND resource_class = :class
      AND used + :amount <= (total - reserved) * allocation_ratio
      AND :amount BETWEEN min_unit AND max_unit
      AND :amount % step_size = 0

as Placement checks an allocation against an inventory. One that
matches nothing makes the whole claim fail (the caller rolls back); the
claim's items are inserted when every class fit. Releasing the
allocation gives each item's amount back the same way. ``gantt-manage db
check`` compares each ``used`` with the sum of the items
(:func:`usage_problems`).

These functions take the caller's session and never commit:
:mod:`scheduler.db.claims` calls them when a claim asks for more classes.
"""

import collections

import sqlalchemy as sa

from scheduler.db import models

_INVENTORY = models.ComputeNodeInventory.__table__
_ITEM = models.AllocationItem.__table__
_ALLOC = models.Allocation.__table__

# The classes a claim's Resources (vcpus, memory_mb, disk_gb) carry, in
# the node's own columns: never an item.
CLASSIC_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def checked_amounts(extra):
    """``extra`` (``{class: amount}``, or None) as a dict of the positive
    amounts, sorted by class (the order their rows are locked in); an
    amount of 0 asks for nothing and is left out.

    :raises ValueError: a classic class (it goes in the claim's
        Resources), an amount that is not an integer, or a negative one.
    """
    if not extra:
        return {}
    wanted = {}
    for name in sorted(extra):
        amount = extra[name]
        if name in CLASSIC_CLASSES:
            raise ValueError('%s is claimed through the claim\'s resources '
                             '(vcpus, memory_mb, disk_gb), not as a class '
                             'of its own' % name)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise ValueError('the amount of %s must be an integer, not %r'
                             % (name, amount))
        if amount < 0:
            raise ValueError('negative amount %d of %s' % (amount, name))
        if amount:
            wanted[name] = amount
    return wanted


_AMOUNT = sa.bindparam('amount', type_=sa.Integer)
_TAKE = (
    sa.update(_INVENTORY)
    .where(_INVENTORY.c.compute_node_id == sa.bindparam('node'),
           _INVENTORY.c.resource_class == sa.bindparam('rc'),
           _INVENTORY.c.used + _AMOUNT
           <= (_INVENTORY.c.total - _INVENTORY.c.reserved)
           * _INVENTORY.c.allocation_ratio,
           _INVENTORY.c.min_unit <= _AMOUNT,
           _INVENTORY.c.max_unit >= _AMOUNT,
           _AMOUNT % _INVENTORY.c.step_size == 0)
    .values(used=_INVENTORY.c.used + _AMOUNT))

_GIVE_BACK = (
    sa.update(_INVENTORY)
    .where(_INVENTORY.c.compute_node_id == sa.bindparam('node'),
           _INVENTORY.c.resource_class == sa.bindparam('rc'))
    .values(used=_INVENTORY.c.used - _AMOUNT))


def take(session, node_id, allocation_id, wanted):
    """Take ``wanted`` (from :func:`checked_amounts`) of the node's
    inventories for the allocation ``allocation_id``; True if every
    class fit. On False some classes may have been taken already: the
    caller rolls back (a savepoint or the whole transaction)."""
    for name, amount in wanted.items():
        result = session.execute(_TAKE, {'node': node_id, 'rc': name,
                                         'amount': amount})
        if result.rowcount != 1:
            return False
    session.execute(sa.insert(_ITEM), [
        {'allocation_id': allocation_id, 'resource_class': name,
         'amount': amount} for name, amount in wanted.items()])
    return True


def items_of(session, allocation_ids):
    """``{allocation id: {class: amount}}`` of the given allocations (the
    ones without items are absent)."""
    ids = sorted(set(allocation_ids))
    found = collections.defaultdict(dict)
    for start in range(0, len(ids), 500):
        for row in session.execute(
                sa.select(_ITEM.c.allocation_id, _ITEM.c.resource_class,
                          _ITEM.c.amount)
                .where(_ITEM.c.allocation_id.in_(ids[start:start + 500]))):
            found[row.allocation_id][row.resource_class] = row.amount
    return dict(found)


def give_back(session, node_id, amounts):
    """Give ``{class: amount}`` back to the node's inventories (the
    allocation holding them was just deleted, its items with it), in
    class name order."""
    for name in sorted(amounts):
        session.execute(_GIVE_BACK, {'node': node_id, 'rc': name,
                                     'amount': amounts[name]})


def consumer_items(session, consumer_uuid):
    """``{node id: {class: amount}}`` the consumer holds beyond the
    classic classes."""
    rows = session.execute(
        sa.select(_ALLOC.c.compute_node_id, _ITEM.c.resource_class,
                  _ITEM.c.amount)
        .join(_ALLOC, _ALLOC.c.id == _ITEM.c.allocation_id)
        .where(_ALLOC.c.consumer_uuid == consumer_uuid))
    found = collections.defaultdict(dict)
    for row in rows:
        found[row.compute_node_id][row.resource_class] = row.amount
    return dict(found)


def usage_problems(session):
    """``{node id: [problem]}`` of the nodes whose ``used`` of a class
    differs from the sum of their allocation items of it (an item of a
    class the node has no inventory of counts against a ``used`` of 0)."""
    used = {(row.compute_node_id, row.resource_class): row.used
            for row in session.execute(
                sa.select(_INVENTORY.c.compute_node_id,
                          _INVENTORY.c.resource_class, _INVENTORY.c.used))}
    sums = {(row.compute_node_id, row.resource_class): row.amount
            for row in session.execute(
                sa.select(_ALLOC.c.compute_node_id, _ITEM.c.resource_class,
                          sa.func.sum(_ITEM.c.amount).label('amount'))
                .join(_ALLOC, _ALLOC.c.id == _ITEM.c.allocation_id)
                .group_by(_ALLOC.c.compute_node_id, _ITEM.c.resource_class))}
    problems = collections.defaultdict(list)
    for key in sorted(set(used) | set(sums)):
        node_id, name = key
        held, allocated = used.get(key, 0), sums.get(key, 0) or 0
        if key not in used:
            problems[node_id].append(
                '%s allocations sum to %s but the node has no inventory of '
                'it' % (name, allocated))
        elif held != allocated:
            problems[node_id].append('%s used %s but allocations sum to %s'
                                     % (name, held, allocated))
    return dict(problems)

"""The mirror's write: Gantt's tables made equal to a
:class:`scheduler.nova.mirror_rows.Desired`, in the caller's transaction.

Only what differs is written, and written as Gantt's own writers write
it, so that the host cache's incremental refresh sees it:

* a node whose columns, inventories beyond the classic classes or
  traits changed gets ``generation + 1`` and ``updated_at`` now (a new
  node: generation 1); a node gone is deleted with its inventories and
  traits (the cache notices deletions at a full read: see
  :attr:`Written.removed`);
* a service whose state changed (disabled, its reason, forced down)
  gets ``updated_at`` now; a heartbeat alone (``last_seen_up``) leaves
  ``updated_at`` as it was, as Gantt's heartbeats do. Only the rows of
  the cache's compute binary are touched (the scheduler's own service
  row lives in the mirror too);
* instances are inserted, changed or deleted (their hosts are in
  :attr:`Written.instance_hosts`: the cache reads instances from SQL on
  a host's resync);
* an aggregate whose name, hosts or metadata changed gets
  ``updated_at`` now (the cache re-reads aggregates when their
  fingerprint, which includes it, moves).

The comparison is with the mirror's rows as read in the transaction, so
that a sync that failed, or another process writing the same mirror, is
caught up with. A part (nodes with their extras, services, instances,
aggregates) that is what the caller's ``previous`` successful write
wrote is not read again (at 2,000 nodes and 50,000 instances, reading
the mirror is most of a sync's cost); the caller passes None from time
to time to compare everything::

    with db_api.writer() as session:
        written = mirror_write.write(session, wanted, previous)
"""

import sqlalchemy as sa

from scheduler.db import models
from scheduler import host_cache
from scheduler.nova import mirror_rows

_NODE = models.ComputeNode.__table__
_INVENTORY = models.ComputeNodeInventory.__table__
_TRAIT = models.ComputeNodeTrait.__table__
_ALLOCATION = models.Allocation.__table__
_SERVICE = models.Service.__table__
_INSTANCE = models.Instance.__table__
_AGGREGATE = models.Aggregate.__table__
_AGGREGATE_HOST = models.AggregateHost.__table__
_AGGREGATE_META = models.AggregateMetadata.__table__

_STATE_COLUMNS = ('disabled', 'disabled_reason', 'forced_down')


class Written:
    """What one write changed: counts per table (``changes``; the write
    is true when there are any), the node and service rows deleted
    (``removed``: the host cache sees a deletion at a full read), the
    hosts whose instances changed, and ``seen``: the syncing process saw
    a change since its previous sync (which another process sharing the
    mirror may have written already; see :mod:`scheduler.nova.mirror`,
    which adds those to ``removed`` and ``instance_hosts``)."""

    def __init__(self):
        self.changes = {}
        self.removed = 0
        self.instance_hosts = set()
        self.seen = False

    def count(self, what, number=1):
        if number:
            self.changes[what] = self.changes.get(what, 0) + number

    def __bool__(self):
        return bool(self.changes)


# The parts of a Desired each writer makes the mirror hold.
_PARTS = (('nodes', 'inventories', 'traits'), ('services',), ('instances',),
          ('aggregates',))


def write(session, wanted, previous=None):
    """Make the mirror's tables hold ``wanted`` (a Desired); the
    :class:`Written`. ``previous``: the Desired of the last write that
    committed (its parts equal in ``wanted`` are not compared again), or
    None."""
    written = Written()
    now = models.utcnow()
    writers = (lambda: _write_nodes(session, wanted, written, now),
               lambda: _write_services(session, wanted, written, now),
               lambda: _write_instances(session, wanted, written),
               lambda: _write_aggregates(session, wanted, written, now))
    for names, writer in zip(_PARTS, writers):
        if previous is not None and all(
                getattr(previous, name) == getattr(wanted, name)
                for name in names):
            continue
        writer()
    return written


# -- compute nodes and their extras -------------------------------------------

def _node_extras(session):
    """``({node id: {class: values}}, {node id: frozenset of traits})``."""
    inventories, traits = {}, {}
    fields = [getattr(_INVENTORY.c, name)
              for name in mirror_rows.INVENTORY_FIELDS]
    for row in session.execute(sa.select(
            _INVENTORY.c.compute_node_id, _INVENTORY.c.resource_class,
            *fields)):
        inventories.setdefault(row[0], {})[row[1]] = tuple(row[2:])
    for node_id, trait in session.execute(sa.select(
            _TRAIT.c.compute_node_id, _TRAIT.c.trait)):
        traits.setdefault(node_id, set()).add(trait)
    return inventories, {key: frozenset(value)
                         for key, value in traits.items()}


def _put_extras(session, node_id, inventories, traits):
    session.execute(sa.delete(_INVENTORY).where(
        _INVENTORY.c.compute_node_id == node_id))
    session.execute(sa.delete(_TRAIT).where(
        _TRAIT.c.compute_node_id == node_id))
    if inventories:
        session.execute(sa.insert(_INVENTORY), [
            dict(zip(mirror_rows.INVENTORY_FIELDS, values),
                 compute_node_id=node_id, resource_class=name)
            for name, values in sorted(inventories.items())])
    if traits:
        session.execute(sa.insert(_TRAIT), [
            {'compute_node_id': node_id, 'trait': trait}
            for trait in sorted(traits)])


def _write_nodes(session, wanted, written, now):
    columns = [getattr(_NODE.c, name) for name in mirror_rows.NODE_COLUMNS]
    current = {row.uuid: row for row in session.execute(sa.select(
        _NODE.c.id, _NODE.c.uuid, *columns))}
    inventories, traits = _node_extras(session)
    gone = [row.id for uuid, row in current.items()
            if uuid not in wanted.nodes]
    if gone:
        # First: a node Nova replaced may come back under a new uuid
        # with the same host and node name.
        for table in (_INVENTORY, _TRAIT, _ALLOCATION):
            session.execute(sa.delete(table).where(
                table.c.compute_node_id.in_(gone)))
        session.execute(sa.delete(_NODE).where(_NODE.c.id.in_(gone)))
        written.count('nodes deleted', len(gone))
        written.removed += len(gone)
    for uuid, values in wanted.nodes.items():
        extras = (wanted.inventories.get(uuid, {}),
                  wanted.traits.get(uuid, frozenset()))
        row = current.get(uuid)
        if row is None:
            node_id = session.execute(sa.insert(_NODE).values(
                uuid=uuid, generation=1, created_at=now, updated_at=now,
                **values)).inserted_primary_key[0]
            _put_extras(session, node_id, *extras)
            written.count('nodes added')
            continue
        held = (inventories.get(row.id, {}), traits.get(row.id, frozenset()))
        same_row = all(getattr(row, name) == value
                       for name, value in values.items())
        if same_row and held == extras:
            continue
        session.execute(sa.update(_NODE).where(_NODE.c.id == row.id).values(
            generation=_NODE.c.generation + 1, updated_at=now, **values))
        if held != extras:
            _put_extras(session, row.id, *extras)
        written.count('nodes changed')


# -- services -----------------------------------------------------------------

def _write_services(session, wanted, written, now):
    compute = _SERVICE.c.binary == host_cache.COMPUTE_BINARY
    current = {row.host: row for row in session.execute(sa.select(
        _SERVICE.c.id, _SERVICE.c.host, _SERVICE.c.updated_at,
        *[getattr(_SERVICE.c, name)
          for name in mirror_rows.SERVICE_COLUMNS]).where(compute))}
    gone = [row.id for host, row in current.items()
            if host not in wanted.services]
    if gone:
        session.execute(sa.delete(_SERVICE).where(_SERVICE.c.id.in_(gone)))
        written.count('services deleted', len(gone))
        written.removed += len(gone)
    for host, values in wanted.services.items():
        row = current.get(host)
        if row is None:
            session.execute(sa.insert(_SERVICE).values(
                host=host, binary=host_cache.COMPUTE_BINARY, topic='compute',
                report_count=0, updated_at=now,
                **dict(values, created_at=values['created_at'] or now)))
            written.count('services added')
            continue
        state_changed = any(getattr(row, name) != values[name]
                            for name in _STATE_COLUMNS)
        created_at = values['created_at'] or row.created_at
        if not state_changed and (row.last_seen_up, row.created_at) == (
                values['last_seen_up'], created_at):
            continue
        update = {name: values[name] for name in _STATE_COLUMNS}
        update.update(last_seen_up=values['last_seen_up'],
                      created_at=created_at)
        # A heartbeat alone keeps updated_at (given, or onupdate sets it).
        update['updated_at'] = now if state_changed else row.updated_at
        session.execute(sa.update(_SERVICE).where(
            _SERVICE.c.id == row.id).values(**update))
        written.count('services changed' if state_changed
                      else 'heartbeats')


# -- instances ----------------------------------------------------------------

def _write_instances(session, wanted, written):
    columns = [getattr(_INSTANCE.c, name)
               for name in mirror_rows.INSTANCE_COLUMNS]
    current = {row.uuid: row for row in session.execute(sa.select(
        _INSTANCE.c.id, _INSTANCE.c.uuid, *columns))}
    gone = [row for uuid, row in current.items()
            if uuid not in wanted.instances]
    if gone:
        session.execute(sa.delete(_INSTANCE).where(
            _INSTANCE.c.id.in_([row.id for row in gone])))
        written.instance_hosts.update(row.host for row in gone if row.host)
        written.count('instances deleted', len(gone))
    added = []
    for uuid, values in wanted.instances.items():
        row = current.get(uuid)
        if row is None:
            added.append(dict(values, uuid=uuid))
            written.instance_hosts.add(values['host'])
            continue
        if all(getattr(row, name) == value
               for name, value in values.items()):
            continue
        session.execute(sa.update(_INSTANCE).where(
            _INSTANCE.c.id == row.id).values(**values))
        written.instance_hosts.update(
            host for host in (row.host, values['host']) if host)
        written.count('instances changed')
    if added:
        session.execute(sa.insert(_INSTANCE), added)
        written.count('instances added', len(added))


# -- aggregates ---------------------------------------------------------------

def _held_aggregates(session):
    """``{uuid: (id, name, hosts, metadata)}`` of the mirror."""
    held = {}
    by_id = {}
    for row in session.execute(sa.select(_AGGREGATE.c.id, _AGGREGATE.c.uuid,
                                         _AGGREGATE.c.name)):
        by_id[row.id] = held[row.uuid] = (row.id, row.name, set(), {})
    for aggregate_id, host in session.execute(sa.select(
            _AGGREGATE_HOST.c.aggregate_id, _AGGREGATE_HOST.c.host)):
        by_id[aggregate_id][2].add(host)
    for aggregate_id, key, value in session.execute(sa.select(
            _AGGREGATE_META.c.aggregate_id, _AGGREGATE_META.c.key,
            _AGGREGATE_META.c.value)):
        by_id[aggregate_id][3][key] = value
    return held


def _write_aggregates(session, wanted, written, now):
    held = _held_aggregates(session)
    gone = [entry[0] for uuid, entry in held.items()
            if uuid not in wanted.aggregates]
    if gone:
        for table in (_AGGREGATE_HOST, _AGGREGATE_META):
            session.execute(sa.delete(table).where(
                table.c.aggregate_id.in_(gone)))
        session.execute(sa.delete(_AGGREGATE).where(
            _AGGREGATE.c.id.in_(gone)))
        written.count('aggregates deleted', len(gone))
    for uuid, (name, created_at, hosts, metadata) in sorted(
            wanted.aggregates.items()):
        name = name or 'nova:%s' % uuid
        entry = held.get(uuid)
        if entry is None:
            aggregate_id = session.execute(sa.insert(_AGGREGATE).values(
                uuid=uuid, name=name, created_at=created_at or now,
                updated_at=now)).inserted_primary_key[0]
            old_name, old_hosts, old_metadata = name, set(), {}
            written.count('aggregates added')
        else:
            aggregate_id, old_name, old_hosts, old_metadata = entry
            if (old_name, old_hosts, old_metadata) == (name, hosts,
                                                       metadata):
                continue
            session.execute(sa.update(_AGGREGATE).where(
                _AGGREGATE.c.id == aggregate_id).values(
                    name=name, updated_at=now))
            written.count('aggregates changed')
        _write_members(session, aggregate_id, old_hosts, hosts,
                       old_metadata, metadata)


def _write_members(session, aggregate_id, old_hosts, hosts, old_metadata,
                   metadata):
    left = sorted(set(old_hosts) - hosts)
    if left:
        session.execute(sa.delete(_AGGREGATE_HOST).where(
            _AGGREGATE_HOST.c.aggregate_id == aggregate_id,
            _AGGREGATE_HOST.c.host.in_(left)))
    joined = sorted(hosts - set(old_hosts))
    if joined:
        session.execute(sa.insert(_AGGREGATE_HOST), [
            {'aggregate_id': aggregate_id, 'host': host} for host in joined])
    removed = sorted(set(old_metadata) - set(metadata))
    if removed:
        session.execute(sa.delete(_AGGREGATE_META).where(
            _AGGREGATE_META.c.aggregate_id == aggregate_id,
            _AGGREGATE_META.c.key.in_(removed)))
    for key, value in sorted(metadata.items()):
        if key not in old_metadata:
            session.execute(sa.insert(_AGGREGATE_META).values(
                aggregate_id=aggregate_id, key=key, value=value))
        elif old_metadata[key] != value:
            session.execute(sa.update(_AGGREGATE_META).where(
                _AGGREGATE_META.c.aggregate_id == aggregate_id,
                _AGGREGATE_META.c.key == key).values(value=value))

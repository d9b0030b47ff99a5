"""Claims: the only way usage on a compute node changes.

A claim is one conditional UPDATE of the node's usage columns that succeeds
only if every requested resource still fits under the node's capacity, plus
the INSERT of the allocation row, in one transaction. Two schedulers racing
for the last room on a node cannot both win: the database evaluates the
condition against the row as it is when the UPDATE takes its lock.

Capacity follows Nova's filters: ``total * allocation_ratio - reserved``,
with the node's own ratio (for a node that never reported one,
``[DEFAULT] *_allocation_ratio``, else ``initial_*_allocation_ratio``)::

    with db_api.writer() as session:
        won = claims.claim_resources(session, node_id, instance_uuid,
                                     claims.Resources(2, 4096, 40))

A claim for an instance that asks for NUMA placement or PCI devices (a
:class:`scheduler.hardware.Request`) locks the node's row, fits the
instance on the node's NUMA and PCI usage as it is then, and writes the
new usage with the same UPDATE; what it took is kept on the allocation
(``hardware``) and given back by :func:`release_resources`.

The drivers and the conductor's tasks claim through :func:`claim_in_sql`,
one claim in its own transaction (replacing the consumer's earlier
allocations, checking a hard server-group policy, refusing a settled
instance), and give claims back with :func:`release_in_sql`.
"""

import collections
import contextlib

import sqlalchemy as sa

from oslo_log import log as logging

from scheduler.conf import cached
from scheduler.db import api as db_api
from scheduler.db import class_claims
from scheduler.db import group_claims
from scheduler.db import instances as db_instances
from scheduler.db import models
from scheduler import exception
from scheduler import hardware as hardware_mod
from scheduler.numa import errors as numa_errors
from scheduler import placement_types
from scheduler.pci import errors as pci_errors

LOG = logging.getLogger(__name__)

Resources = placement_types.Resources

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__
_INSTANCE = models.Instance.__table__

# resource field -> (used column, total column, ratio column, reserved
# column, option name of the default ratio)
RESOURCE_COLUMNS = {
    'vcpus': ('vcpus_used', 'vcpus', 'cpu_allocation_ratio',
              'reserved_vcpus', 'cpu_allocation_ratio'),
    'memory_mb': ('memory_mb_used', 'memory_mb', 'ram_allocation_ratio',
                  'reserved_memory_mb', 'ram_allocation_ratio'),
    'disk_gb': ('local_gb_used', 'local_gb', 'disk_allocation_ratio',
                'reserved_disk_gb', 'disk_allocation_ratio'),
}


def default_ratio(option):
    """The ratio of a node that has none recorded (``option``, e.g.
    ``cpu_allocation_ratio``): ``[DEFAULT] <option>``, else (unset or
    0.0, as Nova reads it) ``[DEFAULT] initial_<option>``, as a new node
    would take."""
    options = cached.group(None)
    value = getattr(options, option)
    return getattr(options, 'initial_' + option) if not value else value


def capacity_expression(resource):
    """SQL expression of a node's capacity for one resource."""
    _used, total, ratio, reserved, option = RESOURCE_COLUMNS[resource]
    return (_NODE.c[total] * sa.func.coalesce(_NODE.c[ratio],
                                              default_ratio(option))
            - _NODE.c[reserved])


def claim_resources(session, compute_node_id, consumer_uuid, resources,
                    guards=(), hardware=None, extra=None):
    """Claim ``resources`` on the node for the consumer; True if it fit.

    Resources asked in zero amounts are not checked, so a node that is over
    capacity after its ratio was lowered still takes zero-sized claims. The
    caller owns the transaction; on False nothing was written. ``guards``
    are more SQL conditions the node's UPDATE must meet (False if one
    does not hold). ``hardware`` (a :class:`scheduler.hardware.Request`)
    must fit on the node's NUMA cells and PCI devices too (the row is
    locked while it is fitted). ``extra`` (``{resource class: amount}``,
    e.g. ``{'PCPU': 2}``) is claimed of the node's inventories of those
    classes too (:mod:`scheduler.db.class_claims`), all or nothing: the
    node's UPDATE, the allocation and the classes' UPDATEs run in a
    savepoint, rolled back if one class does not fit.

    :raises ValueError: a negative amount (it would lower the usage), or
        an ``extra`` class or amount that cannot be claimed (see
        :func:`scheduler.db.class_claims.checked_amounts`).
    """
    negative = [field for field in Resources._fields
                if getattr(resources, field) < 0]
    if negative:
        raise ValueError('negative amounts of %s in claim %s for %s'
                         % (', '.join(negative), resources, consumer_uuid))
    wanted = class_claims.checked_amounts(extra)
    conditions = [_NODE.c.id == compute_node_id, *guards]
    values = {'generation': _NODE.c.generation + 1,
              'updated_at': models.utcnow()}
    record = None
    if hardware is not None:
        taken = _take_hardware(session, compute_node_id, hardware)
        if taken is None:
            return False
        record, columns = taken
        values.update(columns)
    for field in Resources._fields:
        amount = getattr(resources, field)
        used = RESOURCE_COLUMNS[field][0]
        values[used] = _NODE.c[used] + amount
        if amount > 0:
            conditions.append(_NODE.c[used] + amount
                              <= capacity_expression(field))
    update = sa.update(_NODE).where(*conditions).values(**values)
    allocation = sa.insert(_ALLOC).values(
        consumer_uuid=consumer_uuid, compute_node_id=compute_node_id,
        vcpus=resources.vcpus, memory_mb=resources.memory_mb,
        disk_gb=resources.disk_gb, hardware=record,
        created_at=models.utcnow())
    if wanted:
        return _claim_with_classes(session, compute_node_id, update,
                                   allocation, wanted)
    if session.execute(update).rowcount != 1:
        return False
    session.execute(allocation)
    return True


def _claim_with_classes(session, compute_node_id, update, allocation,
                        wanted):
    """:func:`claim_resources` of a claim that asks for more classes:
    the node's ``update``, the ``allocation``'s INSERT and the classes'
    conditional UPDATEs, in a savepoint kept only if all of them held."""
    savepoint = session.begin_nested()
    try:
        if session.execute(update).rowcount == 1:
            allocation_id = session.execute(
                allocation).inserted_primary_key[0]
            if class_claims.take(session, compute_node_id, allocation_id,
                                 wanted):
                savepoint.commit()
                return True
        savepoint.rollback()
        return False
    except BaseException:
        savepoint.rollback()
        raise


def _locked_hardware(session, compute_node_id):
    """The node's hardware and usage (a :class:`scheduler.hardware.Host`),
    its row locked until the transaction ends; None if it is gone."""
    row = session.execute(
        sa.select(_NODE.c.numa_topology, _NODE.c.numa_usage,
                  _NODE.c.pci_device_pools, _NODE.c.pci_usage,
                  _NODE.c.cpu_allocation_ratio, _NODE.c.ram_allocation_ratio)
        .where(_NODE.c.id == compute_node_id).with_for_update()).first()
    if row is None:
        return None
    return hardware_mod.Host(
        row.numa_topology, row.numa_usage, row.pci_device_pools or [],
        row.pci_usage or {},
        row.cpu_allocation_ratio or default_ratio('cpu_allocation_ratio'),
        row.ram_allocation_ratio or default_ratio('ram_allocation_ratio'))


def _take_hardware(session, compute_node_id, wanted):
    """Fit ``wanted`` on the node as it is now: ``(record, {usage column:
    new value})``, or None when it does not fit."""
    host = _locked_hardware(session, compute_node_id)
    if host is None:
        return None
    record = wanted.fit(host)
    if record is None:
        return None
    return record, hardware_mod.apply(host, record)


def _give_back_hardware(session, compute_node_id, record):
    """``{usage column: new value}`` with ``record`` given back; {} (and
    an ERROR naming the node, for ``gantt-manage db check`` to show) if
    the node's usage no longer holds it."""
    host = _locked_hardware(session, compute_node_id)
    if host is None:
        return {}
    try:
        return hardware_mod.release(host, record)
    except (numa_errors.NUMAUsageConflict, numa_errors.InvalidNUMAPlacement,
            pci_errors.PciUsageInvalid) as error:
        LOG.error('Node %s: cannot give back the hardware of a claim (%s); '
                  'its NUMA or PCI usage is left as it is', compute_node_id,
                  error)
        return {}


def release_resources(session, consumer_uuid, compute_node_id=None):
    """Drop the consumer's allocations (on one node, or all of them).

    Returns the list of ``(compute_node_id, Resources)`` released; an
    unknown consumer releases nothing. Each allocation row is deleted
    before the usage it held is given back, and only if this transaction
    is the one that deleted it: two concurrent releases of one consumer
    give its resources back once, on every backend (SQLite ignores FOR
    UPDATE).
    """
    query = sa.select(_ALLOC).where(_ALLOC.c.consumer_uuid == consumer_uuid)
    if compute_node_id is not None:
        query = query.where(_ALLOC.c.compute_node_id == compute_node_id)
    released = []
    rows = session.execute(query.with_for_update()).all()
    # What they hold of classes beyond the classic three, read before the
    # rows go (their items go with them).
    items = class_claims.items_of(session, [row.id for row in rows])
    for row in rows:
        deleted = session.execute(sa.delete(_ALLOC)
                                  .where(_ALLOC.c.id == row.id))
        if deleted.rowcount != 1:
            continue  # released meanwhile by another transaction
        amounts = Resources(row.vcpus, row.memory_mb, row.disk_gb)
        values = {'generation': _NODE.c.generation + 1,
                  'updated_at': models.utcnow()}
        if row.hardware:
            values.update(_give_back_hardware(session, row.compute_node_id,
                                              row.hardware))
        for field in Resources._fields:
            used = RESOURCE_COLUMNS[field][0]
            values[used] = _NODE.c[used] - getattr(amounts, field)
        session.execute(sa.update(_NODE)
                        .where(_NODE.c.id == row.compute_node_id)
                        .values(**values))
        if row.id in items:
            class_claims.give_back(session, row.compute_node_id,
                                   items[row.id])
        released.append((row.compute_node_id, amounts))
    return released


def move_allocations(session, from_consumer, to_consumer):
    """Hand every allocation of ``from_consumer`` to ``to_consumer``
    (which must hold none); usage does not change. Returns the number of
    allocations moved.

    A cold migration starts by moving the instance's allocation on the
    source to the migration's consumer, so that the instance's own
    consumer can claim the destination; a revert moves it back.
    """
    if session.execute(sa.select(_ALLOC.c.id).where(
            _ALLOC.c.consumer_uuid == to_consumer)).first():
        raise ValueError('consumer %s already holds allocations'
                         % to_consumer)
    result = session.execute(
        sa.update(_ALLOC).where(_ALLOC.c.consumer_uuid == from_consumer)
        .values(consumer_uuid=to_consumer))
    return result.rowcount


# -- server group policies at claim time (scheduler.db.group_claims) -------

HARD_POLICIES = group_claims.HARD_POLICIES
GroupConflict = group_claims.GroupConflict
check_group_policy = group_claims.check_group_policy


def get_allocations(session, consumer_uuid):
    """``[(compute_node_id, Resources)]`` the consumer holds."""
    rows = session.execute(
        sa.select(_ALLOC).where(_ALLOC.c.consumer_uuid == consumer_uuid))
    return [(row.compute_node_id,
             Resources(row.vcpus, row.memory_mb, row.disk_gb))
            for row in rows]


# ``{node id: {class: amount}}`` a consumer holds beyond the classic three.
get_allocation_items = class_claims.consumer_items


def consumers_holding(session, consumer_uuids):
    """Those of ``consumer_uuids`` that hold allocations, as a set."""
    uuids = sorted(set(consumer_uuids))
    found = set()
    for start in range(0, len(uuids), 500):
        found.update(session.execute(
            sa.select(_ALLOC.c.consumer_uuid).distinct().where(
                _ALLOC.c.consumer_uuid.in_(uuids[start:start + 500])))
            .scalars())
    return found


# -- a claim in its own transaction: what the drivers and the conductor's
# tasks call ------------------------------------------------------------------

class _Refused(Exception):
    """Rolls a claim's transaction back (its release included)."""

    def __init__(self, outcome):
        super().__init__(str(outcome))
        self.outcome = outcome


# An instance in one of these vm_states with no task under way is settled:
# no operation is scheduling it, so a claim for it can only come from a
# stale copy of an earlier request (a scheduler that took the message just
# before it expired and answered after the conductor had asked again).
SETTLED_VM_STATES = ('active', 'error', 'resized', 'shelved',
                     'shelved_offloaded', 'deleted')


def _refusal(session, consumer_uuid):
    """Why a scheduler must not claim for this instance now, or None.

    A settled instance (see SETTLED_VM_STATES) is not being scheduled; a
    building one that the conductor already placed (``spawning`` on a host,
    holding the claim of that placement) was answered already: a copy of
    its request that the broker delivered twice must not move the claim
    from under the build. An instance Gantt does not know is not refused.
    """
    row = session.execute(
        sa.select(_INSTANCE.c.vm_state, _INSTANCE.c.task_state,
                  _INSTANCE.c.host)
        .where(_INSTANCE.c.uuid == consumer_uuid)).first()
    if row is None:
        return None
    if row.task_state is None and row.vm_state in SETTLED_VM_STATES:
        return '%s with no task under way' % row.vm_state
    if (row.vm_state, row.task_state) == ('building', 'spawning') and \
            row.host is not None and get_allocations(session,
                                                            consumer_uuid):
        return 'placed on %s already, holding its claim' % row.host
    return None


def lock_instance(connection, consumer_uuid):
    """Lock the consumer's instance row (if it is an instance) until the
    transaction ends: the claims for one instance, and the conductor
    taking a placement, take turns, and each statement after the lock
    reads what the ones before it committed (READ COMMITTED on
    PostgreSQL and MariaDB; SQLite's writers take turns anyway).

    Without it two copies of one request claimed at the same moment
    (a dead scheduler's message delivered again while the conductor
    asked another) each see no allocation of the other, and the
    instance holds two claims.
    """
    connection.execute(_LOCK_INSTANCE, {'consumer': consumer_uuid}).all()


_LOCK_INSTANCE = (sa.select(_INSTANCE.c.id)
                  .where(_INSTANCE.c.uuid == sa.bindparam('consumer'))
                  .with_for_update())

# PostgreSQL: the instance's lock, which also says whether the claim's
# commit waits for the disk (``[filter_scheduler] build_claim_flush``).
# An instance being built: no. The conductor takes its placement before it
# sends it to the host, in a commit that waits for the log up to itself,
# this claim's commit included. Any other instance (a move): the setting
# in effect, as every commit (``on``, or ``remote_apply``... where the
# operator set it so). No instance found: nothing is set either. Set for
# this transaction only (``set_config``'s ``is_local``): the connection
# keeps its own setting.
_BUILDING_FLUSH = sa.case(
    (_INSTANCE.c.vm_state == db_instances.BUILDING, 'off'),
    else_=sa.func.current_setting('synchronous_commit'))
_LOCK_INSTANCE_FLUSH_WITH_PLACEMENT = (
    sa.select(sa.func.set_config('synchronous_commit', _BUILDING_FLUSH,
                                 sa.true()))
    .where(_INSTANCE.c.uuid == sa.bindparam('consumer'))
    .with_for_update())


def _fresh_lock(dialect):
    """The instance's lock a fresh claim takes on ``dialect`` under the
    current ``[filter_scheduler] build_claim_flush``."""
    if (dialect.name == 'postgresql'
            and cached.group('filter_scheduler').build_claim_flush
            == 'with_placement'):
        return _LOCK_INSTANCE_FLUSH_WITH_PLACEMENT
    return _LOCK_INSTANCE


def _is_settled(consumer_uuid):
    """SQL: the consumer is an instance :func:`_refusal` calls settled."""
    return sa.exists().where(
        _INSTANCE.c.uuid == consumer_uuid,
        _INSTANCE.c.task_state.is_(None),
        _INSTANCE.c.vm_state.in_(SETTLED_VM_STATES))


def _holds_allocations(consumer_uuid):
    return sa.exists().where(_ALLOC.c.consumer_uuid == consumer_uuid)


# The fresh claim's statements, built once per shape: {(resources
# checked, refuse settled, default ratios): UPDATE}. Building them is
# most of a claim's Python time.
_fresh_updates = {}
_ALLOC_INSERT = sa.insert(_ALLOC)


def _fresh_update(checked, refuse_settled):
    """The conditional UPDATE of :func:`claim_fresh`, with bind
    parameters ``node``, ``consumer`` and ``claim_<resource>``.

    It changes no indexed column (not ``updated_at``: the host caches
    find the node through the allocation's ``created_at``), so that on
    PostgreSQL it is a heap-only tuple update, writing none of the
    node's index entries.
    """
    ratios = tuple(default_ratio(RESOURCE_COLUMNS[field][4])
                   for field in Resources._fields)
    key = (checked, refuse_settled, ratios)
    statement = _fresh_updates.get(key)
    if statement is not None:
        return statement
    consumer = sa.bindparam('consumer')
    conditions = [_NODE.c.id == sa.bindparam('node'),
                  ~_holds_allocations(consumer)]
    if refuse_settled:
        conditions.append(~_is_settled(consumer))
    # updated_at as it was (not the column's onupdate): an indexed column
    # set to its own value does not keep the update from being HOT.
    values = {'generation': _NODE.c.generation + 1,
              'updated_at': _NODE.c.updated_at}
    for field, check in zip(Resources._fields, checked):
        used = _NODE.c[RESOURCE_COLUMNS[field][0]]
        amount = sa.bindparam('claim_' + field)
        values[used.name] = used + amount
        if check:
            conditions.append(used + amount <= capacity_expression(field))
    statement = sa.update(_NODE).where(*conditions).values(**values)
    if len(_fresh_updates) > 64:
        _fresh_updates.clear()
    _fresh_updates[key] = statement
    return statement


# The same on PostgreSQL as one statement: the UPDATE in a CTE, the
# allocation inserted from what it returns.
_fresh_statements = {}


def _fresh_statement(checked, refuse_settled):
    """PostgreSQL: :func:`_fresh_update` and the allocation's INSERT as
    one statement (its rowcount is 1 when the claim was made)."""
    update = _fresh_update(checked, refuse_settled)
    statement = _fresh_statements.get(update)
    if statement is not None:
        return statement
    claimed = update.returning(_NODE.c.id).cte('claimed')
    statement = _allocation_from(claimed.c.id)
    if len(_fresh_statements) > 64:
        _fresh_statements.clear()
    _fresh_statements[update] = statement
    return statement


def _allocation_from(node, *conditions):
    """The allocation's INSERT for the node ``node`` (the id a CTE
    returns, or a parameter), where ``conditions`` hold."""
    columns = ('consumer_uuid', 'compute_node_id', 'vcpus', 'memory_mb',
               'disk_gb', 'created_at')
    return sa.insert(_ALLOC).from_select(columns, sa.select(
        sa.bindparam('consumer', type_=_ALLOC.c.consumer_uuid.type),
        node,
        sa.bindparam('claim_vcpus', type_=sa.Integer),
        sa.bindparam('claim_memory_mb', type_=sa.Integer),
        sa.bindparam('claim_disk_gb', type_=sa.Integer),
        sa.bindparam('now', type_=_ALLOC.c.created_at.type)).where(
            *conditions))


# The same as a query of the node's generation after the claim: {UPDATE:
# SELECT}.
_fresh_selects = {}


def _fresh_select(checked, refuse_settled):
    """PostgreSQL: :func:`_fresh_statement` as a SELECT whose one row
    (none when no claim was made) is the node's generation after the
    claim: the UPDATE and the INSERT in CTEs, which PostgreSQL runs
    whatever the query reads of them."""
    update = _fresh_update(checked, refuse_settled)
    statement = _fresh_selects.get(update)
    if statement is not None:
        return statement
    claimed = update.returning(_NODE.c.id, _NODE.c.generation).cte(
        'claimed')
    inserted = _allocation_from(claimed.c.id).returning(_ALLOC.c.id).cte(
        'inserted')
    statement = sa.select(claimed.c.generation).select_from(
        claimed.join(inserted, sa.true()))
    if len(_fresh_selects) > 64:
        _fresh_selects.clear()
    _fresh_selects[update] = statement
    return statement


# psycopg2: the lock and the claim sent as one query string, which
# PostgreSQL runs as one transaction (each statement with a fresh snapshot
# under READ COMMITTED, so the claim reads what the lock waited for): one
# round trip instead of BEGIN, lock, claim and COMMIT. Both statements are
# prepared once per pooled connection (PREPARE), and the string EXECUTEs
# them: the server plans the claim once per connection, not per claim.
# The claim's own parameters (given at each call); its constants (the
# default ratios, the settled VM states) are written into the PREPARE
# (see db_api.Prepared).
_CLAIM_PARAMETERS = ('node', 'consumer', 'now') + tuple(
    'claim_' + field for field in Resources._fields)


class _OneTrip(collections.namedtuple(
        '_OneTrip', 'prepares execute defaults')):
    """``prepares``: ``{name: PREPARE statement}``; ``execute``: the
    query string of EXECUTEs, with pyformat parameters; ``defaults``:
    values of the parameters the caller does not give."""

    def prepare_on(self, connection):
        """PREPARE on ``connection`` what it has not prepared yet."""
        db_api.prepare_on(connection, self.prepares)


# ([DEFAULT] options, {(checked, refuse_settled, dialect): _OneTrip}):
# the trips found under the options cached.group(None) gave (another
# object once any option changes, the default ratios with them).
_trips_found = (None, {})


def one_trip_sql(checked, refuse_settled, dialect):
    """psycopg2: the fresh claim (its resources ``checked`` against
    capacity, settled consumers refused or not) as the instance's lock
    and the claim, prepared (an :class:`_OneTrip`). Found once per
    shape until an option changes: every claim asks (finding the
    statement of the default ratios costs a claim 5-20 us)."""
    global _trips_found
    options = cached.group(None)
    held, trips = _trips_found
    if held is not options:
        trips = {}
        _trips_found = (options, trips)
    key = (checked, refuse_settled, dialect)
    found = trips.get(key)
    if found is None:
        found = trips[key] = _one_trip(checked, refuse_settled, dialect)
    return found


def _one_trip(checked, refuse_settled, dialect):
    statement = _fresh_select(checked, refuse_settled)
    prepares, executes, defaults = {}, [], {}
    for part in (_fresh_lock(dialect), statement):
        prepared = db_api.Prepared.of(part, dialect, _CLAIM_PARAMETERS)
        prepares[prepared.name] = prepared.prepare
        executes.append(prepared.execute)
        defaults.update(prepared.defaults)
    return _OneTrip(prepares, ';\n'.join(executes), defaults)


# PyMySQL: the lock, the UPDATE, the INSERT if the UPDATE changed the
# node (ROW_COUNT()), the node's generation if the INSERT was made, and
# the COMMIT, as one query string (the connections take several
# statements: see db_api._pymysql_multi_statements): one round trip
# instead of five (the lock, the UPDATE, the INSERT, COMMIT, and the
# pool's ROLLBACK when the connection goes back). The server stops at
# the first statement that fails and leaves the transaction open; the
# connection is then given back to the pool, which rolls it back.
_mysql_trips = {}
# The result in a MySQL trip's results that holds the node's generation.
_MYSQL_GENERATION = 3
_ROW_CHANGED = sa.func.row_count() == sa.literal_column('1')


def _mysql_trip(checked, refuse_settled, dialect):
    update = _fresh_update(checked, refuse_settled)
    key = (update, dialect.paramstyle)
    found = _mysql_trips.get(key)
    if found is not None:
        return found
    node = sa.bindparam('node', type_=sa.Integer)
    found = db_api.QueryString.of([
        _LOCK_INSTANCE, update, _allocation_from(node, _ROW_CHANGED),
        sa.select(_NODE.c.generation).where(_NODE.c.id == node,
                                            _ROW_CHANGED),
        'COMMIT'], dialect, _CLAIM_PARAMETERS)
    if len(_mysql_trips) > 64:
        _mysql_trips.clear()
    _mysql_trips[key] = found
    return found


def fresh_claim_possible(resources):
    """Whether a claim of ``resources`` may take the fresh path (no
    negative amount: the full path refuses those, saying why)."""
    return not any(amount < 0 for amount in resources)


def claim_fresh(node_id, consumer_uuid, resources, refuse_settled,
                 report=None, kept=None):
    """The common claim in one statement and an INSERT: a consumer that
    holds nothing yet (and, with ``refuse_settled``, is not settled).
    False when the node has no room or the consumer is not such a one;
    :func:`claim_in_sql` then takes the full path, which says which.
    (Its caller retries on lost connections and deadlocks.) On psycopg2
    and PyMySQL, one round trip, and the node's generation after the
    claim goes into ``report``. With
    ``kept`` (a :class:`db_api.KeptConnection`) the claim runs on the
    connection it keeps.
    """
    if not fresh_claim_possible(resources):
        return False    # the full path says why
    checked = tuple(amount > 0 for amount in resources)
    now = models.utcnow()
    params = {'node': node_id, 'consumer': consumer_uuid, 'now': now}
    for field, amount in zip(Resources._fields, resources):
        params['claim_' + field] = amount
    engine = db_api.get_engine()
    if engine.dialect.driver == 'psycopg2':
        trip = one_trip_sql(checked, refuse_settled, engine.dialect)
        arguments = dict(trip.defaults, **params)
        if kept is None:
            with db_api.autocommit_connection() as connection:
                trip.prepare_on(connection)
                rows = db_api.driver_rows(connection, trip.execute,
                                          arguments)
        else:
            rows = kept.autocommit_rows(engine, trip.prepares, trip.execute,
                                        arguments)
    elif engine.dialect.driver == 'pymysql':
        trip = _mysql_trip(checked, refuse_settled, engine.dialect)
        with (engine.connect() if kept is None
              else kept.use(engine)) as connection:
            rows = db_api.driver_results(
                connection, trip.statement,
                trip.arguments(params))[_MYSQL_GENERATION]
    else:
        return _claim_fresh_core(node_id, consumer_uuid, resources,
                                 checked, refuse_settled, params)
    if len(rows) != 1:
        return False
    if report is not None:
        report['generation'] = rows[0][0]
    return True


def _claim_fresh_core(node_id, consumer_uuid, resources, checked,
                      refuse_settled, params):
    """:func:`claim_fresh` through SQLAlchemy's execution, for the
    drivers without a query string of their own (SQLite, psycopg 3,
    mysqlclient)."""
    with db_api.write_connection() as connection:
        connection.execute(_fresh_lock(connection.dialect),
                           {'consumer': consumer_uuid}).all()
        if connection.dialect.name == 'postgresql':
            # The UPDATE and the INSERT in one statement. (SQLAlchemy
            # keeps an INSERT's row count only when asked to.)
            result = connection.execute(
                _fresh_statement(checked, refuse_settled), params,
                execution_options={'preserve_rowcount': True})
            return result.rowcount == 1
        result = connection.execute(
            _fresh_update(checked, refuse_settled), params)
        if result.rowcount != 1:
            return False
        connection.execute(_ALLOC_INSERT, {
            'consumer_uuid': consumer_uuid, 'compute_node_id': node_id,
            'vcpus': resources.vcpus, 'memory_mb': resources.memory_mb,
            'disk_gb': resources.disk_gb, 'created_at': params['now']})
    return True


@db_api.retry_on_db_error
def claim_in_sql(node_id, consumer_uuid, resources, group_uuid=None,
                 host=None, refuse_settled=False, hardware=None,
                 report=None, kept=None, extra=None, batch=None):
    """One claim in its own transaction: True if the node had room, else
    False, or a :class:`GroupConflict` (which is
    false too) when ``group_uuid``'s hard policy forbids ``host``.

    A consumer that already holds allocations gives them back first, in the
    same transaction, as Placement replaces a consumer's allocations: the
    conductor asks again when a scheduler stopped or died after claiming
    but before answering, and the earlier answer is void. A claim that
    fails writes nothing: the earlier allocations stay. (Move operations
    keep the source's allocation under a migration's own consumer UUID.)

    With ``group_uuid`` the group's row is locked and its policy checked
    around the claim (:func:`scheduler.db.group_claims.policy_lock`: in
    the same transaction with one database; with cells, in an API
    transaction held until the claim's ends), so that members of one
    group claimed in parallel by several schedulers or conductors, in
    any cells, cannot break it.

    With ``hardware`` (a :class:`scheduler.hardware.Request`) the NUMA
    cells, pinned CPUs, pages and PCI devices it asks for are fitted and
    taken in the same transaction (:func:`claim_resources`); with
    ``extra`` (``{resource class: amount}``) those classes are claimed
    of the node's inventories too, all or nothing.

    With ``refuse_settled`` (the scheduler's claims) an instance that is
    settled (:data:`SETTLED_VM_STATES`, no task), or already placed by
    the conductor (see :func:`_refusal`), gets InvalidRequest and nothing
    is written.

    ``report`` (a dict), when given, receives ``generation``: the
    node's generation the claim left, when the database said it (the
    usual claim on PostgreSQL with psycopg2); a host cache that knows
    the generation the node had before may then take its own claim as
    read (see HostManager.settle).

    ``kept``: a :class:`scheduler.db.api.KeptConnection` the usual claim
    runs on (one caller at a time), instead of a connection taken from
    the pool and given back (the scheduler's claim slots keep one each).

    ``batch``: a :class:`scheduler.drivers.group_commit.GroupCommit`
    that makes the usual claim, with others ready at the same time, in
    one transaction (see :mod:`scheduler.db.claim_batches`); ``kept`` is
    then unused.

    The instance's row is locked first (:func:`lock_instance`): claims
    for one instance never run side by side. The usual claim (no group
    policy, a consumer holding nothing yet) is then one conditional
    UPDATE, the allocation's INSERT and the COMMIT (:func:`claim_fresh`;
    on PostgreSQL the UPDATE and INSERT are one statement); only when that
    UPDATE matches nothing does the full path run, to tell a full node
    from a consumer to refuse or to move.
    """
    if report is not None:
        report.pop('generation', None)
    if group_uuid is None and hardware is None and not extra and (
            batch.claim(node_id, consumer_uuid, resources, refuse_settled,
                        report) if batch is not None else
            claim_fresh(node_id, consumer_uuid, resources, refuse_settled,
                        report, kept)):
        return True
    try:
        with _group_lock(group_uuid) as group_check, \
                db_api.writer() as session:
            lock_instance(session, consumer_uuid)
            if refuse_settled:
                why = _refusal(session, consumer_uuid)
                if why is not None:
                    raise exception.InvalidRequest(
                        reason='instance %s is %s; refusing to claim for it '
                               '(a stale copy of an earlier request?)'
                        % (consumer_uuid, why))
            if group_check is not None:
                conflict = group_check(session, consumer_uuid, host)
                if conflict is not None:
                    raise _Refused(conflict)
            released = release_resources(session, consumer_uuid)
            if not claim_resources(session, node_id, consumer_uuid,
                                   resources, hardware=hardware,
                                   extra=extra):
                raise _Refused(False)
    except _Refused as refused:
        return refused.outcome
    if released:
        # An evacuation or unshelve from SHELVED leaves the old claim by
        # design; a build's earlier copy of this request by accident.
        LOG.info('The claim for %s replaced its earlier allocations on '
                 'node(s) %s', consumer_uuid,
                 ', '.join(str(node) for node, _ in released))
    return True


@contextlib.contextmanager
def _group_lock(group_uuid):
    """:func:`scheduler.db.group_claims.policy_lock` for a group, None
    without one."""
    if group_uuid is None:
        yield None
        return
    with group_claims.policy_lock(group_uuid) as check:
        yield check


def hard_group_uuid(spec):
    """The UUID of the spec's server group if its policy is enforced at
    claim time (affinity, anti-affinity), else None."""
    group = spec.obj_get('instance_group') if spec is not None else None
    if group is None or group.obj_get('policy') not in HARD_POLICIES:
        return None
    return group.uuid


@db_api.retry_on_db_error
def release_in_sql(consumer_node_pairs):
    """Release ``[(consumer_uuid, node_id)]`` in one transaction."""
    with db_api.writer() as session:
        for consumer_uuid, node_id in consumer_node_pairs:
            release_resources(session, consumer_uuid, node_id)

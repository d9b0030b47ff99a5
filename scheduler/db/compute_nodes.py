"""Queries over ``compute_nodes``: inventory reports, reads, host mapping.

The conductor writes inventory on behalf of compute agents; the scheduler
reads the table to build its host cache, incrementally: it fetches every
node's generation (cheap), then the full rows of the nodes whose generation
changed::

    changed = compute_nodes.changed_since(session, cached_generations)
"""

import functools

import numpy as np
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__

# Columns a compute agent reports; anything else in a report is refused.
INVENTORY_FIELDS = (
    'vcpus', 'memory_mb', 'local_gb', 'reserved_vcpus', 'reserved_memory_mb',
    'reserved_disk_gb', 'cpu_allocation_ratio', 'ram_allocation_ratio',
    'disk_allocation_ratio', 'hypervisor_type', 'hypervisor_version',
    'host_ip', 'supported_instances', 'stats', 'metrics', 'num_instances',
    'io_workload', 'cpu_info', 'disk_available_least', 'numa_topology',
    'pci_device_pools',
)
# Written by claims only: a report never touches them.
USAGE_FIELDS = ('numa_usage', 'pci_usage')
# Documents that hosts of one hardware model report alike: with
# ``raw_documents`` the reads below give them as their JSON text, which
# the host cache parses once per distinct text
# (scheduler.host_cache.host_inputs).
SHARED_DOCUMENTS = ('cpu_info', 'numa_topology', 'pci_device_pools')
# Columns the host cache never reads, left out of its reads (those with
# ``raw_documents``): the driver makes a datetime of every row's
# ``created_at``, 0.8 us a row of a million-row cold start.
UNREAD_BY_CACHE = frozenset(['created_at'])


def cache_columns():
    """The columns of a node row as the host cache reads it, in order."""
    return [column for column in _NODE.columns
            if column.name not in UNREAD_BY_CACHE]


def _select_nodes(raw_documents=False):
    """Every column of the node rows; with ``raw_documents`` as the host
    cache reads them (:func:`cache_columns`, the shared documents as
    their JSON text)."""
    if not raw_documents:
        return sa.select(_NODE)
    return sa.select(*(
        sa.type_coerce(column, sa.Text).label(column.name)
        if column.name in SHARED_DOCUMENTS else column
        for column in cache_columns()))
RATIO_FIELDS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
                'disk_allocation_ratio')
# What a report may add: the ratio a new node starts with when the
# compute sets none (Nova's [DEFAULT] initial_*_allocation_ratio).
INITIAL_RATIO_FIELDS = tuple('initial_' + name for name in RATIO_FIELDS)


def report_inventory(session, uuid, host, nodename, inventory):
    """Create or update a node from a compute agent's report.

    Usage columns are never taken from a report: they are the sum of the
    node's allocations (``numa_usage`` and ``pci_usage``: what claims
    wrote). Returns the node row's id.

    Allocation ratios follow Nova: a ratio the compute sets is written; one
    it reports as None or 0.0 (Nova reads both as unset) keeps the node's
    ratio, or, for a node with none yet, takes the report's ``initial_*``
    ratio.
    """
    inventory = dict(inventory)
    initial = {name: inventory.pop('initial_' + name, None)
               for name in RATIO_FIELDS}
    unknown = set(inventory) - set(INVENTORY_FIELDS)
    if unknown:
        raise ValueError('unknown inventory fields: %s'
                         % ', '.join(sorted(unknown)))
    existing = session.execute(
        sa.select(_NODE.c.id, _NODE.c.uuid, _NODE.c.host,
                  _NODE.c.hypervisor_hostname,
                  *(_NODE.c[name] for name in RATIO_FIELDS))
        .where(_NODE.c.uuid == uuid)).first()
    for name in RATIO_FIELDS:
        if name in inventory and not inventory[name]:
            kept = existing is not None and existing._mapping[name] is not None
            if kept or initial[name] is None:
                del inventory[name]
            else:
                inventory[name] = initial[name]
    now = models.utcnow()
    if existing is None:
        result = session.execute(sa.insert(_NODE).values(
            uuid=uuid, host=host, hypervisor_hostname=nodename,
            created_at=now, updated_at=now, generation=1, mapped=False,
            **inventory))
        return result.inserted_primary_key[0]
    session.execute(
        sa.update(_NODE).where(_NODE.c.id == existing.id)
        .values(host=host, hypervisor_hostname=nodename, updated_at=now,
                generation=_NODE.c.generation + 1, **inventory))
    return existing.id


def _generations_statement():
    return sa.select(_NODE.c.id, _NODE.c.generation)


@functools.lru_cache(maxsize=64)
def _driver_generations(dialect):
    return str(_generations_statement().compile(dialect=dialect))


def get_generations(session):
    """``{node id: generation}`` of every node."""
    connection = session.connection()
    if connection.dialect.driver == 'psycopg2':
        # The driver's own rows, made a batch at a time: SQLAlchemy's
        # result rows were two thirds of a full read's nodes at 100,000
        # (0.17 of 0.25 s on the 2-CPU machine; issue 53).
        return dict(db_api.driver_rows_batched(
            connection, _driver_generations(connection.dialect), {}))
    rows = connection.execute(_generations_statement())
    # As plain pairs: a field of a SQLAlchemy Row costs ~0.3 us, and a
    # full read takes 100,000 of them at 100k hosts (on PostgreSQL
    # 0.14-0.23 s by field, 0.08-0.13 s so).
    return dict(map(tuple, rows))


def written_conditions(since, until=None):
    """The two conditions of a node written at or after ``since``, each
    for a select of its own (both indexed): its ``updated_at``, or an
    allocation created on it then. The usual claim leaves its node's
    ``updated_at`` as it was (see scheduler.db.claims._fresh_update):
    the second finds the nodes it wrote.

    ``until``: and before it too (a statement prepared with both as
    parameters: see scheduler.host_cache.host_reads._changes_statement)."""
    updated = [_NODE.c.updated_at >= since]
    created = [_ALLOC.c.created_at >= since]
    if until is not None:
        updated.append(_NODE.c.updated_at < until)
        created.append(_ALLOC.c.created_at < until)
    claimed = sa.select(_ALLOC.c.compute_node_id).where(*created)
    return sa.and_(*updated), _NODE.c.id.in_(claimed)


def _written_since(query, since):
    """``query`` (a select of nodes) for the nodes written at or after
    ``since``: one select per :func:`written_conditions`."""
    return tuple(query.where(condition)
                 for condition in written_conditions(since))


def written_since(session, since, raw_documents=False, ids=(), known=None):
    """Full rows of the nodes written at or after ``since`` (their
    ``updated_at`` or an allocation's ``created_at``, both indexed), and
    of the nodes ``ids`` whatever their ``updated_at``: each row once,
    in id order.

    ``known`` (``{id: generation}``, read with ``.get``): the rows written
    since ``since`` whose generation it already holds are not read. Their
    ids and generations are read first (narrow rows), then the full rows
    of the others and of ``ids``: a refresh that reads the last seconds
    again (a slack for late commits) does not fetch each changed node's
    documents several times. Without ``known``, one statement.
    """
    if known is not None:
        written = session.execute(sa.union(*_written_since(
            sa.select(_NODE.c.id, _NODE.c.generation), since))).all()
        wanted = {row.id for row in written
                  if known.get(row.id) != row.generation}
        wanted.update(ids)
        rows = []
        ordered = sorted(wanted)
        for start in range(0, len(ordered), ID_CHUNK):
            rows.extend(session.execute(
                _select_nodes(raw_documents).where(
                    _NODE.c.id.in_(ordered[start:start + ID_CHUNK]))).all())
        return sorted(rows, key=lambda row: row.id)
    branches = _written_since(_select_nodes(raw_documents), since)
    if ids:
        branches += (_select_nodes(raw_documents).where(
            _NODE.c.id.in_(list(ids))),)
    rows = session.execute(sa.union_all(*branches)).all()
    return sorted({row.id: row for row in rows}.values(),
                  key=lambda row: row.id)


# Ids per IN list when rows are read by id.
ID_CHUNK = 1000


# Rows per batch when every node is streamed.
STREAM_BATCH = 2000


def full_read(raw_documents=False):
    """The statement of every node's full row, ordered by id."""
    return _select_nodes(raw_documents).order_by(_NODE.c.id)


def stream_nodes(session, raw_documents=False):
    """Every node's full row, ordered by id, fetched in batches of
    :data:`STREAM_BATCH` (a server-side cursor where the driver has one):
    an iterator, to consume before the session's next statement."""
    result = session.execute(full_read(raw_documents).execution_options(
        yield_per=STREAM_BATCH))
    for partition in result.partitions():
        yield from partition


def get_nodes(session, ids=None, mapped_only=False, raw_documents=False):
    """Full rows of the nodes (all, or those with the given ids); with
    ``raw_documents`` the :data:`SHARED_DOCUMENTS` as JSON text."""
    query = _select_nodes(raw_documents).order_by(_NODE.c.id)
    if ids is not None:
        query = query.where(_NODE.c.id.in_(list(ids)))
    if mapped_only:
        query = query.where(_NODE.c.mapped.is_(True))
    return session.execute(query).all()


# From this many known nodes on, changed_since compares the generations
# a block of GENERATION_BLOCK ids at a time (see _differing_generations).
DIGESTS_FROM = 10000
GENERATION_BLOCK = 128
# Id ranges per statement when the pairs of differing blocks are read.
RANGES_PER_READ = 200


def _block_digests_statement():
    """Per block of :data:`GENERATION_BLOCK` ids: the block, how many
    nodes it holds, the sum of their ids and of their generations."""
    # A literal: the same expression in the select and the GROUP BY (two
    # parameters bound by the server would be two expressions).
    block = (_NODE.c.id // sa.literal_column(
        str(int(GENERATION_BLOCK)), sa.Integer())).label('block')
    return sa.select(block, sa.func.count(), sa.func.sum(_NODE.c.id),
                     sa.func.sum(_NODE.c.generation)).group_by(block)


def _known_digests(known):
    """``{block: (count, sum of ids, sum of generations)}`` of ``known``
    (``{id: generation}``), as :func:`_block_digests_statement` gives
    them for the same nodes."""
    count = len(known)
    ids = np.fromiter(known.keys(), dtype=np.int64, count=count)
    generations = np.fromiter(known.values(), dtype=np.int64, count=count)
    blocks = ids // GENERATION_BLOCK
    order = np.argsort(blocks, kind='stable')
    blocks = blocks[order]
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    counts = np.diff(np.r_[starts, count])
    id_sums = np.add.reduceat(ids[order], starts)
    generation_sums = np.add.reduceat(generations[order], starts)
    return {block: (int(nodes), int(id_sum), int(generation_sum))
            for block, nodes, id_sum, generation_sum in zip(
                blocks[starts].tolist(), counts.tolist(), id_sums.tolist(),
                generation_sums.tolist())}


def _differing_generations(session, known):
    """``{id: generation}`` in SQL of the blocks of ids (of
    :data:`GENERATION_BLOCK`) where SQL and ``known`` differ, and those
    blocks. Every write of a node bumps its generation and ids are not
    used again, so a block whose count, sum of ids and sum of
    generations are those of ``known`` holds the nodes ``known`` holds,
    at its generations (a node deleted and another created unseen in
    the same block, with ids and generations that add up to the same
    sums, would be missed: the creation alone is read by the next
    incremental refresh anyway). At 100,000 nodes the server sends a
    few hundred sums, not 100,000 pairs for the Python comparison that
    held the refresh thread for a tenth of a second (issue 53)."""
    mine = _known_digests(known)
    differing = set()
    for block, count, id_sum, generation_sum in session.execute(
            _block_digests_statement()):
        block = int(block)
        if mine.pop(block, None) != (int(count), int(id_sum),
                                     int(generation_sum)):
            differing.add(block)
    # Blocks of which SQL holds no node now.
    differing.update(mine)
    ranges = []
    for block in sorted(differing):
        low = block * GENERATION_BLOCK
        if ranges and ranges[-1][1] == low:
            ranges[-1][1] = low + GENERATION_BLOCK
        else:
            ranges.append([low, low + GENERATION_BLOCK])
    current = {}
    for start in range(0, len(ranges), RANGES_PER_READ):
        current.update(map(tuple, session.execute(
            _generations_statement().where(sa.or_(*(
                sa.and_(_NODE.c.id >= low, _NODE.c.id < high)
                for low, high in ranges[start:start + RANGES_PER_READ]))))))
    return current, differing


def changed_since(session, known_generations, raw_documents=False):
    """Rows changed since ``{id: generation}``, and the ids now gone.

    Returns ``(changed rows, removed ids)``.
    """
    if not known_generations:
        # A first load: every row.
        return get_nodes(session, raw_documents=raw_documents), []
    if len(known_generations) >= DIGESTS_FROM:
        current, blocks = _differing_generations(session, known_generations)
        changed = sorted(node_id for node_id, generation in current.items()
                         if known_generations.get(node_id) != generation)
        removed = [node_id for block in sorted(blocks)
                   for node_id in range(block * GENERATION_BLOCK,
                                        (block + 1) * GENERATION_BLOCK)
                   if node_id in known_generations
                   and node_id not in current]
        # The nodes SQL holds now: those known, less the removed, plus
        # the new (a changed node that was known is counted once).
        nodes = (len(known_generations) - len(removed)
                 + sum(node_id not in known_generations
                       for node_id in changed))
    else:
        current = get_generations(session)
        changed = [node_id for node_id, generation in current.items()
                   if known_generations.get(node_id) != generation]
        removed = [node_id for node_id in known_generations
                   if node_id not in current]
        nodes = len(current)
    if len(changed) * 2 > nodes:
        # Most of them (a first load): one scan beats lists of ids.
        wanted = set(changed)
        return ([row for row in get_nodes(session,
                                          raw_documents=raw_documents)
                 if row.id in wanted], removed)
    rows = []
    for start in range(0, len(changed), 500):
        rows.extend(get_nodes(session, ids=changed[start:start + 500],
                              raw_documents=raw_documents))
    return rows, removed


def get_node_by_uuid(session, uuid):
    return session.execute(
        sa.select(_NODE).where(_NODE.c.uuid == uuid)).first()


def get_node_by_name(session, host, nodename):
    return session.execute(
        sa.select(_NODE).where(_NODE.c.host == host,
                               _NODE.c.hypervisor_hostname == nodename)
    ).first()


def unmapped_nodes(session, hosts=None, lock=False):
    """The unmapped nodes (of ``hosts`` if given), by host and node name;
    locked for the transaction with ``lock``."""
    query = (sa.select(_NODE).where(_NODE.c.mapped.is_(False))
             .order_by(_NODE.c.host, _NODE.c.hypervisor_hostname))
    if hosts is not None:
        query = query.where(_NODE.c.host.in_(sorted(hosts)))
    if lock:
        query = query.with_for_update()
    return session.execute(query).all()


def map_unmapped_nodes(session, hosts=None):
    """Mark every unmapped node (of ``hosts`` if given) mapped; return
    the rows newly mapped."""
    rows = unmapped_nodes(session, hosts=hosts, lock=True)
    if rows:
        session.execute(
            sa.update(_NODE).where(_NODE.c.id.in_([r.id for r in rows]))
            .values(mapped=True, generation=_NODE.c.generation + 1,
                    updated_at=models.utcnow()))
    return rows


def unmap_all_nodes(session, host=None):
    """Mark every node (of ``host`` if given) unmapped (its cell or its
    host mapping is being deleted: a later discovery may map it again);
    return how many were mapped."""
    query = sa.update(_NODE).where(_NODE.c.mapped.is_(True))
    if host is not None:
        query = query.where(_NODE.c.host == host)
    return session.execute(
        query.values(mapped=False, generation=_NODE.c.generation + 1,
                     updated_at=models.utcnow())).rowcount

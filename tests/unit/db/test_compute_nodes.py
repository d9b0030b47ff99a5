"""Inventory reports, incremental reads and host mapping of compute nodes."""

import datetime
import json
import threading
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes
from scheduler.db import models

_NODE = models.ComputeNode.__table__

INVENTORY = {
    'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200, 'reserved_vcpus': 1,
    'reserved_memory_mb': 512, 'reserved_disk_gb': 0,
    'cpu_allocation_ratio': 4.0, 'ram_allocation_ratio': 1.0,
    'disk_allocation_ratio': None, 'hypervisor_type': 'fake',
    'hypervisor_version': 1002003, 'host_ip': '2001:db8::1',
    'supported_instances': [['x86_64', 'kvm', 'hvm']],
    'stats': {'num_proj_abc': '2'}, 'metrics': [], 'num_instances': 2,
    'io_workload': 1,
}


def report(node_uuid, host='host1', nodename=None, **changes):
    with db_api.writer() as session:
        return compute_nodes.report_inventory(
            session, node_uuid, host, nodename or host + '-node',
            dict(INVENTORY, **changes))


def get(node_uuid):
    with db_api.reader() as session:
        return compute_nodes.get_node_by_uuid(session, node_uuid)


def test_report_creates_a_node(any_database):
    node_uuid = str(uuid.uuid4())

    node_id = report(node_uuid)

    node = get(node_uuid)
    assert node.id == node_id
    assert (node.host, node.hypervisor_hostname) == ('host1', 'host1-node')
    for field, value in INVENTORY.items():
        assert getattr(node, field) == value, field
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used) == (
        0, 0, 0)
    assert node.generation == 1
    assert node.mapped is False
    assert node.created_at is not None


def test_report_updates_and_bumps_generation(any_database):
    node_uuid = str(uuid.uuid4())
    node_id = report(node_uuid)

    assert report(node_uuid, host='host1b', vcpus=16, stats={}) == node_id

    node = get(node_uuid)
    assert (node.host, node.vcpus, node.stats) == ('host1b', 16, {})
    assert node.generation == 2
    assert node.updated_at >= node.created_at
    with db_api.reader() as session:
        assert compute_nodes.get_node_by_name(
            session, 'host1b', 'host1b-node').id == node_id


def ratios(node_uuid):
    node = get(node_uuid)
    return (node.cpu_allocation_ratio, node.ram_allocation_ratio,
            node.disk_allocation_ratio)


INITIAL = {'initial_cpu_allocation_ratio': 4.0,
           'initial_ram_allocation_ratio': 1.0,
           'initial_disk_allocation_ratio': 1.0}
UNSET = {'cpu_allocation_ratio': None, 'ram_allocation_ratio': None,
         'disk_allocation_ratio': None}


def test_ratios_follow_nova_set_else_kept_else_initial(any_database):
    node_uuid = str(uuid.uuid4())
    # A new node whose compute sets no ratio takes the initial ones.
    report(node_uuid, **UNSET, **INITIAL)
    assert ratios(node_uuid) == (4.0, 1.0, 1.0)
    # A ratio set on the compute is written...
    report(node_uuid, **dict(UNSET, cpu_allocation_ratio=16.0,
                             ram_allocation_ratio=1.5), **INITIAL)
    assert ratios(node_uuid) == (16.0, 1.5, 1.0)
    # ... and kept once the option is unset again, whatever the initial
    # ratios say now.
    report(node_uuid, **UNSET, **dict(INITIAL,
                                      initial_cpu_allocation_ratio=2.0))
    assert ratios(node_uuid) == (16.0, 1.5, 1.0)


def test_a_ratio_of_zero_means_unset_as_in_nova(any_database):
    node_uuid = str(uuid.uuid4())
    report(node_uuid, **dict(UNSET, cpu_allocation_ratio=0.0), **INITIAL)
    assert ratios(node_uuid) == (4.0, 1.0, 1.0)
    report(node_uuid, **dict(UNSET, ram_allocation_ratio=1.5), **INITIAL)
    report(node_uuid, **dict(UNSET, ram_allocation_ratio=0.0), **INITIAL)
    assert ratios(node_uuid) == (4.0, 1.5, 1.0)


def test_a_report_without_initial_ratios_leaves_a_new_node_without(
        any_database):
    # An older compute: the scheduler counts such a node with [DEFAULT]
    # *_allocation_ratio, else the initial ratios (claims.default_ratio).
    node_uuid = str(uuid.uuid4())
    report(node_uuid, **UNSET)
    assert ratios(node_uuid) == (None, None, None)


def test_report_never_touches_usage(any_database):
    node_uuid = str(uuid.uuid4())
    node_id = report(node_uuid)
    with db_api.writer() as session:
        assert claims.claim_resources(session, node_id, str(uuid.uuid4()),
                                      claims.Resources(2, 1024, 10))

    report(node_uuid, vcpus=10)

    node = get(node_uuid)
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used) == (
        2, 1024, 10)
    assert node.vcpus == 10


def test_report_refuses_unknown_fields(any_database):
    node_uuid = str(uuid.uuid4())
    report(node_uuid)
    before = get(node_uuid)

    for field in ('vcpus_used', 'memory_mb_used', 'local_gb_used',
                  'generation', 'mapped', 'id', 'uuid', 'no_such_field'):
        with pytest.raises(ValueError, match=field):
            report(node_uuid, **{field: 5})
        with pytest.raises(ValueError, match=field):
            report(str(uuid.uuid4()), host='host2', **{field: 5})

    assert get(node_uuid) == before
    with db_api.reader() as session:
        assert len(compute_nodes.get_nodes(session)) == 1


def test_changed_since(any_database):
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    ids = [report(u, host='host%d' % i) for i, u in enumerate(uuids)]
    with db_api.reader() as session:
        rows, removed = compute_nodes.changed_since(session, {})
        known = compute_nodes.get_generations(session)
    assert [row.id for row in rows] == ids
    assert removed == []
    assert known == {node_id: 1 for node_id in ids}

    report(uuids[1], host='host1', vcpus=32)
    with db_api.writer() as session:
        session.execute(sa.delete(_NODE).where(_NODE.c.id == ids[2]))
    with db_api.reader() as session:
        rows, removed = compute_nodes.changed_since(session, known)

    assert [(row.id, row.vcpus, row.generation) for row in rows] == [
        (ids[1], 32, 2)]
    assert removed == [ids[2]]


def _insert_nodes(count, prefix='host'):
    """``count`` nodes at generation 1, in one transaction."""
    with db_api.writer() as session:
        session.execute(sa.insert(_NODE), [
            {'uuid': str(uuid.uuid4()), 'host': '%s%04d' % (prefix, i),
             'hypervisor_hostname': '%s%04d' % (prefix, i), 'generation': 1}
            for i in range(count)])


def test_changed_since_reads_many_nodes(any_database):
    _insert_nodes(1203)
    with db_api.reader() as session:
        rows, removed = compute_nodes.changed_since(session, {})
        known = compute_nodes.get_generations(session)
        assert compute_nodes.changed_since(session, known) == ([], [])
        # Fewer than half changed: read by lists of ids, more than one.
        stale = dict(known)
        stale.update({node_id: 0 for node_id in sorted(known)[:601]})
        changed, _removed = compute_nodes.changed_since(session, stale)
        # Most changed: one scan.
        stale.update({node_id: 0 for node_id in sorted(known)[601:700]})
        most, _removed = compute_nodes.changed_since(session, stale)
    assert len(rows) == len({row.id for row in rows}) == 1203
    assert removed == []
    assert sorted(row.id for row in changed) == sorted(known)[:601]
    assert sorted(row.id for row in most) == sorted(known)[:700]


def test_stream_nodes_in_batches(any_database, monkeypatch):
    ids = [report(str(uuid.uuid4()), host='host%d' % i) for i in range(7)]
    monkeypatch.setattr(compute_nodes, 'STREAM_BATCH', 3)
    with db_api.reader() as session:
        rows = list(compute_nodes.stream_nodes(session))
        # The session is usable afterwards.
        assert compute_nodes.get_generations(session) == {
            node_id: 1 for node_id in ids}
    assert [row.id for row in rows] == ids
    assert rows[0].supported_instances == [['x86_64', 'kvm', 'hvm']]


def test_map_unmapped_nodes(any_database):
    first = report(str(uuid.uuid4()), host='host2')
    second = report(str(uuid.uuid4()), host='host1')
    with db_api.reader() as session:
        assert compute_nodes.get_nodes(session, mapped_only=True) == []

    with db_api.writer() as session:
        mapped = compute_nodes.map_unmapped_nodes(session)

    assert [row.id for row in mapped] == [second, first]  # by host name
    with db_api.reader() as session:
        nodes = compute_nodes.get_nodes(session, mapped_only=True)
    assert [(n.id, n.mapped, n.generation) for n in nodes] == [
        (first, True, 2), (second, True, 2)]

    third = report(str(uuid.uuid4()), host='host3')
    with db_api.writer() as session:
        assert [row.id for row in
                compute_nodes.map_unmapped_nodes(session)] == [third]
        assert compute_nodes.map_unmapped_nodes(session) == []


def test_concurrent_mapping_maps_each_node_once(any_database):
    ids = {report(str(uuid.uuid4()), host='host%d' % i) for i in range(5)}
    barrier = threading.Barrier(6)
    results, errors = [], []

    def discover():
        try:
            barrier.wait(timeout=30)
            with db_api.writer() as session:
                results.append([row.id for row in
                                compute_nodes.map_unmapped_nodes(session)])
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=discover) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    newly_mapped = [node_id for batch in results for node_id in batch]
    assert sorted(newly_mapped) == sorted(ids)
    with db_api.reader() as session:
        assert {row.generation for row in compute_nodes.get_nodes(
            session)} == {2}


def test_reports_write_the_hardware_and_never_its_usage(any_database):
    node_uuid = str(uuid.uuid4())
    topology = {'cells': [{'id': 0, 'cpuset': [0], 'memory_mb': 1024}]}
    pools = [{'vendor_id': '8086', 'product_id': '154d', 'count': 2}]
    node_id = report(node_uuid, cpu_info={'model': 'Haswell'},
                     disk_available_least=50, numa_topology=topology,
                     pci_device_pools=pools)
    usage = {'cells': [{'id': 0, 'cpu_usage': 1}]}
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id)
                        .values(numa_usage=usage, pci_usage={'k': 1}))

    report(node_uuid, cpu_info=None, disk_available_least=40,
           numa_topology=topology, pci_device_pools=pools)

    node = get(node_uuid)
    assert (node.cpu_info, node.disk_available_least) == (None, 40)
    assert (node.numa_topology, node.pci_device_pools) == (topology, pools)
    assert (node.numa_usage, node.pci_usage) == (usage, {'k': 1})
    with db_api.writer() as session:
        with pytest.raises(ValueError, match='unknown inventory fields: '
                           'numa_usage'):
            compute_nodes.report_inventory(
                session, node_uuid, 'host1', 'host1-node',
                dict(INVENTORY, numa_usage=usage))


def test_raw_documents_come_as_their_json_text(any_database):
    node_uuid = str(uuid.uuid4())
    topology = {'cells': [{'id': 0, 'cpuset': [0], 'memory_mb': 1024}]}
    node_id = report(node_uuid, cpu_info={'model': 'Haswell'},
                     numa_topology=topology, disk_available_least=7)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id)
                        .values(pci_usage={'k': 1}))
        since = models.utcnow() - datetime.timedelta(minutes=1)
        reads = [compute_nodes.get_nodes(session, raw_documents=True),
                 list(compute_nodes.stream_nodes(session,
                                                 raw_documents=True)),
                 compute_nodes.written_since(session, since,
                                             raw_documents=True),
                 compute_nodes.changed_since(session, {node_id: 0},
                                             raw_documents=True)[0]]
    for [row] in reads:
        assert json.loads(row.cpu_info) == {'model': 'Haswell'}
        assert json.loads(row.numa_topology) == topology
        assert row.pci_device_pools is None
        # The others as every read gives them.
        assert (row.pci_usage, row.disk_available_least) == ({'k': 1}, 7)
        assert row.stats == INVENTORY['stats']


def test_written_since_skips_the_rows_known_at_their_generation(
        any_database):
    ids = [report(str(uuid.uuid4()), host='host%d' % n) for n in range(4)]
    since = models.utcnow() - datetime.timedelta(minutes=1)
    with db_api.writer() as session:
        generations = compute_nodes.get_generations(session)
        known = {ids[0]: generations[ids[0]],          # unchanged
                 ids[1]: generations[ids[1]] - 1,      # changed since
                 ids[3]: generations[ids[3]]}          # asked for again
        rows = compute_nodes.written_since(session, since, known=known,
                                           ids=[ids[3]])
        assert [row.id for row in rows] == [ids[1], ids[2], ids[3]]
        # Without ``known``: every row written since.
        assert [row.id for row in compute_nodes.written_since(
            session, since)] == ids



def test_changed_since_by_blocks_of_generations(any_database, monkeypatch):
    """From DIGESTS_FROM known nodes on, the generations are compared a
    block of ids at a time: the changed, new and deleted nodes are found
    in the blocks whose count and sums differ, and only those blocks'
    pairs are read."""
    monkeypatch.setattr(compute_nodes, 'DIGESTS_FROM', 1)
    monkeypatch.setattr(compute_nodes, 'GENERATION_BLOCK', 4)
    monkeypatch.setattr(compute_nodes, 'RANGES_PER_READ', 2)
    _insert_nodes(40)
    with db_api.reader() as session:
        known = compute_nodes.get_generations(session)
        assert compute_nodes.changed_since(session, known) == ([], [])
    ids = sorted(known)
    bumped = [ids[1], ids[2], ids[17], ids[30]]
    # A whole block too: SQL no longer has its digest.
    whole = [node_id for node_id in ids if node_id // 4 == ids[12] // 4]
    assert len(whole) == 4
    deleted = [ids[5], ids[31]] + whole
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id.in_(bumped))
                        .values(generation=_NODE.c.generation + 1))
        session.execute(sa.delete(_NODE).where(_NODE.c.id.in_(deleted)))
    _insert_nodes(2, prefix='new')
    read = []
    differing = compute_nodes._differing_generations

    def spied(session, known):
        current, blocks = differing(session, known)
        read.append((set(current), blocks))
        return current, blocks
    monkeypatch.setattr(compute_nodes, '_differing_generations', spied)
    with db_api.reader() as session:
        rows, removed = compute_nodes.changed_since(session, known)
        now = compute_nodes.get_generations(session)
    new = sorted(set(now) - set(known))
    assert len(new) == 2
    assert [row.id for row in rows] == bumped + new
    assert [row.generation for row in rows] == [2, 2, 2, 2, 1, 1]
    assert removed == sorted(deleted)
    [(pairs, blocks)] = read
    assert blocks == {node_id // 4 for node_id in bumped + deleted + new}
    assert pairs == {node_id for node_id in now if node_id // 4 in blocks}
    assert len(pairs) < len(now)


@pytest.mark.parametrize('by_blocks', [False, True],
                         ids=['all-pairs', 'by-blocks'])
@pytest.mark.parametrize('bumped, new, scan', [
    (6, 0, True),    # 6 of 10 changed: most of them.
    (4, 3, True),    # 7 of the 13 there now.
    (4, 2, False),   # 6 of 12: not most.
    (3, 0, False),
])
def test_changed_since_scans_when_most_nodes_changed(
        any_database, monkeypatch, by_blocks, bumped, new, scan):
    """Both ways of comparing generations count the nodes SQL holds now
    alike, a changed node that was known once, and pick one scan of
    every row only when more than half of them changed."""
    if by_blocks:
        monkeypatch.setattr(compute_nodes, 'DIGESTS_FROM', 1)
        monkeypatch.setattr(compute_nodes, 'GENERATION_BLOCK', 4)
    _insert_nodes(10)
    with db_api.reader() as session:
        known = compute_nodes.get_generations(session)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE)
                        .where(_NODE.c.id.in_(sorted(known)[:bumped]))
                        .values(generation=_NODE.c.generation + 1))
    if new:
        _insert_nodes(new, prefix='new')
    reads = []
    get_nodes = compute_nodes.get_nodes

    def spied(session, ids=None, **kwargs):
        reads.append(None if ids is None else list(ids))
        return get_nodes(session, ids=ids, **kwargs)
    monkeypatch.setattr(compute_nodes, 'get_nodes', spied)
    with db_api.reader() as session:
        rows, removed = compute_nodes.changed_since(session, known)
        now = compute_nodes.get_generations(session)
    assert removed == []
    assert sorted(row.id for row in rows) == sorted(
        sorted(known)[:bumped] + sorted(set(now) - set(known)))
    assert reads == ([None] if scan else [sorted(row.id for row in rows)])

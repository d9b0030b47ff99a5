"""Property: NUMA and PCI claims in SQL never over-commit (SQLite).

A node with a random topology (uneven sibling sets, page sizes, a few PCI
devices on its cells) takes a random sequence of claims of random NUMA
and PCI requests, and releases some of them. After every step:

* a claim wins exactly when the request fits the node's usage as it is
  in SQL (the vCPU, RAM and disk room is never short here);
* no host CPU is pinned by two allocations, and the node's pinned CPUs
  are exactly the ones its allocations hold, all of them dedicated CPUs;
* no page size beyond the smallest is used beyond its usable pages;
* no PCI pool gives more devices than it has;
* ``gantt-manage db check`` finds the node's usage equal to what its
  claims add up to.
"""

import collections
import json
import uuid

import hypothesis
from hypothesis import strategies as st
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler import hardware
from scheduler.numa import topology
from scheduler.objects import request_spec
from scheduler.pci import pools as pci_pools
from tests.unit.db import test_claims
from tests.unit.scheduler.numa import test_cell_figures as strategies

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__
QAT = json.dumps({'name': 'qat', 'vendor_id': '8086', 'product_id': '0443',
                  'device_type': 'type-PCI', 'numa_policy': 'preferred'})


@st.composite
def nodes(draw):
    host = draw(strategies.host_topologies())
    cell_ids = [cell['id'] for cell in host['cells']]
    device_pools = [
        {'vendor_id': '8086', 'product_id': '0443',
         'numa_node': draw(st.sampled_from(cell_ids + [None])),
         'count': draw(st.integers(1, 3)),
         'tags': {'dev_type': 'type-PCI', 'slot': str(index)}}
        for index in range(draw(st.integers(0, 2)))]
    return host, device_pools


@st.composite
def requests(draw):
    vcpus = draw(st.integers(1, 3))
    specs = {}
    policy = draw(st.sampled_from([None, 'dedicated', 'dedicated']))
    if policy:
        specs['hw:cpu_policy'] = policy
        thread = draw(st.sampled_from([None, 'isolate', 'require']))
        if thread:
            specs['hw:cpu_thread_policy'] = thread
    page = draw(st.sampled_from([None, '2MB', 'small', 'large']))
    if page:
        specs['hw:mem_page_size'] = page
    if vcpus % 2 == 0 and draw(st.booleans()):
        specs['hw:numa_nodes'] = '2'
    if draw(st.booleans()):
        specs['pci_passthrough:alias'] = 'qat:%d' % draw(st.integers(1, 2))
    if not specs:
        specs['hw:numa_nodes'] = '1'
    spec = request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=vcpus, memory_mb=draw(st.sampled_from([256, 512, 1024])),
        root_gb=1, extra_specs=specs))
    return hardware.Request.from_spec(spec)


def _make_node(host, device_pools):
    node_id = test_claims.make_node(
        'host-%s' % uuid.uuid4().hex[:8], vcpus=1000, memory_mb=10 ** 7,
        local_gb=10 ** 5)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id).values(
            numa_topology=host, pci_device_pools=device_pools))
    return node_id


def _node_host(node_id):
    with db_api.reader() as session:
        row = session.execute(sa.select(_NODE).where(
            _NODE.c.id == node_id)).one()
    return hardware.Host(row.numa_topology, row.numa_usage,
                         row.pci_device_pools or [], row.pci_usage or {},
                         row.cpu_allocation_ratio, row.ram_allocation_ratio)


def _records(node_id):
    with db_api.reader() as session:
        return [row.hardware for row in session.execute(
            sa.select(_ALLOC.c.hardware).where(
                _ALLOC.c.compute_node_id == node_id))
            if row.hardware]


def _check_no_overcommit(node_id):
    host = _node_host(node_id)
    cells = {cell.id: cell for cell in
             topology.parse_host_topology(host.numa_topology)}
    used = topology.parse_usage(tuple(cells.values()), host.numa_usage)
    records = _records(node_id)
    pinned = collections.Counter()
    for record in records:
        for placed in (record.get('numa') or {}).get('cells', []):
            taken = ([cpu for cpu in placed['cpu_pinning'].values()]
                     + placed['reserved_cpus'] + placed['emulator_cpus'])
            pinned.update((placed['host_cell'], cpu) for cpu in taken)
    assert all(count == 1 for count in pinned.values()), pinned
    for cell_id, cell in cells.items():
        held = {cpu for (where, cpu) in pinned if where == cell_id}
        assert used[cell_id].pinned_cpus == held <= cell.pcpuset
        for pages in cell.mempages[1:]:
            assert used[cell_id].pages_used(pages.size_kb) <= pages.usable
    free = pci_pools.free_counts(host.pci_device_pools, {})
    for key, count in (host.pci_usage or {}).items():
        assert count <= free[key]
    assert test_claims.inconsistencies() == []


@hypothesis.settings(max_examples=60, deadline=None, suppress_health_check=[
    hypothesis.HealthCheck.too_slow,
    hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(node=nodes(), data=st.data())
def test_claims_never_overcommit_and_win_exactly_when_they_fit(
        database, config, node, data):
    config.config(alias=[QAT], group='pci')
    node_id = _make_node(*node)
    held = []
    for _ in range(data.draw(st.integers(1, 8))):
        if held and data.draw(st.integers(0, 3)) == 0:
            consumer = held.pop(data.draw(st.integers(0, len(held) - 1)))
            with db_api.writer() as session:
                claims.release_resources(session, consumer)
        else:
            wanted = data.draw(requests())
            fits = wanted.fit(_node_host(node_id)) is not None
            consumer = str(uuid.uuid4())
            won = claims.claim_in_sql(node_id, consumer,
                                      claims.Resources(1, 256, 1),
                                      hardware=wanted)
            assert bool(won) == fits
            if won:
                held.append(consumer)
            hypothesis.event('won' if won else 'refused')
        _check_no_overcommit(node_id)
    for consumer in held:
        with db_api.writer() as session:
            claims.release_resources(session, consumer)
    host = _node_host(node_id)
    cells = topology.parse_host_topology(host.numa_topology)
    assert topology.normalize_usage(cells, host.numa_usage) == \
        topology.normalize_usage(cells, None)
    assert pci_pools.normalized_usage(host.pci_usage) == {}

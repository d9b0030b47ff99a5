"""Claims of NUMA cells, pinned CPUs, huge pages and PCI devices, in SQL on
every backend: what a claim takes is recorded and given back exactly, and
claims racing for one node never pin a CPU or hand out a device twice."""

import json
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler import hardware
from scheduler.objects import request_spec
from scheduler.pci import pools
from tests.unit.db import test_claims
from tests.unit.scheduler.numa import hosts

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__

QAT = json.dumps({'name': 'qat', 'vendor_id': '8086', 'product_id': '0443',
                  'device_type': 'type-PCI', 'numa_policy': 'required'})
POOL = {'vendor_id': '8086', 'product_id': '0443', 'numa_node': 1,
        'count': 2, 'tags': {'dev_type': 'type-PCI'}}
# Two cells, each 4 dedicated CPUs in 2 cores and 256 pages of 2 MiB;
# the PCI devices on cell 1.
TOPOLOGY = hosts.host(*[
    hosts.cell(cell, cpuset=[cell * 8], pcpuset=range(cell * 8 + 4,
                                                      cell * 8 + 8),
               memory_mb=4096, siblings=[[cell * 8 + 4, cell * 8 + 5],
                                         [cell * 8 + 6, cell * 8 + 7]],
               mempages={4: 524288, 2048: 256})
    for cell in (0, 1)])


@pytest.fixture
def pci_alias(config):
    config.config(alias=[QAT], group='pci')


def make_node():
    node_id = test_claims.make_node(vcpus=16, memory_mb=16384)
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node_id).values(
            numa_topology=TOPOLOGY, pci_device_pools=[POOL]))
    return node_id


def wanted(vcpus, memory_mb=512, **extra_specs):
    spec = request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=vcpus, memory_mb=memory_mb, root_gb=1,
        extra_specs=extra_specs))
    return hardware.Request.from_spec(spec)


def claim(node_id, request, consumer=None):
    return claims.claim_in_sql(node_id, consumer or str(uuid.uuid4()),
                               claims.Resources(1, 512, 1), hardware=request)


def usage(node_id):
    with db_api.reader() as session:
        row = session.execute(sa.select(_NODE.c.numa_usage,
                                        _NODE.c.pci_usage)
                              .where(_NODE.c.id == node_id)).one()
    pinned = sorted(cpu for cell in (row.numa_usage or {}).get('cells', [])
                    for cpu in cell.get('pinned_cpus', []))
    return pinned, row.pci_usage or {}


def test_pinned_claims_take_distinct_cpus_and_release_them(any_database):
    node = make_node()
    pinned = wanted(2, **{'hw:cpu_policy': 'dedicated'})
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert claim(node, pinned, first) is True
    assert claim(node, pinned, second) is True
    taken, _pci = usage(node)
    assert len(taken) == 4 and len(set(taken)) == 4
    with db_api.reader() as session:
        records = [row.hardware for row in session.execute(
            sa.select(_ALLOC.c.hardware))]
    assert all(record['numa'] for record in records)
    assert test_claims.inconsistencies() == []
    with db_api.writer() as session:
        claims.release_resources(session, first)
    remaining, _pci = usage(node)
    assert len(remaining) == 2 and set(remaining) < set(taken)
    assert test_claims.inconsistencies() == []


def test_a_claim_that_does_not_fit_writes_nothing(any_database):
    node = make_node()
    # Eight pinned vCPUs: no cell has more than four.
    assert claim(node, wanted(8, **{'hw:cpu_policy': 'dedicated'})) is False
    # 600 MiB of 2 MiB pages is 300 pages: a cell has 256.
    assert claim(node, wanted(1, 600, **{'hw:mem_page_size': '2MB'})) \
        is False
    assert usage(node) == ([], {})
    with db_api.reader() as session:
        assert session.scalar(sa.select(sa.func.count())
                              .select_from(_ALLOC)) == 0


def test_pci_devices_come_from_the_instance_cell(any_database, pci_alias):
    node = make_node()
    request = wanted(2, **{'hw:cpu_policy': 'dedicated',
                           'pci_passthrough:alias': 'qat:1'})
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    assert [claim(node, request, consumer) for consumer in consumers] == [
        True, True, False]   # two devices
    pinned, pci = usage(node)
    # Required policy: both instances on cell 1, with the devices.
    assert pinned == [12, 13, 14, 15]
    assert pci == {pools.pool_key(POOL): 2}
    with db_api.writer() as session:
        claims.release_resources(session, consumers[0])
    assert usage(node)[1] == {pools.pool_key(POOL): 1}
    assert test_claims.inconsistencies() == []


def test_db_check_sees_usage_that_no_claim_holds(any_database):
    node = make_node()
    assert claim(node, wanted(1, **{'hw:cpu_policy': 'dedicated'})) is True
    with db_api.writer() as session:
        session.execute(sa.update(_NODE).where(_NODE.c.id == node).values(
            pci_usage={pools.pool_key(POOL): 1}))
    [(host, problems)] = test_claims.inconsistencies()
    assert host == 'host1'
    assert problems == ['pci_usage {"%s":1} but the claims add up to {}'
                        % pools.pool_key(POOL).replace('"', '\\"')]


@pytest.mark.parametrize('workers', [10])
def test_racing_claims_never_pin_a_cpu_twice(any_database, pci_alias,
                                             workers):
    node = make_node()
    request = wanted(2, **{'hw:cpu_policy': 'dedicated',
                           'hw:cpu_thread_policy': 'require'})
    # Require: both threads of a free core each, two cores per cell:
    # four can win.
    results = test_claims.race(workers, lambda index: claim(node, request))
    assert results.count(True) == 4
    pinned, _pci = usage(node)
    assert pinned == [4, 5, 6, 7, 12, 13, 14, 15]
    assert test_claims.inconsistencies() == []

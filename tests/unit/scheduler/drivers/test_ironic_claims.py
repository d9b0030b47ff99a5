"""The filter scheduler with the ironic host manager: a claim on a
baremetal node takes all of it, in SQL and in what the conductor is told
to claim on an alternate, and schedulers racing for one node leave one
instance on it."""

import threading

import pytest

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler import exception
from scheduler.drivers import filter_scheduler
from tests.unit.scheduler import fakes

# A 4-core, 4 GiB, 50 GB machine, as the Ironic driver reports it.
MACHINE = {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 50,
           'hypervisor_type': 'ironic', 'cpu_allocation_ratio': 1.0,
           'ram_allocation_ratio': 1.0, 'disk_allocation_ratio': 1.0}
WHOLE = (4, 4096, 50)
WHOLE_REQUEST = {'vcpus': 4, 'memory_mb': 4096, 'disk_gb': 50}


@pytest.fixture
def ironic(config):
    config.config(host_manager='ironic_host_manager', group='scheduler')


def _usage(cloud, nodename):
    row = cloud.node_row(nodename)
    return (row.vcpus_used, row.memory_mb_used, row.local_gb_used)


def test_each_instance_takes_a_whole_node(cloud, ironic, make_driver):
    for nodename in ('bm-1', 'bm-2'):
        cloud.add_node('bm', nodename, **MACHINE)
    driver = make_driver(filter_scheduler.FilterScheduler)
    uuids = fakes.uuids(2)

    # Two small instances in one request: they would share one node.
    selections = driver.select_destinations(
        None, fakes.spec(vcpus=1, memory_mb=512, root_gb=1,
                         num_instances=2), uuids, False)

    nodes = [alternatives[0].nodename for alternatives in selections]
    assert sorted(nodes) == ['bm-1', 'bm-2']
    for uuid, nodename, [chosen] in zip(uuids, nodes, selections):
        assert chosen.requested_resources() == WHOLE_REQUEST
        assert cloud.allocations(uuid) == {nodename: WHOLE}
        assert _usage(cloud, nodename) == WHOLE
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(None, fakes.spec(vcpus=1, memory_mb=1),
                                   fakes.uuids(1), False)

    # Releasing the claim gives the whole node back.
    claims.release_in_sql([(uuids[0], cloud.nodes[nodes[0]])])
    assert _usage(cloud, nodes[0]) == (0, 0, 0)
    driver.host_manager.refresh()
    [[chosen]] = driver.select_destinations(
        None, fakes.spec(vcpus=2, memory_mb=1024), fakes.uuids(1), False)
    assert chosen.nodename == nodes[0]


def test_alternates_ask_the_conductor_for_whole_nodes(cloud, ironic, config,
                                                      make_driver):
    config.config(max_attempts=3, group='scheduler')
    for nodename in ('bm-1', 'bm-2', 'bm-3'):
        cloud.add_node('bm', nodename, **MACHINE)
    cloud.add_node('vm', **dict(MACHINE, hypervisor_type='kvm'))
    driver = make_driver(filter_scheduler.FilterScheduler)
    [uuid] = fakes.uuids(1)

    [selections] = driver.select_destinations(
        None, fakes.spec(vcpus=1, memory_mb=512, root_gb=1,
                         force_nodes=['bm-1', 'vm']), [uuid], True)

    wanted = {s.nodename: s.requested_resources() for s in selections}
    assert wanted == {'bm-1': WHOLE_REQUEST,
                      'vm': {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}}


@pytest.mark.parametrize('manager, winners', [
    ('ironic_host_manager', 1),
    # The default host manager shares the node: all four fit on it.
    ('host_manager', 4),
])
@pytest.mark.parametrize('any_database', ['postgresql', 'mariadb'],
                         indirect=True)
def test_schedulers_racing_for_one_baremetal_node(any_database, config,
                                                  make_driver, manager,
                                                  winners):
    config.config(host_manager=manager, group='scheduler')
    cloud = fakes.Cloud()
    cloud.add_node('bm', 'bm-1', **MACHINE)
    # Four schedulers whose caches all saw the node free.
    drivers = [make_driver(filter_scheduler.FilterScheduler)
               for _ in range(4)]
    for driver in drivers:
        assert len(driver.host_manager.snapshot()) == 1
    uuids = fakes.uuids(4)
    start = threading.Barrier(len(drivers))
    outcomes = [None] * len(drivers)

    def place(index):
        start.wait()
        try:
            outcomes[index] = drivers[index].select_destinations(
                None, fakes.spec(vcpus=1, memory_mb=512, root_gb=1),
                [uuids[index]], False)[0][0].nodename
        except exception.NoValidHost:
            outcomes[index] = 'no valid host'

    threads = [threading.Thread(target=place, args=(index,))
               for index in range(len(drivers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == sorted(
        ['bm-1'] * winners + ['no valid host'] * (4 - winners))
    held = [cloud.allocations(uuid) for uuid in uuids]
    if winners == 1:
        assert sorted(held, key=len) == [{}, {}, {}, {'bm-1': WHOLE}]
        assert _usage(cloud, 'bm-1') == WHOLE
    else:
        assert held == [{'bm-1': (1, 512, 1)}] * 4
        assert _usage(cloud, 'bm-1') == (4, 2048, 4)
    with db_api.reader() as session:
        assert claims.find_inconsistent_nodes(session) == []

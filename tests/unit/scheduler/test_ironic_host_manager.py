"""The ironic host manager's node states: baremetal nodes are free, or
used up whole, whether read from SQL or consumed by a claim."""

import pytest

from scheduler.db import claims
from scheduler import host_cache
from scheduler import ironic_host_manager
from tests.unit.scheduler import fakes

# An 8-core, 16 GiB, 200 GB machine, as the Ironic driver reports it.
MACHINE = {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200,
           'hypervisor_type': 'ironic', 'cpu_allocation_ratio': 1.0,
           'ram_allocation_ratio': 1.0, 'disk_allocation_ratio': 1.0,
           'reserved_vcpus': 0, 'reserved_memory_mb': 0,
           'reserved_disk_gb': 0}
WHOLE = (8, 16384, 200)


def _used(state):
    return (state.vcpus_used, state.memory_mb_used, state.local_gb_used)


@pytest.fixture
def manager():
    made = ironic_host_manager.IronicHostManager(auto_refresh=False)
    yield made
    made.stop()


def _states(manager):
    table = manager.refresh(full=True)
    return {state.nodename: state for state in table.states}


def test_a_free_baremetal_node_is_free(cloud, manager):
    cloud.add_node('bm', 'bm-1', **MACHINE)
    state = _states(manager)['bm-1']
    assert isinstance(state, ironic_host_manager.IronicNodeState)
    assert _used(state) == (0, 0, 0)
    assert (state.free_ram_mb, state.free_disk_mb) == (16384, 204800)


def test_a_node_whose_compute_reports_an_instance_is_used_whole(cloud,
                                                                manager):
    # Usage in SQL is 0 (no claim yet, or one released before the
    # compute's next report), but the node runs an instance.
    cloud.add_node('bm', 'bm-1', num_instances=1, **MACHINE)
    state = _states(manager)['bm-1']
    assert _used(state) == WHOLE
    assert (state.free_ram_mb, state.free_disk_mb) == (0, 0)


def test_a_node_with_part_of_it_claimed_is_used_whole(cloud, manager):
    cloud.add_node('bm', 'bm-1', **MACHINE)
    cloud.take('bm-1', (1, 512, 10))
    assert _used(_states(manager)['bm-1']) == WHOLE


def test_whole_is_the_capacity_the_claims_check(cloud, manager):
    # vCPUs: 8 * 2.0 - 1 = 15; RAM: 16384 * 1.0 - 384 = 16000;
    # disk: 200 * 1.5 - 0 = 300.
    cloud.add_node('bm', 'bm-1', num_instances=1, **dict(
        MACHINE, cpu_allocation_ratio=2.0, reserved_vcpus=1,
        reserved_memory_mb=384, disk_allocation_ratio=1.5))
    state = _states(manager)['bm-1']
    assert _used(state) == (15, 16000, 300)
    assert state.claim_amounts(claims.Resources(1, 1, 1)) == (15, 16000, 300)


def test_other_nodes_are_shared_as_usual(cloud, manager):
    cloud.add_node('vm', num_instances=1, **dict(MACHINE,
                                                 hypervisor_type='kvm'))
    state = _states(manager)['vm']
    assert type(state) is host_cache.HostState
    assert _used(state) == (0, 0, 0)
    resources = claims.Resources(1, 512, 10)
    assert state.claim_amounts(resources) is resources
    assert _used(state.consumed(resources)) == (1, 512, 10)


def test_the_default_host_manager_shares_baremetal_nodes(
        cloud, make_host_manager):
    cloud.add_node('bm', 'bm-1', num_instances=1, **MACHINE)
    manager = make_host_manager(auto_refresh=False)
    [state] = manager.refresh().states
    assert type(state) is host_cache.HostState
    assert _used(state) == (0, 0, 0)
    assert state.claim_amounts(claims.Resources(1, 2, 3)) == (1, 2, 3)


def test_consuming_takes_the_whole_node(cloud, manager):
    cloud.add_node('bm', 'bm-1', **MACHINE)
    state = _states(manager)['bm-1']
    small = claims.Resources(1, 512, 10)
    assert state.claim_amounts(small) == WHOLE

    taken = state.consumed(small)

    assert isinstance(taken, ironic_host_manager.IronicNodeState)
    assert _used(taken) == WHOLE
    assert taken.num_instances == 1
    assert _used(state) == (0, 0, 0)   # a HostState is never changed


def test_the_cache_takes_the_whole_node_on_consume(cloud, manager):
    node_id = cloud.add_node('bm', 'bm-1', **MACHINE)
    manager.refresh()
    manager.consume(node_id, claims.Resources(1, 512, 10))
    table = manager.snapshot()
    row = table.row_by_id[node_id]
    assert _used(table.states[row]) == WHOLE
    assert (table.used['vcpus'][row], table.used['memory_mb'][row],
            table.used['disk_gb'][row]) == WHOLE
    assert table.free_ram_mb[row] == 0


def test_a_state_made_in_memory_becomes_a_baremetal_one():
    plain = fakes.host_state(vcpus=4, memory_mb=4096, local_gb=50,
                             cpu_ratio=1.0, ram_ratio=1.0,
                             hypervisor_type='ironic', num_instances=2)
    state = ironic_host_manager.IronicNodeState.from_host_state(plain)
    assert (state.id, state.host, state.service) == (
        plain.id, plain.host, plain.service)
    assert _used(state) == (4, 4096, 50)
    assert _used(plain) == (0, 0, 0)

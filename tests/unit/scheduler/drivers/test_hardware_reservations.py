"""The host cache takes a request's NUMA cells, pinned CPUs, pages and
PCI devices when it reserves a host, as the claim takes them in SQL, and
gives them back when the claim does not win.

Without that, the next NUMA request of the same process would see the
cells as free until a refresh, pick the same host and lose its claim (a
retry, never an overcommit: the SQL claim guards)."""

from oslo_db import exception as db_exc
import pytest

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler import hardware
from scheduler.numa import topology
from tests.unit.scheduler import fakes
from tests.unit.scheduler.numa import hosts

# Two cells of 4 dedicated CPUs (no SMT) and 8 GiB each.
TWO_CELLS = hosts.host(*[
    hosts.cell(cell, cpuset=[cell * 8, cell * 8 + 1],
               pcpuset=range(cell * 8 + 2, cell * 8 + 6), memory_mb=8192)
    for cell in (0, 1)])
QAT = ('{"name": "qat", "vendor_id": "8086", "product_id": "0443", '
       '"device_type": "type-PCI"}')
POOLS = [{'vendor_id': '8086', 'product_id': '0443', 'numa_node': 0,
          'count': 1, 'tags': {'dev_type': 'type-PCI'}}]


def _spec(vcpus=4, memory_mb=2048, num_instances=1, **extra_specs):
    spec = fakes.spec(vcpus=vcpus, memory_mb=memory_mb,
                      num_instances=num_instances)
    spec.flavor.extra_specs = dict(extra_specs)
    return spec


def _whole_cell(num_instances=1):
    """Four pinned vCPUs: all the dedicated CPUs of one cell."""
    return _spec(num_instances=num_instances,
                 **{'hw:cpu_policy': 'dedicated'})


@pytest.fixture
def driver(cloud, make_driver, config):
    # No background refresh: the cache only learns of claims through
    # its own reservations, which is what is tested.
    config.config(host_state_refresh_interval=3600, group='scheduler')
    config.config(alias=[QAT], group='pci')
    config.config(enabled_filters=['ComputeFilter', 'NUMATopologyFilter',
                                   'PciPassthroughFilter'],
                  group='filter_scheduler')
    cloud.add_node('a', vcpus=12, numa_topology=TWO_CELLS,
                   pci_device_pools=POOLS, cpu_allocation_ratio=1.0,
                   ram_allocation_ratio=1.0)
    return make_driver(filter_scheduler.FilterScheduler)


def _cached(driver):
    table = driver.host_manager.snapshot()
    return table.states[0]


def _pinned_by_cell(usage):
    cells = topology.parse_host_topology(TWO_CELLS)
    return {cell_id: sorted(used.pinned_cpus) for cell_id, used
            in topology.parse_usage(cells, usage).items()}


def _node_usage(cloud):
    row = cloud.node_row('a')
    return row.numa_usage, row.pci_usage or {}


def test_two_whole_cell_requests_take_both_cells_then_none_is_left(
        cloud, driver):
    for _ in range(2):
        driver.select_destinations(None, _whole_cell(), fakes.uuids(1),
                                   False)
    # The second request saw the first one's cell as taken in the cache
    # and chose the other: no claim was lost.
    assert driver.stats['claim_retries'] == 0
    sql_usage, _pci = _node_usage(cloud)
    assert _pinned_by_cell(sql_usage) == {0: [2, 3, 4, 5],
                                          1: [10, 11, 12, 13]}
    assert _pinned_by_cell(_cached(driver).numa_usage) == _pinned_by_cell(
        sql_usage)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, _whole_cell(), fakes.uuids(1),
                                   False)
    # The filter knew: no claim was tried and lost.
    assert 'NUMATopologyFilter 1 -> 0' in str(error.value)
    assert driver.stats['claim_retries'] == 0


def test_instances_of_one_request_see_each_others_cells(cloud, driver):
    uuids = fakes.uuids(2)
    selections = driver.select_destinations(None, _whole_cell(2), uuids,
                                            False)
    assert [s[0].service_host for s in selections] == ['a', 'a']
    assert driver.stats['claim_retries'] == 0
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, _whole_cell(), fakes.uuids(1),
                                   False)
    assert 'NUMATopologyFilter 1 -> 0' in str(error.value)


def test_a_third_instance_of_one_request_fails_and_releases_all(
        cloud, driver):
    uuids = fakes.uuids(3)
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, _whole_cell(3), uuids, False)
    assert 'Instance 3 of 3' in str(error.value)
    assert driver.stats['claim_retries'] == 0
    assert [cloud.allocations(uuid) for uuid in uuids] == [{}, {}, {}]
    assert _pinned_by_cell(_node_usage(cloud)[0]) == {0: [], 1: []}


def test_pci_devices_are_taken_in_the_cache_too(cloud, driver):
    spec = _spec(vcpus=1, memory_mb=512,
                 **{'pci_passthrough:alias': 'qat:1'})
    driver.select_destinations(None, spec, fakes.uuids(1), False)
    assert _cached(driver).free_pci_devices == 0
    assert _cached(driver).pci_usage == _node_usage(cloud)[1]
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, spec, fakes.uuids(1), False)
    assert 'PciPassthroughFilter 1 -> 0' in str(error.value)
    assert driver.stats['claim_retries'] == 0


def test_a_lost_claim_gives_the_cached_cells_back(cloud, driver):
    state = _cached(driver)
    wanted = hardware.Request.from_spec(_whole_cell())
    # Another scheduler takes both cells behind this one's back.
    for _ in range(2):
        assert claims.claim_in_sql(state.id, fakes.uuids(1)[0],
                                   claims.Resources(4, 2048, 0),
                                   hardware=wanted)
    before = driver.stats['claim_retries']
    assert not driver.claim(state, fakes.uuids(1)[0],
                            claims.Resources(4, 2048, 0), hardware=wanted)
    assert driver.stats['claim_retries'] == before + 1
    # The cache holds what SQL holds: the other scheduler's cells, and
    # nothing of the lost reservation on top.
    assert _pinned_by_cell(_cached(driver).numa_usage) == _pinned_by_cell(
        _node_usage(cloud)[0])


def test_settling_a_lost_reservation_gives_back_only_its_cells(
        cloud, driver):
    manager = driver.host_manager
    node_id = _cached(driver).id
    wanted = hardware.Request.from_spec(_whole_cell())
    resources = claims.Resources(4, 2048, 0)
    lost = manager.consume(node_id, resources, in_flight=True,
                           hardware_request=wanted)
    kept = manager.consume(node_id, resources, in_flight=True,
                           hardware_request=wanted)
    assert {lost['numa']['cells'][0]['host_cell'],
            kept['numa']['cells'][0]['host_cell']} == {0, 1}
    assert wanted.fit(hardware.Host.of_state(_cached(driver))) is None
    # The first claim lost; the second is still in flight, so the node
    # is not re-read from SQL: the give-back alone frees the cell.
    manager.settle(node_id, give_back=lost)
    assert manager.refresh_nodes([node_id]) == {}
    pinned = _pinned_by_cell(_cached(driver).numa_usage)
    kept_cell = kept['numa']['cells'][0]['host_cell']
    assert pinned[kept_cell] and not pinned[1 - kept_cell]
    again = wanted.fit(hardware.Host.of_state(_cached(driver)))
    assert again['numa']['cells'][0]['host_cell'] == 1 - kept_cell
    manager.settle(node_id, give_back=kept)
    assert _pinned_by_cell(_cached(driver).numa_usage) == {0: [], 1: []}


def test_a_give_back_that_no_longer_fits_leaves_the_row_to_a_reread(
        cloud, driver, caplog):
    manager = driver.host_manager
    node_id = _cached(driver).id
    wanted = hardware.Request.from_spec(_whole_cell())
    record = manager.consume(node_id, claims.Resources(4, 2048, 0),
                             in_flight=True, hardware_request=wanted)
    manager.settle(node_id, give_back=record)
    # Giving it back twice cannot un-pin CPUs nobody holds.
    manager.consume(node_id, claims.Resources(0, 0, 0), in_flight=True)
    manager.settle(node_id, give_back=record)
    assert 'could not give back the hardware' in caplog.text
    assert _pinned_by_cell(_cached(driver).numa_usage) == {0: [], 1: []}


def test_a_database_away_during_the_claim_leaves_no_cells_taken(
        cloud, driver, database, config):
    _cached(driver)     # the host cache is loaded
    config.config(connection='postgresql+psycopg2://gantt@127.0.0.1:9/gantt',
                  max_retries=0, db_max_retries=1, db_retry_interval=0,
                  group='database')
    db_api.dispose_engine()
    try:
        with pytest.raises(db_exc.DBConnectionError):
            driver.select_destinations(None, _whole_cell(), fakes.uuids(1),
                                       False)
        # Nothing was claimed: the cache gave the cell back at once,
        # though it could not re-read the node.
        assert _pinned_by_cell(_cached(driver).numa_usage) == {0: [],
                                                                1: []}
    finally:
        config.config(connection=database, group='database')
        db_api.dispose_engine()
    assert _pinned_by_cell(_node_usage(cloud)[0]) == {0: [], 1: []}
    for _ in range(2):
        driver.select_destinations(None, _whole_cell(), fakes.uuids(1),
                                   False)
    assert driver.stats['claim_retries'] == 0


def test_shapes_fitted_host_by_host_see_the_cached_cells_too(cloud, driver):
    # A mixed guest (2 shared + 4 pinned vCPUs) is not one of the shapes
    # the filter's cell columns decide: the filter fits it once per
    # distinct NUMA state, and the reservation gives the host a new one.
    mixed = _spec(vcpus=6, **{'hw:cpu_policy': 'mixed',
                              'hw:cpu_dedicated_mask': '^0-1'})
    for _ in range(2):
        driver.select_destinations(None, mixed, fakes.uuids(1), False)
    assert driver.stats['claim_retries'] == 0
    with pytest.raises(exception.NoValidHost) as error:
        driver.select_destinations(None, mixed, fakes.uuids(1), False)
    # The node reports no PCPU: the two guests took 12 VCPU (Nova's
    # fallback query), all of them at ratio 1.0, and the third's resource
    # request finds no room before its NUMA cells are looked at.
    assert 'resources 1 -> 0' in str(error.value)
    assert driver.stats['claim_retries'] == 0

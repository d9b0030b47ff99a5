"""HostState.from_node shares the int objects of the sizes node rows
report (memory per host at a million hosts, issue 53), and keeps each
node's own values whatever the number of distinct sizes."""

import datetime

from scheduler.host_cache import host_reads
from scheduler.host_cache import host_state

_RATIOS = {'cpu_allocation_ratio': 16.0, 'ram_allocation_ratio': 1.5,
           'disk_allocation_ratio': 1.0}


def _row(node_id, **values):
    fields = dict.fromkeys(host_reads.NODE_FIELDS)
    fields.update(
        id=node_id, uuid='uuid-%d' % node_id, host='host-%d' % node_id,
        hypervisor_hostname='host-%d' % node_id, vcpus=32,
        memory_mb=int('131072'), local_gb=int('2000'), vcpus_used=0,
        memory_mb_used=0, local_gb_used=0, reserved_vcpus=0,
        reserved_memory_mb=int('512'), reserved_disk_gb=0,
        hypervisor_version=int('8001000'), num_instances=0, io_workload=0,
        mapped=True, generation=1,
        updated_at=datetime.datetime(2026, 1, 1))
    fields.update(values)
    return host_reads.NodeRow(**fields)


def _state(row):
    return host_state.HostState.from_node(row, None, (), _RATIOS, 'nova')


def test_nodes_of_one_model_share_their_sizes():
    first, second = _state(_row(1)), _state(_row(2))
    for name in ('total_usable_ram_mb', 'total_usable_disk_gb',
                 'reserved_memory_mb', 'hypervisor_version'):
        assert getattr(first, name) == getattr(second, name)
        assert getattr(first, name) is getattr(second, name), name


def test_each_node_keeps_its_own_sizes_past_the_limit():
    count = host_state._SIZES_LIMIT * 2 + 10
    states = [_state(_row(number, memory_mb=1000000 + number,
                          local_gb=5000 + number))
              for number in range(count)]
    assert [state.total_usable_ram_mb for state in states] == [
        1000000 + number for number in range(count)]
    assert [state.total_usable_disk_gb for state in states] == [
        5000 + number for number in range(count)]
    assert len(host_state._sizes) <= host_state._SIZES_LIMIT + 1


def _service_row(last_seen_up):
    return host_reads.ServiceRow(
        id=7, host='host-7', binary='gantt-compute', disabled=False,
        disabled_reason=None, forced_down=False, last_seen_up=last_seen_up,
        created_at=datetime.datetime(2025, 6, 1))


def test_a_service_that_heartbeated_keeps_no_creation_time():
    """A service's creation time is its heartbeat only until it sends
    one: kept until then (and judged by it), dropped after."""
    now = datetime.datetime(2026, 1, 1, 12)
    seen = host_state.service_info(_service_row(now), True)
    assert seen.created_at is None
    assert host_state.last_heartbeat(seen) == now
    never = host_state.service_info(_service_row(None), None)
    assert never.created_at == datetime.datetime(2025, 6, 1)
    assert host_state.last_heartbeat(never) == never.created_at
    assert host_state.service_is_up(
        never, datetime.datetime(2025, 6, 1, 0, 0, 30), 60)
    assert not host_state.service_is_up(never, now, 60)


def test_nodes_with_the_same_reservations_and_ratios_share_a_profile():
    """The attributes that take few values in a cloud are held in one
    tuple that the nodes with the same values share: a node takes no slot
    for each, and still reads and writes them as attributes."""
    first, second = _state(_row(1)), _state(_row(2))
    assert first._profile is second._profile
    assert (first.reserved_memory_mb, first.cpu_allocation_ratio,
            first.ram_allocation_ratio, first.mapped, first.cell_name) == (
        512, 16.0, 1.5, True, host_state.DEFAULT_CELL_NAME)
    for name in host_state.PROFILE_FIELDS:
        assert name not in host_state.HostState.__slots__
    own = _state(_row(3, cpu_allocation_ratio=4.0, reserved_vcpus=2))
    assert own._profile is not first._profile
    assert (own.cpu_allocation_ratio, own.reserved_vcpus,
            own.node_ratios) == (4.0, 2, (4.0, None, None))
    # A write changes this node's value only, and finds the shared tuple
    # of the values it comes to.
    own.cpu_allocation_ratio = 16.0
    own.reserved_vcpus = 0
    own.node_ratios = host_state.NO_RATIOS
    assert own._profile is first._profile
    assert first.cpu_allocation_ratio == 16.0
    restated = first.restated(
        None, (), dict(_RATIOS, ram_allocation_ratio=2.0), 'nova',
        first.instances)
    assert (restated.ram_allocation_ratio, first.ram_allocation_ratio) == (
        2.0, 1.5)


def test_each_node_keeps_its_own_profile_past_the_limit():
    count = host_state._PROFILES_LIMIT * 2 + 10
    states = [_state(_row(number, reserved_memory_mb=number))
              for number in range(count)]
    assert [state.reserved_memory_mb for state in states] == list(
        range(count))
    assert len(host_state._profiles) <= host_state._PROFILES_LIMIT


def test_a_profile_of_values_that_cannot_be_hashed_is_the_node_own():
    state = _state(_row(1))
    state.hypervisor_type = ['not', 'hashable']
    assert state.hypervisor_type == ['not', 'hashable']
    assert state.reserved_memory_mb == 512


def test_rows_find_the_profile_of_rows_before_them_per_ratio_defaults():
    """A node row with the profile values of a row before it takes that
    row's profile, resolved against the same default ratios; another
    set of defaults resolves its own."""
    first = _state(_row(1))
    assert _state(_row(2))._profile is first._profile
    other = host_state.HostState.from_node(
        _row(3), None, (), dict(_RATIOS, cpu_allocation_ratio=4.0), 'nova')
    assert (other.cpu_allocation_ratio, first.cpu_allocation_ratio) == (
        4.0, 16.0)
    assert _state(_row(4)).cpu_allocation_ratio == 16.0
    reported = _state(_row(5, ram_allocation_ratio=3.0))
    assert (reported.ram_allocation_ratio, reported.node_ratios) == (
        3.0, (None, 3.0, None))
    assert _state(_row(6)).node_ratios is host_state.NO_RATIOS

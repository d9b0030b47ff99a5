import datetime
import math

import numpy as np
import pytest

from scheduler.db import claims
from scheduler.db import services as db_services
from scheduler.host_cache import host_table
from scheduler.host_cache import table_columns
from scheduler.host_cache import table_lookups
from tests.unit.scheduler import fakes


def test_columns_align_with_states():
    states = [fakes.host_state('a', memory_mb=1000, memory_mb_used=100),
              fakes.host_state('b', memory_mb=2000, mapped=False),
              fakes.host_state('c', svc=None)]
    hosts = fakes.table(states)
    assert len(hosts) == 3
    assert list(hosts.ids) == [s.id for s in states]
    assert list(hosts.free_ram_mb) == [s.free_ram_mb for s in states]
    assert list(hosts.candidates) == [True, False, False]
    assert list(hosts.capacity['memory_mb']) == [s.capacity('memory_mb')
                                                 for s in states]
    assert hosts.row_by_id[states[1].id] == 1


def _judged(host, alive, **fields):
    return fakes.service(host, **fields)._replace(alive=alive)


@pytest.mark.parametrize('case', [
    'judged alive', 'one disabled, one forced down', 'one without service',
    'one judged dead', 'one not judged', 'disk least', 'pci pools'])
def test_whole_columns_equal_each_row_s_values(case):
    """columns_of reads whole columns at once where every host is alike
    (alive services, no disk least, no PCI pools) and row by row
    otherwise: either way each column holds what row_values gives each
    row."""
    from tests.unit.scheduler.host_cache import test_host_children as pci

    names = ('a', 'b', 'c', 'd')
    services = {name: _judged(name, True) for name in names}
    extra = {}
    if case == 'one disabled, one forced down':
        services['b'] = _judged('b', True, disabled=True, reason='x')
        services['c'] = _judged('c', True, forced_down=True)
    elif case == 'one without service':
        services['b'] = None
    elif case == 'one judged dead':
        services['c'] = _judged('c', False)
    elif case == 'one not judged':
        services['d'] = fakes.service('d', seen_ago=30)
    elif case == 'disk least':
        extra['b'] = {'disk_available_least': 7}
    else:
        extra['c'] = {'pci_device_pools': [pci.pf_pool(2)]}
    states = [fakes.host_state(name, svc=services[name],
                               **extra.get(name, {})) for name in names]
    columns = table_columns.columns_of(states)
    rows = [dict(table_columns.row_values(state)) for state in states]
    assert set(columns) == set(rows[0])
    for name, column in columns.items():
        assert column.tolist() == [row[name] for row in rows], name
    if case == 'one disabled, one forced down':
        assert columns['disabled'].tolist() == [False, True, False, False]
        assert columns['forced_down'].tolist() == [False, False, True,
                                                   False]


def test_host_state_names_follow_nova():
    state = fakes.host_state(vcpus=8, vcpus_used=2, cpu_ratio=2.0,
                             reserved_vcpus=1, memory_mb=4096,
                             memory_mb_used=1024, reserved_memory_mb=512,
                             local_gb=100, local_gb_used=10,
                             reserved_disk_gb=5)
    assert state.vcpus_total == 8
    assert state.vcpus_free == 8 * 2.0 - 1 - 2
    assert state.free_ram_mb == 4096 - 512 - 1024
    assert state.free_disk_mb == (100 - 5 - 10) * 1024
    assert state.disk_mb_used == 10 * 1024
    assert state.hypervisor_hostname == state.nodename
    assert state.limits == {'vcpu': 15.0, 'memory_mb': 4096 * 1.5 - 512,
                            'disk_gb': 95.0}


def test_replace_leaves_the_old_snapshot_alone():
    states = [fakes.host_state('a'), fakes.host_state('b')]
    before = fakes.table(states)
    after = before.consumed(1, claims.Resources(2, 1024, 10))
    assert before.states[1] is states[1]
    assert list(before.vcpus_used) == [0, 0]
    assert list(after.vcpus_used) == [0, 2]
    assert list(after.ram_used) == [0, 1024]
    assert list(after.disk_used) == [0, 10]
    assert after.states[1].num_instances == 1
    assert after.states[1].io_workload == 1
    assert after.free_ram_mb[1] == before.free_ram_mb[1] - 1024
    # Unchanged columns are shared, not copied.
    assert after.ram_total is before.ram_total
    assert after.capacity['vcpus'] is before.capacity['vcpus']


def test_replaced_rows_match_a_table_built_afresh():
    # replace() computes the derived columns of the replaced rows only;
    # every column must equal what a full build computes.
    states = [fakes.host_state('h%d' % i, node_id=i + 1, vcpus=8 + i,
                               memory_mb=4096 * (i + 1), local_gb=100)
              for i in range(6)]
    table = fakes.table(states)
    table = table.consumed(1, claims.Resources(2, 1024, 10))
    table = table.consumed(4, claims.Resources(1, 512, 0))
    changed = fakes.host_state('h2', node_id=3, vcpus=16, cpu_ratio=4.0,
                               memory_mb=2048, memory_mb_used=2000,
                               local_gb=50, local_gb_used=49, svc=None)
    other = fakes.host_state('h5', node_id=6, vcpus=2, vcpus_used=1,
                             ram_ratio=1.0, memory_mb=1024)
    table = table.replace({5: other, 2: changed})
    fresh = host_table.HostTable.build(table.states)
    for name in fresh.columns:
        assert np.array_equal(table.columns[name], fresh.columns[name]), name
    for name in fresh.derived:
        assert table.derived[name].dtype == fresh.derived[name].dtype, name
        assert np.array_equal(table.derived[name], fresh.derived[name]), name
    assert table.free_ram_mb[2] == 2048 - 2000
    assert not table.candidates[2]


def test_replace_with_a_new_host_name_rebuilds_the_indexes():
    hosts = fakes.table([fakes.host_state('a', node_id=7)])
    renamed = fakes.host_state('z', node_id=7)
    after = hosts.replace({0: renamed})
    assert 'z' in after.rows_by_host and 'a' not in after.rows_by_host
    assert 'a' in hosts.rows_by_host


def test_hosts_mask_ignores_case_and_nodes_mask_does_not():
    hosts = fakes.table([fakes.host_state('Alpha', nodename='n1'),
                         fakes.host_state('alpha', nodename='n2'),
                         fakes.host_state('beta', nodename='N3')])
    assert list(hosts.hosts_mask(['ALPHA'])) == [True, True, False]
    assert list(hosts.hosts_mask(['alpha'], ignore_case=False)) == [
        False, True, False]
    assert list(hosts.nodes_mask(['n3', 'n1'])) == [True, False, False]
    assert list(hosts.hosts_mask(['nowhere'])) == [False, False, False]


def test_node_index_when_only_later_nodes_are_not_named_after_hosts():
    hosts = fakes.table([fakes.host_state('a'), fakes.host_state('b'),
                         fakes.host_state('c', nodename='c-1'),
                         fakes.host_state('c', nodename='c-2')])
    assert hosts.rows_by_nodename == {'a': (0,), 'b': (1,), 'c-1': (2,),
                                      'c-2': (3,)}
    assert hosts.rows_by_host == {'a': (0,), 'b': (1,), 'c': (2, 3)}
    assert list(hosts.nodes_mask(['b', 'c-2'])) == [False, True, False,
                                                    True]
    same = fakes.table([fakes.host_state('a'), fakes.host_state('B')])
    assert same.rows_by_nodename is same.rows_by_host
    assert same.rows_by_host_lower == {'a': (0,), 'b': (1,)}


def test_the_indexes_hold_one_object_per_row_and_per_zone_set():
    """At a million hosts every object a row adds to the indexes counts:
    a name of one row holds that row's number alone (no 1-tuple, the
    same number object as the id index's), a name of several one tuple
    shared by both name indexes, and the zone sets come in the order
    the rows first name them."""
    hosts = fakes.table([fakes.host_state('a', zones=('z2',)),
                         fakes.host_state('b', zones=('z1',)),
                         fakes.host_state('c', nodename='c-1',
                                          zones=('z2',)),
                         fakes.host_state('c', nodename='c-2'),
                         fakes.host_state('d', nodename='d-1')])
    assert hosts.rows_by_host == {'a': (0,), 'b': (1,), 'c': (2, 3),
                                  'd': (4,)}
    assert hosts.rows_by_nodename == {'a': (0,), 'b': (1,), 'c-1': (2,),
                                      'c-2': (3,), 'd-1': (4,)}
    held = dict.__getitem__
    for host, node in (('a', 'a'), ('b', 'b'), ('d', 'd-1')):
        assert held(hosts.rows_by_host, host) is held(hosts.rows_by_nodename,
                                                      node)
    for state in hosts.states:
        row = hosts.row_by_id[state.id]
        assert any(found is row
                   for found in hosts.rows_by_nodename[state.nodename])
        if state.nodename != 'c-1' and state.nodename != 'c-2':
            assert held(hosts.rows_by_nodename, state.nodename) is row
    assert held(hosts.rows_by_host, 'c') == (2, 3)
    assert hosts.rows_by_host.get('c') == (2, 3)
    assert hosts.rows_by_host.get('a') == (0,)
    assert hosts.rows_by_host.get('x', ()) == ()
    assert dict(hosts.rows_by_host.items())['b'] == (1,)
    assert hosts.rows_by_host != {'a': (0,)}
    assert [sorted(zones) for zones in hosts.az_sets] == [
        ['z2'], ['z1'], ['nova']]


def test_a_table_by_zone_holds_each_zone_set_together_in_the_given_order():
    """build_by_zone: the rows of each set of zones together, the sets in
    the order they first come, each set's states in the given order;
    every column and index follows its state. build keeps the order."""
    given = [fakes.host_state('a', zones=('z2',)),
             fakes.host_state('b', zones=('z1',)),
             fakes.host_state('c', zones=('z2',)),
             fakes.host_state('d'),
             fakes.host_state('e', zones=('z1',)),
             fakes.host_state('f', zones=('z2',))]
    for number, state in enumerate(given):
        state.vcpus_used = number
    assert [s.host for s in host_table.HostTable.build(given).states] == \
        list('abcdef')
    table = host_table.HostTable.build_by_zone(given)
    assert [s.host for s in table.states] == list('acfbed')
    assert [sorted(zones) for zones in table.az_sets] == [
        ['z2'], ['z1'], ['nova']]
    assert table.az_index.tolist() == [0, 0, 0, 1, 1, 2]
    assert list(table.in_zone('z1')) == [False] * 3 + [True] * 2 + [False]
    for row, state in enumerate(table.states):
        assert table.row_by_id[state.id] == row
        assert table.rows_by_host[state.host] == (row,)
        assert table.ids[row] == state.id
        assert table.used['vcpus'][row] == state.vcpus_used
    # One set of zones: the given order, as build.
    alone = [fakes.host_state(name) for name in 'cab']
    assert [s.host for s in host_table.HostTable.build_by_zone(
        alone).states] == list('cab')


def test_in_zone():
    hosts = fakes.table([fakes.host_state('a', zones=['az1']),
                         fakes.host_state('b', zones=['az1', 'az2']),
                         fakes.host_state('c')])
    assert list(hosts.in_zone('az1')) == [True, True, False]
    assert list(hosts.in_zone('az2')) == [False, True, False]
    assert list(hosts.in_zone('nova')) == [False, False, True]
    assert list(hosts.in_zone('elsewhere')) == [False, False, False]


def test_service_up_column_matches_is_up_at_the_boundary(config):
    config.config(service_down_time=60)
    now = datetime.datetime(2030, 1, 1, 12, 0, 0, 500000)
    ages = [59.999999, 60, 60.000001, 0, None]
    states = [fakes.host_state('h%d' % i, svc=fakes.service(
        'h%d' % i, seen_ago=age, when=now)) for i, age in enumerate(ages)]
    states.append(fakes.host_state('forced', svc=fakes.service(
        'forced', forced_down=True, when=now)))
    hosts = fakes.table(states)
    expected = [db_services.is_up(s.service, now=now) for s in states]
    assert expected == [True, True, False, True, False, False]
    assert list(hosts.service_up(now=now)) == expected
    assert [s.service_up(now=now) for s in states] == expected


def test_service_up_from_created_at_and_future_heartbeats(config):
    """Nova's DB servicegroup driver: the heartbeat is last_seen_up, else
    created_at; up if abs(now - heartbeat) <= service_down_time. With 60s:
    never seen, created 30s ago: up; created 61s ago: down; seen 10s ago
    though created long ago: up; a heartbeat 30s ahead: up, 61s ahead:
    down; nothing known: down."""
    config.config(service_down_time=60)
    now = datetime.datetime(2030, 1, 1, 12, 0, 0)
    cases = [dict(seen_ago=None, created_ago=30),
             dict(seen_ago=None, created_ago=61),
             dict(seen_ago=10, created_ago=86400),
             dict(seen_ago=-30), dict(seen_ago=-60), dict(seen_ago=-61),
             dict(seen_ago=None)]
    states = [fakes.host_state('h%d' % i, svc=fakes.service(
        'h%d' % i, when=now, **case)) for i, case in enumerate(cases)]
    expected = [True, False, True, True, True, False, False]
    assert [db_services.is_up(s.service, now=now) for s in states] == \
        expected
    assert list(fakes.table(states).service_up(now=now)) == expected
    assert [s.service_up(now=now) for s in states] == expected


def test_aggregate_multipliers():
    aggs = [fakes.aggregate('x', ['a', 'b'], ram_weight_multiplier='2'),
            fakes.aggregate('y', ['b'], ram_weight_multiplier='-1'),
            fakes.aggregate('z', ['c'], ram_weight_multiplier='nan')]
    hosts = fakes.table([fakes.host_state(h) for h in 'abcd'], aggs)
    column = hosts.aggregate_multipliers('ram_weight_multiplier')
    assert column[:2].tolist() == [2.0, -1.0]
    assert np.isnan(column[2]) and np.isnan(column[3])
    assert hosts.aggregate_multipliers('cpu_weight_multiplier') is None


def test_parse_multiplier():
    assert table_lookups.parse_multiplier('1.5') == 1.5
    assert table_lookups.parse_multiplier(' -2 ') == -2.0
    for bad in ('', 'x', 'inf', 'nan', None):
        assert table_lookups.parse_multiplier(bad) is None


def test_attribute_columns_match_the_attributes():
    states = [fakes.host_state('a', memory_mb=2048, memory_mb_used=100,
                               io_workload=3, num_instances=4),
              fakes.host_state('b', vcpus=3, cpu_ratio=1.5)]
    hosts = fakes.table(states)
    for name in table_columns.ATTRIBUTE_COLUMNS:
        assert list(hosts.attribute_column(name)) == [
            getattr(state, name) for state in states], name
    assert hosts.attribute_column('hypervisor_type') is None


def test_failed_builds_comes_from_the_stats():
    assert fakes.host_state(stats={'failed_builds': '3'}).failed_builds == 3
    assert fakes.host_state(stats={}).failed_builds == 0
    assert fakes.host_state(stats={'failed_builds': 'x'}).failed_builds == 0


def test_update_in_place_brings_per_state_values_along():
    states = [fakes.host_state('h%d' % i, vcpus=8) for i in range(4)]
    table = fakes.table(states)
    used = table.state_column('used', lambda s: s.vcpus_used, np.int64)
    codes, keys = table.grouped('busy', lambda s: s.vcpus_used > 0)
    assert used.tolist() == [0, 0, 0, 0]
    detached = table.detached()
    assert detached.state_column('used', lambda s: s.vcpus_used,
                                 np.int64) is not used
    assert table.update_in_place(
        {2: table.states[2].consumed(claims.Resources(3, 0, 0))})
    assert table.state_column('used', lambda s: s.vcpus_used,
                              np.int64).tolist() == [0, 0, 3, 0]
    codes, keys = table.grouped('busy', lambda s: s.vcpus_used > 0)
    assert [keys[code] for code in codes] == [False, False, True, False]
    assert table.vcpus_used.tolist() == [0, 0, 3, 0]
    # The detached copy kept its own values.
    assert detached.state_column('used', lambda s: s.vcpus_used,
                                 np.int64).tolist() == [0, 0, 0, 0]
    assert detached.vcpus_used.tolist() == [0, 0, 0, 0]
    # A state that changes its identity is not put in place.
    renamed = fakes.host_state('zz', node_id=table.states[1].id)
    assert table.update_in_place({1: renamed}) is False
    assert table.states[1].host == 'h1'


def _changed_states(states):
    """New states of the same nodes with every column-backed value
    changed: usage, ratios, disk_available_least, PCI, service."""
    changed = []
    for number, state in enumerate(states):
        new = state.consumed(claims.Resources(2, 1024, 10))
        new.cpu_allocation_ratio = state.cpu_allocation_ratio + 1
        new.reserved_memory_mb = 100 + number
        new.disk_available_least = None if number % 2 else 50 - number
        new.mapped = not state.mapped
        new.service = fakes.service(state.host, disabled=bool(number % 2))
        changed.append(new)
    return changed


def test_update_in_place_row_by_row_equals_a_table_built_anew():
    # A few rows go one by one (a claim), many rows as whole columns:
    # both must leave every column, derived ones too, as a new table.
    for count in (1, 3, host_table._ROW_BY_ROW + 4):
        states = [fakes.host_state('h%d' % i, vcpus=8,
                                   disk_available_least=40)
                  for i in range(count + 2)]
        table = fakes.table(states)
        new = _changed_states(states[1:count + 1])
        assert table.update_in_place(dict(zip(range(1, count + 1), new)))

        fresh = fakes.table([states[0]] + new + states[count + 1:])
        for name, column in fresh.columns.items():
            assert table.columns[name].tolist() == column.tolist(), name
        for name, column in fresh.derived.items():
            assert table.derived[name].tolist() == column.tolist(), name


@pytest.mark.parametrize('least', [None, 40])
def test_a_reservation_written_by_its_columns_equals_a_table_built_anew(
        least):
    # A reservation (HostState.consumed without hardware) changes only
    # the claim's attributes: writing those columns leaves every column,
    # derived ones too, as a new table does.
    states = [fakes.host_state('h%d' % i, vcpus=8, disk_available_least=least)
              for i in range(3)]
    table = fakes.table(states)
    new = states[1].consumed(claims.Resources(2, 1024, 10))
    changed = {attr for attr in table_columns.CLAIM_ATTRIBUTES
               if getattr(new, attr) != getattr(states[1], attr)}
    assert changed >= {'vcpus_used', 'memory_mb_used', 'local_gb_used',
                       'num_instances', 'io_workload'}
    assert table.update_in_place({1: new}, claim_only=True)

    fresh = fakes.table([states[0], new, states[2]])
    for name, column in fresh.columns.items():
        assert table.columns[name].tolist() == column.tolist(), name
    for name, column in fresh.derived.items():
        assert table.derived[name].tolist() == column.tolist(), name


def test_consumed_changes_only_the_claim_attributes():
    # What update_in_place(claim_only=True) relies on.
    state = fakes.host_state('h1', vcpus=8, disk_available_least=40)
    new = state.consumed(claims.Resources(2, 1024, 10))
    changed = {name for name in type(state).__slots__
               if getattr(new, name) != getattr(state, name)}
    assert changed == table_columns.CLAIM_ATTRIBUTES


_EDGE_FLOATS = (0.0, -0.0, 0.3, -0.3, 1.0, 2.5, -2.5, 1e300, -1e300,
                2.0 ** 53 + 2, float('inf'), float('-inf'), float('nan'))


def _same_floats(first, second):
    """Equal, or both NaN; zeros of the same sign."""
    if first != first or second != second:
        return first != first and second != second
    return first == second and math.copysign(1, first) == math.copysign(
        1, second)


def test_scalar_operations_are_numpys_on_python_numbers():
    scalars = table_columns.Scalars
    for first in _EDGE_FLOATS:
        assert _same_floats(scalars.floor(first),
                            float(np.floor(np.float64(first)))), first
        for second in _EDGE_FLOATS + (3, -7):
            assert _same_floats(
                scalars.minimum(first, second),
                float(np.minimum(np.float64(first), second))), (first,
                                                                second)
            assert _same_floats(
                scalars.minimum(second, first),
                float(np.minimum(second, np.float64(first)))), (second,
                                                                first)
    assert scalars.where(True, 1, 2) == 1 and scalars.where(False, 1, 2) == 2
    # Integers stay integers, as int64 columns do.
    assert scalars.minimum(3, 5) == 3 and type(scalars.minimum(3, 5)) is int


@pytest.mark.parametrize('ratio', [1.5, 0.0, float('inf'), float('nan')])
def test_one_row_write_computes_derived_columns_as_whole_columns(ratio):
    # A row written alone is computed on Python numbers (_Scalars), the
    # others on arrays: the same values, bit for bit (NaN, infinities,
    # rooms below zero, fractional capacities).
    states = [fakes.host_state('h%d' % i, vcpus=8, disk_available_least=40)
              for i in range(3)]
    table = fakes.table(states)
    new = states[1].consumed(claims.Resources(13, 1024, 2000))
    new.cpu_allocation_ratio = ratio
    new.disk_allocation_ratio = ratio
    new.ram_allocation_ratio = 1.3
    new.disk_available_least = -5
    assert table.update_in_place({1: new})
    fresh = fakes.table([states[0], new, states[2]])
    for name, column in fresh.derived.items():
        assert all(_same_floats(float(a), float(b)) for a, b in zip(
            table.derived[name].tolist(), column.tolist())), name
        assert table.derived[name].dtype == column.dtype, name


def _memory_of(column):
    """Bytes ``column`` holds of its own (a view: those of the array it
    views)."""
    return column.base.nbytes if column.base is not None else column.nbytes


def test_a_column_every_host_agrees_on_is_held_once():
    """Sizes, reservations and ratios the same on every host take one
    value's memory, not one a row; the usage a claim changes is held
    whole even when every host has the same."""
    states = [fakes.host_state(name, memory_mb=1024 * (number + 1),
                               reserved_memory_mb=512,
                               svc=_judged(name, True))
              for number, name in enumerate('abcdef')]
    table = fakes.table(states)
    for name in ('cpu_ratio', 'reserved_ram', 'reserved_vcpus',
                 'heartbeat_us', 'pci_free'):
        column = table.columns[name]
        assert table_columns.is_held_once(column), name
        assert _memory_of(column) == column.itemsize, name
        assert not column.flags.writeable
    assert table_columns.is_held_once(table.least_disk_room)
    assert table.least_disk_room.tolist() == [math.inf] * 6
    # Different on each host, changed by claims, or masks: one value a
    # row.
    for name in ('ram_total', 'ids', 'vcpus_used', 'ram_used',
                 'num_instances', 'mapped', 'disabled', 'has_service'):
        assert not table_columns.is_held_once(table.columns[name]), name
    for name in ('capacity_memory_mb', 'free_ram_mb', 'vcpus_free',
                 'candidates'):
        assert not table_columns.is_held_once(table.derived[name]), name
    assert table.cpu_ratio.tolist() == [16.0] * 6
    assert table.reserved_ram.tolist() == [512] * 6


def test_a_row_written_with_another_value_makes_the_column_whole():
    states = [fakes.host_state(name) for name in 'abcd']
    table = fakes.table(states)
    held_ratio = table.cpu_ratio
    held_capacity = table.capacity['vcpus']
    assert table_columns.is_held_once(held_capacity)
    # The same value again: still held once.
    assert table.update_in_place({1: fakes.host_state(
        'b', node_id=states[1].id, vcpus_used=3)})
    assert table.cpu_ratio is held_ratio
    assert table.capacity['vcpus'] is held_capacity
    # Another value: the table's own whole column, every derived column
    # computed from it right; a reader of the old view reads what it read.
    changed = fakes.host_state('c', node_id=states[2].id, cpu_ratio=2.0)
    assert table.update_in_place({2: changed})
    assert table.cpu_ratio.tolist() == [16.0, 16.0, 2.0, 16.0]
    assert table.columns['cpu_ratio'] is table.cpu_ratio
    assert table.cpu_ratio.flags.writeable
    assert held_ratio.tolist() == [16.0] * 4
    assert table.capacity['vcpus'] is table.derived['capacity_vcpus']
    assert table.capacity['vcpus'] is table.capacity_vcpus
    fresh = fakes.table([states[0], table.states[1], changed, states[3]])
    for name, column in fresh.columns.items():
        assert table.columns[name].tolist() == column.tolist(), name
    for name, column in fresh.derived.items():
        assert table.derived[name].tolist() == column.tolist(), name
    assert held_capacity.tolist() == [256.0] * 4
    # And another row after it writes into that column.
    whole = table.cpu_ratio
    assert table.update_in_place({0: fakes.host_state(
        'a', node_id=states[0].id, cpu_ratio=4.0)})
    assert table.cpu_ratio is whole
    assert whole.tolist() == [4.0, 16.0, 2.0, 16.0]


def test_a_detached_table_shares_a_held_column_until_it_writes_it():
    states = [fakes.host_state(name) for name in 'abc']
    table = fakes.table(states)
    copy = table.detached()
    assert copy.cpu_ratio is table.cpu_ratio
    assert copy.update_in_place({0: fakes.host_state(
        'a', node_id=states[0].id, cpu_ratio=3.0)})
    assert copy.cpu_ratio.tolist() == [3.0, 16.0, 16.0]
    assert table.cpu_ratio.tolist() == [16.0, 16.0, 16.0]
    assert table_columns.is_held_once(table.cpu_ratio)


def test_many_rows_written_at_once_make_a_held_column_whole():
    states = [fakes.host_state('h%d' % number) for number in range(20)]
    table = fakes.table(states)
    new = {row: fakes.host_state('h%d' % row, node_id=states[row].id,
                                 reserved_vcpus=row % 3)
           for row in range(0, 20, 2)}
    assert len(new) > host_table._ROW_BY_ROW
    assert table.update_in_place(new)
    assert table.reserved_vcpus.tolist() == [
        row % 3 if row % 2 == 0 else 0 for row in range(20)]
    assert table.vcpus_free.tolist() == [
        16 * 16.0 - (row % 3 if row % 2 == 0 else 0) for row in range(20)]


def test_a_table_by_zone_keeps_held_columns_held():
    states = [fakes.host_state('h%d' % number,
                               zones=('az%d' % (number % 2),),
                               memory_mb=1024 * (number + 1))
              for number in range(6)]
    table = host_table.HostTable.build_by_zone(states)
    assert table_columns.is_held_once(table.cpu_ratio)
    assert [state.host for state in table.states] == [
        'h0', 'h2', 'h4', 'h1', 'h3', 'h5']
    assert table.ram_total.tolist() == [1024, 3072, 5120, 2048, 4096, 6144]


def test_integer_columns_are_int32_where_every_value_fits():
    big = 2 ** 31 + 5
    states = [fakes.host_state('a', memory_mb=4096, vcpus_used=3),
              fakes.host_state('b', memory_mb=8192, local_gb=big),
              fakes.host_state('c', memory_mb=2048, vcpus=8)]
    table = fakes.table(states)
    for name in ('vcpus_total', 'ram_total', 'vcpus_used'):
        assert table.columns[name].dtype == np.int32, name
    assert table.disk_total.dtype == np.int64
    assert table.disk_total.tolist() == [1000, big, 1000]
    # What is derived from them is as before: exact, in int64 or float64.
    assert table.free_disk_mb.tolist() == [1000 * 1024, big * 1024,
                                           1000 * 1024]
    assert table.capacity['memory_mb'].tolist() == [
        state.capacity('memory_mb') for state in states]


@pytest.mark.parametrize('rows', [1, 12])
def test_a_value_beyond_int32_written_makes_the_column_int64(rows):
    """Row by row (a claim) or many rows at once: the value is kept
    exactly, not wrapped; a table the column was shared with keeps its
    own."""
    big = 2 ** 31 + 7
    states = [fakes.host_state('h%d' % number, memory_mb=4096 + number)
              for number in range(12)]
    table = fakes.table(states)
    before = table.ram_total
    assert before.dtype == np.int32
    new = {row: fakes.host_state('h%d' % row, node_id=states[row].id,
                                 memory_mb=big + row, memory_mb_used=big)
           for row in range(rows)}
    assert table.update_in_place(new)
    assert table.ram_total.dtype == np.int64
    assert table.ram_total.tolist() == [
        big + row if row < rows else 4096 + row for row in range(12)]
    assert table.ram_used.tolist() == [big if row < rows else 0
                                       for row in range(12)]
    assert before.tolist() == [4096 + row for row in range(12)]
    assert table.free_ram_mb.tolist() == [
        row if row < rows else 4096 + row for row in range(12)]


def test_a_replaced_row_beyond_int32_widens_the_new_table_only():
    big = 2 ** 31 + 1
    states = [fakes.host_state(name) for name in 'abc']
    table = fakes.table(states)
    new = table.replace({1: fakes.host_state('b', node_id=states[1].id,
                                             local_gb_used=big)})
    assert new.disk_used.tolist() == [0, big, 0]
    assert new.disk_used.dtype == np.int64
    assert table.disk_used.tolist() == [0, 0, 0]
    assert table.disk_used.dtype == np.int32


def test_free_ram_and_disk_are_exact_float64_columns():
    """What the RAM and disk weighers gather is float64 already, each
    value the whole number the state gives, after a write too."""
    big = 2 ** 40 + 3
    states = [fakes.host_state('a', memory_mb=big, memory_mb_used=1,
                               reserved_memory_mb=2),
              fakes.host_state('b', local_gb=big, disk_available_least=7),
              fakes.host_state('c')]
    table = fakes.table(states)
    for name in ('free_ram_mb', 'free_disk_mb'):
        assert table.derived[name].dtype == np.float64, name
        assert table.derived[name].tolist() == [
            getattr(state, name) for state in states], name
    assert table.free_ram_mb[0] == big - 3
    claimed = states[2].consumed(claims.Resources(1, 100, 10))
    assert table.update_in_place({2: claimed}, claim_only=True)
    assert table.free_ram_mb.tolist()[2] == claimed.free_ram_mb
    assert table.free_disk_mb.tolist()[2] == claimed.free_disk_mb

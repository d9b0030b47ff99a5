"""host_cache.Stretch: rows lo..hi-1 of a HostTable as a table of their
own, reading what the table keeps."""

import copy

import numpy as np
import pytest

from scheduler import filters
from scheduler import host_cache
from scheduler import weights
from scheduler.weights import io_ops
from scheduler.weights import ram
from tests.unit.scheduler import fakes


def _rewritten(state, **changes):
    new = copy.copy(state)
    for name, value in changes.items():
        setattr(new, name, value)
    return new


def _zoned(count=400, busy=(3, 150, 151, 390)):
    """``count`` nodes in two zones (rows of each together), I/O on the
    rows ``busy`` alone."""
    first = fakes.aggregate('one', ['h%03d' % i for i in range(count // 2)],
                            availability_zone='one')
    second = fakes.aggregate('two', ['h%03d' % i
                                     for i in range(count // 2, count)],
                             availability_zone='two')
    states = []
    for number in range(count):
        zone = 'one' if number < count // 2 else 'two'
        state = fakes.host_state('h%03d' % number,
                                 memory_mb=1024 * (1 + number % 7),
                                 zones=(zone,))
        state.io_workload = 2 if number in busy else 0
        states.append(state)
    return host_cache.HostTable.build_by_zone(states, [first, second])


def test_rows_and_columns_are_the_tables_at_an_offset():
    table = _zoned()
    stretch = host_cache.Stretch(table, 120, 260)
    assert len(stretch) == 140
    assert stretch.states[0] is table.states[120]
    assert stretch.states[-1] is table.states[259]
    assert stretch.states[2:4] == table.states[122:124]
    assert list(stretch.states) == table.states[120:260]
    with pytest.raises(IndexError, match='row 140 of a stretch of 140'):
        stretch.states[140]
    assert stretch.free_ram_mb.tolist() == table.free_ram_mb[120:260].tolist()
    assert stretch.capacity['memory_mb'].base is not None
    assert stretch.columns['ram_ratio'] is stretch.ram_ratio
    assert stretch.in_zone('two').tolist() == (
        table.in_zone('two')[120:260].tolist())
    assert stretch.hosts_mask(['H130', 'h001']).tolist() == [
        row == 10 for row in range(140)]
    assert stretch.rows_by_host['h130'] == (10,)
    assert 'h001' not in stretch.rows_by_host
    assert stretch.rows_by_host.get('h001', ()) == ()
    assert stretch.row_by_id[table.ids[125]] == 5
    assert stretch.rows_by_nodename['h259'] == (139,)
    assert stretch.rows_by_host_lower['h130'] == (10,)
    assert stretch.nodes_mask(['h121', 'h001']).tolist() == [
        row == 1 for row in range(140)]
    assert stretch.mask_of_rows([0, 139]).tolist() == [
        row in (0, 139) for row in range(140)]
    assert stretch.writes == table.writes
    assert stretch.liveness_changes_at(3600, 0) == (
        table.liveness_changes_at(3600, 0))
    with pytest.raises(ValueError, match='not a stretch'):
        host_cache.Stretch(table, 10, 401)


def test_a_write_to_the_table_shows_in_the_stretch():
    table = _zoned()
    stretch = host_cache.Stretch(table, 200, 400)
    assert table.update_in_place({
        250: _rewritten(table.states[250], memory_mb_used=512)})
    assert stretch.states[50] is table.states[250]
    assert stretch.free_ram_mb[50] == table.free_ram_mb[250]
    assert stretch.at_least('room_memory_mb', 1024).tolist() == (
        table.at_least('room_memory_mb', 1024)[200:400].tolist())


def test_sparse_rows_and_constants_come_from_the_table():
    table = _zoned()
    stretch = host_cache.Stretch(table, 100, 300)
    # Rows 150 and 151 of the table; 3 and 390 lie outside.
    assert stretch.nonzero_rows(stretch.io_workload).tolist() == [50, 51]
    assert table.update_in_place({
        160: _rewritten(table.states[160], io_workload=1),
        151: _rewritten(table.states[151], io_workload=0)})
    assert stretch.nonzero_rows(stretch.io_workload).tolist() == [50, 60]
    # Not sparse in the table (every row has RAM): not asked row by row.
    assert stretch.nonzero_rows(stretch.free_ram_mb) is None
    # A column of its own is read here.
    assert stretch.nonzero_rows(np.zeros(200)).tolist() == []
    assert stretch.constant(stretch.io_workload) is None
    assert stretch.constant(stretch.ram_ratio) == 1.5
    assert table.update_in_place({
        5: _rewritten(table.states[5], ram_allocation_ratio=2.0)})
    # The stretch's rows agree, the table's do not: not a constant to a
    # stretch cut after the write (one cut before reads the column it
    # held, as a request holding it would).
    assert stretch.constant(stretch.ram_ratio) == 1.5
    later = host_cache.Stretch(table, 100, 300)
    assert later.constant(later.ram_ratio) is None
    assert stretch.constant(np.full(200, 4.0)) == 4.0


def test_weighing_a_stretch_gives_the_tables_totals():
    """The I/O weigher weighs only the few busy rows (sparse) on the
    stretch as on the table; the totals agree to the bit."""
    table = _zoned()
    stretch = host_cache.Stretch(table, 100, 300)
    rows = np.arange(0, 200, 3)
    weighers = [ram.RAMWeigher(), io_ops.IoOpsWeigher()]
    spec = fakes.spec()
    handler = weights.HostWeightHandler()
    assert handler.weigh(weighers, stretch, rows, spec).tolist() == (
        handler.weigh(weighers, table, rows + 100, spec).tolist())


@pytest.mark.parametrize('set_rows, expected', [
    ([], None),
    ([0], (0, 1)),
    ([65535, 65536], (65535, 65537)),
    ([70000, 120000], (70000, 120001)),
    ([0, 100000], None),
    ([199999], (199999, 200000)),
    ([10, 100009], (10, 100010)),
])
def test_stretch_of_a_mask(set_rows, expected):
    mask = np.zeros(200000, dtype=np.bool_)
    mask[set_rows] = True
    assert filters.stretch_of(mask) == expected


def test_a_small_table_is_never_stretched():
    mask = np.zeros(filters.STRETCH_MIN_ROWS - 1, dtype=np.bool_)
    mask[3] = True
    assert filters.stretch_of(mask) is None


def test_a_zones_rows_are_kept_and_cut_to_a_stretch():
    table = _zoned()
    assert table.zone_rows('one') == (0, 200)
    assert table.zone_rows('two') == (200, 400)
    assert table.zone_rows('nowhere') is None
    assert host_cache.HostTable.build([]).zone_rows('one') is None
    stretch = host_cache.Stretch(table, 150, 260)
    assert stretch.zone_rows('one') == (0, 50)
    assert stretch.zone_rows('two') == (50, 110)
    assert host_cache.Stretch(table, 0, 100).zone_rows('two') is None
    # Carried to the tables derived from it, as the zones' masks are.
    later = table.replace({3: _rewritten(table.states[3],
                                         memory_mb_used=100)})
    assert later._az_rows is table._az_rows


def test_the_zone_filter_starts_the_stretch_it_passes_hosts_in(
        monkeypatch):
    """With every host in the running, the zone filter's rows are the
    stretch it and the filters after run on; the steps count the whole
    table's hosts."""
    from scheduler.filters import availability_zone_filter
    from scheduler.filters import ram_filter
    table = _zoned()
    monkeypatch.setattr(filters, 'STRETCH_MIN_ROWS', 0)
    chain = [availability_zone_filter.AvailabilityZoneFilter(),
             ram_filter.RamFilter()]
    spec = fakes.spec(memory_mb=3000, availability_zone='two')
    handler = filters.HostFilterHandler()
    stretched = handler.run_filters(chain, table, table.candidates, spec,
                                    stretch=True)
    whole = handler.run_filters(chain, table, table.candidates, spec)
    assert (stretched.stretch.lo, stretched.stretch.hi) == (200, 400)
    assert whole.stretch is None
    assert stretched.steps == whole.steps
    assert stretched.steps[0] == ('AvailabilityZoneFilter', 400, 200)
    assert stretched.mask.tolist() == whole.mask.tolist()
    assert stretched.rows().tolist() == whole.rows().tolist()

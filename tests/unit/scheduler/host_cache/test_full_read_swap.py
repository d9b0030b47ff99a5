"""A full read swaps in a complete table while requests go on (issue 53).

Readers hold snapshots while full reads take rows that changed on every
node at once (one transaction): each snapshot a reader holds must be
one table throughout, all of its rows of one write and its columns
agreeing with its states, never a table half written in place.
"""

import datetime
import sys
import threading

import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler.host_cache import applying
from tests.unit.scheduler import fakes

NODES = 400
ROUNDS = 12


def _write_every_node(memory_mb):
    """Every node reports ``memory_mb``, in one transaction."""
    nodes = models.ComputeNode.__table__
    with db_api.writer() as session:
        session.execute(sa.update(nodes).values(
            memory_mb=memory_mb, generation=nodes.c.generation + 1,
            updated_at=models.utcnow()))


def _problems(table):
    """What is wrong with ``table`` as one complete table of one write:
    read twice, with a switch of threads between, as a request reads it
    over its filters and weighers."""
    problems = []
    for _ in range(2):
        states = list(table.states)
        column = table.columns['ram_total'].copy()
        if len(states) != NODES or len(column) != NODES:
            problems.append('%d states, %d rows' % (len(states),
                                                    len(column)))
            continue
        values = {state.total_usable_ram_mb for state in states}
        if len(values) != 1:
            problems.append('states of several writes: %s' % values)
        if set(column.tolist()) != values:
            problems.append('columns %s, states %s'
                            % (set(column.tolist()), values))
        if any(table.row_by_id[state.id] != row
               for row, state in enumerate(states)):
            problems.append('rows out of place')
        first = (values, set(column.tolist()))
        threading.Event().wait(0.0005)
        if ({state.total_usable_ram_mb for state in table.states},
                set(table.columns['ram_total'].tolist())) != first:
            problems.append('the table changed under its reader')
    return problems


def test_requests_never_see_half_a_table(database, make_host_manager):
    fakes.Cloud.add_many(NODES)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    stop = threading.Event()
    problems, checked = [], [0]

    def request():
        while not stop.is_set():
            table = manager.snapshot()
            found = _problems(table)
            problems.extend(found)
            checked[0] += 1

    interval = sys.getswitchinterval()
    # Switch threads as often as the interpreter can: a table written
    # in place is then caught half written.
    sys.setswitchinterval(1e-6)
    readers = [threading.Thread(target=request) for _ in range(3)]
    try:
        for reader in readers:
            reader.start()
        for number in range(ROUNDS):
            _write_every_node(2000 + number)
            table = manager.refresh(full=True)
            assert {state.total_usable_ram_mb for state in table.states} == {
                2000 + number}
    finally:
        stop.set()
        for reader in readers:
            reader.join()
        sys.setswitchinterval(interval)
    assert checked[0] > ROUNDS
    assert problems == []
    assert manager.stats['full_reads'] == ROUNDS + 1  # and the load


def test_claims_during_a_build_reach_the_new_table(database,
                                                   make_host_manager):
    """A claim recorded while a full read builds its table off the lock
    is in the table swapped in (the claim's node is then read again)."""
    fakes.Cloud.add_many(4)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    node_id = table.states[0].id
    _write_every_node(3000)
    table = _full_read_with_a_claim_during_its_build(manager, node_id)
    state = table.states[table.row_by_id[node_id]]
    assert state.total_usable_ram_mb == 1000           # the claim's row, kept
    assert state.memory_mb_used == 512
    assert table.columns['ram_used'][table.row_by_id[node_id]] == 512
    others = [other.total_usable_ram_mb for other in table.states
              if other.id != node_id]
    assert others == [3000, 3000, 3000]
    # Read again at the next refresh, as after any raced claim.
    table = manager.refresh()
    assert table.states[table.row_by_id[node_id]].total_usable_ram_mb == 3000


def _full_read_with_a_claim_during_its_build(manager, node_id):
    """A full read of ``manager`` during whose table build (after its
    states were taken) a claim of 1 vCPU and 512 MB lands on
    ``node_id``; the table it swapped in. It builds one whatever it
    found changed, as it does when it found more changed rows than
    ``applying.RESTATE_UNDER_LOCK``."""
    from scheduler.db import claims
    build = manager._swap_in_built
    built = []

    def claim_then_build():
        if manager._pending is not None:
            manager.consume(node_id, claims.Resources(1, 512, 1))
            built.append(True)
        return build()
    manager._swap_in_built = claim_then_build
    under_lock = applying.RESTATE_UNDER_LOCK
    applying.RESTATE_UNDER_LOCK = 0
    try:
        table = manager.refresh(full=True)
    finally:
        del manager._swap_in_built
        applying.RESTATE_UNDER_LOCK = under_lock
    assert built == [True]
    return table


def test_a_full_read_that_found_few_changes_writes_them_in_place(
        database, make_host_manager, monkeypatch):
    """A full read that found at most RESTATE_UNDER_LOCK changed nodes
    and services writes them into the table requests hold, as an
    incremental refresh does (building a new table of every host costs
    ~16 us a host: 1.6 s at 100,000, for a few rows); more, and it
    builds a new one."""
    monkeypatch.setattr(applying, 'RESTATE_UNDER_LOCK', 2)
    fakes.Cloud.add_many(4)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    nodes = models.ComputeNode.__table__
    services = models.Service.__table__
    first, second, third = (state.id for state in table.states[:3])
    # A write of two nodes and a service that the incremental reads do
    # not see (its updated_at older than they look: a writer whose
    # clock lags), which the full read finds.
    lagging = models.utcnow() - datetime.timedelta(hours=1)
    with db_api.writer() as session:
        session.execute(sa.update(nodes).where(nodes.c.id.in_(
            [first, second])).values(memory_mb=3000, updated_at=lagging,
                                     generation=nodes.c.generation + 1))
        session.execute(sa.update(services).where(
            services.c.host == table.states[3].host).values(
                disabled=True, updated_at=lagging))
    assert manager.refresh() is table
    assert table.states[table.row_by_id[first]].total_usable_ram_mb == 1000
    assert manager.refresh(full=True) is table
    for node_id in (first, second):
        row = table.row_by_id[node_id]
        assert table.states[row].total_usable_ram_mb == 3000
        assert table.columns['ram_total'][row] == 3000
    assert table.states[3].service.disabled is True
    assert bool(table.columns['disabled'][3]) is True
    with db_api.writer() as session:
        session.execute(sa.update(nodes).where(nodes.c.id.in_(
            [first, second, third])).values(
                memory_mb=4000, updated_at=lagging,
                generation=nodes.c.generation + 1))
    built = manager.refresh(full=True)
    assert built is not table
    assert [state.total_usable_ram_mb for state in built.states] == [
        4000, 4000, 4000, 1000]


def test_a_state_put_during_a_build_takes_the_service_the_read_found(
        database, make_host_manager):
    """A claim recorded while a full read builds its table keeps its
    reservation in the table swapped in, with the service that full read
    found for its host (here: disabled meanwhile), not the one the claim
    saw."""
    fakes.Cloud.add_many(4)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    node_id = table.states[0].id
    host = table.states[0].host
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(sa.update(services).where(services.c.host == host)
                        .values(disabled=True, updated_at=models.utcnow()))
    table = _full_read_with_a_claim_during_its_build(manager, node_id)
    row = table.row_by_id[node_id]
    assert table.states[row].memory_mb_used == 512
    assert table.states[row].service.disabled is True
    assert bool(table.columns['disabled'][row]) is True


def test_the_swapped_in_table_has_the_values_requests_computed(
        database, make_host_manager):
    """What requests computed from every HostState of the table in use
    (BuildFailureWeigher's column, a grouping) is computed for a full
    read's table before it is swapped in, from its own states, so that
    the first request it serves does not compute it over every host; a
    claim put in during the build is in it too."""
    fakes.Cloud.add_many(4)
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    node_id = table.states[0].id
    calls = []

    def free_ram(state):
        calls.append(state.id)
        return state.free_ram_mb

    def ram_size(state):
        calls.append(state.id)
        return state.total_usable_ram_mb

    table.state_column('free ram', free_ram)
    table.grouped('ram size', ram_size)
    _write_every_node(3000)
    del calls[:]
    table = _full_read_with_a_claim_during_its_build(manager, node_id)
    # Each computed once per host of the new table during the read (the
    # claimed node's again for the claim, in the old table and the new).
    others = [state.id for state in table.states if state.id != node_id]
    assert sorted(calls.count(other) for other in others) == [2, 2, 2]
    assert calls.count(node_id) >= 2
    del calls[:]
    column = table.state_column('free ram', free_ram)
    codes, keys = table.grouped('ram size', ram_size)
    assert calls == []
    assert list(column) == [state.free_ram_mb for state in table.states]
    assert [keys[code] for code in codes] == [
        state.total_usable_ram_mb for state in table.states]
    # The claim put in during the build (512 MB off its node, which
    # keeps its old 1000 MB until read again).
    assert column[table.row_by_id[node_id]] == table.states[
        table.row_by_id[node_id]].free_ram_mb
    assert sorted(set(keys)) == [1000, 3000]


def test_a_claim_during_a_build_reaches_its_row_of_a_table_by_zone(
        database, make_host_manager):
    """Nodes whose zones alternate: the table a full read swaps in holds
    each zone's rows together, and a claim recorded during its build is
    in the claimed node's row, its columns with it."""
    fakes.Cloud.add_many(6)
    manager = make_host_manager(auto_refresh=False)
    hosts = sorted(state.host for state in manager.snapshot().states)
    cloud = fakes.Cloud()
    cloud.aggregate('odd', hosts[1::2], availability_zone='az1')
    cloud.aggregate('even', hosts[0::2], availability_zone='az2')
    table = manager.refresh(full=True)
    zones = [state.availability_zone for state in table.states]
    assert zones == ['az2'] * 3 + ['az1'] * 3
    node_id = table.states[4].id
    _write_every_node(3000)
    table = _full_read_with_a_claim_during_its_build(manager, node_id)
    assert [state.availability_zone for state in table.states] == zones
    assert table.az_index.tolist() == [0, 0, 0, 1, 1, 1]
    row = table.row_by_id[node_id]
    assert table.states[row].memory_mb_used == 512
    assert table.columns['ram_used'][row] == 512
    for position, state in enumerate(table.states):
        assert table.row_by_id[state.id] == position
        assert table.ids[position] == state.id
        assert table.columns['ram_total'][position] == \
            state.total_usable_ram_mb

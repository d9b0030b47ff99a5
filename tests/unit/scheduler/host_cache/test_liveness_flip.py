"""Most services change liveness at once, without stalls (issue 53).

When the heartbeats of most computes stop or come back together (a
database or broker outage, ``service_down_time`` passing for all of
them), one incremental refresh gives every host a new service. Its
states are restated and its table built off the manager's lock, then
swapped in: requests and claims do not wait behind it, a claim made
meanwhile is kept, and the table is the one a first load would give.
"""

import datetime
import threading

import numpy as np
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import models
from scheduler.host_cache import applying
from tests.unit.scheduler import fakes

# More hosts than an incremental refresh restates under the lock.
NODES = 2 * applying.RESTATE_UNDER_LOCK
# How long the paused preparation waits for the claim (s).
PAUSE = 5.0


def _heartbeats_from(seconds_ago):
    """Every compute's last heartbeat was ``seconds_ago``, as one write
    (no row's updated_at moves: heartbeats do not move it)."""
    services = models.Service.__table__
    with db_api.writer() as session:
        session.execute(sa.update(services).values(
            last_seen_up=models.utcnow()
            - datetime.timedelta(seconds=seconds_ago)))


def _loaded(make_host_manager, config):
    """A manager that loaded NODES hosts, their services alive."""
    config.config(service_down_time=60)
    fakes.Cloud.add_many(NODES)
    manager = make_host_manager(auto_refresh=False)
    assert list(manager.snapshot().service_up()) == [True] * NODES
    return manager


def _differences(table, expected):
    """Where ``table`` differs from ``expected``: the same nodes in the
    same rows, the same services, and every column equal."""
    found = []
    if [state.id for state in table.states] != [
            state.id for state in expected.states]:
        return ['nodes %s, expected %s' % (
            [state.id for state in table.states],
            [state.id for state in expected.states])]
    for state, other in zip(table.states, expected.states):
        if state.service != other.service:
            found.append('node %s: service %s, expected %s'
                         % (state.id, state.service, other.service))
        if (state.free_ram_mb, state.aggregates,
                state.availability_zones) != (
                other.free_ram_mb, other.aggregates,
                other.availability_zones):
            found.append('node %s: %r, expected %r' % (state.id, state,
                                                        other))
    for name, column in expected.columns.items():
        if not np.array_equal(table.columns[name], column):
            found.append('column %s differs' % name)
    return found


def test_a_mass_liveness_change_gives_the_table_a_load_would(
        database, make_host_manager, config):
    manager = _loaded(make_host_manager, config)
    before = manager.snapshot()
    for seconds_ago, up in ((3600, False), (0, True)):
        _heartbeats_from(seconds_ago)
        table = manager.refresh()
        assert manager.stats['full_reads'] == 1      # the load only
        expected = make_host_manager(auto_refresh=False).snapshot()
        assert list(expected.service_up()) == [up] * NODES
        assert _differences(table, expected) == []
        # Swapped in whole: a request holding the table before still
        # reads one table of one refresh.
        assert list(before.service_up()) == [not up] * NODES
        before = table


def _refresh_paused_in_restating(manager, during):
    """A refresh of ``manager`` whose first restating of a state pauses
    (up to PAUSE seconds) while another thread runs ``during``; returns
    the table and whether ``during`` returned before the pause ended."""
    preparing, done = threading.Event(), threading.Event()
    restated = manager._restated
    refresh_thread = []

    def paused_restated(state, ratios):
        if not preparing.is_set() and \
                threading.current_thread() is refresh_thread[0]:
            preparing.set()
            paused.append(done.wait(PAUSE))
        return restated(state, ratios)

    def other():
        during()
        done.set()
    paused, tables = [], []
    manager._restated = paused_restated
    refresh = threading.Thread(
        target=lambda: tables.append(manager.refresh()))
    refresh_thread.append(refresh)
    claimer = threading.Thread(target=other)
    try:
        refresh.start()
        assert preparing.wait(30)
        claimer.start()
        refresh.join(60)
        claimer.join(60)
    finally:
        del manager._restated
    return tables[0], paused[0]


def test_the_lock_is_free_while_the_states_are_prepared(
        database, make_host_manager, config):
    manager = _loaded(make_host_manager, config)
    _heartbeats_from(3600)

    def take_the_lock():
        with manager._lock:
            pass
    table, free = _refresh_paused_in_restating(manager, take_the_lock)
    assert free, 'the lock was held while the states were restated'
    assert list(table.service_up()) == [False] * NODES


def test_a_claim_made_while_the_states_are_prepared_is_kept(
        database, make_host_manager, config):
    manager = _loaded(make_host_manager, config)
    node_id = manager.snapshot().states[0].id
    _heartbeats_from(3600)

    def claim():
        manager.consume(node_id, claims.Resources(1, 512, 1))
    table, _free = _refresh_paused_in_restating(manager, claim)
    row = table.row_by_id[node_id]
    state = table.states[row]
    # The claim's reservation, with the service the refresh read.
    assert (state.vcpus_used, state.memory_mb_used) == (1, 512)
    assert table.columns['ram_used'][row] == 512
    assert state.service.alive is False
    assert not table.service_up()[row]
    assert [other.memory_mb_used for other in table.states
            if other.id != node_id] == [0] * (NODES - 1)
    assert list(table.service_up()) == [False] * NODES

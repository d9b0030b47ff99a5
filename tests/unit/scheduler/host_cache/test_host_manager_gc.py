"""The scheduler daemon's host cache frozen out of the garbage
collector's passes after each full read (collector.freeze_collector),
and the collector paused while a full read builds the cache.
"""

import gc
import sys
import threading
import weakref

from oslo_db import exception as db_exc
import pytest

from scheduler.cmd import common
from scheduler.cmd import scheduler as scheduler_cmd
from scheduler.host_cache import collector
from tests.fixtures import statements


class _Cyclic:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self):
        self.me = self


def _tracked(obj):
    """Whether ``obj`` is in one of the collector's generations (not
    frozen)."""
    return any(found is obj for found in gc.get_objects())


@pytest.fixture
def freezing(monkeypatch):
    monkeypatch.setattr(collector, '_freezing', True)
    monkeypatch.setattr(collector, '_blocks_after_collect', None)
    yield
    gc.unfreeze()


def test_a_full_read_freezes_what_the_collector_keeps(cloud, freezing,
                                                      make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    assert gc.get_freeze_count() > 0
    assert not _tracked(table) and not _tracked(table.states[0])
    # An incremental refresh freezes nothing more.
    later = _Cyclic()
    manager.refresh()
    assert _tracked(later)


def test_a_refresh_that_builds_a_new_table_freezes_it(
        database, freezing, make_host_manager, config):
    """Most services' liveness changed at once: the refresh builds a new
    table of restated states, as a full read does, and freezes it too;
    else the collector's passes walk its states until the next full
    read (200-360 ms each at 100,000 hosts)."""
    from tests.unit.scheduler.host_cache import test_liveness_flip as flip

    manager = flip._loaded(make_host_manager, config)
    flip._heartbeats_from(3600)
    table = manager.refresh()
    assert manager.stats['full_reads'] == 1      # the load only
    assert not any(table.service_up())
    assert not _tracked(table) and not _tracked(table.states[0])
    assert not _tracked(table.states[-1].service)


def test_frozen_garbage_is_collected_once_the_process_grew(
        cloud, freezing, make_host_manager, monkeypatch):
    cloud.add_node('a')
    cycle = _Cyclic()
    gone = weakref.ref(cycle)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()          # the first load: a full read
    assert not _tracked(cycle)  # frozen with the rest
    del cycle
    gc.collect()
    assert gone() is not None   # the collector no longer looks at it
    # A full read in a process that did not grow freezes what is new,
    # and collects nothing (a pass over everything stalls requests).
    later = _Cyclic()
    manager.refresh(full=True)
    assert gone() is not None
    assert not _tracked(later)
    # Once the allocated blocks grew by a quarter, it thaws and collects.
    monkeypatch.setattr(collector, '_blocks_after_collect', 1)
    manager.refresh(full=True)
    assert gone() is None
    assert collector._blocks_after_collect > 1


def test_the_first_load_collects_before_it_reads(
        cloud, freezing, make_host_manager):
    """The first load passes the collector over the process before it
    reads, not over the cache it built (a second of a cold start at a
    million hosts), and counts the blocks to grow from after it."""
    cloud.add_node('a')
    cycle = _Cyclic()
    gone = weakref.ref(cycle)
    del cycle
    manager = make_host_manager(auto_refresh=False)
    at_first_statement = []
    with statements.each_statement(
            lambda statement: at_first_statement.append(
                (gone() is None, gc.get_freeze_count()))
            if not at_first_statement else None):
        manager.snapshot()
    collected, frozen = at_first_statement[0]
    assert collected and frozen > 0
    before_load = frozen
    assert gc.get_freeze_count() > before_load   # the cache frozen too
    assert collector._blocks_after_collect is not None
    # Later full reads only collect once the process grew from there.
    later = _Cyclic()
    later_gone = weakref.ref(later)
    del later
    manager.refresh(full=True)
    assert later_gone() is not None


def test_the_growth_is_judged_before_the_read_allocates(
        database, freezing, make_host_manager, config, monkeypatch):
    """Whether a full read collects is decided as it begins: the rows it
    reads and the table it builds, gone once it ends, would otherwise
    count as growth and make every full read at 100,000 hosts stall the
    requests for a collection."""
    from tests.unit.scheduler.host_cache import test_liveness_flip as flip

    manager = flip._loaded(make_host_manager, config)
    cycle = _Cyclic()
    gone = weakref.ref(cycle)
    manager.refresh(full=True)              # frozen with the rest
    del cycle
    # Growth of a thousandth: far less than the read of 512 nodes and
    # services allocates, more than the refresh does before it reads.
    monkeypatch.setattr(collector, 'GROWTH_BEFORE_COLLECT', 0.001)
    monkeypatch.setattr(collector, '_blocks_after_collect',
                        sys.getallocatedblocks())
    manager.refresh(full=True)
    assert gone() is not None               # no collection
    monkeypatch.setattr(collector, '_blocks_after_collect', 1)
    manager.refresh(full=True)
    assert gone() is None


def test_the_new_table_is_frozen_before_the_collector_resumes(
        database, freezing, collector_on, make_host_manager, config,
        monkeypatch):
    """A full read's table, and a mass liveness change's, are frozen
    while the collector is still paused: else its first pass after the
    pause walks every new state (40-240 ms at 100,000 hosts)."""
    from tests.unit.scheduler.host_cache import test_liveness_flip as flip

    frozen_while = []
    freeze = collector.after_full_read

    def noted(*args, **kwargs):
        frozen_while.append('paused' if not gc.isenabled() else 'running')
        return freeze(*args, **kwargs)
    monkeypatch.setattr(collector, 'after_full_read', noted)
    manager = flip._loaded(make_host_manager, config)   # the first load
    manager.refresh(full=True)
    flip._heartbeats_from(3600)
    manager.refresh()                                   # most die at once
    manager.refresh()                                   # nothing built
    assert frozen_while == ['paused'] * 3
    assert gc.isenabled()


def test_nothing_is_frozen_outside_the_daemon(cloud, make_host_manager):
    assert collector._freezing is False
    gc.unfreeze()
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    manager.refresh(full=True)
    assert gc.get_freeze_count() == 0
    assert _tracked(table)


def test_the_scheduler_daemon_freezes(monkeypatch):
    monkeypatch.setattr(collector, '_freezing', False)
    # (main's switch interval: test_switching.py.)
    monkeypatch.setattr(sys, 'setswitchinterval', lambda interval: None)
    started = []
    monkeypatch.setattr(common, 'run_daemon',
                        lambda *args, **kwargs: started.append(args[0]))
    scheduler_cmd.main()
    assert started == ['gantt-scheduler']
    assert collector._freezing is True


@pytest.fixture
def collector_on():
    """The collector runs when the test starts, and again after it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_while_a_full_read_runs(
        cloud, collector_on, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    seen = []
    with statements.each_statement(
            lambda statement: seen.append(gc.isenabled())):
        manager.snapshot()          # the first load
        first = list(seen)
        del seen[:]
        manager.refresh()           # incremental
        incremental = list(seen)
        del seen[:]
        manager.refresh(full=True)
        full = list(seen)
    assert first and not any(first)
    assert incremental and all(incremental)
    assert full and not any(full)
    assert gc.isenabled()


def test_a_full_read_that_fails_resumes_the_collector(
        cloud, collector_on, make_host_manager):
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)

    def fail(statement):
        if 'compute_nodes' in statement:
            raise RuntimeError('the database went away')
    with statements.each_statement(fail), pytest.raises(db_exc.DBError):
        manager.snapshot()
    assert gc.isenabled()
    assert manager.snapshot().states[0].host == 'a'


def test_a_collector_paused_by_the_process_stays_paused(
        cloud, collector_on, make_host_manager):
    cloud.add_node('a')
    gc.disable()
    make_host_manager(auto_refresh=False).snapshot()
    assert not gc.isenabled()


def test_the_collector_resumes_when_the_last_of_two_reads_ends(
        cloud, collector_on, make_host_manager):
    cloud.add_node('a')
    reading, go = threading.Event(), threading.Event()
    slow = None

    def hold(statement):
        if threading.current_thread() is slow:
            reading.set()
            assert go.wait(30)
    first = make_host_manager(auto_refresh=False)
    failures = []

    def load():
        try:
            first.snapshot()
        except Exception as error:    # reported below
            failures.append(error)
    with statements.each_statement(hold):
        thread = threading.Thread(target=load)
        slow = thread
        thread.start()
        try:
            assert reading.wait(30)
            # Another cache's full read starts and ends meanwhile.
            make_host_manager(auto_refresh=False).snapshot()
            assert not gc.isenabled()
        finally:
            go.set()
            thread.join(30)
    assert not failures
    assert gc.isenabled()


def test_a_full_read_held_up_resumes_the_collector_after_the_limit(
        cloud, collector_on, make_host_manager, monkeypatch, caplog):
    # A database that stops answering in the middle of the first load.
    cloud.add_node('a')
    monkeypatch.setattr(collector, 'PAUSE_LIMIT', 0.05)
    reading, go = threading.Event(), threading.Event()
    manager = make_host_manager(auto_refresh=False)
    loaded = []

    def hold(statement):
        if threading.current_thread() is thread:
            reading.set()
            assert go.wait(30)
    with statements.each_statement(hold):
        thread = threading.Thread(
            target=lambda: loaded.append(manager.snapshot()))
        thread.start()
        try:
            assert reading.wait(30)
            assert not gc.isenabled()
            for _ in range(1000):
                if gc.isenabled():
                    break
                threading.Event().wait(0.01)
            assert gc.isenabled()   # while the read still waits
            assert thread.is_alive()
        finally:
            go.set()
            thread.join(30)
    assert loaded and loaded[0].states[0].host == 'a'
    assert gc.isenabled()
    assert 'garbage collector runs again' in caplog.text


def _resident_kb():
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError('no VmRSS')


@pytest.mark.skipif(collector._malloc_trim() is None,
                    reason='the C library has no malloc_trim')
def test_trimming_gives_freed_heap_pages_back():
    """Blocks of the C heap freed between blocks still held stay in the
    resident memory until trim_heap gives their pages back."""
    # 64 KB: under glibc's threshold for blocks of their own (mmap), so
    # they come from the heap; every 16th is kept, so the heap's top
    # cannot simply shrink.
    blocks = [bytearray(64 * 1024) for _ in range(3200)]
    kept = blocks[::16]
    del blocks
    before = _resident_kb()
    collector.trim_heap()
    after = _resident_kb()
    assert kept
    # 3,000 blocks of 64 KB freed: 187 MB.
    assert before - after > 100 * 1024, (before, after)


def test_a_full_read_in_the_daemon_trims_the_heap(cloud, freezing,
                                                  make_host_manager,
                                                  monkeypatch):
    trims = []
    monkeypatch.setattr(collector, 'trim_heap', lambda: trims.append(1))
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()
    assert trims == [1]
    manager.refresh()
    assert trims == [1]

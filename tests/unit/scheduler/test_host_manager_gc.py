"""The scheduler daemon's host cache frozen out of the garbage
collector's passes after each full read (host_manager.freeze_collector).
"""

import gc
import weakref

import pytest

from scheduler.cmd import common
from scheduler.cmd import scheduler as scheduler_cmd
from scheduler import host_manager


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
    monkeypatch.setattr(host_manager, '_freezing', True)
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


def test_frozen_garbage_is_collected_at_the_next_full_read(
        cloud, freezing, make_host_manager):
    cloud.add_node('a')
    cycle = _Cyclic()
    gone = weakref.ref(cycle)
    manager = make_host_manager(auto_refresh=False)
    manager.snapshot()          # the first load: a full read
    assert not _tracked(cycle)  # frozen with the rest
    del cycle
    gc.collect()
    assert gone() is not None   # the collector no longer looks at it
    manager.refresh(full=True)
    assert gone() is None


def test_nothing_is_frozen_outside_the_daemon(cloud, make_host_manager):
    assert host_manager._freezing is False
    gc.unfreeze()
    cloud.add_node('a')
    manager = make_host_manager(auto_refresh=False)
    table = manager.snapshot()
    manager.refresh(full=True)
    assert gc.get_freeze_count() == 0
    assert _tracked(table)


def test_the_scheduler_daemon_freezes(monkeypatch):
    monkeypatch.setattr(host_manager, '_freezing', False)
    started = []
    monkeypatch.setattr(common, 'run_daemon',
                        lambda *args, **kwargs: started.append(args[0]))
    scheduler_cmd.main()
    assert started == ['gantt-scheduler']
    assert host_manager._freezing is True

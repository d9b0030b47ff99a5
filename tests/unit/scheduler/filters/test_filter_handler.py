import logging

import numpy as np

from scheduler import filters
from scheduler.filters import compute_filter
from scheduler.filters import ram_filter
from tests.unit.scheduler import fakes


class Recorder(filters.BaseHostFilter):
    """Passes hosts whose name is in ``allowed``; records its calls."""

    def __init__(self, allowed, once=False, rebuild=False):
        self.allowed = set(allowed)
        self.calls = []
        self.run_filter_once_per_request = once
        self.RUN_ON_REBUILD = rebuild

    def host_passes(self, host_state, spec):
        self.calls.append(host_state.host)
        return host_state.host in self.allowed


class NotABaseFilter:
    """A third-party filter that knows nothing of Gantt's base class."""

    def host_passes(self, host_state, spec):
        return host_state.host != 'b'


def _table(names=('a', 'b', 'c')):
    return fakes.table([fakes.host_state(name) for name in names])


def _names(hosts, mask):
    return [hosts.states[row].host for row in np.flatnonzero(mask)]


def test_filters_run_in_order_and_counts_are_kept():
    hosts = _table()
    first, second = Recorder('abc'), Recorder('ac')
    result = filters.HostFilterHandler().run_filters(
        [first, second], hosts, hosts.candidates, fakes.spec())
    assert _names(hosts, result.mask) == ['a', 'c']
    assert first.calls == ['a', 'b', 'c']
    assert second.calls == ['a', 'b', 'c']
    assert result.steps == [('Recorder', 3, 3), ('Recorder', 3, 2)]
    assert result.passed == 2


def test_stops_at_zero_hosts_and_explains_without_hosts():
    states = [fakes.host_state('h%d' % i, memory_mb=1024)
              for i in range(50)]
    states[0] = fakes.host_state('h0', svc=fakes.service('h0',
                                                         disabled=True))
    states[1] = fakes.host_state('h1', svc=None)
    hosts = fakes.table(states)
    later = Recorder([])
    result = filters.HostFilterHandler().run_filters(
        [Recorder(['h%d' % i for i in range(50)]),
         compute_filter.ComputeFilter(), ram_filter.RamFilter(), later],
        hosts, np.ones(50, dtype=bool), fakes.spec(memory_mb=4096))
    assert later.calls == []
    assert result.passed == 0
    assert result.explain() == (
        '0/50 hosts available: Recorder 50 -> 50, ComputeFilter 50 -> 48, '
        'RamFilter 48 -> 0 (removed the last 48)')
    assert 'h1' not in result.explain()


def test_debug_log_per_filter(caplog):
    caplog.set_level(logging.DEBUG, logger='scheduler.filters')
    hosts = _table()
    filters.HostFilterHandler().run_filters(
        [Recorder('ab')], hosts, hosts.candidates, fakes.spec())
    assert 'Filter Recorder returned 2 host(s)' in caplog.text


def test_once_per_request_filters_skip_later_instances():
    hosts = _table()
    once, always = Recorder('a', once=True), Recorder('abc')
    result = filters.HostFilterHandler().run_filters(
        [once, always], hosts, hosts.candidates, fakes.spec(), index=1)
    assert once.calls == []
    assert len(always.calls) == 3
    assert _names(hosts, result.mask) == ['a', 'b', 'c']


class Unhashable(Recorder):
    """A filter of its own that compares by value (so has no hash)."""

    def __eq__(self, other):
        return isinstance(other, Recorder) and self.allowed == other.allowed


def test_one_handler_runs_each_list_of_filters_as_it_says():
    """What runs for an instance is kept per list of filters, kind of
    instance and rebuild: the first and the later instances, a list of
    new filter objects (the old ones gone), and a filter without a hash
    each get their own answer."""
    hosts = _table()
    handler = filters.HostFilterHandler()
    spec = fakes.spec()
    for _ in range(3):
        once, always = Unhashable('a', once=True), Recorder('ab')
        for index, names in ((0, ['a']), (1, ['a', 'b']), (0, ['a'])):
            result = handler.run_filters([once, always], hosts,
                                         hosts.candidates, spec, index=index)
            assert _names(hosts, result.mask) == names
        assert len(once.calls) == 6
        del once, always
    # The same objects in another list, one of them now once per request.
    first, second = Recorder('abc'), Recorder('b')
    result = handler.run_filters([first, second], hosts, hosts.candidates,
                                 spec, index=1)
    assert _names(hosts, result.mask) == ['b']
    result = handler.run_filters([second, first], hosts, hosts.candidates,
                                 fakes.spec(is_rebuild=True), index=1)
    assert result.steps == []


def test_rebuild_runs_only_rebuild_filters():
    hosts = _table()
    plain, rebuild = Recorder(''), Recorder('b', rebuild=True)
    result = filters.HostFilterHandler().run_filters(
        [plain, rebuild], hosts, hosts.candidates,
        fakes.spec(is_rebuild=True))
    assert plain.calls == []
    assert _names(hosts, result.mask) == ['b']
    assert result.steps == [('Recorder', 3, 1)]


def test_third_party_filter_with_only_host_passes():
    hosts = _table()
    result = filters.HostFilterHandler().run_filters(
        [NotABaseFilter()], hosts, hosts.candidates, fakes.spec())
    assert _names(hosts, result.mask) == ['a', 'c']
    assert result.steps == [('NotABaseFilter', 3, 2)]


def test_a_filter_cannot_bring_hosts_back():
    class Everyone(filters.BaseHostFilter):
        def filter_all(self, host_table, mask, spec):
            return np.ones(len(host_table), dtype=bool)

    hosts = _table()
    mask = np.array([True, False, True])
    result = filters.HostFilterHandler().run_filters(
        [Everyone()], hosts, mask, fakes.spec())
    assert _names(hosts, result.mask) == ['a', 'c']


def test_explain_with_restrictions_and_total():
    result = filters.FilterResult(
        10, [filters.Step('ignore_hosts', 10, 4),
             filters.Step('RamFilter', 4, 0)], np.zeros(10, dtype=bool))
    assert result.explain() == ('0/10 hosts available: ignore_hosts 10 -> 4, '
                                'RamFilter 4 -> 0 (removed the last 4)')


def test_base_filter_defaults_follow_nova():
    assert filters.BaseHostFilter.run_filter_once_per_request is False
    assert filters.BaseHostFilter.RUN_ON_REBUILD is False


def test_all_pass_asks_the_rows_given_host_by_host():
    hosts = _table(('a', 'b', 'c', 'd'))
    handler = filters.HostFilterHandler()
    spec = fakes.spec()
    first = Recorder({'a', 'b', 'c'})
    second = Recorder({'a', 'c', 'd'})
    assert handler.all_pass([first, second, NotABaseFilter()], hosts,
                            [0, 2], spec)
    assert first.calls == ['a', 'c'] and second.calls == ['a', 'c']
    # One row failing one filter is enough.
    assert not handler.all_pass([first, second], hosts, [0, 1], spec)
    assert not handler.all_pass([first, second], hosts, [3], spec)
    # As run_filters does: a once-per-request filter does not run for a
    # later instance, nor one that does not run on rebuild for a
    # rebuild.
    once = Recorder(set(), once=True)
    assert handler.all_pass([once], hosts, [0], spec, index=1)
    assert not handler.all_pass([once], hosts, [0], spec, index=0)
    assert handler.all_pass([Recorder(set())], hosts, [0],
                            fakes.spec(is_rebuild=True))
    # It agrees with the batch path on every row.
    for row in range(4):
        mask = np.zeros(4, dtype=np.bool_)
        mask[row] = True
        assert handler.all_pass([first, second], hosts, [row], spec) == \
            bool(handler.run_filters([first, second], hosts, mask,
                                     spec).passed)


def test_rerun_builds_no_mask_for_a_filter_that_removed_nothing():
    """rerun asks the rows written again; a filter they all still pass
    leaves the very mask it was given (no new array, no count of every
    host), and one that a row fails removes that row alone, counted
    from the rows it removed: the same steps as run_filters."""
    hosts = _table(('a', 'b', 'c', 'd'))
    handler = filters.HostFilterHandler()
    spec = fakes.spec()
    mask = np.array([True, True, False, True])
    everyone = Recorder('abcd')
    kept = handler.rerun([everyone], hosts, mask, spec, [1, 2], 1)
    assert kept.mask is mask
    assert everyone.calls == ['b']          # row 2 was not in the mask
    assert kept.steps == [('Recorder', 3, 3)] and kept.passed == 3
    no_b = Recorder('acd')
    narrowed = handler.rerun([everyone, no_b, everyone], hosts, mask,
                             spec, [1, 3], 1)
    assert _names(hosts, narrowed.mask) == ['a', 'd']
    assert narrowed.steps == [('Recorder', 3, 3), ('Recorder', 3, 2),
                              ('Recorder', 2, 2)]
    assert narrowed.steps == handler.run_filters(
        [everyone, no_b, everyone], hosts, mask, spec, index=1).steps
    assert mask.tolist() == [True, True, False, True]
    # Given how many hosts the mask holds (the instance before counted
    # them), the same result, counted from it: the count given is what
    # every step and the result start from.
    counted = handler.rerun([everyone, no_b, everyone], hosts, mask, spec,
                            [1, 3], 1, count=3)
    assert counted.steps == narrowed.steps and counted.passed == 2
    assert _names(hosts, counted.mask) == ['a', 'd']
    trusted = handler.rerun([everyone], hosts, mask, spec, [1], 1, count=7)
    assert trusted.steps == [('Recorder', 7, 7)] and trusted.passed == 7


class GivesBack(filters.BaseHostFilter):
    """Removes no host: gives back the very mask it was given, as Gantt's
    filters do when the request asks nothing of them; records the masks
    it was given. ``zone``: the stretch of rows outside which it passes
    none (as a zone's filter says), where it is given that stretch."""

    reads_stretches = True

    def __init__(self, zone=None):
        self.zone = zone
        self.given = []

    def host_passes(self, host_state, spec):
        return True

    def filter_all(self, host_table, mask, spec):
        self.given.append(mask)
        return mask

    def passing_rows(self, host_table, spec):
        return self.zone


def test_a_filter_that_gives_its_mask_back_keeps_the_count_and_the_mask():
    """After the first filter made the request's own mask, a filter that
    gives it back removed none: its count stands and the next filter is
    given that same mask (no new array, no count of every host's flag).
    The first filter's mask is the table's own column, which the table
    writes in place later: a new one is made from it whatever it
    gives back."""
    hosts = _table(('a', 'b', 'c', 'd'))
    handler = filters.HostFilterHandler()
    spec = fakes.spec()
    first, second, third = GivesBack(), GivesBack(), GivesBack()
    no_b = Recorder('acd')
    result = handler.run_filters([first, no_b, second, third], hosts,
                                 hosts.candidates, spec)
    assert first.given[0] is hosts.candidates
    assert second.given[0] is third.given[0] is result.mask
    assert result.mask is not hosts.candidates
    assert _names(hosts, result.mask) == ['a', 'c', 'd']
    assert result.steps == [('GivesBack', 4, 4), ('Recorder', 4, 3),
                            ('GivesBack', 3, 3), ('GivesBack', 3, 3)]
    assert result.passed == 3
    alone = handler.run_filters([first], hosts, hosts.candidates, spec)
    assert alone.mask is not hosts.candidates and alone.passed == 4
    assert hosts.candidates.tolist() == [True] * 4
    # rerun: a filter over every host (one that reads the group) that
    # gives back what it was given keeps that mask and its count.
    whole = GivesBack()
    again = handler.rerun([no_b, whole], hosts, result.mask, spec, [0], 1,
                          whole=[whole], count=3)
    assert again.mask is result.mask and whole.given[-1] is result.mask
    assert again.steps == [('Recorder', 3, 3), ('GivesBack', 3, 3)]


def test_a_stretch_given_after_the_first_filter_is_counted_again(
        monkeypatch):
    """A filter given a stretch of the table (the rows outside which it
    passes none) that gives it back has removed the hosts outside: they
    are counted, not the count before kept."""
    monkeypatch.setattr(filters, 'STRETCH_MIN_ROWS', 0)
    hosts = _table(('a', 'b', 'c', 'd', 'e', 'f'))
    handler = filters.HostFilterHandler()
    spec = fakes.spec()
    zone = GivesBack(zone=(2, 4))
    result = handler.run_filters([Recorder('bcdef'), zone], hosts,
                                 hosts.candidates, spec, stretch=True)
    assert len(zone.given[0]) == 2
    assert result.steps == [('Recorder', 6, 5), ('GivesBack', 5, 2)]
    assert result.passed == 2
    assert _names(hosts, result.mask) == ['c', 'd']

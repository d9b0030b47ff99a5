"""The filter scheduler filters and weighs a zone's stretch of the host
table (scheduler.host_cache.Stretch) with the answers of the whole
table: the same hosts, alternates and explanations, stretched or not."""

import random

import pytest

from scheduler import exception
from scheduler import filters
from scheduler import host_cache
from scheduler.drivers import filter_scheduler
from scheduler.drivers import ranking
from tests.unit.scheduler import fakes

ZONES = ('az1', 'az2', 'az3')


@pytest.fixture
def zoned(cloud, config):
    """Three zones of 12 nodes each and 6 nodes in none, of varied sizes
    and usage, some disabled."""
    config.config(host_subset_size=1, group='filter_scheduler')
    rng = random.Random(7)
    members = {zone: [] for zone in ZONES}
    for number in range(42):
        host = 'n%02d' % number
        cloud.add_node(host, vcpus=rng.choice([4, 8, 16]),
                       memory_mb=rng.choice([2048, 8192, 32768]),
                       local_gb=rng.choice([20, 200, 1000]))
        if number < 36:
            members[ZONES[number % 3]].append(host)
        if number % 11 == 5:
            cloud.disable(host)
    for zone, hosts in members.items():
        cloud.aggregate('rack-' + zone, hosts, availability_zone=zone)
    return cloud


def _specs(rng, count):
    for _ in range(count):
        yield fakes.spec(vcpus=rng.choice([1, 2, 8, 32]),
                         memory_mb=rng.choice([512, 4096, 16384, 65536]),
                         root_gb=rng.choice([0, 10, 100]),
                         availability_zone=rng.choice((None,) + ZONES),
                         num_instances=rng.choice([1, 1, 2, 4]))


def _answer(driver, spec):
    driver.tie_breaks = ranking.TieBreaks(random.Random(3))
    try:
        selections = driver.select_destinations(None, spec,
                                                return_alternates=True)
    except exception.NoValidHost as error:
        return 'no valid host', str(error)
    return [[(s.service_host, s.nodename) for s in alternatives]
            for alternatives in selections]


def test_a_zone_is_filtered_and_weighed_on_its_stretch_alike(
        zoned, make_driver, monkeypatch):
    driver = make_driver(filter_scheduler.FilterScheduler)
    made = []

    class Counted(host_cache.Stretch):
        def __init__(self, *args):
            super().__init__(*args)
            made.append((self.lo, self.hi))
    monkeypatch.setattr(filters.host_cache, 'Stretch', Counted)
    rng = random.Random(11)
    for spec in _specs(rng, 40):
        monkeypatch.setattr(filters, 'STRETCH_MIN_ROWS', 10 ** 9)
        whole = _answer(driver, spec)
        assert not made
        monkeypatch.setattr(filters, 'STRETCH_MIN_ROWS', 0)
        stretched = _answer(driver, spec)
        assert stretched == whole, spec.availability_zone
        if spec.availability_zone is not None and whole[0] != (
                'no valid host'):
            # A zone's rows are one stretch of the table built by zone:
            # a third of it at most.
            assert made
            lo, hi = made[-1]
            assert (hi - lo) * 3 <= 42
        made.clear()
    # Later instances ranked from the stretch's weights, kept in the
    # table's rows.
    assert driver.stats.get('later_instances_ranked_again', 0) > 0


def test_a_filter_of_its_own_with_a_batch_path_keeps_the_table_whole(
        zoned, make_driver, monkeypatch, config):
    """A filter that is not Gantt's and reads the table its own way is
    not given a stretch unless it says it may."""
    seen = []

    class Watching(filters.BaseHostFilter):
        def host_passes(self, host_state, spec):
            return True

        def filter_all(self, host_table, mask, spec):
            seen.append(type(host_table).__name__)
            return mask
    class Stretching(Watching):
        reads_stretches = True
    driver = make_driver(filter_scheduler.FilterScheduler)
    monkeypatch.setattr(filters, 'STRETCH_MIN_ROWS', 0)
    enabled, weighers = driver._plugins
    spec = fakes.spec(availability_zone='az2')
    for kind in (Watching, Stretching):
        driver._plugins = (list(enabled) + [kind()], weighers)
        driver.select_destinations(None, spec)
    assert seen == ['HostTable', 'Stretch']

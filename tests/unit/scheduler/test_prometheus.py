"""The metrics the scheduler and conductor record, read from this
process's registry after builds through the real conductor, scheduler and
computes (in-process cluster, fake:// transport, SQLite).

The metric objects are the process's: each test reads how much a value
grew during it, never its absolute value.
"""

import os
import threading

import prometheus_client
import pytest

from scheduler import prometheus
from tests.unit import inprocess

REGISTRY = prometheus_client.REGISTRY


def value(name, *labels):
    return REGISTRY.get_sample_value(name, dict(labels)) or 0.0


def snapshot(*samples):
    return {sample: value(*sample) for sample in samples}


def grown(before):
    return {sample: value(*sample) - old
            for sample, old in before.items()}


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


REQUESTS = ('gantt_scheduler_requests_total',)
INSTANCES = ('gantt_scheduler_instances_total',)
CLAIMS = ('gantt_scheduler_claims_total',)
TOTAL = ('gantt_scheduler_select_destinations_seconds_count',
         ('phase', 'total'))
FILTER = ('gantt_scheduler_select_destinations_seconds_count',
          ('phase', 'filter'))
CLAIM_PHASE = ('gantt_scheduler_select_destinations_seconds_count',
               ('phase', 'claim'))
NO_ROOM = ('gantt_scheduler_no_valid_host_total', ('last_filter', 'RamFilter'))
NVH_ERRORS = ('gantt_rpc_errors_total', ('method', 'select_destinations'),
              ('error', 'NoValidHost'))
SCHEDULED = ('gantt_conductor_builds_total', ('outcome', 'scheduled'))
NO_HOST = ('gantt_conductor_builds_total', ('outcome', 'no_valid_host'))
IN_FLIGHT = ('gantt_scheduler_requests_in_flight',)
HOSTS = ('gantt_host_cache_hosts', ('cell', 'default'))
CELL_UP = ('gantt_host_cache_cell_up', ('cell', 'default'))


def test_builds_and_a_request_that_fits_nowhere_are_counted(cluster_config):
    with inprocess.Cluster({'h1': {'vcpus': 8, 'memory_mb': 4096,
                                   'local_gb': 100},
                            'h2': {'vcpus': 8, 'memory_mb': 4096,
                                   'local_gb': 100}}) as cluster:
        before = snapshot(REQUESTS, INSTANCES, CLAIMS, TOTAL, FILTER,
                          CLAIM_PHASE, NO_ROOM, NVH_ERRORS, SCHEDULED,
                          NO_HOST)
        placed = cluster.boot(vcpus=1, memory_mb=512, root_gb=1, count=3)
        cluster.wait_built(placed)
        too_big = cluster.boot(vcpus=1, memory_mb=8192, root_gb=1)
        rows = cluster.wait_built(too_big)
        assert rows[too_big[0]].vm_state == 'error'
        growth = grown(before)
        assert value(*IN_FLIGHT) == 0
        # Without cells, every host is in the cell called default.
        assert value(*HOSTS) == 2
        assert value(*CELL_UP) == 1
    assert growth == {
        REQUESTS: 2, INSTANCES: 3, CLAIMS: 3,
        # Every request is timed, in each phase it reached.
        TOTAL: 2, FILTER: 2, CLAIM_PHASE: 2,
        NO_ROOM: 1, NVH_ERRORS: 1,
        SCHEDULED: 3, NO_HOST: 1}


class _Step:
    def __init__(self, name, before, after):
        self.name, self.before, self.after = name, before, after


class _Result:
    def __init__(self, *steps):
        self.steps = [_Step(*step) for step in steps]


@pytest.mark.parametrize('steps, claims_failed, expected', [
    ([('ComputeFilter', 5, 5), ('RamFilter', 5, 0)], False, 'RamFilter'),
    # Later steps that saw no host do not take the blame.
    ([('AvailabilityZoneFilter', 5, 0), ('RamFilter', 0, 0)], False,
     'AvailabilityZoneFilter'),
    ([], False, 'none'),
    ([('RamFilter', 5, 3)], True, 'claims'),
])
def test_the_last_filter_is_the_one_that_removed_the_last_host(
        steps, claims_failed, expected):
    from scheduler.drivers import filter_scheduler

    assert filter_scheduler._last_filter(_Result(*steps),
                                         claims_failed) == expected


def test_without_a_port_nothing_is_served(config, monkeypatch):
    from prometheus_client import values

    monkeypatch.delenv(prometheus.ENV_DIRECTORY, raising=False)
    value_class = values.ValueClass
    threads = set(threading.enumerate())
    for port in (None, 0):
        config.config(prometheus_port=port, group='metrics')
        assert prometheus.setup('gantt-test') is None
    # No server thread, no multiprocess directory, values kept in memory.
    assert set(threading.enumerate()) <= threads
    assert prometheus.ENV_DIRECTORY not in os.environ
    assert values.ValueClass is value_class


def test_labelled_records_go_to_their_own_series_each_time():
    # The children of labelled metrics are looked up once per value and
    # kept: every later record still lands in the series of its label.
    ahead = ('gantt_scheduler_driver_events_total',
             ('event', 'test_ranked_ahead'))
    other = ('gantt_scheduler_driver_events_total', ('event', 'test_other'))
    weigh = ('gantt_scheduler_select_destinations_seconds_sum',
             ('phase', 'weigh'))
    total = ('gantt_scheduler_select_destinations_seconds_count',
             ('phase', 'total'))
    before = snapshot(ahead, other, weigh, total)
    for _ in range(3):
        prometheus.count('test_ranked_ahead')
        prometheus.request_timed({'weigh': 0.25}, 1.0)
    prometheus.count('test_other', 2)
    assert grown(before) == {ahead: 3, other: 2, weigh: 0.75, total: 3}

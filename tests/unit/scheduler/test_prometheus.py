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


@pytest.fixture
def daemon_metrics(monkeypatch):
    """``use(binary)``: this process records as ``binary``'s would, into
    a registry of its own, which it returns."""
    def use(binary):
        registry = prometheus_client.CollectorRegistry()
        monkeypatch.setattr(prometheus, '_metrics',
                            prometheus._Metrics(binary, registry))
        return registry
    return use


def record_everything():
    """Every recording function, once."""
    prometheus.count('requests')
    prometheus.count('test_event')
    prometheus.no_valid_host('RamFilter')
    prometheus.request_timed({'filter': 0.01}, 0.02)
    prometheus.rpc_error('select_destinations', ValueError())
    with prometheus.in_flight():
        pass
    prometheus.cache_refreshed(0.1, {'default': 2}, {'default': True}, 5.0)
    prometheus.cache_refresh_failed()
    prometheus.build_ended('scheduled')
    prometheus.rescheduled()
    prometheus.reaped('stray_claim')
    prometheus.notification('sent')
    prometheus.broker_up(True)
    prometheus.database_up(True)


def declared_names(registry):
    return {family.name for family in registry.collect()}


@pytest.mark.parametrize('binary', prometheus.DAEMONS)
def test_a_daemon_records_only_the_metrics_it_owns(daemon_metrics, binary):
    registry = daemon_metrics(binary)
    record_everything()
    owned = {name for name, owners in prometheus.OWNERS.items()
             if binary in owners}
    assert declared_names(registry) == owned - {
        'gantt_build_info', 'process', 'python_info'}


def test_every_metric_recorded_has_its_owners_in_the_table(daemon_metrics):
    # A process that serves nothing (the demo, gantt-manage) records all.
    registry = daemon_metrics(None)
    record_everything()
    assert declared_names(registry) <= set(prometheus.OWNERS)
    assert 'gantt_host_cache_hosts' in declared_names(registry)


def test_the_conductor_exports_none_of_the_schedulers(daemon_metrics):
    registry = daemon_metrics(prometheus.CONDUCTOR)
    record_everything()
    names = {sample.name for family in registry.collect()
             for sample in family.samples}
    assert not [name for name in names
                if name.startswith(('gantt_scheduler', 'gantt_host_cache',
                                    'gantt_rpc'))]
    assert registry.get_sample_value(
        'gantt_conductor_builds_total', {'outcome': 'scheduled'}) == 1


def test_a_value_not_known_yet_is_absent(daemon_metrics):
    registry = daemon_metrics(prometheus.SCHEDULER)
    refreshed_at = 'gantt_host_cache_last_refresh_timestamp_seconds'
    for name in (refreshed_at, 'gantt_broker_up', 'gantt_database_up'):
        assert registry.get_sample_value(name) is None, name
    # Labelled: nothing before the first label.
    assert registry.get_sample_value('gantt_host_cache_hosts',
                                     {'cell': 'default'}) is None
    # Unlabelled counters and the requests in flight are known: 0.
    assert registry.get_sample_value('gantt_scheduler_requests_total') == 0
    assert registry.get_sample_value(
        'gantt_scheduler_requests_in_flight') == 0

    prometheus.cache_refreshed(0.1, {'default': 2}, {'default': True},
                               1234.5)
    prometheus.broker_up(True)
    prometheus.database_up(False)
    assert registry.get_sample_value(refreshed_at) == 1234.5
    assert registry.get_sample_value('gantt_broker_up') == 1
    assert registry.get_sample_value('gantt_database_up') == 0
    prometheus.database_up(True)
    assert registry.get_sample_value('gantt_database_up') == 1


def test_the_computes_have_no_database_figure(daemon_metrics):
    registry = daemon_metrics(prometheus.COMPUTE)
    prometheus.database_up(True)
    prometheus.broker_up(False)
    assert registry.get_sample_value('gantt_database_up') is None
    assert registry.get_sample_value('gantt_broker_up') == 0

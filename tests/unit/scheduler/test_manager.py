"""SchedulerManager: payload checks, legacy answers, discovery, reloads.

The manager runs with the real filter scheduler over the test's SQLite
database; only the RPC layer is skipped (its own tests are functional).
"""

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claim_checks
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import models
from scheduler import exception
from scheduler import manager
from tests.unit.scheduler import fakes

UUID_1 = '0b6b7c5e-8a0e-4b3a-9d5f-2d0c6f1e7a11'
UUID_2 = '0b6b7c5e-8a0e-4b3a-9d5f-2d0c6f1e7a12'


@pytest.fixture
def scheduler_manager(cloud):
    cloud.add_node('h1', vcpus=8, memory_mb=8192, local_gb=100)
    cloud.add_node('h2', vcpus=4, memory_mb=4096, local_gb=100)
    mgr = manager.SchedulerManager()
    mgr.init_host()
    yield mgr
    mgr.cleanup_host()


def _consumers():
    with db_api.reader() as session:
        return [row.consumer_uuid for row in session.execute(
            sa.select(models.Allocation.consumer_uuid))]


def _expected_error(method, **kwargs):
    """The exception an endpoint method raised as an expected one (what
    oslo.messaging sends back as itself, without a traceback log)."""
    with pytest.raises(messaging.ExpectedException) as info:
        method(_ctxt(), **kwargs)
    return info.value.exc_info[1]


def _ctxt():
    return gantt_context.get_admin_context()


@pytest.mark.parametrize('kwargs, words', [
    ({'spec_obj': 'not a spec'}, 'must be a RequestSpec'),
    ({'spec_obj': fakes.spec(), 'instance_uuids': ['nope']},
     'instance_uuids[0] must be a UUID string'),
    ({'spec_obj': fakes.spec(), 'instance_uuids': 'abc'},
     'instance_uuids must be a list'),
    ({'spec_obj': fakes.spec(num_instances=2),
      'instance_uuids': [UUID_1]}, '1 instance_uuids given'),
    ({'spec_obj': fakes.spec(vcpus=-1), 'instance_uuids': [UUID_1]},
     'flavor.vcpus must be at least 1'),
    ({'spec_obj': fakes.spec(vcpus=0), 'instance_uuids': [UUID_1]},
     'flavor.vcpus must be at least 1, not 0'),
    ({'spec_obj': fakes.spec(memory_mb=0), 'instance_uuids': [UUID_1]},
     'flavor.memory_mb must be at least 1, not 0'),
    ({'request_spec': {'num_instances': 1}}, 'no instance_type'),
    ({'request_spec': 'x', 'filter_properties': {}}, 'must be a dict'),
])
def test_malformed_payloads_are_refused_and_claim_nothing(
        scheduler_manager, cloud, kwargs, words):
    error = _expected_error(scheduler_manager.select_destinations, **kwargs)
    assert isinstance(error, exception.InvalidRequest)
    assert words in str(error)
    assert _consumers() == []


def test_legacy_call_answers_dicts_and_claims(scheduler_manager, cloud):
    spec = fakes.spec(vcpus=1, memory_mb=512, num_instances=2)
    dests = scheduler_manager.select_destinations(
        _ctxt(), request_spec=spec.to_legacy_request_spec_dict(
            [UUID_1, UUID_2]),
        filter_properties=spec.to_legacy_filter_properties_dict())
    assert [set(d) for d in dests] == [{'host', 'nodename', 'limits'}] * 2
    assert {d['host'] for d in dests} <= {'h1', 'h2'}
    assert sorted(_consumers()) == \
        [UUID_1, UUID_2]


def test_object_call_answers_selections(scheduler_manager, cloud):
    selections = scheduler_manager.select_destinations(
        _ctxt(), spec_obj=fakes.spec(vcpus=1, memory_mb=512),
        instance_uuids=[UUID_1], return_objects=True,
        return_alternates=True)
    assert len(selections) == 1
    assert selections[0][0].claimed
    assert [s.service_host for s in selections[0]] == ['h1', 'h2']


def test_no_valid_host_names_the_filter(scheduler_manager, cloud):
    error = _expected_error(
        scheduler_manager.select_destinations,
        spec_obj=fakes.spec(memory_mb=64 * 1024), instance_uuids=[UUID_1],
        return_objects=True)
    assert isinstance(error, exception.NoValidHost)
    assert 'RamFilter' in str(error)
    assert _consumers() == []


def test_periodic_spacing_is_read_when_tasks_are_built(database, config):
    config.config(discover_hosts_in_cells_interval=-1, group='scheduler')
    mgr = manager.SchedulerManager()
    config.config(discover_hosts_in_cells_interval=7, group='scheduler')
    tasks = {task.name: task for task in mgr.periodic_tasks()}
    assert tasks['_discover_hosts_in_cells'].spacing == 7
    assert tasks['_discover_hosts_in_cells'].run_immediately


def test_discovery_maps_new_nodes_once(cloud):
    cloud.add_node('unmapped', mapped=False)
    mapped = manager.discover_hosts()
    assert [node.host for node in mapped] == ['unmapped']
    assert manager.discover_hosts() == []
    with db_api.reader() as session:
        assert all(n.mapped for n in db_compute_nodes.get_nodes(session))


def test_init_host_rereads_enabled_filters(cloud, config):
    mgr = manager.SchedulerManager()
    config.config(enabled_filters=['AllHostsFilter'],
                  group='filter_scheduler')
    mgr.init_host()
    try:
        assert [type(f).__name__ for f in mgr.driver.enabled_filters] == \
            ['AllHostsFilter']
    finally:
        mgr.cleanup_host()


def test_repeated_request_replaces_the_earlier_claim(scheduler_manager):
    """A conductor that timed out asks again with the same instance; the
    answer to the lost copy must not leave a second claim behind."""
    for _ in range(2):
        scheduler_manager.select_destinations(
            _ctxt(), spec_obj=fakes.spec(vcpus=2, memory_mb=1024),
            instance_uuids=[UUID_1], return_objects=True)
    assert _consumers() == [UUID_1]
    with db_api.reader() as session:
        nodes = db_compute_nodes.get_nodes(session)
        assert sum(n.vcpus_used for n in nodes) == 2
        assert sum(n.memory_mb_used for n in nodes) == 1024
        assert claim_checks.find_inconsistent_nodes(session) == []


def _stats_lines(caplog):
    return [record.getMessage() for record in caplog.records
            if record.getMessage().startswith('Scheduler stats: ')]


def _parsed(line):
    return dict((key, int(value)) for key, value in (
        pair.split('=') for pair in line[len('Scheduler stats: '):].split()))


def test_stats_line_counts_lost_claims_and_no_valid_host(
        cloud, config, caplog):
    """The periodic line appears only after something changed; the line
    at stop always does; both parse to the driver's figures."""
    config.config(host_state_refresh_interval=3600, group='scheduler')
    # No ranking ahead: its thread counts at its own pace.
    config.config(rank_ahead=False, group='filter_scheduler')
    cloud.add_node('best', vcpus=8, memory_mb=16384, local_gb=100,
                   ram_allocation_ratio=1.0)
    cloud.add_node('second', vcpus=8, memory_mb=8192, local_gb=100,
                   ram_allocation_ratio=1.0)
    mgr = manager.SchedulerManager()
    mgr.init_host()
    [task] = [task for task in mgr.periodic_tasks()
              if task.name == '_log_stats']
    caplog.set_level('INFO', logger='scheduler')
    try:
        task.func(_ctxt())
        assert _stats_lines(caplog) == []   # nothing happened yet

        # Another scheduler fills 'best' behind this one's cache: one
        # lost claim, then 'second'.
        cloud.take('best', (1, 16000, 0))
        mgr.select_destinations(_ctxt(), spec_obj=fakes.spec(
            vcpus=1, memory_mb=1024), instance_uuids=[UUID_1],
            return_objects=True)
        _expected_error(mgr.select_destinations,
                        spec_obj=fakes.spec(memory_mb=64 * 1024),
                        instance_uuids=[UUID_2], return_objects=True)
        assert (('Request for instance(s) %s retried 1 lost claim(s)'
                 % UUID_1) in caplog.messages)
        task.func(_ctxt())
        task.func(_ctxt())   # unchanged: no second line
    finally:
        mgr.cleanup_host()
    lines = _stats_lines(caplog)
    hosts = len(mgr.driver.host_manager.snapshot())
    assert lines[0] == ('Scheduler stats: requests=2 instances=1 claims=1 '
                        'claim_retries=1 group_conflicts=0 '
                        'claims_released=0 no_valid_host=1 '
                        'hosts[default]=%d' % hosts)
    # The line at stop repeats the totals although nothing changed.
    assert lines[1:] == lines[:1]
    parsed = _parsed(lines[-1])
    assert parsed.pop('hosts[default]') == hosts
    assert parsed == mgr.driver.stats


def test_a_database_away_past_the_budget_is_a_clear_error(
        scheduler_manager, cloud, config):
    # The host cache is full; then the database goes away for good.
    config.config(connection='postgresql+psycopg2://gantt:s3cret@'
                             '127.0.0.1:9/gantt', max_retries=0,
                  db_max_retries=1, db_retry_interval=0, group='database')
    db_api.dispose_engine()
    try:
        error = _expected_error(
            scheduler_manager.select_destinations,
            spec_obj=fakes.spec(vcpus=1, memory_mb=512),
            instance_uuids=[UUID_1], return_objects=True)
    finally:
        db_api.dispose_engine()
    assert isinstance(error, exception.DatabaseUnavailable)
    assert '127.0.0.1:9' in str(error) and 's3cret' not in str(error)

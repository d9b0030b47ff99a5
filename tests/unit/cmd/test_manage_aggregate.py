"""gantt-manage aggregate ...: SQL, output, and the fanout to schedulers.

Two fake schedulers listen on the ``fake://`` transport (topic
``scheduler``, two servers) and record the casts they receive, so that a
test sees the fanout reach every one of them.
"""

import queue

import oslo_messaging as messaging
from oslo_messaging import conffixture
import pytest

from scheduler import conf
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import services as db_services
from scheduler.objects import aggregate as aggregate_obj
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit.cmd import output

CONF = conf.CONF


class FakeScheduler:
    target = messaging.Target(version=scheduler_rpcapi.RPC_API_VERSION)

    def __init__(self):
        self.received = queue.Queue()

    @rpc.expose
    def update_aggregates(self, ctxt, aggregates):
        self.received.put(('update_aggregates', aggregates))

    @rpc.expose
    def delete_aggregate(self, ctxt, aggregate):
        self.received.put(('delete_aggregate', aggregate))


@pytest.fixture
def schedulers(request, config):
    """Fake schedulers: one, or as many as an indirect parameter says
    (stopping a fake:// server takes a second)."""
    count = getattr(request, 'param', 1)
    messaging_conf = conffixture.ConfFixture(CONF)
    messaging_conf.setUp()
    messaging_conf.transport_url = 'fake://'
    rpc.init(CONF)
    fakes = [FakeScheduler() for _ in range(count)]
    servers = [rpc.get_server(messaging.Target(
        topic=scheduler_rpcapi.RPC_TOPIC, server='sched%d' % index), [fake])
        for index, fake in enumerate(fakes)]
    for server in servers:
        server.start()
    try:
        yield fakes
    finally:
        for server in servers:
            server.stop()
        for server in servers:
            server.wait()
        rpc.cleanup()
        messaging_conf.cleanUp()


def _computes(*hosts):
    with db_api.writer() as session:
        for host in hosts:
            db_services.report_alive(session, host, 'gantt-compute',
                                     'compute')


def _fanout(schedulers):
    """What every fake scheduler received next; they must agree."""
    received = [fake.received.get(timeout=10) for fake in schedulers]
    assert all(item[0] == received[0][0] for item in received)
    return received[0]


def _fields(out):
    return {row[0]: row[1] if len(row) > 1 else '' for row in
            output.table(out)}


@pytest.mark.parametrize('schedulers', [2], indirect=True)
def test_create_add_host_set_metadata_and_every_scheduler_hears(
        database, schedulers, run):
    _computes('c1', 'c2')
    created = run('aggregate', 'create', 'rack1', '--availability-zone',
                  'az1', '--metadata', 'ram_weight_multiplier=2')
    assert created.code == 0, created.err
    fields = _fields(created.out)
    assert (fields['name'], fields['availability_zone']) == ('rack1', 'az1')
    method, [agg] = _fanout(schedulers)
    assert method == 'update_aggregates'
    assert isinstance(agg, aggregate_obj.Aggregate)
    assert agg.metadata == {'availability_zone': 'az1',
                            'ram_weight_multiplier': '2'}

    assert run('aggregate', 'add-host', 'rack1', 'c1').code == 0
    assert run('aggregate', 'add-host', agg.uuid, 'c2').code == 0
    _fanout(schedulers)
    method, [agg] = _fanout(schedulers)
    assert agg.hosts == ['c1', 'c2']

    changed = run('aggregate', 'set-metadata', str(agg.id), 'foo=bar',
                  'ram_weight_multiplier')
    assert changed.code == 0, changed.err
    method, [agg] = _fanout(schedulers)
    assert agg.metadata == {'availability_zone': 'az1', 'foo': 'bar'}
    with db_api.reader() as session:
        stored = db_aggregates.get(session, 'rack1')
    assert stored.metadata == agg.metadata
    assert stored.hosts == {'c1', 'c2'}


def test_list_show_remove_host_and_delete(database, schedulers, run):
    _computes('c1')
    run('aggregate', 'create', 'rack1', '--availability-zone', 'az1')
    run('aggregate', 'add-host', 'rack1', 'c1')
    run('aggregate', 'create', 'empty', '--metadata', 'k=v')
    listed = run('aggregate', 'list')
    assert listed.code == 0
    assert output.table(listed.out) == [['1', 'rack1', 'az1', 'c1'],
                                        ['2', 'empty', '-', 'k=v']]
    shown = run('aggregate', 'show', 'rack1')
    assert _fields(shown.out)['hosts'] == 'c1'

    refused = run('aggregate', 'delete', 'rack1')
    assert refused.code == 1
    assert 'still has hosts (c1)' in refused.err

    assert run('aggregate', 'remove-host', 'rack1', 'c1').code == 0
    deleted = run('aggregate', 'delete', 'rack1')
    assert deleted.code == 0, deleted.err
    assert deleted.out == 'Deleted aggregate rack1.\n'
    seen = [_fanout(schedulers) for _ in range(5)]
    assert [method for method, _ in seen] == ['update_aggregates'] * 4 + [
        'delete_aggregate']
    assert seen[-1][1].name == 'rack1'
    assert output.table(run('aggregate', 'list').out) == [
        ['2', 'empty', '-', 'k=v']]


@pytest.mark.parametrize('args, words', [
    (('aggregate', 'show', 'nowhere'), 'Aggregate nowhere could not be found'),
    (('aggregate', 'add-host', 'rack1', 'ghost'),
     'Compute host ghost could not be found'),
    (('aggregate', 'remove-host', 'rack1', 'c2'), 'Host c2 is not in'),
    (('aggregate', 'create', 'rack1'), 'named rack1 already exists'),
    (('aggregate', 'add-host', 'rack2', 'c1'), 'cannot be in availability '
     'zone az2'),
])
def test_errors_are_one_line_and_change_nothing(database, schedulers, run,
                                                args, words):
    _computes('c1', 'c2')
    run('aggregate', 'create', 'rack1', '--availability-zone', 'az1')
    run('aggregate', 'add-host', 'rack1', 'c1')
    run('aggregate', 'create', 'rack2', '--availability-zone', 'az2')
    for _ in range(3):
        _fanout(schedulers)
    result = run(*args)
    assert result.code == 1
    assert words in result.err
    assert result.err.count('\n') == 1
    assert all(fake.received.empty() for fake in schedulers)


def test_capped_client_changes_sql_and_casts_nothing(database, schedulers,
                                                     run, conf_file):
    conf_file.write_text('[upgrade_levels]\nscheduler = 1.1\n')
    result = run('aggregate', 'create', 'rack1')
    assert result.code == 0, result.err
    with db_api.reader() as session:
        assert db_aggregates.get(session, 'rack1').name == 'rack1'
    with pytest.raises(queue.Empty):
        schedulers[0].received.get(timeout=0.5)


def test_unreachable_broker_warns_but_succeeds(database, run, conf_file):
    conf_file.write_text('[DEFAULT]\ntransport_url = '
                         'rabbit://u:secret@127.0.0.1:1/\n')
    result = run('aggregate', 'create', 'rack1')
    assert result.code == 0
    assert 'could not tell the schedulers' in result.err
    assert 'secret' not in result.err
    with db_api.reader() as session:
        assert db_aggregates.get(session, 'rack1').name == 'rack1'

"""The README's demo commands: over the real RabbitMQ (a virtual host of
the test's own) every server boots, a clean run prints no warning, and
the demo leaves no queue nor exchange behind, whether it ends or is
interrupted; on a real PostgreSQL or MariaDB server the demo works in a
database of its own and drops it."""

import os
import signal
import subprocess
import time

import pytest
import sqlalchemy as sa

from tests.fixtures import databases
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional


def _queues(vhost):
    listed = subprocess.run(
        ['rabbitmqctl', '-q', 'list_queues', '-p', vhost, 'name'],
        capture_output=True, text=True, check=True, timeout=60).stdout
    return sorted(set(listed.split()) - {'name'})


def _exchanges(vhost):
    """The exchanges of ``vhost`` besides RabbitMQ's own."""
    listed = subprocess.run(
        ['rabbitmqctl', '-q', 'list_exchanges', '-p', vhost, 'name'],
        capture_output=True, text=True, check=True, timeout=60).stdout
    return sorted(name for name in set(listed.split()) - {'name'}
                  if not name.startswith('amq.'))


def _wait_for(predicate, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, 'timed out waiting for ' + what
        time.sleep(0.2)


def test_the_demo_over_rabbitmq_boots_everything_and_warns_of_nothing(
        tmp_path):
    # Two connections per daemon (oslo.messaging's least), as each of
    # the demo's daemons would have in a process of its own: the pool
    # they share in the demo's process is as large as theirs together,
    # and none waits for a connection ("Connection pool limit exceeded",
    # which a slow machine once caused with the default of 30 shared by
    # 52 services).
    config_file = tmp_path / 'pool.conf'
    config_file.write_text('[oslo_messaging_rabbit]\n'
                           'rpc_conn_pool_size = 2\n')
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        assert _queues(cluster.vhost) == []
        result = subprocess.run(
            [cluster_mod._script('gantt-demo'), '--config-file',
             str(config_file), '--transport-url', cluster.transport_url],
            capture_output=True, text=True, env=cluster.env(), timeout=240)
        assert result.returncode == 0, result.stderr[-3000:]
        lines = result.stdout.strip().splitlines()
        assert lines[-2].endswith(': 100 active'), result.stdout[-500:]
        assert lines[-1] == ('The demo removed its queues and its exchange '
                             'from rabbit://guest:***@127.0.0.1:5672/%s.'
                             % cluster.vhost)
        # Its 50 hosts', the topics', the reply and fanout queues (which
        # expire a second after it): none is left.
        _wait_for(lambda: _queues(cluster.vhost) == [], 'the queues to go',
                  timeout=10)
        assert _exchanges(cluster.vhost) == []
    warnings = [line for line in result.stderr.splitlines()
                if ' WARNING ' in line or ' ERROR ' in line]
    assert warnings == []


def test_a_terminated_demo_removes_its_queues_too():
    """Terminated (SIGTERM) while it boots: the same cleaning."""
    with cluster_mod.vhost() as url:
        vhost = url.rsplit('/', 1)[1]
        demo = subprocess.Popen(
            [cluster_mod._script('gantt-demo'), '--hosts', '3', '--servers',
             '100000', '--transport-url', url], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=_env())
        try:
            _wait_for(lambda: 'scheduler.demo-scheduler' in _queues(vhost),
                      'the demo to serve', timeout=120)
            assert len(_queues(vhost)) >= 8
            demo.send_signal(signal.SIGTERM)
            out, err = demo.communicate(timeout=120)
        finally:
            if demo.poll() is None:
                demo.kill()
                # Its pipes closed here (left open, a later test would
                # report them).
                demo.communicate()
        assert demo.returncode == 128 + signal.SIGTERM
        assert 'gantt-demo: terminated (signal 15)' in err
        assert out.splitlines()[-1].startswith('The demo removed its queues')
        _wait_for(lambda: _queues(vhost) == [], 'the queues to go',
                  timeout=10)
        assert _exchanges(vhost) == []


@pytest.mark.parametrize('backend', ['postgresql', 'mariadb'])
def test_the_demo_on_a_real_server_runs_in_a_database_of_its_own(
        tmp_path, backend):
    """Twice on the same server URL: each run boots its own servers only,
    in a database it makes and drops; the named database is untouched."""
    url = databases.ADMIN_URLS[backend]
    before = _databases(url)
    for _ in range(2):
        result = subprocess.run(
            [cluster_mod._script('gantt-demo'), '--hosts', '3',
             '--servers', '6', '--database-connection', url],
            capture_output=True, text=True, timeout=240,
            env=_env())
        assert result.returncode == 0, result.stderr[-3000:]
        lines = result.stdout.strip().splitlines()
        assert lines[-2].endswith(': 6 active'), result.stdout[-500:]
        assert lines[-1].startswith('The demo ran in a database of its '
                                    'own, gantt_demo_')
        assert lines[-1].endswith('; it is dropped.')
        # Six servers in its table, not twelve: nothing of the first run.
        assert sum(1 for line in lines if ' active ' in line) == 6
    assert _databases(url) == before
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        assert not sa.inspect(engine).has_table('alembic_version')
    finally:
        engine.dispose()


def _env():
    """This checkout's code, on native threads."""
    env = dict(os.environ)
    env.pop('GANTT_USE_EVENTLET', None)
    env['PYTHONPATH'] = os.pathsep.join(
        [cluster_mod.SOURCE_ROOT] + [path for path in env.get(
            'PYTHONPATH', '').split(os.pathsep) if path])
    return env


def _databases(url):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    query = ('SELECT datname FROM pg_database' if url.startswith('postgres')
             else 'SHOW DATABASES')
    try:
        with engine.connect() as connection:
            return sorted(row[0] for row in connection.exec_driver_sql(query)
                          if row[0].startswith('gantt_demo_'))
    finally:
        engine.dispose()


def test_queues_another_consumer_uses_are_left():
    """What the demo removes on a virtual host where something else
    consumes from a topic queue, holds messages in one, or binds a queue
    to the exchange: only what nobody else uses goes."""
    import kombu

    from scheduler.cmd import demo_broker

    with cluster_mod.vhost() as url:
        vhost = url.rsplit('/', 1)[1]
        exchange = kombu.Exchange('gantt', type='topic')
        with kombu.Connection(url.replace('rabbit://', 'amqp://')) as conn:
            channel = conn.channel()
            for name in ('compute', 'compute.demo-host-001', 'conductor',
                         'conductor.demo-conductor', 'scheduler',
                         'scheduler.demo-scheduler'):
                kombu.Queue(name, exchange, routing_key=name)(
                    channel).declare()
            # A real compute consumes from "compute"; "conductor" holds a
            # message for a conductor that is down.
            consumer = kombu.Consumer(channel, [kombu.Queue(
                'compute', exchange, routing_key='compute')])
            consumer.consume()
            kombu.Producer(channel, exchange).publish(
                {'x': 1}, routing_key='conductor')
            _wait_for(lambda: len(_queues(vhost)) == 6, 'the queues')

            left = demo_broker.remove(url, [
                ('demo-host-001', 'compute'),
                ('demo-conductor', 'conductor'),
                ('demo-scheduler', 'scheduler')], 'gantt')

            assert left == ['compute', 'conductor', 'gantt']
            assert _queues(vhost) == ['compute', 'conductor']
            assert _exchanges(vhost) == ['gantt']
            consumer.cancel()
    assert demo_broker.remove('fake://', [('h', 'compute')], 'gantt') is None

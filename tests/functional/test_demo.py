"""The README's demo commands: over the real RabbitMQ (a virtual host of
the test's own) every server boots and a clean run prints no warning; on
a real PostgreSQL or MariaDB server the demo works in a database of its
own and drops it."""

import os
import subprocess

import pytest
import sqlalchemy as sa

from tests.fixtures import databases
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional


def test_the_demo_over_rabbitmq_boots_everything_and_warns_of_nothing(
        tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        result = subprocess.run(
            [cluster_mod._script('gantt-demo'), '--transport-url',
             cluster.transport_url], capture_output=True, text=True,
            env=cluster.env(), timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1].endswith(
        ': 100 active'), result.stdout[-500:]
    warnings = [line for line in result.stderr.splitlines()
                if ' WARNING ' in line or ' ERROR ' in line]
    assert warnings == []


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

"""The throw-away PostgreSQL cluster of ``tests/fixtures/postgresql.py``.

It must start, serve, come back after a restart, and leave nothing behind
(not even in ``pg_lsclusters``); and it must refuse the shared ``main``
cluster.
"""

import os

import pytest
import sqlalchemy as sa

from tests.fixtures import postgresql

pytestmark = [pytest.mark.functional, pytest.mark.faults]


def _select_one(url):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool,
                              connect_args={'connect_timeout': 5})
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text('SELECT 1')).scalar()
    finally:
        engine.dispose()


def test_cluster_restarts_and_is_removed():
    with postgresql.PostgresCluster() as pg:
        assert pg.port != 5432
        assert pg.exists()
        url = pg.create_database()
        assert _select_one(url) == 1
        # The trust line is in this cluster's pg_hba.conf only.
        with open(os.path.join(pg.conf_dir, 'pg_hba.conf')) as hba:
            assert '127.0.0.1/32  trust' in hba.read()

        pg.stop()
        with pytest.raises(sa.exc.OperationalError):
            _select_one(url)
        pg.start()
        assert _select_one(url) == 1
        down = pg.restart(downtime=1, mode='immediate')
        assert down >= 1
        assert _select_one(url) == 1
    assert not pg.exists()
    assert not os.path.exists(pg.conf_dir)


def test_main_cluster_is_refused():
    with pytest.raises(ValueError):
        postgresql.PostgresCluster(name='main')

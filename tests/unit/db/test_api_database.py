"""The API database's sessions: their own engine options and retry
budget, from ``[api_database]``."""

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from tests.fixtures import databases


def _always_lost(calls):
    def write():
        calls.append(1)
        raise db_exc.DBConnectionError('lost')
    return write


def test_api_writes_retry_with_the_api_database_budget(api_database,
                                                       config):
    config.config(db_max_retries=2, db_retry_interval=0,
                  db_inc_retry_interval=False, group='api_database')
    config.config(db_max_retries=5, db_retry_interval=0,
                  db_inc_retry_interval=False, group='database')
    api_calls, cell_calls = [], []

    with pytest.raises(db_exc.DBConnectionError):
        db_api.retry_on_api_db_error(_always_lost(api_calls))()
    with pytest.raises(db_exc.DBConnectionError):
        db_api.retry_on_db_error(_always_lost(cell_calls))()

    assert (len(api_calls), len(cell_calls)) == (3, 6)


def test_without_api_database_api_writes_use_the_database_budget(database,
                                                                 config):
    config.config(db_max_retries=1, db_retry_interval=0,
                  db_inc_retry_interval=False, group='database')
    calls = []
    with pytest.raises(db_exc.DBConnectionError):
        db_api.retry_on_api_db_error(_always_lost(calls))()
    assert len(calls) == 2


def test_the_api_engine_takes_the_api_database_pool_options(config):
    with databases.cell_database('postgresql') as cell_url:
        api_url = databases.create_database('postgresql')
        try:
            config.config(connection=cell_url, max_pool_size=7,
                          group='database')
            config.config(connection=api_url, max_pool_size=3,
                          group='api_database')
            db_api.dispose_engine()

            assert db_api.api_engine().pool.size() == 3
            assert db_api.get_engine().pool.size() == 7
            assert db_api.api_engine().url.database == \
                sa.engine.make_url(api_url).database
        finally:
            db_api.dispose_engine()
            databases.drop_database(api_url)

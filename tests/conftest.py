"""Fixtures every test may use: clean config, and a real database.

``database`` gives a fresh SQLite file with the schema, with
``[database] connection`` pointing at it. Tests that must run on every
backend use ``any_database`` (see tests/fixtures/databases.py once present).
"""

import pytest
from oslo_config import fixture as config_fixture

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import objects

objects.register_all()


@pytest.fixture
def config():
    """oslo.config fixture: ``config.config(name=value, group=...)``;
    every override is undone after the test."""
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def database(tmp_path, config):
    """A fresh SQLite database with Gantt's schema."""
    url = 'sqlite:///%s' % (tmp_path / 'gantt.sqlite')
    config.config(connection=url, group='database')
    db_api.dispose_engine()
    models.Base.metadata.create_all(db_api.get_engine())
    yield url
    db_api.dispose_engine()

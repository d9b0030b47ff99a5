"""When a claim's commit reaches the disk (``[filter_scheduler]
build_claim_flush``), on PostgreSQL.

A trigger on ``allocations`` notes, inside each claim's own transaction,
the ``synchronous_commit`` that transaction commits with: what the claim
set for itself, seen from where PostgreSQL applies it.
"""

import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from tests.fixtures import databases
from tests.unit.db import test_claims

NOTE_FLUSH = """
CREATE TABLE claim_flush (seq serial, consumer text, setting text);
CREATE FUNCTION note_claim_flush() RETURNS trigger AS $$
BEGIN
    INSERT INTO claim_flush (consumer, setting)
        VALUES (NEW.consumer_uuid, current_setting('synchronous_commit'));
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER note_claim_flush AFTER INSERT ON allocations
    FOR EACH ROW EXECUTE FUNCTION note_claim_flush();
"""


def flush_of(consumer):
    """The synchronous_commit the consumer's claims committed with, in
    order."""
    with db_api.get_engine().connect() as connection:
        return [row[0] for row in connection.execute(
            sa.text('SELECT setting FROM claim_flush WHERE consumer = :c '
                    'ORDER BY seq'),
            {'c': consumer})]


@pytest.fixture(params=['psycopg2', 'psycopg'])
def noted(request, config):
    """A PostgreSQL database whose claims note their flush, through
    psycopg2 (one query string) or psycopg 3 (SQLAlchemy's execution)."""
    with databases.migrated_database('postgresql', config) as url:
        url = sa.engine.make_url(url).set(
            drivername='postgresql+' + request.param)
        config.config(connection=url.render_as_string(hide_password=False),
                      group='database')
        db_api.dispose_engine()
        assert db_api.get_engine().dialect.driver == request.param
        with db_api.get_engine().begin() as connection:
            connection.exec_driver_sql(NOTE_FLUSH)
        try:
            yield test_claims.make_node()
        finally:
            db_api.dispose_engine()


def claim(node, consumer, kept=None):
    return claims.claim_in_sql(node, consumer, claims.Resources(1, 512, 1),
                               refuse_settled=True, kept=kept)


def test_a_building_instance_s_claim_does_not_wait_for_the_disk(noted):
    building = test_claims.add_instance('building', 'scheduling')
    assert claim(noted, building) is True
    assert flush_of(building) == ['off']


@pytest.mark.parametrize('vm_state, task_state', [
    ('active', 'resize_prep'),          # a resize or cold migration
    ('stopped', 'rebuilding'),          # an evacuation
    ('shelved_offloaded', 'unshelving'),
])
def test_a_move_s_claim_waits_for_the_disk(noted, vm_state, task_state):
    moving = test_claims.add_instance(vm_state, task_state)
    assert claim(noted, moving) is True
    assert flush_of(moving) == ['on']


def test_a_move_s_claim_keeps_the_operator_s_setting(noted):
    """A database set to commit otherwise than ``on`` (here ``local``;
    ``remote_apply`` where standbys must have applied it) keeps that
    setting for the claims that wait."""
    engine = db_api.get_engine()
    with engine.connect() as connection:
        name = connection.exec_driver_sql(
            'SELECT current_database()').scalar()
        connection.exec_driver_sql(
            'ALTER DATABASE %s SET synchronous_commit = local' % name)
        connection.commit()
    db_api.dispose_engine()     # new sessions take the database's setting
    moving = test_claims.add_instance('active', 'resize_prep')
    building = test_claims.add_instance('building', 'scheduling')
    assert claim(noted, moving) is True
    assert claim(noted, building) is True
    assert flush_of(moving) == ['local']
    assert flush_of(building) == ['off']


def test_a_claim_for_an_instance_gantt_does_not_know_waits(noted):
    unknown = str(uuid.uuid4())
    assert claim(noted, unknown) is True
    assert flush_of(unknown) == ['on']


def test_with_immediate_every_claim_waits_for_the_disk(noted, config):
    config.config(build_claim_flush='immediate', group='filter_scheduler')
    building = test_claims.add_instance('building', 'scheduling')
    assert claim(noted, building) is True
    assert flush_of(building) == ['on']
    config.config(build_claim_flush='with_placement',
                  group='filter_scheduler')
    later = test_claims.add_instance('building', 'scheduling')
    assert claim(noted, later) is True
    assert flush_of(later) == ['off']


def test_a_replaced_claim_waits_for_the_disk(noted):
    # The consumer holds a claim already (the conductor asked again):
    # the full path replaces it, in a transaction that waits.
    other = test_claims.make_node('host2')
    building = test_claims.add_instance('building', 'scheduling')
    assert claim(noted, building) is True
    assert claim(other, building) is True
    assert flush_of(building) == ['off', 'on']


def test_the_connection_keeps_its_own_setting(noted):
    """The claim sets the setting for its transaction only: the kept
    connection (and the pool, once it is given back) commits the next
    statement as the server's default says."""
    kept = db_api.KeptConnection()
    try:
        for _ in range(2):
            building = test_claims.add_instance('building', 'scheduling')
            assert claim(noted, building, kept) is True
        with kept.use() as connection:
            setting = connection.exec_driver_sql(
                'SHOW synchronous_commit').scalar()
            connection.rollback()
    finally:
        kept.close()
    with db_api.get_engine().connect() as connection:
        default = connection.exec_driver_sql(
            "SELECT reset_val FROM pg_settings "
            "WHERE name = 'synchronous_commit'").scalar()
    assert setting == default

import sys

import pytest

from scheduler.db import aggregates
from scheduler.db import api as db_api
from tests.fixtures import statements


def _create(name, hosts=(), **metadata):
    with db_api.writer() as session:
        agg = aggregates.create(session, name, metadata=metadata)
        if hosts:
            agg = aggregates.add_hosts(session, agg.id, list(hosts))
        return agg


def _fingerprint():
    with db_api.reader() as session:
        return aggregates.fingerprint(session)


def test_create_and_read_back(any_database):
    agg = _create('rack1', ['h1', 'h2'], availability_zone='az1', foo='1')
    assert agg.name == 'rack1'
    assert agg.hosts == {'h1', 'h2'}
    assert agg.metadata == {'availability_zone': 'az1', 'foo': '1'}
    assert agg.availability_zone == 'az1'
    _create('empty')
    with db_api.reader() as session:
        everything = aggregates.get_all(session)
        assert [(a.name, a.hosts, a.metadata) for a in everything] == [
            ('rack1', {'h1', 'h2'}, {'availability_zone': 'az1',
                                     'foo': '1'}),
            ('empty', frozenset(), {})]
        # One string a host name, shared with the host cache's.
        assert all(host is sys.intern(host) for host in everything[0].hosts)
        assert aggregates.get(session, agg.uuid) == agg
        assert aggregates.get(session, 'rack1') == agg
        assert aggregates.get(session, agg.id) == agg
        assert aggregates.get(session, str(agg.id)) == agg
        assert [a.name for a in aggregates.get_by_host(session, 'h2')] == [
            'rack1']
        assert aggregates.get_by_host(session, 'h9') == []


def test_name_is_unique(database):
    _create('rack1')
    with pytest.raises(aggregates.AggregateNameExists):
        _create('rack1')


def test_unknown_aggregate(database):
    with db_api.reader() as session:
        with pytest.raises(aggregates.AggregateNotFound) as error:
            aggregates.get(session, 'nowhere')
    assert 'nowhere' in str(error.value)


def test_add_and_remove_hosts(database):
    agg = _create('rack1', ['h1'])
    with db_api.writer() as session:
        agg = aggregates.add_host(session, agg.id, 'h2')
        assert agg.hosts == {'h1', 'h2'}
        with pytest.raises(aggregates.AggregateHostExists):
            aggregates.add_host(session, agg.id, 'h2')
    with db_api.writer() as session:
        agg = aggregates.remove_host(session, 'rack1', 'h1')
        assert agg.hosts == {'h2'}
        with pytest.raises(aggregates.AggregateHostNotFound):
            aggregates.remove_host(session, 'rack1', 'h1')


def test_update_metadata_sets_and_deletes(database):
    agg = _create('rack1', a='1', b='2')
    with db_api.writer() as session:
        agg = aggregates.update_metadata(session, agg.id,
                                         {'a': None, 'b': 3, 'c': 'x'})
    assert agg.metadata == {'b': '3', 'c': 'x'}


def test_a_host_cannot_be_in_two_zones(database):
    _create('zone1', ['h1'], availability_zone='az1')
    other = _create('zone2', availability_zone='az2')
    with db_api.writer() as session:
        with pytest.raises(aggregates.AvailabilityZoneConflict) as error:
            aggregates.add_host(session, other.id, 'h1')
    assert 'az1' in str(error.value)
    # The same zone twice, or no zone, is fine.
    _create('also-az1', ['h1'], availability_zone='az1')
    plain = _create('plain', ['h1'])
    with db_api.writer() as session:
        with pytest.raises(aggregates.AvailabilityZoneConflict):
            aggregates.update_metadata(session, plain.id,
                                       {'availability_zone': 'az3'})


def test_delete(database):
    agg = _create('rack1', ['h1'], availability_zone='az1')
    with db_api.writer() as session:
        aggregates.delete(session, agg.uuid)
    with db_api.reader() as session:
        assert aggregates.get_all(session) == []
        assert aggregates.get_by_host(session, 'h1') == []


def test_fingerprint_moves_with_every_change(any_database):
    seen = [_fingerprint()]
    agg = _create('rack1')
    seen.append(_fingerprint())
    with db_api.writer() as session:
        aggregates.add_host(session, agg.id, 'h1')
    seen.append(_fingerprint())
    with db_api.writer() as session:
        aggregates.update_metadata(session, agg.id, {'k': 'v'})
    seen.append(_fingerprint())
    with db_api.writer() as session:
        aggregates.update_metadata(session, agg.id, {'k': 'w'})
    seen.append(_fingerprint())
    with db_api.writer() as session:
        aggregates.remove_host(session, agg.id, 'h1')
    seen.append(_fingerprint())
    assert len(set(seen)) == len(seen)
    assert _fingerprint() == seen[-1]


def test_fingerprint_is_one_statement(any_database):
    # Each host cache refresh asks for it: one round trip, not three.
    _create('rack1')
    with statements.recorded() as sent:
        _fingerprint()
    assert len([s for s in sent if 'aggregate' in s]) == 1

"""Server group queries: policies and rules, members and their hosts."""

import pytest

from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances

UUIDS = ['1b7e4a52-0c1d-4f3e-9a6b-00000000000%d' % i for i in range(6)]


def _create(name='web', policy='anti-affinity', **kwargs):
    with db_api.writer() as session:
        return instance_groups.create(session, name, policy, **kwargs)


def _instance(uuid, host=None):
    with db_api.writer() as session:
        db_instances.create(session, uuid, {'vcpus': 1}, {})
        if host:
            db_instances.update(session, uuid, host=host)


def test_create_add_members_and_read_their_hosts(any_database):
    group = _create(rules={'max_server_per_host': '2'}, project_id='p1')
    assert group.policy == 'anti-affinity'
    assert group.rules == {'max_server_per_host': 2}
    assert group.members == ()
    _instance(UUIDS[0], 'h1')
    _instance(UUIDS[1], 'h2')
    _instance(UUIDS[2])
    with db_api.writer() as session:
        added = instance_groups.add_members(session, group.id, UUIDS[:2])
        assert added == UUIDS[:2]
        # Members already there are skipped; order is kept.
        assert instance_groups.add_members(
            session, group.id, [UUIDS[1], UUIDS[2]]) == [UUIDS[2]]
    with db_api.reader() as session:
        group = instance_groups.get(session, group.uuid)
        assert group.members == tuple(UUIDS[:3])
        assert instance_groups.get(session, 'web') == group
        assert instance_groups.member_hosts(session, group.members) == {
            UUIDS[0]: 'h1', UUIDS[1]: 'h2'}
        assert [g.uuid for g in instance_groups.list_groups(
            session, project_id='p1')] == [group.uuid]
        assert instance_groups.list_groups(session, project_id='p2') == []


def test_delete_drops_memberships(database):
    group = _create()
    with db_api.writer() as session:
        instance_groups.add_members(session, group.id, UUIDS[:2])
    with db_api.writer() as session:
        assert instance_groups.delete(session, 'web').uuid == group.uuid
    with db_api.reader() as session:
        assert instance_groups.list_groups(session) == []
        with pytest.raises(instance_groups.InstanceGroupNotFound):
            instance_groups.get(session, group.uuid)
    # Memberships went with the group: a new group can take the members.
    other = _create('other')
    with db_api.writer() as session:
        assert instance_groups.add_members(session, other.id,
                                           UUIDS[:2]) == UUIDS[:2]


@pytest.mark.parametrize('policy, rules, words', [
    ('spread', None, "unknown policy 'spread'"),
    ('affinity', {'max_server_per_host': 2}, 'only the anti-affinity'),
    ('soft-anti-affinity', {'max_server_per_host': 2},
     'only the anti-affinity'),
    ('anti-affinity', {'max_servers': 2}, 'unknown rule(s) max_servers'),
    ('anti-affinity', {'max_server_per_host': 0}, 'positive integer'),
    ('anti-affinity', {'max_server_per_host': 'two'}, 'positive integer'),
])
def test_bad_policies_and_rules_are_refused(database, policy, rules, words):
    with pytest.raises(instance_groups.InvalidServerGroup) as error:
        _create(policy=policy, rules=rules)
    assert words in str(error.value)
    with db_api.reader() as session:
        assert instance_groups.list_groups(session) == []


def test_names_need_not_be_unique_but_then_need_a_uuid(database):
    _create()
    _create()
    with db_api.reader() as session:
        with pytest.raises(instance_groups.InvalidServerGroup) as error:
            instance_groups.get(session, 'web')
        assert '2 server groups are named web' in str(error.value)
        with pytest.raises(instance_groups.InstanceGroupNotFound):
            instance_groups.get(session, 'nothing')

"""gantt-manage server-group ..., in-process against real SQLite."""

from scheduler.db import api as db_api
from scheduler.db import instance_groups
from scheduler.db import instances as db_instances
from tests.unit.cmd import output


def _fields(out):
    return {row[0]: row[1] if len(row) > 1 else '' for row in
            output.table(out)}


def test_create_show_list_delete(database, run):
    created = run('server-group', 'create', 'web', 'anti-affinity',
                  '--rule', 'max_server_per_host=2', '--project', 'p1')
    assert created.code == 0, created.err
    fields = _fields(created.out)
    assert fields['policy'] == 'anti-affinity'
    assert fields['rules'] == 'max_server_per_host=2'
    uuid = fields['uuid']
    assert output.UUID_RE.match(uuid)

    with db_api.writer() as session:
        group = instance_groups.get(session, uuid)
        for index, host in enumerate(('h1', None)):
            member = '5c3d2e1f-0a9b-4c8d-8e7f-00000000000%d' % index
            db_instances.create(session, member, {'vcpus': 1}, {})
            if host:
                db_instances.update(session, member, host=host)
            instance_groups.add_members(session, group.id, [member])
    shown = run('server-group', 'show', 'web')
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert any(line.endswith('-000000000000 (h1)') for line in lines)
    assert any(line.endswith('-000000000001 (no host)') for line in lines)
    assert _fields(shown.out)['hosts'] == 'h1'

    listed = run('server-group', 'list')
    assert output.table(listed.out) == [
        [uuid, 'web', 'anti-affinity', 'max_server_per_host=2', '2', 'p1']]
    assert run('server-group', 'list', '--project', 'p2').out == (
        'No server groups found.\n')

    deleted = run('server-group', 'delete', uuid)
    assert deleted.code == 0
    assert deleted.out == 'Deleted server group web (%s).\n' % uuid
    assert run('server-group', 'list').out == 'No server groups found.\n'


def test_bad_rules_and_unknown_groups_are_one_line_errors(database, run):
    refused = run('server-group', 'create', 'db', 'affinity', '--rule',
                  'max_server_per_host=2')
    assert refused.code == 1
    assert 'only the anti-affinity policy takes rules' in refused.err
    assert refused.err.count('\n') == 1
    missing = run('server-group', 'show', 'nothing')
    assert missing.code == 1
    assert 'Server group nothing could not be found' in missing.err
    usage = run('server-group', 'create', 'db', 'spread')
    assert usage.code == 2
    assert "invalid choice: 'spread'" in usage.err

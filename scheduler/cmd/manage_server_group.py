"""``gantt-manage server-group ...``: server groups and their policies.

A server group places its members by a policy (``affinity``,
``anti-affinity``, ``soft-affinity``, ``soft-anti-affinity``); the
anti-affinity policy takes the rule ``max_server_per_host``. Servers join
a group at boot with the ``group`` hint::

    gantt-manage server-group create web anti-affinity \\
        --rule max_server_per_host=2
    gantt-manage server create --vcpus 1 --ram 512 --disk 1 --count 4 \\
        --hint group=<uuid of web> --wait
    gantt-manage server-group show web      # members and their hosts
    gantt-manage server-group list
    gantt-manage server-group delete web

Groups are named by UUID, or by name when exactly one group has it.
They are in the API database (``[api_database]``), as Nova keeps them;
in one cell (no ``[api_database]``), in ``[database]``. ``show`` finds
each member's host in its cell.
"""

from scheduler.cells import registry
from scheduler.cmd import manage_args
from scheduler.cmd import manage_table
from scheduler.db import api as db_api
from scheduler.db import instance_groups as db_groups
from scheduler.db import migration
from scheduler.notifications import server_group as group_notes

BINARY = 'gantt-manage'


def _errors(what):
    """Database errors inside the block as one line naming the database
    holding the groups."""
    return registry.database_errors(
        what, api=db_api.api_database_configured())


def _rules_text(rules):
    return ', '.join('%s=%s' % item for item in sorted(rules.items()))


def create(name, policy, rules, project, user):
    migration.check_api_schema()
    with _errors('writing the server groups'), \
            db_api.api_writer() as session:
        group = db_groups.create(session, name, policy, rules=dict(rules),
                                 project_id=project, user_id=user)
    group_notes.group_action(None, 'create', group, BINARY)
    _print_group(group, {})
    return 0


def list_groups(project):
    migration.check_api_schema()
    with _errors('reading the server groups'), \
            db_api.api_reader() as session:
        groups = db_groups.list_groups(session, project_id=project)
    if not groups:
        print('No server groups found.')
        return 0
    print(manage_table.format_table(
        ['UUID', 'Name', 'Policy', 'Rules', 'Members', 'Project'],
        [[group.uuid, group.name, group.policy, _rules_text(group.rules),
          len(group.members), group.project_id] for group in groups]))
    return 0


def show(ident):
    migration.check_api_schema()
    with _errors('reading the server groups'), \
            db_api.api_reader() as session:
        group = db_groups.get(session, ident)
    with _errors('reading the hosts of its members'):
        hosts = db_groups.find_member_hosts(group.members)
    _print_group(group, hosts)
    return 0


def delete(ident):
    migration.check_api_schema()
    with _errors('writing the server groups'), \
            db_api.api_writer() as session:
        group = db_groups.delete(session, ident)
    group_notes.group_action(None, 'delete', group, BINARY)
    print('Deleted server group %s (%s).' % (group.name, group.uuid))
    return 0


def _print_group(group, hosts):
    members = '\n'.join('%s (%s)' % (uuid, hosts.get(uuid) or 'no host')
                        for uuid in group.members)
    print(manage_table.format_table(['Field', 'Value'], [
        ['uuid', group.uuid],
        ['name', group.name],
        ['policy', group.policy],
        ['rules', _rules_text(group.rules)],
        ['project_id', group.project_id],
        ['user_id', group.user_id],
        ['members', members],
        ['hosts', ', '.join(sorted(set(hosts.values())))],
    ]))


_IDENT = manage_args.arg('ident', metavar='GROUP',
                         help='UUID or name of the server group.')

CATEGORY = manage_args.Category('Server groups (affinity policies).', {
    'create': manage_args.Command(create, 'Create a server group.', [
        manage_args.arg('name', metavar='NAME'),
        manage_args.arg('policy', metavar='POLICY',
                        choices=db_groups.POLICIES,
                        help='One of %s.' % ', '.join(db_groups.POLICIES)),
        manage_args.arg('rules', '--rule', type=manage_args.key_value,
                        action='append', default=[], metavar='KEY=VALUE',
                        help='A rule of the anti-affinity policy: '
                             'max_server_per_host=N.'),
        manage_args.arg('project', '--project', help='Project ID.'),
        manage_args.arg('user', '--user', help='User ID.')]),
    'list': manage_args.Command(list_groups, 'List server groups.', [
        manage_args.arg('project', '--project',
                        help='Only the groups of this project.')]),
    'show': manage_args.Command(show, 'Show a group, its members and '
                                'their hosts.', [_IDENT]),
    'delete': manage_args.Command(delete, 'Delete a group (its servers '
                                  'stay).', [_IDENT]),
})

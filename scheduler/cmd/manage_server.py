"""``gantt-manage server ...``: ask the conductor for servers; look at them.

``server create`` builds a RequestSpec from the sizes given, calls
``schedule_and_build_instances`` on the conductor (namespace
``compute_task``, API 1.2), which answers once it has recorded the
instances, and prints their UUIDs: a printed UUID is a build that was
accepted and ends ACTIVE or ERROR with a reason. A refused build (a bad
request, the conductor's database away) prints one error line and exits
1. With ``--wait`` the rows are polled until none is ``building``::

    gantt-manage server create --vcpus 2 --ram 4096 --disk 40 --count 3 \\
        --hint group=<server group uuid> --wait --timeout 60
    gantt-manage server create --vcpus 1 --ram 512 --disk 1 \\
        --flavor-extra-spec capabilities:stats:gpu=a100 \\
        --image-property hw_architecture=x86_64 --project p1 \\
        --hint different_host=<uuid> \\
        --hint query='[">=", "$free_ram_mb", 1024]'

Hints are checked as Nova's API checks them: ``group``, ``same_host`` and
``different_host`` take instance or group UUIDs, ``build_near_host_ip`` an
IP address, ``cidr`` a suffix such as ``/24``, ``query`` JSON; other keys
pass as they are. The same arguments describe the request that
``gantt-manage explain`` explains.

The build call carries no display names, so with ``--name`` gantt-manage
names the rows itself once the conductor has recorded them.

``server list`` and ``server show`` read the instances table directly;
with ``[api_database]`` (cells) they find the instances in every cell
through their mappings, and show the builds still waiting for a cell
(see :mod:`scheduler.cmd.manage_server_cells`).
"""

import datetime
import ipaddress
import json
import re
import sys
import time

import oslo_messaging as messaging
from oslo_utils import uuidutils

from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import manage_args
from scheduler.cmd import manage_server_cells
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import config
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.db import migration
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpc

CONF = conf.CONF

# Seconds between two reads of the instances table while waiting.
POLL_INTERVAL = 0.5

# Exit code of a --wait that timed out: the outcome is unknown.
EXIT_TIMEOUT = 2

NOT_RECORDED = 'not recorded yet'


def display_names(name, count):
    """Nova's multi-create names: ``name`` alone, or ``name-1``..``name-N``."""
    if name is None:
        return None
    if count == 1:
        return [name]
    return ['%s-%d' % (name, index) for index in range(1, count + 1)]


_CIDR_SUFFIX = re.compile(r'^/[0-9a-fA-F.:]+$')
# Hints that may be given once only, as in Nova's API.
_SINGLE_HINTS = ('group', 'build_near_host_ip', 'cidr', 'query')


def _check_hint(key, value):
    """InvalidRequest unless ``value`` is what Nova's API accepts."""
    if key in ('group', 'same_host', 'different_host'):
        if not uuidutils.is_uuid_like(value):
            raise exception.InvalidRequest(
                reason='hint %s must be a UUID, not %r' % (key, value))
    elif key == 'build_near_host_ip':
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise exception.InvalidRequest(
                reason='hint build_near_host_ip must be an IP address, '
                       'not %r' % value)
    elif key == 'cidr':
        if not _CIDR_SUFFIX.match(value):
            raise exception.InvalidRequest(
                reason="hint cidr must look like '/24', not %r" % value)
    elif key == 'query':
        try:
            json.loads(value)
        except ValueError as error:
            raise exception.InvalidRequest(
                reason='hint query must be JSON: %s' % error)


def scheduler_hints_of(hints):
    """``{key: [values]}`` from ``(key, value)`` pairs, checked; a key
    given several times keeps every value, in order, as Nova's
    scheduler_hints lists do."""
    scheduler_hints = {}
    for key, value in hints:
        _check_hint(key, value)
        scheduler_hints.setdefault(key, []).append(value)
    for key in _SINGLE_HINTS:
        if len(scheduler_hints.get(key, ())) > 1:
            raise exception.InvalidRequest(
                reason='hint %s may be given once only' % key)
    return scheduler_hints


def build_request_spec(vcpus, ram, disk, count, az, hints, project,
                       instance_uuids, extra_specs=(), image=None,
                       image_properties=()):
    """The RequestSpec of ``count`` servers of the given sizes.

    ``hints``, ``extra_specs`` and ``image_properties`` are lists of
    ``(key, value)`` pairs; ``image`` an image ID (IsolatedHostsFilter
    reads it). ``instance_uuids`` may be empty (nothing will be built).
    """
    flavor = request_spec_obj.Flavor(
        name='%dvcpu-%dmb-%dgb' % (vcpus, ram, disk), vcpus=vcpus,
        memory_mb=ram, root_gb=disk, extra_specs=dict(extra_specs))
    image_meta = None
    if image or image_properties:
        image_meta = request_spec_obj.ImageMeta(
            id=image, properties=dict(image_properties))
    spec = request_spec_obj.RequestSpec(
        instance_uuid=instance_uuids[0] if instance_uuids else None,
        num_instances=count, project_id=project, availability_zone=az,
        flavor=flavor, image=image_meta,
        scheduler_hints=scheduler_hints_of(hints))
    spec.validate()
    return spec


def request_build(instance_uuids, spec):
    """Ask the conductor to build; returns once it accepted the build.

    :raises: InvalidRequest or DatabaseUnavailable (refused),
        MessagingUnavailable (no conductor answered)
    """
    owns_transport = rpc.TRANSPORT is None
    try:
        rpc.init(CONF, check_broker=True)
        conductor_rpcapi.ComputeTaskAPI().schedule_and_build_instances(
            gantt_context.get_admin_context(), instance_uuids, spec)
    except messaging.MessagingException as error:
        raise exception.MessagingUnavailable(
            url=config.redact_transport_url(CONF.transport_url),
            reason=config.mask_secrets(str(error)))
    finally:
        # A transport this command did not make (an in-process caller's)
        # is left to its owner.
        if owns_transport:
            rpc.cleanup()


def create(vcpus, ram, disk, count, az, hints, name, project, wait,
           timeout, extra_specs=(), image=None, image_properties=()):
    instance_uuids = [uuidutils.generate_uuid() for _ in range(count)]
    spec = build_request_spec(vcpus, ram, disk, count, az, hints, project,
                              instance_uuids, extra_specs, image,
                              image_properties)
    names = display_names(name, count)
    if wait or names:
        # Fail before asking rather than leave builds nobody watches.
        migration.check_schema()
    request_build(instance_uuids, spec)
    print('\n'.join(instance_uuids), flush=True)
    if not wait and not names:
        return 0
    rows, pending = poll_instances(instance_uuids, names, timeout,
                                   until_built=wait)
    if pending:
        if wait:
            print(landing_table(instance_uuids, rows))
        sys.stderr.write(
            'gantt-manage: error: timed out after %gs; %s: %s\n'
            % (timeout, 'still building' if wait else
               'not recorded by the conductor, so not named',
               ', '.join(pending)))
        return EXIT_TIMEOUT
    if not wait:
        return 0
    print(landing_table(instance_uuids, rows))
    return 0 if all(row.vm_state == db_instances.ACTIVE
                    for row in rows.values()) else 1


def poll_instances(instance_uuids, names, timeout, until_built):
    """Read the rows until all exist (and, ``until_built``, have left
    ``building``) or ``timeout`` seconds pass; name them on the way.

    Returns ``({uuid: row}, [uuids still pending])``.
    """
    deadline = time.monotonic() + timeout
    while True:
        rows = _read_rows(instance_uuids)
        if names and _name_rows(instance_uuids, names, rows):
            rows = _read_rows(instance_uuids)
        pending = [uuid for uuid in instance_uuids
                   if uuid not in rows or (
                       until_built and
                       rows[uuid].vm_state == db_instances.BUILDING)]
        if not pending or time.monotonic() >= deadline:
            return rows, pending
        time.sleep(POLL_INTERVAL)


def _read_rows(instance_uuids):
    if db_api.api_database_configured():
        return {row.uuid: row for _cell, row in
                manage_server_cells.list_instances(
                    uuids=instance_uuids, include_deleted=True)}
    with db_api.reader() as session:
        return {row.uuid: row for row in db_instances.list_instances(
            session, uuids=instance_uuids)}


def _name_rows(instance_uuids, names, rows):
    unnamed = [(uuid, name) for uuid, name in zip(instance_uuids, names)
               if uuid in rows and rows[uuid].display_name != name]
    if unnamed and db_api.api_database_configured():
        return any([manage_server_cells.rename(uuid, name)
                    for uuid, name in unnamed])
    if unnamed:
        with db_api.writer() as session:
            for uuid, name in unnamed:
                db_instances.update(session, uuid, display_name=name)
    return bool(unnamed)


def landing_table(instance_uuids, rows):
    table = []
    for uuid in instance_uuids:
        row = rows.get(uuid)
        if row is None:
            table.append([uuid, None, NOT_RECORDED, None, None, None])
        else:
            table.append([uuid, row.display_name, row.vm_state, row.host,
                          row.node, row.fault])
    return manage_table.format_table(
        ['UUID', 'Name', 'State', 'Host', 'Node', 'Fault'], table)


def list_servers(host, state, deleted=False):
    """The servers (without the deleted ones unless ``deleted``); with
    cells, those of every cell and the builds not in one yet."""
    vm_state = state.lower() if state else None
    include_deleted = deleted or vm_state == 'deleted'
    headers = ['UUID', 'Name', 'State', 'Task', 'Host', 'Node',
               'Created (UTC)']
    if db_api.api_database_configured():
        found = manage_server_cells.list_instances(
            host=host, vm_state=vm_state, include_deleted=include_deleted)
        headers.append('Cell')
    else:
        with db_api.reader() as session:
            found = [(None, row) for row in db_instances.list_instances(
                session, host=host, vm_state=vm_state,
                include_deleted=include_deleted)]
    if not found:
        print('No servers found.')
        return 0
    print(manage_table.format_table(headers, [
        [row.uuid, row.display_name, row.vm_state, row.task_state,
         row.host, row.node, row.created_at] + ([] if cell is None
                                                 else [cell])
        for cell, row in found]))
    return 0


def _json_value(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    raise TypeError('%r is not JSON serializable' % (value,))


def show(uuid, output_format='table'):
    """Every field of a server: a table (the JSON documents, such as
    the flavor and the request spec, one ``key: value`` line per field),
    or with ``--format json`` one JSON object for scripts."""
    if db_api.api_database_configured():
        cell, row = manage_server_cells.get_instance(uuid)
        fields = manage_server_cells.fields_of(row) + [['cell', cell]]
    else:
        with db_api.reader() as session:
            row = db_instances.get(session, uuid)
        fields = manage_server_cells.fields_of(row)
    if output_format == 'json':
        print(json.dumps(dict(fields), sort_keys=True, indent=2,
                         default=_json_value))
        return 0
    print(manage_table.format_table(['Field', 'Value'], [
        [name, '\n'.join(manage_table.document_lines(value))
         if isinstance(value, (dict, list)) else value]
        for name, value in fields]))
    return 0


# What describes a request: ``server create`` and ``explain`` take these.
SPEC_ARGS = [
    manage_args.arg('vcpus', '--vcpus', type=manage_args.at_least(1),
                    required=True, help='vCPUs of each server.'),
    manage_args.arg('ram', '--ram', type=manage_args.at_least(1),
                    required=True, metavar='MB',
                    help='Memory of each server, in MB.'),
    manage_args.arg('disk', '--disk', type=manage_args.at_least(0),
                    required=True, metavar='GB',
                    help='Root disk of each server, in GB.'),
    manage_args.arg('count', '--count', type=manage_args.at_least(1),
                    default=1, help='Number of servers (default: '
                    '%(default)s).'),
    manage_args.arg('az', '--az', help='Availability zone.'),
    manage_args.arg('hints', '--hint', type=manage_args.key_value,
                    action='append', default=[], metavar='KEY=VALUE',
                    help='Scheduler hint (group, same_host, different_host, '
                         'query, build_near_host_ip, cidr...); '
                         'repeatable.'),
    manage_args.arg('project', '--project', help='Project ID.'),
    manage_args.arg('extra_specs', '--flavor-extra-spec',
                    type=manage_args.key_value, action='append', default=[],
                    metavar='KEY=VALUE',
                    help='Extra spec of the flavor; repeatable.'),
    manage_args.arg('image', '--image', metavar='IMAGE_ID',
                    help='ID of the image the servers boot from.'),
    manage_args.arg('image_properties', '--image-property',
                    type=manage_args.key_value, action='append', default=[],
                    metavar='KEY=VALUE',
                    help='Property of the image; repeatable.'),
]

CREATE_ARGS = SPEC_ARGS + [
    manage_args.arg('name', '--name', help='Display name (NAME-1..NAME-N '
                    'with --count).'),
    manage_args.arg('wait', '--wait', action='store_true',
                    help='Wait until no server is building.'),
    manage_args.arg('timeout', '--timeout', type=manage_args.positive_seconds,
                    default=120.0, metavar='SECONDS',
                    help='Longest wait (default: %(default)s).'),
]

"""``gantt-manage server migrate|resize|...|delete``: act on existing servers.

Each command is one RPC call to the conductor's ``compute_task`` API 1.1
(``delete``: 1.2; see ``conductor/rpcapi.py``) per server, which sees the
operation through and answers
the instance as it is afterwards, with the migration record it made for a
move. gantt-manage prints that answer as a Field/Value table::

    gantt-manage server migrate <uuid>          # cold migrate -> resized
    gantt-manage server resize <uuid> --vcpus 2 --ram 2048 --disk 20
    gantt-manage server confirm <uuid>          # keep the new host
    gantt-manage server revert <uuid>           # back to the old one
    gantt-manage server live-migrate <uuid> [--host cmp2 [--force]]
    gantt-manage server evacuate <uuid> [--host cmp2 [--force]]
    gantt-manage server rebuild <uuid> --image-property hw_arch=x86_64
    gantt-manage server shelve <uuid>
    gantt-manage server unshelve <uuid>
    gantt-manage server delete <uuid> [<uuid>...]   # -> deleted

``server delete`` prints one row per server (its state afterwards:
``deleted``, or still ``deleting`` if its compute did not answer and the
conductor finishes the delete later); a server it could not delete gets
one error line, and the others are deleted all the same.

Malformed arguments (a UUID that is not one, a negative size, ``--force``
without ``--host``) are usage errors (exit 2) found before anything is
sent. What the conductor refuses (NoValidHost, InstanceNotFound,
InstanceInvalidState, HostNotFound, ComputeServiceInUse,
MigrationPreCheckError, InvalidRequest...) is one error line and exit 1.
A conductor that does not answer within ``[DEFAULT] rpc_response_timeout``
gives exit 2: the operation may still be under way or done, so the message
says to look at ``server show``.
"""

import argparse
import sys
import uuid as uuid_lib

import oslo_messaging as messaging

from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import manage_args
from scheduler.cmd import manage_server
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import config
from scheduler import context as gantt_context
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler import rpc

CONF = conf.CONF
PROG = 'gantt-manage'

EXIT_OK = 0
EXIT_FAILURE = 1
# Bad usage, and a call whose outcome is unknown (no answer in time).
EXIT_USAGE = 2
EXIT_NO_ANSWER = 2

ERROR_STATE = 'error'
RESIZED_STATE = 'resized'


def instance_uuid(text):
    """Type: an instance UUID, in its canonical lower-case form."""
    try:
        return str(uuid_lib.UUID(text))
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError('%r is not a UUID' % text)


def _usage_error(message):
    sys.stderr.write('%s: error: %s\n' % (PROG, message))
    return EXIT_USAGE


# -- the call and its answer -------------------------------------------------

def call_conductor(method, **kwargs):
    """Call ``method`` of ComputeTaskAPI; its answer.

    Lets MessagingTimeout through. An unreachable broker becomes
    MessagingUnavailable (as for ``server create``); an error the
    conductor raised comes back as itself but with its message only (the
    text of a remote exception carries the conductor's traceback), and one
    it did not expect (a bug there) as a GanttException naming it.
    """
    owns_transport = rpc.TRANSPORT is None
    try:
        rpc.init(CONF, check_broker=True)
        api = conductor_rpcapi.ComputeTaskAPI()
        return getattr(api, method)(gantt_context.get_admin_context(),
                                    **kwargs)
    except exception.GanttException as error:
        raise _without_traceback(error)
    except messaging.MessagingTimeout:
        raise
    except messaging.RemoteError as error:
        # Raised by a module the client may not import (sqlalchemy...).
        raise _conductor_failed(error.exc_type, error.value)
    except messaging.MessagingException as error:
        raise exception.MessagingUnavailable(
            url=config.redact_transport_url(CONF.transport_url),
            reason=config.mask_secrets(str(error)))
    except Exception as error:
        # Builtin exceptions (NotImplementedError...) cross RPC as
        # themselves, their text followed by the remote traceback.
        if not _is_remote(error):
            raise
        raise _conductor_failed(type(error).__name__,
                                str(error).splitlines()[0])
    finally:
        if owns_transport:
            rpc.cleanup()


# How oslo.messaging renames the class of an exception re-raised from a
# remote server.
REMOTE_SUFFIX = '_Remote'


def _is_remote(error):
    """Whether ``error`` was raised by the server: renamed, or with the
    remote traceback appended to its text (builtin classes)."""
    if type(error).__name__.endswith(REMOTE_SUFFIX):
        return True
    lines = str(error).splitlines()
    return len(lines) > 1 and lines[1].startswith('Traceback')


def _conductor_failed(exc_type, value):
    return exception.GanttException(
        message='the conductor failed: %s: %s (see its log)'
        % (exc_type, value))


def _without_traceback(error):
    """``error`` as its own class would raise it here, not the subclass
    oslo.messaging made to append the remote traceback to its text."""
    cls = type(error)
    if not cls.__name__.endswith(REMOTE_SUFFIX):
        return error
    local = cls.__mro__[1](message=error.message)
    local.kwargs = error.kwargs
    return local


def flavor_text(flavor):
    """``name (2 vCPU, 2048 MB RAM, 20 GB disk)`` of a flavor dict."""
    if not flavor:
        return None
    sizes = '%s vCPU, %s MB RAM, %s GB disk' % (
        flavor.get('vcpus'), flavor.get('memory_mb'), flavor.get('root_gb', 0))
    extras = [('ephemeral_gb', 'GB ephemeral'), ('swap', 'MB swap')]
    sizes += ''.join(', %s %s' % (flavor[key], unit) for key, unit in extras
                     if flavor.get(key))
    return '%s (%s)' % (flavor.get('name') or '-', sizes)


def _place(host, node):
    if host is None:
        return None
    return host if node in (None, host) else '%s/%s' % (host, node)


def answer_rows(answer):
    """The Field/Value rows of a conductor's answer."""
    rows = [['uuid', answer.get('uuid')],
            ['vm_state', answer.get('vm_state')],
            ['task_state', answer.get('task_state')],
            ['host', answer.get('host')],
            ['node', answer.get('node')],
            ['flavor', flavor_text(answer.get('flavor'))],
            ['fault', answer.get('fault')]]
    migration = answer.get('migration')
    if migration:
        rows += [
            ['migration', migration.get('uuid')],
            ['migration_type', migration.get('migration_type')],
            ['migration_status', migration.get('status')],
            ['source', _place(migration.get('source_host'),
                              migration.get('source_node'))],
            ['dest', _place(migration.get('dest_host'),
                            migration.get('dest_node'))],
            ['migration_error', migration.get('error')]]
    return rows


def operate(what, uuid, method, **kwargs):
    """Run one operation on server ``uuid`` and print the outcome."""
    try:
        answer = call_conductor(method, instance_uuid=uuid, **kwargs)
    except messaging.MessagingTimeout:
        sys.stderr.write(
            "%s: error: the conductor did not answer within "
            "rpc_response_timeout (%ss); the outcome of the %s of server %s "
            "is unknown: check '%s server show %s'\n"
            % (PROG, CONF.rpc_response_timeout, what, uuid, PROG, uuid))
        return EXIT_NO_ANSWER
    print(manage_table.format_table(['Field', 'Value'], answer_rows(answer)))
    if answer.get('vm_state') == ERROR_STATE:
        sys.stderr.write('%s: error: server %s is in error after the %s: '
                         '%s\n' % (PROG, uuid, what, answer.get('fault')))
        return EXIT_FAILURE
    if answer.get('vm_state') == RESIZED_STATE:
        print("\nConfirm with '%s server confirm %s' or revert with "
              "'%s server revert %s'." % (PROG, uuid, PROG, uuid))
    return EXIT_OK


# -- the commands -----------------------------------------------------------

def migrate(uuid):
    return operate('migration', uuid, 'migrate_server')


def build_flavor(vcpus, ram, disk, ephemeral, swap, flavor_name,
                 extra_specs):
    """The Flavor a resize asks for; named like ``server create`` names
    its flavors unless ``flavor_name`` is given."""
    name = flavor_name or '%dvcpu-%dmb-%dgb' % (vcpus, ram, disk)
    return request_spec_obj.Flavor(
        name=name, vcpus=vcpus, memory_mb=ram, root_gb=disk,
        ephemeral_gb=ephemeral, swap=swap, extra_specs=dict(extra_specs))


def resize(uuid, vcpus, ram, disk, ephemeral, swap, flavor_name,
           extra_specs):
    flavor = build_flavor(vcpus, ram, disk, ephemeral, swap, flavor_name,
                          extra_specs)
    return operate('resize', uuid, 'migrate_server', flavor=flavor)


def confirm(uuid):
    return operate('resize confirmation', uuid, 'confirm_resize')


def revert(uuid):
    return operate('resize revert', uuid, 'revert_resize')


def live_migrate(uuid, host, force):
    if force and not host:
        return _usage_error('argument --force: needs --host')
    return operate('live migration', uuid, 'migrate_server', live=True,
                   host=host, force=force)


def evacuate(uuid, host, force):
    if force and not host:
        return _usage_error('argument --force: needs --host')
    return operate('evacuation', uuid, 'rebuild_instance', evacuate=True,
                   host=host, force=force)


def rebuild(uuid, image, image_name, image_properties):
    image_meta = None
    if image or image_name or image_properties:
        image_meta = request_spec_obj.ImageMeta(
            id=image, name=image_name, properties=dict(image_properties))
    return operate('rebuild', uuid, 'rebuild_instance', image=image_meta)


def shelve(uuid):
    return operate('shelve', uuid, 'shelve_instance')


def unshelve(uuid):
    return operate('unshelve', uuid, 'unshelve_instance')


def delete(uuids):
    """Delete each server; exit 0, 1 if any was refused, 2 if the
    conductor did not answer for any."""
    rows, code = [], EXIT_OK
    for uuid in uuids:
        try:
            answer = call_conductor('delete_instance', instance_uuid=uuid)
        except messaging.MessagingTimeout:
            sys.stderr.write(
                "%s: error: the conductor did not answer within "
                "rpc_response_timeout (%ss); the outcome of the delete of "
                "server %s is unknown: check '%s server show %s'\n"
                % (PROG, CONF.rpc_response_timeout, uuid, PROG, uuid))
            code = EXIT_NO_ANSWER
            continue
        except exception.MessagingUnavailable:
            raise
        except exception.GanttException as error:
            sys.stderr.write('%s: error: server %s: %s\n'
                             % (PROG, uuid, error))
            code = max(code, EXIT_FAILURE)
            continue
        rows.append([answer.get('uuid'), answer.get('vm_state'),
                     answer.get('task_state'), answer.get('fault')])
    if rows:
        print(manage_table.format_table(['UUID', 'State', 'Task', 'Fault'],
                                        rows))
    return code


# -- the command table ------------------------------------------------------

_arg = manage_args.arg
_UUID = _arg('uuid', metavar='UUID', type=instance_uuid,
             help='UUID of the server.')
_SPEC = {arg.name: arg for arg in manage_server.SPEC_ARGS}


def _flavor_arg(name, help_text):
    """``server create``'s size argument, helped for one new flavor."""
    arg = _SPEC[name]
    return arg._replace(kwargs=dict(arg.kwargs, help=help_text))


_HOST = _arg('host', '--host', help='Destination host (checked by the '
             'filters unless --force).')
_FORCE = _arg('force', '--force', action='store_true',
              help='Skip the scheduler for --host.')

ACTIONS = {
    'migrate': manage_args.Command(
        migrate, 'Cold migrate a server to another host (ends resized: '
        'confirm or revert).', [_UUID]),
    'resize': manage_args.Command(
        resize, 'Resize a server to a new flavor (ends resized: confirm or '
        'revert).', [
            _UUID, _flavor_arg('vcpus', 'vCPUs of the new flavor.'),
            _flavor_arg('ram', 'Memory of the new flavor, in MB.'),
            _flavor_arg('disk', 'Root disk of the new flavor, in GB.'),
            _arg('ephemeral', '--ephemeral', type=manage_args.at_least(0),
                 default=0, metavar='GB',
                 help='Ephemeral disk, in GB (default: %(default)s).'),
            _arg('swap', '--swap', type=manage_args.at_least(0), default=0,
                 metavar='MB', help='Swap, in MB (default: %(default)s).'),
            _arg('flavor_name', '--flavor-name', metavar='NAME',
                 help='Name of the new flavor.'),
            _SPEC['extra_specs']]),
    'confirm': manage_args.Command(
        confirm, 'Confirm a migration or resize: keep the new host.',
        [_UUID]),
    'revert': manage_args.Command(
        revert, 'Revert a migration or resize: go back to the old host.',
        [_UUID]),
    'live-migrate': manage_args.Command(
        live_migrate, 'Live migrate an active server.',
        [_UUID, _HOST, _FORCE]),
    'evacuate': manage_args.Command(
        evacuate, 'Rebuild a server elsewhere; its compute service must be '
        'down.', [_UUID, _HOST, _FORCE]),
    'rebuild': manage_args.Command(
        rebuild, 'Rebuild a server on its host, with a new image if given.',
        [_UUID, _SPEC['image'],
         _arg('image_name', '--image-name', metavar='NAME',
              help='Name of the image.'),
         _SPEC['image_properties']]),
    'shelve': manage_args.Command(shelve, 'Shelve a server.', [_UUID]),
    'unshelve': manage_args.Command(
        unshelve, 'Unshelve a server (scheduled again if offloaded).',
        [_UUID]),    'delete': manage_args.Command(
        delete, 'Delete servers, releasing everything they hold.', [
            _arg('uuids', metavar='UUID', nargs='+', type=instance_uuid,
                 help='UUID of a server.')]),
}

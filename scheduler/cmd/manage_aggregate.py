"""``gantt-manage aggregate ...``: host aggregates and availability zones.

An aggregate groups compute hosts under a name and carries metadata; the
metadata key ``availability_zone`` puts its hosts in that zone, and keys
named like a weigher multiplier (``ram_weight_multiplier``...) override
the option for its hosts. Every command writes SQL, then tells the running
schedulers with a fanout cast (scheduler RPC API 1.2), so that the change
applies to the next request rather than after the next host cache
refresh::

    gantt-manage aggregate create rack1 --availability-zone az1
    gantt-manage aggregate add-host rack1 compute1
    gantt-manage aggregate set-metadata rack1 ram_weight_multiplier=2.0 foo
    gantt-manage aggregate list
    gantt-manage aggregate show rack1
    gantt-manage aggregate remove-host rack1 compute1
    gantt-manage aggregate delete rack1

Aggregates are in the API database (``[api_database]``), as Nova keeps
them; in one cell (no ``[api_database]``), in ``[database]``. A host to
add must have a compute service: in ``[database]``, or with cells in the
cell its host mapping names.

``set-metadata`` takes ``KEY=VALUE`` to set a key and a bare ``KEY`` to
unset it. As in Nova, a host cannot be in two zones (refused), only hosts
with a compute service can be added, and an aggregate with hosts cannot be
deleted. If the broker cannot be reached the command still succeeds, with
a warning: the schedulers then see the change at their next refresh.
"""

import sys

from oslo_db import exception as db_exc
import oslo_messaging as messaging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from compute import manager as compute_manager
from scheduler import cells
from scheduler.cells import registry
from scheduler.cmd import manage_args
from scheduler.cmd import manage_table
from scheduler import conf
from scheduler import config
from scheduler import context as gantt_context
from scheduler.db import aggregates as db_aggregates
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import models
from scheduler import exception
from scheduler.notifications import aggregate as aggregate_notes
from scheduler import notifications
from scheduler.objects import aggregate as aggregate_obj
from scheduler import rpc
from scheduler import rpcapi as scheduler_rpcapi

CONF = conf.CONF


class ComputeHostNotFound(exception.NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class AggregateNotEmpty(exception.InvalidRequest):
    msg_fmt = ("Invalid request: aggregate %(ident)s still has hosts "
               "(%(hosts)s); remove them first.")


def notify_schedulers(method, *args):
    """Cast ``SchedulerAPI.<method>(ctxt, *args)`` to every scheduler.

    Never fails the command: the change is in SQL already, and the
    schedulers read it at their next refresh if the cast cannot go.
    """
    owns_transport = rpc.TRANSPORT is None
    if owns_transport and not CONF.transport_url:
        sys.stderr.write('gantt-manage: warning: [DEFAULT] transport_url is '
                         'not set; the schedulers see the change at their '
                         'next host cache refresh.\n')
        return False
    try:
        rpc.init(CONF, check_broker=True)
        api = scheduler_rpcapi.SchedulerAPI()
        return getattr(api, method)(gantt_context.get_admin_context(),
                                    *args)
    except (messaging.MessagingException,
            exception.MessagingUnavailable) as error:
        sys.stderr.write('gantt-manage: warning: could not tell the '
                         'schedulers (%s); they see the change at their '
                         'next host cache refresh.\n'
                         % config.mask_secrets(str(error)))
        return False
    finally:
        if owns_transport:
            rpc.cleanup()


def _changed(aggregate):
    notify_schedulers('update_aggregates',
                      [aggregate_obj.Aggregate.from_db(aggregate)])
    _print_aggregate(aggregate)
    return 0


def _print_aggregate(aggregate):
    print(manage_table.format_table(['Field', 'Value'], [
        ['id', aggregate.id],
        ['uuid', aggregate.uuid],
        ['name', aggregate.name],
        ['availability_zone', aggregate.availability_zone],
        ['hosts', ', '.join(sorted(aggregate.hosts))],
        ['metadata', '\n'.join('%s=%s' % item for item
                               in sorted(aggregate.metadata.items()))],
    ]))


def _check_compute_host(host):
    """ComputeHostNotFound unless ``host`` has a compute service: in
    ``[database]``, or with cells in the cell of its host mapping."""
    cell = cells.LOCAL
    if db_api.api_database_configured():
        cell = cells.host_cell(host)
        if cell is None or cell.is_cell0:
            raise ComputeHostNotFound(host=host)
    service = models.Service.__table__
    with cells.target(cell):
        try:
            with db_api.reader() as session:
                found = session.execute(
                    sa.select(service.c.id).where(
                        service.c.host == host,
                        service.c.binary == compute_manager.BINARY)).first()
        except (sa_exc.SQLAlchemyError, db_exc.DBError) as error:
            raise exception.DatabaseUnavailable(
                url=config.redact_database_url(
                    db_api.targeted_connection()),
                reason='reading the compute services of %s: %s'
                % (host, db_api.describe_error(error))) from error
    if found is None:
        raise ComputeHostNotFound(host=host)


def _errors(what):
    """Database errors inside the block as one line naming the database
    holding the aggregates."""
    return registry.database_errors(
        what, api=db_api.api_database_configured())


def _reading():
    return _errors('reading the aggregates')


def _writing():
    return _errors('writing the aggregates')


# -- the commands -----------------------------------------------------------

def _before(action, ident):
    """``aggregate.<action>.start`` with the aggregate as it is now."""
    if notifications.enabled():
        with _reading(), db_api.api_reader() as session:
            aggregate_notes.aggregate_action(
                None, action, 'start', db_aggregates.get(session, ident))


def create(name, zone, metadata):
    migration.check_api_schema()
    values = dict(metadata)
    if zone:
        values[db_aggregates.AZ_KEY] = zone
    aggregate_notes.aggregate_action(None, 'create', 'start', name=name,
                                     metadata=values)
    with _writing(), db_api.api_writer() as session:
        aggregate = db_aggregates.create(session, name, metadata=values)
    aggregate_notes.aggregate_action(None, 'create', 'end', aggregate)
    return _changed(aggregate)


def delete(ident):
    migration.check_api_schema()
    _before('delete', ident)
    with _writing(), db_api.api_writer() as session:
        aggregate = db_aggregates.get(session, ident)
        if aggregate.hosts:
            raise AggregateNotEmpty(ident=aggregate.name,
                                    hosts=', '.join(sorted(aggregate.hosts)))
        db_aggregates.delete(session, aggregate.id)
    aggregate_notes.aggregate_action(None, 'delete', 'end', aggregate)
    notify_schedulers('delete_aggregate',
                      aggregate_obj.Aggregate.from_db(aggregate))
    print('Deleted aggregate %s.' % aggregate.name)
    return 0


def list_aggregates():
    migration.check_api_schema()
    with _reading(), db_api.api_reader() as session:
        aggregates = db_aggregates.get_all(session)
    if not aggregates:
        print('No aggregates found.')
        return 0
    print(manage_table.format_table(
        ['Id', 'Name', 'Availability zone', 'Hosts', 'Metadata'],
        [[agg.id, agg.name, agg.availability_zone,
          ', '.join(sorted(agg.hosts)),
          ', '.join('%s=%s' % item for item in sorted(agg.metadata.items())
                    if item[0] != db_aggregates.AZ_KEY)]
         for agg in aggregates]))
    return 0


def show(ident):
    migration.check_api_schema()
    with _reading(), db_api.api_reader() as session:
        aggregate = db_aggregates.get(session, ident)
    _print_aggregate(aggregate)
    return 0


def add_host(ident, host):
    migration.check_api_schema()
    _before('add_host', ident)
    _check_compute_host(host)
    with _writing(), db_api.api_writer() as session:
        aggregate = db_aggregates.add_host(session, ident, host)
    aggregate_notes.aggregate_action(None, 'add_host', 'end', aggregate)
    return _changed(aggregate)


def remove_host(ident, host):
    migration.check_api_schema()
    _before('remove_host', ident)
    with _writing(), db_api.api_writer() as session:
        aggregate = db_aggregates.remove_host(session, ident, host)
    aggregate_notes.aggregate_action(None, 'remove_host', 'end', aggregate)
    return _changed(aggregate)


def set_metadata(ident, items):
    migration.check_api_schema()
    _before('update_metadata', ident)
    with _writing(), db_api.api_writer() as session:
        aggregate = db_aggregates.update_metadata(session, ident,
                                                  dict(items))
    aggregate_notes.aggregate_action(None, 'update_metadata', 'end',
                                     aggregate)
    return _changed(aggregate)


_IDENT = manage_args.arg('ident', metavar='AGGREGATE',
                         help='Id, UUID or name of the aggregate.')
_HOST = manage_args.arg('host', metavar='HOST',
                        help='Service host name of a compute.')

CATEGORY = manage_args.Category('Host aggregates and availability zones.', {
    'create': manage_args.Command(create, 'Create an aggregate.', [
        manage_args.arg('name', metavar='NAME'),
        manage_args.arg('zone', '--availability-zone', metavar='ZONE',
                        help='Put the hosts of the aggregate in this '
                             'availability zone.'),
        manage_args.arg('metadata', '--metadata',
                        type=manage_args.key_value, action='append',
                        default=[], metavar='KEY=VALUE',
                        help='A metadata key; repeatable.')]),
    'delete': manage_args.Command(delete, 'Delete an aggregate that has '
                                  'no hosts.', [_IDENT]),
    'list': manage_args.Command(list_aggregates, 'List aggregates.', []),
    'show': manage_args.Command(show, 'Show one aggregate.', [_IDENT]),
    'add-host': manage_args.Command(add_host, 'Add a compute host.',
                                    [_IDENT, _HOST]),
    'remove-host': manage_args.Command(remove_host, 'Remove a host.',
                                       [_IDENT, _HOST]),
    'set-metadata': manage_args.Command(
        set_metadata, 'Set (KEY=VALUE) or unset (KEY) metadata keys.', [
            _IDENT,
            manage_args.arg('items', metavar='KEY[=VALUE]', nargs='+',
                            type=manage_args.key_value_or_key)]),
})

"""What the conductor's operations on existing servers share.

Every operation (migrate, resize, confirm, revert, live-migrate, evacuate,
rebuild, shelve, unshelve) starts the same way: it takes the instance with
one conditional UPDATE that sets its ``task_state`` only if the instance is
in a state the operation may start from and no other operation is under
way, so that two operations on one instance never interleave; a refused
start changes nothing and says why. It ends by clearing ``task_state``
(:func:`finish`), also when it fails (:func:`abort`). The three send the
operation's ``instance.<action>.start``, ``.end`` and ``.error``
notifications (see :mod:`scheduler.notifications.instance`); a failure to
find a destination also sends ``compute_task.<task>.error``::

    row = common.start(uuid, 'migrate', (ACTIVE,), RESIZE_PREP)
    try:
        ...
    except Exception:
        common.abort(uuid)
        raise
    common.finish(uuid, vm_state=RESIZED, host=..., node=...)
    return common.view(uuid)
"""

import sys
import threading

from oslo_log import log as logging

from scheduler import cells
from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import mappings
from scheduler.db import moves
from scheduler import exception
from scheduler import notifications
from scheduler.notifications import compute_task as compute_task_notes
from scheduler.notifications import instance as instance_notes
from scheduler.objects import request_spec as request_spec_obj

LOG = logging.getLogger(__name__)

# The conductor task each operation's scheduling failure is reported
# under (compute_task.<task>.error), as Nova's.
TASKS = {'migrate': 'migrate_server', 'resize': 'migrate_server',
         'live-migrate': 'migrate_server', 'rebuild': 'rebuild_server',
         'evacuate': 'rebuild_server', 'unshelve': 'unshelve_instance'}

# {instance uuid: action} of the operations under way in this process,
# so that finish() and abort() know what ended. start() makes sure only
# one operation at a time holds an instance.
_under_way = {}
_under_way_lock = threading.Lock()


def start(instance_uuid, action, vm_states, task_state):
    """Mark the instance as taken by ``action`` (sets ``task_state``) if
    its vm_state is one of ``vm_states`` and no task is under way; its row
    as it was before.

    :raises: InstanceNotFound, InstanceInvalidState
    """
    with db_api.writer() as session:
        row = db_instances.get(session, instance_uuid)
        if not db_instances.update(
                session, instance_uuid, expected_vm_state=tuple(vm_states),
                expected_task_state=db_instances.NO_TASK,
                task_state=task_state):
            raise exception.InstanceInvalidState(
                action=action, uuid=instance_uuid, vm_state=row.vm_state,
                task_state=row.task_state)
    LOG.info('%s of instance %s started (%s on %s)', action.capitalize(),
             instance_uuid, row.vm_state, row.host)
    with _under_way_lock:
        _under_way[instance_uuid] = action
    notify_action(instance_uuid, action, 'start', row, task_state=task_state)
    return row


def finish(instance_uuid, error=None, **values):
    """Clear ``task_state`` and set ``values`` on the instance; the
    operation has :func:`ended` (in error with ``error``, or if ``values``
    put the instance in ERROR)."""
    values.setdefault('task_state', None)
    with db_api.writer() as session:
        db_instances.update(session, instance_uuid, **values)
    failed = values.get('vm_state') == db_instances.ERROR
    ended(instance_uuid, error, failed=failed,
          fault=values.get('fault') if failed else None)


def abort(instance_uuid):
    """Clear ``task_state`` after a failed operation; nothing else. Called
    while the failure is handled: its exception goes in the operation's
    ``instance.<action>.error`` notification."""
    with db_api.writer() as session:
        db_instances.update(session, instance_uuid, task_state=None)
    ended(instance_uuid, sys.exc_info()[1], failed=True)


def ended(instance_uuid, error=None, failed=False, fault=None):
    """The operation :func:`start` began on the instance is over: send its
    ``instance.<action>.end``, or ``.error`` when it failed (``error``
    the exception, or ``failed`` with the ``fault`` text), and for a
    destination not found ``compute_task.<task>.error`` too. Operations
    that end with writes of their own call this after them."""
    with _under_way_lock:
        action = _under_way.pop(instance_uuid, None)
    if action is None or not notifications.enabled():
        return
    failed = failed or error is not None
    row = notify_action(instance_uuid, action, 'error' if failed else 'end',
                        fault=error if error is not None else fault)
    if isinstance(error, exception.NoValidHost) and action in TASKS \
            and row is not None:
        try:
            spec = spec_for(row)
        except exception.InvalidRequest:
            spec = None
        compute_task_notes.task_error(None, TASKS[action], instance_uuid,
                                      spec, error, row.vm_state)


def notify_action(instance_uuid, action, phase, row=None, fault=None,
                  **overrides):
    """``instance.<event>.<phase>`` for ``action``; the row it read (or
    was given), or None when notifications are off. Never raises: a
    notification is not worth failing an operation for."""
    if not notifications.enabled():
        return None
    try:
        if row is None:
            with db_api.reader() as session:
                row = db_instances.get(session, instance_uuid)
        instance_notes.action(
            None, row, instance_notes.CONDUCTOR_ACTIONS.get(
                action, action.replace('-', '_')), phase,
            instance_notes.BINARY_CONDUCTOR, fault=fault, **overrides)
    except Exception:
        LOG.exception('Could not notify %s.%s of instance %s', action, phase,
                      instance_uuid)
        return None
    return row


def view(instance_uuid, migration_uuid=None):
    """What an operation answers: the instance as it is now (and the
    migration it made, if any), as a dict of plain values."""
    with db_api.reader() as session:
        row = db_instances.get(session, instance_uuid)
        answer = {'uuid': row.uuid, 'vm_state': row.vm_state,
                  'task_state': row.task_state, 'host': row.host,
                  'node': row.node, 'fault': row.fault,
                  'flavor': row.flavor}
        if migration_uuid is not None:
            migration = moves.get(session, migration_uuid)
            answer['migration'] = {
                name: getattr(migration, name)
                for name in ('uuid', 'migration_type', 'status',
                             'source_host', 'source_node', 'dest_host',
                             'dest_node', 'error')}
    return answer


def spec_for(row, flavor=None):
    """A RequestSpec for moving the instance ``row``: the spec it was
    built with, for this one instance, without the build's retries and
    host restrictions; with ``flavor`` (a Flavor) instead of its own."""
    if not row.request_spec:
        raise exception.InvalidRequest(
            reason='instance %s has no request spec recorded' % row.uuid)
    spec = request_spec_obj.RequestSpec.obj_from_primitive(row.request_spec)
    spec.instance_uuid = row.uuid
    spec.num_instances = 1
    for name in ('retry', 'ignore_hosts', 'force_hosts', 'force_nodes',
                 'requested_destination'):
        setattr(spec, name, None)
    spec.is_rebuild = False
    if flavor is not None:
        spec.flavor = flavor
    return spec


def flavor_dict(flavor):
    """A Flavor as the ``instances.flavor`` column stores it."""
    return {name: getattr(flavor, name) for name in flavor.fields
            if flavor.obj_attr_is_set(name)}


def node_of(host, nodename=None):
    """The compute node row of ``host`` (and ``nodename``); a host with
    several nodes needs the node named.

    :raises: HostNotFound, InvalidRequest
    """
    with db_api.reader() as session:
        if nodename:
            node = db_compute_nodes.get_node_by_name(session, host, nodename)
            if node is None:
                raise exception.HostNotFound(host='%s/%s' % (host, nodename))
            return node
        nodes = [node for node in db_compute_nodes.get_nodes(session)
                 if node.host == host]
    if not nodes:
        raise exception.HostNotFound(host=host)
    if len(nodes) > 1:
        raise exception.InvalidRequest(
            reason='host %s has %d nodes; name one' % (host, len(nodes)))
    return nodes[0]


def selection_cell(selection):
    """The CellMapping whose database holds a Selection's node: its
    ``cell_uuid`` (Selection 1.1), else its host's mapping (an older
    scheduler); :data:`cells.LOCAL` without cells."""
    cell_uuid = selection.obj_get('cell_uuid')
    if cell_uuid is not None:
        return cells.get_cell(cell_uuid)
    return cells.host_cell(selection.service_host) or cells.LOCAL


def instance_cell(row):
    """The CellMapping an instance (its row) lives in: its host's
    mapping, else (an offloaded instance) its instance mapping's; None
    without cells or when it is mapped nowhere."""
    if row.host:
        return cells.host_cell(row.host)
    if not db_api.api_database_configured():
        return None
    with db_api.api_reader() as session:
        mapping = mappings.get_instance_mapping(session, row.uuid)
    if mapping is None or mapping.cell_uuid is None:
        return None
    return cells.get_cell(mapping.cell_uuid)


def keep_in_cell(spec, row):
    """Keep a move of instance ``row`` (migrate, live migration,
    evacuate, unshelve) in the cell it lives in, as Nova does (no
    cross-cell move: ``allow_cross_cell_move`` False); returns the
    cell's uuid, None without cells."""
    cell = instance_cell(row)
    if cell is None or cell.uuid is None:
        return None
    destination = spec.obj_get('requested_destination') or \
        request_spec_obj.Destination()
    destination.cell = request_spec_obj.CellMapping(uuid=cell.uuid,
                                                    name=cell.name)
    destination.allow_cross_cell_move = False
    spec.requested_destination = destination
    return cell.uuid


def _kept_cell(spec):
    destination = spec.obj_get('requested_destination')
    cell = None if destination is None else destination.obj_get('cell')
    return None if cell is None else cell.uuid


def in_other_cell(spec, selection):
    """True if ``selection`` lies outside the cell ``spec`` keeps its
    move in (see :func:`keep_in_cell`)."""
    landed = selection.obj_get('cell_uuid')
    return landed is not None and _kept_cell(spec) not in (None, landed)


def refuse_other_cell(instance_uuid, spec, selection):
    """Refuse a destination the scheduler chose outside the instance's
    cell (cross-cell moves are not supported, as Nova without
    ``allow_cross_cell_move``): outside the cell ``spec`` keeps the move
    in (a scheduler that reads every cell names the node's cell), or
    (an older scheduler, or a cell conductor's) a node this cell's
    database does not have. The scheduler's claim in the other cell is
    given back when that cell is known; otherwise that cell's stray-claim
    reaper frees it (its consumer is unknown there).

    :raises: CrossCellMoveNotSupported
    """
    if in_other_cell(spec, selection):
        dest = selection_cell(selection)
        with cells.target(dest):
            release(instance_uuid)
        raise cross_cell_error(instance_uuid, _cell_or_none(
            _kept_cell(spec)), dest, selection.service_host)
    with db_api.reader() as session:
        if selection.compute_node_uuid:
            node = db_compute_nodes.get_node_by_uuid(
                session, selection.compute_node_uuid)
        else:
            node = db_compute_nodes.get_node_by_name(
                session, selection.service_host, selection.nodename)
    if node is not None and node.host == selection.service_host:
        return
    source = _cell_or_none(_kept_cell(spec)) or _targeted_cell()
    dest = None
    if db_api.api_database_configured():
        dest = cells.host_cell(selection.service_host)
        if dest is not None and (source is None or
                                 dest.uuid != source.uuid):
            with cells.target(dest):
                release(instance_uuid)
    raise cross_cell_error(instance_uuid, source, dest,
                           selection.service_host)


def refuse_forced_cross_cell(row, host):
    """Refuse a forced destination ``host`` outside the cell of instance
    ``row``; the destination's CellMapping (None without cells).

    :raises: CrossCellMoveNotSupported
    """
    source, dest = instance_cell(row), cells.host_cell(host)
    if source is not None and dest is not None and \
            source.uuid != dest.uuid:
        raise cross_cell_error(row.uuid, source, dest, host)
    return dest


def cross_cell_error(instance_uuid, source, dest, host):
    """The error of every move refused because ``host`` is in another
    cell than the instance: CrossCellMoveNotSupported naming both cells
    (CellMappings; None when not known here)."""
    LOG.warning('Refused moving instance %s to host %s: it is in cell %s, '
                'the host in cell %s', instance_uuid, host,
                _label(source), _label(dest))
    return exception.CrossCellMoveNotSupported(
        uuid=instance_uuid, host=host,
        cell='cell %s' % source.label() if source is not None
        else "this conductor's cell",
        dest_cell='cell %s' % dest.label() if dest is not None
        else 'another cell')


def _label(cell):
    return '-' if cell is None else cell.label()


def _cell_or_none(cell_uuid):
    return None if cell_uuid is None else cells.get_cell(cell_uuid)


def _targeted_cell():
    """The CellMapping whose database the sessions go to now, None when
    it is not known (no ``[api_database]``)."""
    if not db_api.api_database_configured():
        return None
    url = db_api.targeted_connection()
    return next((cell for cell in cells.get_cells()
                 if (cell.database_connection or
                     conf.CONF.database.connection) == url), None)


@db_api.retry_on_db_error
def release(consumer_uuid):
    """Drop every allocation of ``consumer_uuid``; what was released."""
    with db_api.writer() as session:
        return claims.release_resources(session, consumer_uuid)


@db_api.retry_on_db_error
def move_allocations(from_consumer, to_consumer):
    """Hand ``from_consumer``'s allocations to ``to_consumer``."""
    with db_api.writer() as session:
        return claims.move_allocations(session, from_consumer, to_consumer)

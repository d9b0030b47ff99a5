"""What the conductor's operations on existing servers share.

Every operation (migrate, resize, confirm, revert, live-migrate, evacuate,
rebuild, shelve, unshelve) starts the same way: it takes the instance with
one conditional UPDATE that sets its ``task_state`` only if the instance is
in a state the operation may start from and no other operation is under
way, so that two operations on one instance never interleave; a refused
start changes nothing and says why. It ends by clearing ``task_state``
(:func:`finish`), also when it fails (:func:`abort`)::

    row = common.start(uuid, 'migrate', (ACTIVE,), RESIZE_PREP)
    try:
        ...
    except Exception:
        common.abort(uuid)
        raise
    common.finish(uuid, vm_state=RESIZED, host=..., node=...)
    return common.view(uuid)
"""

from oslo_log import log as logging

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import instances as db_instances
from scheduler.db import moves
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj

LOG = logging.getLogger(__name__)


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
    return row


def finish(instance_uuid, **values):
    """Clear ``task_state`` and set ``values`` on the instance."""
    values.setdefault('task_state', None)
    with db_api.writer() as session:
        db_instances.update(session, instance_uuid, **values)


def abort(instance_uuid):
    """Clear ``task_state`` after a failed operation; nothing else."""
    finish(instance_uuid)


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

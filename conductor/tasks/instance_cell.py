"""Operations on existing servers, run in the database of the server's
cell.

A super-conductor (``[api_database]`` set) is asked to migrate, resize,
rebuild, evacuate, shelve, unshelve or delete servers that live in the
cells' databases, not in its own ``[database]``. :func:`target` finds
the server's cell through its instance mapping and sends the
operation's sessions there, as Nova's super-conductor targets the
instance's cell. The operation's calls to computes go over this
conductor's own broker, so a cell with a broker of its own
(``transport_url`` other than this conductor's) is refused with the
name of the cell: its own conductor serves those operations. Without
``[api_database]`` (a cell conductor, or one cell) nothing is looked
up::

    with instance_cell.target(uuid):
        return self.migrate_task.migrate(ctxt, uuid, flavor)

:func:`target` raises InstanceNotFound (no mapping), InvalidRequest
(still being scheduled; a cell on another broker) and
ApiDatabaseUnavailable.
"""

import contextlib

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler import exception

CONF = conf.CONF


def _mapping(instance_uuid):
    try:
        with db_api.api_reader() as session:
            return mappings.get_instance_mapping(session, instance_uuid)
    except (db_exc.DBError, sa_exc.SQLAlchemyError) as error:
        raise exception.ApiDatabaseUnavailable(
            url=config.redact_database_url(db_api.api_connection()),
            reason=db_api.describe_error(error))


@contextlib.contextmanager
def target(instance_uuid):
    """Run the block in the database of ``instance_uuid``'s cell."""
    if not db_api.api_database_configured():
        yield
        return
    mapping = _mapping(instance_uuid)
    if mapping is None:
        raise exception.InstanceNotFound(uuid=instance_uuid)
    if mapping.cell_id is None:
        raise exception.InvalidRequest(
            reason='instance %s is still being scheduled (it has no cell '
                   'yet)' % instance_uuid)
    cell = cells.get_cell(mapping.cell_uuid)
    if cell.transport_url not in (None, CONF.transport_url) and \
            not cell.is_cell0:
        raise exception.InvalidRequest(
            reason='instance %s is in cell %s, which has a broker of its '
                   'own: ask the conductor of that cell'
                   % (instance_uuid, cell.label()))
    with cells.target(cell):
        yield

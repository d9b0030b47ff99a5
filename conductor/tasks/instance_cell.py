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
name of the cell: its own conductor serves those operations. A delete
is the exception (``any_broker``), as Nova's API deletes a server in any
cell: the super-conductor tells the compute over the cell's broker
(:class:`CellComputes`, one client per broker) and marks the server
deleted in the cell's database. Without ``[api_database]`` (a cell
conductor, or one cell) nothing is looked up::

    with instance_cell.target(uuid):
        return self.migrate_task.migrate(ctxt, uuid, flavor)
    with instance_cell.target(uuid, any_broker=True) as cell:
        compute_api = computes.of(cell)     # cell None: the own broker

:func:`target` raises InstanceNotFound (no mapping), InvalidRequest
(still being scheduled; a cell on another broker) and
ApiDatabaseUnavailable.
"""

import contextlib
import threading

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from compute import rpcapi as compute_rpcapi
from scheduler import cells
from scheduler import conf
from scheduler import config
from scheduler.db import api as db_api
from scheduler.db import mappings
from scheduler import exception
from scheduler import rpc

CONF = conf.CONF


def _mapping(instance_uuid):
    try:
        with db_api.api_reader() as session:
            return mappings.get_instance_mapping(session, instance_uuid)
    except (db_exc.DBError, sa_exc.SQLAlchemyError) as error:
        raise exception.ApiDatabaseUnavailable(
            url=config.redact_database_url(db_api.api_connection()),
            reason=db_api.describe_error(error))


def own_broker(cell):
    """Whether the computes of ``cell`` speak on this conductor's broker
    (cell0 has none: nothing is sent there)."""
    return cell.is_cell0 or cell.transport_url in (None, CONF.transport_url)


@contextlib.contextmanager
def target(instance_uuid, any_broker=False):
    """Run the block in the database of ``instance_uuid``'s cell; yield
    the cell (None without ``[api_database]``). A cell on a broker of
    its own is refused unless ``any_broker``."""
    if not db_api.api_database_configured():
        yield None
        return
    mapping = _mapping(instance_uuid)
    if mapping is None:
        raise exception.InstanceNotFound(uuid=instance_uuid)
    if mapping.cell_id is None:
        raise exception.InvalidRequest(
            reason='instance %s is still being scheduled (it has no cell '
                   'yet)' % instance_uuid)
    cell = cells.get_cell(mapping.cell_uuid)
    if not (any_broker or own_broker(cell)):
        raise exception.InvalidRequest(
            reason='instance %s is in cell %s, which has a broker of its '
                   'own: ask the conductor of that cell'
                   % (instance_uuid, cell.label()))
    with cells.target(cell):
        yield cell


class CellComputes:
    """Compute RPC clients by broker: ``of(cell)`` speaks on the cell's
    broker, or on this conductor's own (``own``) for a cell on it, cell0
    and None."""

    def __init__(self, own):
        self._own = own
        self._by_url = {}
        self._lock = threading.Lock()

    def of(self, cell):
        if cell is None or own_broker(cell):
            return self._own
        return self.for_url(cell.transport_url)

    def for_url(self, url):
        """The client on broker ``url`` (None: this conductor's own)."""
        if url is None:
            return self._own
        with self._lock:
            api = self._by_url.get(url)
            if api is None:
                api = compute_rpcapi.ComputeAPI(
                    transport=rpc.cell_transport(CONF, url))
                self._by_url[url] = api
            return api

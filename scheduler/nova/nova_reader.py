"""Nova's hosts, read where Nova keeps them, read only.

:class:`NovaReader` reads Nova's API database (the cells, the host
mappings, the host aggregates) and the database of each enabled cell but
cell0 (the compute nodes, the ``nova-compute`` services and the
instances that are not soft-deleted), as Nova's HostManager reads its
enabled cells, into a :class:`NovaState`, the input of
:mod:`scheduler.nova.mirror`::

    reader = NovaReader(api_url, default_cell_url)
    state = reader.read()
    state.nodes['3f1c...']['host']

Every engine it makes refuses to write at the session level (SQLite's
``query_only``, MySQL's and PostgreSQL's read-only transactions): a bug
here cannot change Nova's data. Each database is read in one transaction,
so one cell's nodes, services and instances agree with one another.
A database that fails raises :class:`NovaUnavailable` naming it (its
password masked); nothing partial is returned.
"""

import json
import threading
from urllib import parse as urlparse

from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import config
from scheduler.nova import nova_schema as schema

LOG = logging.getLogger(__name__)


class NovaUnavailable(Exception):
    """A database of Nova's could not be read."""


class NovaState:
    """What one read of Nova's databases found.

    ``cells``: ``{uuid: name}`` of the cells read; ``host_cells``:
    ``{host: cell uuid}`` of the mapped hosts, ``node_cells`` the same of
    the hosts whose nodes were read (the cell they were found in, which
    Nova's scheduler gives as a selection's cell); ``aggregates``: ``{uuid:
    (name, created_at, hosts, metadata)}``; ``nodes``, ``services`` and
    ``instances``: ``{node uuid: row}``, ``{host: row}`` and
    ``{instance uuid: row}``, the rows as dicts, of every cell read.
    """

    def __init__(self):
        self.cells = {}
        self.host_cells = {}
        self.node_cells = {}
        self.aggregates = {}
        self.nodes = {}
        self.services = {}
        self.instances = {}


_READ_ONLY = {
    'sqlite': 'PRAGMA query_only = ON',
    'mysql': 'SET SESSION TRANSACTION READ ONLY',
    'mariadb': 'SET SESSION TRANSACTION READ ONLY',
    'postgresql': 'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY',
}


def read_only_engine(url):
    """An engine on ``url`` whose every connection refuses writes.

    :raises NovaUnavailable: a database whose kind has no read-only
        session here (SQLite, MySQL/MariaDB and PostgreSQL have).
    """
    engine = sa.create_engine(url, pool_pre_ping=True)
    statement = _READ_ONLY.get(engine.dialect.name)
    if statement is None:
        engine.dispose()
        raise NovaUnavailable('cannot read %s read only: %s databases are '
                              'not supported' % (
                                  config.redact_database_url(url),
                                  engine.dialect.name))

    def connect(dbapi_connection, connection_record):
        cursor = dbapi_connection.cursor()
        cursor.execute(statement)
        cursor.close()
        if engine.dialect.name == 'postgresql':
            dbapi_connection.commit()

    sa.event.listen(engine, 'connect', connect)
    return engine


def cell_url(template, default_url):
    """A cell mapping's ``database_connection``: a URL, or a template
    whose ``{username}``, ``{password}``, ``{hostname}``, ``{port}``,
    ``{scheme}``, ``{path}``, ``{query}`` and ``{fragment}`` come from
    ``[database] connection`` (``default_url``), as Nova formats them."""
    if '{' not in template:
        return template
    if not default_url:
        raise NovaUnavailable('a cell mapping database_connection is a '
                              'template, and [database] connection, which '
                              'fills it, is not set')
    parts = urlparse.urlparse(default_url)
    return template.format(
        username=parts.username, password=parts.password,
        hostname=parts.hostname, port=parts.port, scheme=parts.scheme,
        query=parts.query, fragment=parts.fragment,
        path=parts.path.lstrip('/'))


def _json(text, name, where):
    """A JSON column's value; None (logged) when it is not JSON."""
    if text in (None, ''):
        return None
    try:
        return json.loads(text)
    except ValueError:
        LOG.debug('Ignoring the %s of %s: not JSON', name, where)
        return None


class NovaReader:
    """Reads Nova's API database at ``api_url`` and its cells (see the
    module's doc); ``default_url``: ``[database] connection`` of the
    nova.conf, which fills cell mapping templates."""

    def __init__(self, api_url, default_url=None):
        if not api_url:
            raise NovaUnavailable('[api_database] connection (Nova\'s API '
                                  'database) is not set')
        self.api_url = api_url
        self.default_url = default_url
        self._engines = {}
        self._lock = threading.Lock()

    def _engine(self, url):
        with self._lock:
            engine = self._engines.get(url)
            if engine is None:
                engine = self._engines[url] = read_only_engine(url)
            return engine

    def dispose(self, close=True):
        """Drop the engines; ``close=False`` in a forked child, whose
        pooled connections are its parent's to close."""
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.dispose(close=close)

    def read(self):
        """A :class:`NovaState` of every cell; :class:`NovaUnavailable`
        when any database fails."""
        state = NovaState()
        cells = self._read_api(state)
        for cell_uuid, name, template, disabled in cells:
            if disabled:
                LOG.debug('Not reading the hosts of disabled cell %s',
                          name or cell_uuid)
                continue
            url = cell_url(template or '', self.default_url)
            self._read_cell(state, cell_uuid, name, url)
        return state

    def _connect(self, url, what):
        try:
            return self._engine(url).connect()
        except sa.exc.SQLAlchemyError as error:
            raise self._unavailable(url, what, error) from error

    def _unavailable(self, url, what, error):
        reason = str(getattr(error, 'orig', None) or error).strip()
        reason = reason.splitlines()[0] if reason else type(error).__name__
        return NovaUnavailable('could not read %s at %s: %s' % (
            what, config.redact_database_url(url),
            config.scrub(reason, [url])))

    def _read_api(self, state):
        """The cells to read (cell0 aside), the host mappings and the
        aggregates, into ``state``."""
        what = "Nova's API database"
        try:
            with self._connect(self.api_url, what) as connection, \
                    connection.begin():
                cells = connection.execute(sa.select(
                    schema.CELL_MAPPINGS.c.id, schema.CELL_MAPPINGS.c.uuid,
                    schema.CELL_MAPPINGS.c.name,
                    schema.CELL_MAPPINGS.c.database_connection,
                    schema.CELL_MAPPINGS.c.disabled)).all()
                by_id = {cell.id: cell.uuid for cell in cells}
                for host, cell_id in connection.execute(sa.select(
                        schema.HOST_MAPPINGS.c.host,
                        schema.HOST_MAPPINGS.c.cell_id)):
                    if cell_id in by_id:
                        state.host_cells[host] = by_id[cell_id]
                self._read_aggregates(connection, state)
        except NovaUnavailable:
            raise
        except sa.exc.SQLAlchemyError as error:
            raise self._unavailable(self.api_url, what, error) from error
        return [(cell.uuid, cell.name, cell.database_connection,
                 bool(cell.disabled))
                for cell in cells if cell.uuid != schema.CELL0_UUID]

    @staticmethod
    def _read_aggregates(connection, state):
        aggregates = schema.AGGREGATES
        by_id = {}
        for row in connection.execute(sa.select(
                aggregates.c.id, aggregates.c.uuid, aggregates.c.name,
                aggregates.c.created_at)):
            if row.uuid:
                by_id[row.id] = (row.uuid, row.name, row.created_at,
                                 set(), {})
        hosts = schema.AGGREGATE_HOSTS
        for aggregate_id, host in connection.execute(sa.select(
                hosts.c.aggregate_id, hosts.c.host)):
            if aggregate_id in by_id and host:
                by_id[aggregate_id][3].add(host)
        metadata = schema.AGGREGATE_METADATA
        for aggregate_id, key, value in connection.execute(sa.select(
                metadata.c.aggregate_id, metadata.c.key, metadata.c.value)):
            if aggregate_id in by_id:
                by_id[aggregate_id][4][key] = value
        for uuid, name, created_at, members, meta in by_id.values():
            state.aggregates[uuid] = (name, created_at, members, meta)

    def _read_cell(self, state, cell_uuid, name, url):
        what = "Nova's cell %s database" % (name or cell_uuid)
        try:
            with self._connect(url, what) as connection, \
                    connection.begin():
                self._read_nodes(connection, state, cell_uuid,
                                 name or cell_uuid)
                self._read_services(connection, state)
                self._read_instances(connection, state)
        except NovaUnavailable:
            raise
        except sa.exc.SQLAlchemyError as error:
            raise self._unavailable(url, what, error) from error
        state.cells[cell_uuid] = name

    @staticmethod
    def _read_nodes(connection, state, cell_uuid, cell):
        nodes = schema.COMPUTE_NODES
        for row in connection.execute(sa.select(nodes).where(
                nodes.c.deleted == 0)):
            if not row.uuid or row.uuid in state.nodes:
                continue
            where = 'node %s of cell %s' % (row.uuid, cell)
            if row.host:
                state.node_cells.setdefault(row.host, cell_uuid)
            state.nodes[row.uuid] = {
                'host': row.host,
                'hypervisor_hostname': row.hypervisor_hostname,
                'hypervisor_type': row.hypervisor_type,
                'hypervisor_version': row.hypervisor_version or 0,
                'host_ip': row.host_ip,
                'cpu_info': _json(row.cpu_info, 'cpu_info', where),
                'disk_available_least': row.disk_available_least,
                'io_workload': row.current_workload or 0,
                'num_instances': row.running_vms or 0,
            }

    @staticmethod
    def _read_services(connection, state):
        services = schema.SERVICES
        for row in connection.execute(sa.select(services).where(
                services.c.deleted == 0,
                services.c.binary == schema.NOVA_COMPUTE)):
            if row.host in state.services:
                continue
            state.services[row.host] = {
                'disabled': bool(row.disabled),
                'disabled_reason': row.disabled_reason,
                'forced_down': bool(row.forced_down),
                'last_seen_up': row.last_seen_up,
                'created_at': row.created_at,
            }

    @staticmethod
    def _read_instances(connection, state):
        instances = schema.INSTANCES
        for row in connection.execute(sa.select(instances).where(
                instances.c.deleted == 0,
                instances.c.host.is_not(None))):
            state.instances[row.uuid] = {
                'host': row.host, 'node': row.node,
                'vm_state': row.vm_state or 'building',
                'task_state': row.task_state,
                'display_name': row.display_name,
                'project_id': row.project_id, 'user_id': row.user_id,
                'availability_zone': row.availability_zone,
            }

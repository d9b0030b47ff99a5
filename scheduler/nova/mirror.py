"""The host mirror of Nova mode: Nova's hosts in Gantt's schema.

In Nova mode (``[scheduler] backend = nova``) ``[api_database]`` and
``[database]`` are Nova's (a nova.conf drop-in). The scheduler's host
cache reads Gantt's schema, unchanged: this module copies Nova's state,
read only from where Nova keeps it, into a private database of Gantt's
schema (the mirror), and points Gantt's database use at the mirror.

* Nova's API database and cell databases, read only
  (:mod:`scheduler.nova.nova_reader`): compute nodes, ``nova-compute``
  services, instances, host mappings, aggregates;
* Placement (:mod:`scheduler.nova.placement_reader`): each root
  provider's inventories, usages, traits and aggregates, read again only
  when its generation moved;
* joined into the rows Gantt's schema holds
  (:mod:`scheduler.nova.mirror_rows`) and written, only what differs, in
  one transaction, bumping generations and ``updated_at`` as Gantt's
  writers do (:mod:`scheduler.nova.mirror_write`).

A sync that fails (a database of Nova's, even one cell's, or Placement
away, the mirror locked) writes nothing: the mirror stays as it was, one
WARNING says why (once, until the reason changes), and the next sync
catches up.

:func:`configure` runs once, in the process that forks the workers: they
share its mirror (the private file is removed when that process exits),
and each syncs it from its own periodic task, which also tells its own
host cache what changed, whoever wrote it.

The scheduler's start-up in Nova mode::

    from scheduler.nova import mirror

    mirror.configure(CONF)           # before anything opens [database]
    mirror.sync()                    # once before serving (raises if it
                                     # cannot: mirror.SyncFailed)
    manager = host_cache.HostManager()
    tasks.append(mirror.periodic_task(manager))
    ...
    selection.cell_uuid = mirror.cell_uuid_of(host)
"""

import atexit
import os
import shutil
import tempfile
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.nova import mirror_rows
from scheduler.nova import mirror_write
from scheduler.nova import nova_reader
from scheduler.nova import placement_client
from scheduler.nova import placement_reader
from scheduler import service

CONF = conf.CONF
LOG = logging.getLogger(__name__)

MIRROR_FILE = 'mirror.sqlite'
# Seconds between two syncs that compare every part of the mirror with
# Nova's state (the others skip the parts unchanged since their last
# write: see mirror_write.write).
FULL_COMPARE_INTERVAL = 300.0
TASK_NAME = 'nova_mirror_sync'


class SyncFailed(Exception):
    """A sync of the mirror could not read Nova or Placement, or write
    the mirror; the mirror is as it was."""


class Mirror:
    """Syncs the mirror (``[database]`` once :func:`configure` ran) from
    ``nova`` (a NovaReader) and the Placement ``client_factory()``
    gives (called again in a forked child: a keystoneauth session is not
    shared across processes)."""

    def __init__(self, nova, client_factory):
        self._nova = nova
        self._client_factory = client_factory
        self._providers = None
        self._pid = None
        self._lock = threading.Lock()
        self._failure = None
        # {host: cell uuid} at the last sync: the cell its nodes were
        # found in, else its host mapping's.
        self._host_cells = {}
        # The Desired of the last write that committed, and when every
        # part was last compared (monotonic).
        self._previous = None
        self._compared_at = 0.0
        self.stats = {'syncs': 0, 'failures': 0, 'last_changes': {}}

    def _provider_reader(self):
        if self._providers is None or self._pid != os.getpid():
            if self._pid is not None and self._pid != os.getpid():
                self._nova.dispose(close=False)
            self._providers = placement_reader.ProviderReader(
                self._client_factory())
            self._pid = os.getpid()
            self._previous = None
        return self._providers

    def sync(self):
        """Read Nova and Placement and write what changed into the
        mirror, in one transaction; the :class:`mirror_write.Written`.

        :raises SyncFailed: nothing was written (logged once as a
            WARNING until the reason changes).
        """
        with self._lock:
            try:
                providers = self._provider_reader()
                state = self._nova.read()
                wanted = mirror_rows.desired(state, providers.read())
                now = time.monotonic()
                compare_all = now - self._compared_at >= \
                    FULL_COMPARE_INTERVAL
                with db_api.writer() as session:
                    written = mirror_write.write(
                        session, wanted,
                        None if compare_all else self._previous)
            except (nova_reader.NovaUnavailable,
                    placement_reader.PlacementError,
                    db_exc.DBError, sa.exc.SQLAlchemyError) as error:
                self.stats['failures'] += 1
                reason = _reason(error)
                if reason != self._failure:
                    LOG.warning('The mirror of Nova\'s hosts was not '
                                'synced (%s); it stays as it was until a '
                                'sync succeeds', reason)
                self._failure = reason
                # The next sync compares every part.
                self._compared_at = 0.0
                raise SyncFailed(reason) from error
            if self._failure is not None:
                LOG.info('The mirror of Nova\'s hosts is synced again')
            self._failure = None
            changed, removed, hosts = mirror_rows.seen_changes(
                self._previous, wanted)
            written.seen = changed or bool(written)
            written.removed = max(written.removed, removed)
            written.instance_hosts |= hosts
            self._previous = wanted
            if compare_all:
                self._compared_at = now
            self._host_cells = {**state.host_cells, **state.node_cells}
            self.stats['syncs'] += 1
            self.stats['last_changes'] = dict(written.changes)
            if wanted.skipped:
                LOG.debug('Not mirrored: %s', ', '.join(
                    '%d %s' % (count, why)
                    for why, count in sorted(wanted.skipped.items())))
            if written:
                LOG.debug('Mirror synced: %s', ', '.join(
                    '%d %s' % (count, what)
                    for what, count in sorted(written.changes.items())))
            return written

    def cell_uuid_of(self, host):
        """The uuid of ``host``'s cell, as Nova's scheduler gives it in a
        Selection: the cell its nodes were read from (else its host
        mapping's; None: Nova knows no such host)."""
        return self._host_cells.get(host)

    def sync_into(self, host_manager=None):
        """:meth:`sync`, then bring ``host_manager`` (a HostManager) up
        to date with what changed at once (whether this sync or another
        process's wrote it): a refresh (a full one when rows were
        deleted, which incremental refreshes do not see) and the
        instances of the hosts whose instances changed. A failed sync
        changes nothing (already logged)."""
        try:
            written = self.sync()
        except SyncFailed:
            return None
        if host_manager is not None and written.seen:
            host_manager.refresh(full=bool(written.removed))
            if written.instance_hosts:
                host_manager.reload_host_instances(written.instance_hosts)
        return written


def _reason(error):
    if isinstance(error, (db_exc.DBError, sa.exc.SQLAlchemyError)):
        return 'the mirror database: %s' % db_api.describe_error(error)
    return str(error)


# -- the process's mirror -----------------------------------------------------

_mirror = None


def _private_url():
    """A SQLite file in a private directory, removed when this process
    (not a forked child) exits."""
    directory = tempfile.mkdtemp(prefix='gantt-nova-mirror-')
    owner = os.getpid()

    def remove():
        if os.getpid() == owner:
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)
    return 'sqlite:///' + os.path.join(directory, MIRROR_FILE)


def configure(conf_=None, client_factory=None):
    """Nova mode's start-up: remember Nova's ``[api_database]`` and
    ``[database]`` URLs for the reader, then point ``[database]
    connection`` at the mirror (``[nova_backend] mirror_connection``, or
    a private SQLite file) and unset ``[database] slave_connection`` and
    ``[api_database] connection``, so
    that Gantt's database layer and host cache use the mirror alone (one
    cell); build the mirror's schema. Call it before anything opens a
    database session. Returns the :class:`Mirror`.

    ``client_factory``: makes the PlacementClient (default: the one
    ``[placement]`` describes).

    :raises nova_reader.NovaUnavailable: ``[api_database] connection``
        is not set (Nova's API database is where the cells are).
    """
    global _mirror
    conf_ = conf_ or CONF
    nova = nova_reader.NovaReader(conf_.api_database.connection,
                                  conf_.database.connection)
    if client_factory is None:
        def client_factory():
            return placement_client.PlacementClient.from_conf(conf_)
    url = conf_.nova_backend.mirror_connection or _private_url()
    conf_.set_override('connection', url, group='database')
    # Nova's replica, if nova.conf names one, is no replica of the mirror.
    conf_.set_override('slave_connection', None, group='database')
    conf_.set_override('connection', None, group='api_database')
    db_api.dispose_engine()
    migration.db_sync()
    _mirror = Mirror(nova, client_factory)
    return _mirror


def configured():
    """Whether :func:`configure` made this process's mirror."""
    return _mirror is not None


def get():
    """The :class:`Mirror` :func:`configure` made.

    :raises RuntimeError: not configured (not Nova mode).
    """
    if _mirror is None:
        raise RuntimeError('the Nova mirror is not configured: '
                           'scheduler.nova.mirror.configure() runs at the '
                           'start of a Nova mode scheduler')
    return _mirror


def sync():
    """:meth:`Mirror.sync` of the configured mirror."""
    return get().sync()


def cell_uuid_of(host):
    """:meth:`Mirror.cell_uuid_of` of the configured mirror (the
    Selection's ``cell_uuid``)."""
    return get().cell_uuid_of(host)


def periodic_task(host_manager=None):
    """The service's periodic task that syncs the configured mirror
    every ``[nova_backend] sync_interval`` seconds
    (:meth:`Mirror.sync_into` ``host_manager``)."""
    mirror = get()
    return service.PeriodicTask(
        TASK_NAME, CONF.nova_backend.sync_interval,
        # The service calls its tasks with an admin context.
        lambda _context=None: mirror.sync_into(host_manager))


def reset():
    """Forget the configured mirror (tests)."""
    global _mirror
    if _mirror is not None:
        _mirror._nova.dispose()
    _mirror = None

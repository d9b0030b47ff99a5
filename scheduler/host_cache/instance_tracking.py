"""Instance tracking: the part of the HostManager that knows instances.

The affinity filters and weighers read the instances on each host
(``HostState.instances``). :class:`InstanceTracking`, a mixin of
:class:`scheduler.host_cache.host_manager.HostManager`, keeps them:

* loaded from SQL with the host table (by the HostManager's first
  refresh);
* updated by the compute agents' fanout casts, which the scheduler
  manager hands over: :meth:`~InstanceTracking.update_instance_info`,
  :meth:`~InstanceTracking.delete_instance_info`, and every
  ``[DEFAULT] scheduler_instance_sync_interval`` seconds
  :meth:`~InstanceTracking.sync_instance_info`, after which a host whose
  instances differ from what its compute says is read from SQL again;
* updated at once by the scheduler's own claims (``consume``), and undone
  when a request releases them (:meth:`~InstanceTracking.forget_instances`).

With ``[filter_scheduler] track_instance_changes`` off the computes send
nothing, and :meth:`~InstanceTracking.request_snapshot` reads every host's
instances from SQL for each request, as Nova does::

    manager.update_instance_info('compute1', {uuid: info})
    table = manager.request_snapshot()
    assert uuid in table.states[table.rows_by_host['compute1'][0]].instances

The mixin uses the HostManager's lock (``_lock``) and table (``_table``).
"""

from oslo_log import log as logging

from scheduler import conf
from scheduler.conf import cached
from scheduler.db import api as db_api
from scheduler.db import instances as db_instances
from scheduler.host_cache import host_instances

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def read_instances(session, hosts=None):
    """``{host: {uuid: InstanceInfo}}`` of the instances in SQL (on every
    host, or on ``hosts``)."""
    return host_instances.group_rows(db_instances.on_hosts(session, hosts))


class InstanceTracking:
    """Mixin of HostManager: the instances on each host."""

    def _init_instance_tracking(self):
        # {host: {uuid: InstanceInfo}}; a host's dict is replaced, never
        # changed, so that HostStates can share it.
        self._instances = {}
        # Hosts whose compute told us its instances (Nova's "updated").
        self._instances_heard = set()
        self._instances_loaded = False
        # host -> sequence number of its last instance change.
        self._instance_seq = 0
        self._instance_changed = {}

    def _load_instances(self, by_host):
        """Called with the lock held: the first load from SQL; what the
        computes said while SQL was read is newer and stays."""
        for host, instances in by_host.items():
            if host not in self._instance_changed:
                self._instances[host] = instances
        self._instances_loaded = True

    def _record_instance(self, host, instance_uuid, instance_info,
                         update_table=True):
        """Called with the lock held: a claim put an instance on ``host``.
        Returns the host's instances now; without ``update_table`` the
        caller puts them in the table (with its own change, in one
        replace)."""
        instances = dict(self._instances.get(host,
                                             host_instances.NO_INSTANCES))
        instances[instance_uuid] = instance_info or (
            host_instances.InstanceInfo(None, {}))
        return self._set_host_instances(host, instances, update_table)

    def _instances_of(self, host):
        return self._instances.get(host, host_instances.NO_INSTANCES)

    def update_instance_info(self, host, instances):
        """A compute reports new or changed instances: ``{uuid:
        InstanceInfo}``."""
        with self._lock:
            known = dict(self._instances.get(host,
                                             host_instances.NO_INSTANCES))
            known.update(instances)
            self._instances_heard.add(host)
            self._set_host_instances(host, known)
            self.stats['instance_updates'] += 1

    def delete_instance_info(self, host, instance_uuid):
        """A compute reports that an instance left it."""
        with self._lock:
            if self._knows_instances_of(host):
                known = dict(self._instances.get(
                    host, host_instances.NO_INSTANCES))
                known.pop(instance_uuid, None)
                self._instances_heard.add(host)
                self._set_host_instances(host, known)
                self.stats['instance_updates'] += 1
                return
        LOG.info('Received a delete update from unknown host %s; reading '
                 'its instances from the database', host)
        self.reload_host_instances([host])

    def sync_instance_info(self, host, instance_uuids):
        """A compute says which instances it runs; True if that is what
        the cache holds, else the host's instances are read from SQL."""
        with self._lock:
            if self._knows_instances_of(host) and set(
                    self._instances.get(host, ())) == set(instance_uuids):
                self._instances_heard.add(host)
                LOG.debug('Instances of host %s in sync', host)
                return True
        LOG.info('The instance sync for host %s did not match; reading its '
                 'instances from the database', host)
        self.reload_host_instances([host])
        return False

    def reload_host_instances(self, hosts):
        """Read the instances of ``hosts`` from SQL and keep them, unless
        a compute reported a change while they were read."""
        hosts = set(hosts)
        with self._lock:
            seen = self._instance_seq
        with db_api.reader() as session:
            by_host = read_instances(session, hosts)
        with self._lock:
            for host in hosts:
                if self._instance_changed.get(host, 0) > seen:
                    continue
                self._instances_heard.add(host)
                self._set_host_instances(
                    host, by_host.get(host, host_instances.NO_INSTANCES))
            self.stats['instance_resyncs'] += 1

    def forget_instances(self, consumer_node_pairs):
        """Undo :meth:`consume`'s record of instances whose claims were
        released: ``[(instance uuid, node id)]``."""
        with self._lock:
            for instance_uuid, node_id in consumer_node_pairs:
                table = self._table
                if table is None or node_id not in table.row_by_id:
                    continue
                host = table.states[table.row_by_id[node_id]].host
                known = self._instances.get(host)
                if known and instance_uuid in known:
                    known = dict(known)
                    del known[instance_uuid]
                    self._set_host_instances(host, known)

    def request_snapshot(self):
        """The table one request reads: :meth:`snapshot`, after reading
        every host's instances from SQL when ``[filter_scheduler]
        track_instance_changes`` is off."""
        table = self.snapshot()
        if cached.group('filter_scheduler').track_instance_changes:
            return table
        with db_api.reader() as session:
            by_host = read_instances(session)
        with self._lock:
            for host in set(self._instances) | set(by_host):
                instances = by_host.get(host, host_instances.NO_INSTANCES)
                if self._instances.get(host, {}) != instances:
                    self._set_host_instances(host, instances)
            return self._table

    def _knows_instances_of(self, host):
        return self._instances_loaded or host in self._instances_heard

    def _set_host_instances(self, host, instances, update_table=True):
        """Called with the lock held: ``host`` runs ``instances`` now
        (returned, as the HostStates should hold them)."""
        if instances:
            self._instances[host] = instances
        else:
            self._instances.pop(host, None)
            instances = host_instances.NO_INSTANCES
        self._instance_seq += 1
        self._instance_changed[host] = self._instance_seq
        if update_table and self._table is not None:
            table = self._table
            self._put_states({
                row: host_instances.with_instances(table.states[row],
                                                   instances)
                for row in host_instances.host_rows(table, host)})
        return instances

    def _put_states(self, replaced, claim_only=False):
        """Called with the lock held: ``{row: HostState}`` into the
        table, in place when they keep their identity (see
        HostTable.update_in_place, and its ``claim_only``), else in a
        new table."""
        table = self._table
        if replaced and self._captured is not None:
            # A new table is being built: it gets these too.
            self._captured.update((state.id, state)
                                  for state in replaced.values())
        if replaced and not table.update_in_place(replaced, claim_only):
            self._table = table.replace(replaced)

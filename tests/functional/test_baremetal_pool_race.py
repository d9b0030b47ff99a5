"""A pool of baremetal nodes raced for by four schedulers (issue 50).

Two fake computes stand for Ironic computes: together they report
:data:`POOL` baremetal nodes, each with one unit of ``CUSTOM_GOLD`` and no
vCPUs, RAM or disk (``[fake_virt] baremetal_nodes`` and
``baremetal_resource_class``). Four gantt-scheduler processes share one
PostgreSQL database and one RabbitMQ virtual host. :data:`CALLERS`
threads of this process call ``select_destinations`` as a conductor does
(:class:`scheduler.rpcapi.SchedulerAPI`), one instance with a UUID of its
own per call (recorded beforehand in ``building``, as the conductor
records an instance before it asks), for the flavor a Nova cloud gives a
baremetal node::

    resources:CUSTOM_GOLD=1
    resources:VCPU=0
    resources:MEMORY_MB=0
    resources:DISK_GB=0

:data:`REQUESTS` calls in all, more than there are nodes. Then:

* exactly one call per node succeeds, each on a node of its own, and
  every other call gets NoValidHost;
* SQL agrees: each success's instance holds one allocation, on the node
  its answer named, with ``CUSTOM_GOLD=1`` and nothing else; each node's
  ``CUSTOM_GOLD`` inventory has ``used`` 1; ``gantt-manage db check``
  is ok.

The fault variant SIGKILLs one of the schedulers (by its pid) while the
calls are under way: the calls it took with it are sent again by the
client after its timeout, and still no node is given twice, no more
calls succeed than there are nodes, and the database is consistent.

The figures (successes, NoValidHost, other errors, seconds) are printed:
see them with ``-s``.
"""

import collections
import os
import signal
import threading
import time

from oslo_utils import uuidutils
import pytest
from sqlalchemy import orm

from scheduler import context as gantt_context
from scheduler.db import instances as db_instances
from scheduler import exception
from scheduler.objects import request_spec
from scheduler import rpcapi
from tests.functional import checks
from tests.functional import cluster as cluster_mod
from tests.functional import test_faults

pytestmark = pytest.mark.functional

RESOURCE_CLASS = 'CUSTOM_GOLD'
# host -> its baremetal nodes; POOL in all.
COMPUTES = {'ironic-1': 25, 'ironic-2': 25}
POOL = sum(COMPUTES.values())
SCHEDULERS = ('sched-1', 'sched-2', 'sched-3', 'sched-4')
CALLERS = 16
REQUESTS = 80
# The fault variant kills a scheduler once this many calls were answered.
KILL_AFTER_ANSWERS = 15
# A call's answer on the shared 2-core machine, with the four schedulers
# claiming at once, takes well under a second; a call that a killed
# scheduler took is sent again after this many seconds.
CALL_TIMEOUT = 8
CALLERS_JOIN_SECONDS = 90

COMPUTE_CONF = '''\
[fake_virt]
baremetal_nodes = %d
baremetal_resource_class = gold
'''
BAREMETAL_EXTRA_SPECS = {
    'resources:%s' % RESOURCE_CLASS: '1',
    'resources:VCPU': '0',
    'resources:MEMORY_MB': '0',
    'resources:DISK_GB': '0',
}


def baremetal_spec():
    """A RequestSpec for one instance of the baremetal flavor: its sizes
    are what the node has, its extra specs ask the class instead."""
    flavor = request_spec.Flavor(name='baremetal-gold', vcpus=8,
                                 memory_mb=16384, root_gb=200,
                                 extra_specs=dict(BAREMETAL_EXTRA_SPECS))
    return request_spec.RequestSpec(num_instances=1, flavor=flavor,
                                    project_id='demo')


def record_instances(cluster, count):
    """``count`` new instances in ``building``, recorded as the conductor
    records them before it asks for their destinations (a claim for an
    instance that does not exist is a stray claim to ``db check``);
    their UUIDs."""
    spec = baremetal_spec()
    flavor = dict(name=spec.flavor.name, vcpus=spec.flavor.vcpus,
                  memory_mb=spec.flavor.memory_mb,
                  root_gb=spec.flavor.root_gb,
                  extra_specs=dict(spec.flavor.extra_specs))
    uuids = [uuidutils.generate_uuid() for _ in range(count)]
    with orm.Session(cluster.engine) as session, session.begin():
        for uuid in uuids:
            db_instances.create(session, uuid, flavor=flavor,
                                request_spec=spec.obj_to_primitive(),
                                project_id=spec.project_id)
    return uuids


def gold_inventories(cluster):
    """``{(host, node): used}`` of the nodes' CUSTOM_GOLD inventories."""
    rows = cluster.query(
        'SELECT n.host, n.hypervisor_hostname AS node, i.total, i.used '
        'FROM compute_node_inventories i JOIN compute_nodes n '
        'ON n.id = i.compute_node_id WHERE i.resource_class = :rc',
        rc=RESOURCE_CLASS)
    assert all(row.total == 1 for row in rows), rows
    return {(row.host, row.node): row.used for row in rows}


def allocation_items(cluster):
    """``{consumer: [(host, node, class, amount), ...]}`` of every
    allocation, with its items (an allocation without items shows its
    vCPUs, RAM and disk under the classic names)."""
    rows = cluster.query(
        'SELECT a.consumer_uuid, n.host, n.hypervisor_hostname AS node, '
        'a.vcpus, a.memory_mb, a.disk_gb, i.resource_class, i.amount '
        'FROM allocations a JOIN compute_nodes n ON n.id = '
        'a.compute_node_id LEFT JOIN allocation_items i ON '
        'i.allocation_id = a.id')
    held = collections.defaultdict(list)
    for row in rows:
        for name, amount in (('VCPU', row.vcpus),
                             ('MEMORY_MB', row.memory_mb),
                             ('DISK_GB', row.disk_gb)):
            if amount and (row.host, row.node, name, amount) not in \
                    held[row.consumer_uuid]:
                held[row.consumer_uuid].append(
                    (row.host, row.node, name, amount))
        if row.resource_class is not None:
            held[row.consumer_uuid].append(
                (row.host, row.node, row.resource_class, row.amount))
    return dict(held)


def start_cloud(cluster):
    """A conductor (the computes' conduit to SQL), the Ironic computes
    and the four schedulers, started side by side; the schedulers'
    processes."""
    cluster.start('gantt-conductor', 'conductor',
                  '[DEFAULT]\nhost = conductor\n')
    schedulers = [cluster.start('gantt-scheduler', name,
                                '[DEFAULT]\nhost = %s\n' % name)
                  for name in SCHEDULERS]
    cluster.wait_for_service('conductor', 'gantt-conductor',
                             cluster.processes[0])
    for host, nodes in COMPUTES.items():
        cluster.start_compute(host, extra_conf=COMPUTE_CONF % nodes)
    for process in schedulers:
        cluster.wait_for_service(process.name, 'gantt-scheduler', process)
    cluster.wait_until(lambda: len(gold_inventories(cluster)) == POOL, 60,
                       '%d baremetal nodes to report %s'
                       % (POOL, RESOURCE_CLASS))
    cluster.discover_hosts()
    return schedulers


class Callers:
    """:data:`CALLERS` threads sharing the calls of
    ``select_destinations``, one for each of ``uuids``.

    ``answers``: ``{uuid: (host, node)}`` of the calls that succeeded;
    ``no_valid_host``: the UUIDs of those refused with NoValidHost;
    ``errors``: ``{uuid: exception}`` of any other outcome.
    """

    def __init__(self, uuids):
        self.api = rpcapi.SchedulerAPI()
        self.answers = {}
        self.no_valid_host = []
        self.errors = {}
        self._lock = threading.Lock()
        self._left = list(uuids)

    def answered(self):
        with self._lock:
            return (len(self.answers) + len(self.no_valid_host)
                    + len(self.errors))

    def _next(self):
        with self._lock:
            return self._left.pop() if self._left else None

    def _call(self, ctxt, barrier):
        barrier.wait(timeout=30)
        while True:
            uuid = self._next()
            if uuid is None:
                return
            try:
                selections = self.api.select_destinations(
                    ctxt, baremetal_spec(), [uuid])
            except exception.NoValidHost:
                with self._lock:
                    self.no_valid_host.append(uuid)
            except Exception as error:  # counted, and failed on
                with self._lock:
                    self.errors[uuid] = error
            else:
                assert len(selections) == 1 and selections[0], selections
                chosen = selections[0][0]
                with self._lock:
                    self.answers[uuid] = (chosen.service_host,
                                          chosen.nodename)

    def start(self):
        barrier = threading.Barrier(CALLERS)
        ctxt = gantt_context.get_admin_context()
        self.threads = [threading.Thread(target=self._call,
                                         args=(ctxt, barrier))
                        for _ in range(CALLERS)]
        for thread in self.threads:
            thread.start()

    def join(self):
        deadline = time.monotonic() + CALLERS_JOIN_SECONDS
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        assert not any(thread.is_alive() for thread in self.threads)


def assert_pool_given_once(cluster, callers):
    """No node given twice, in the answers or in SQL; what SQL holds is
    what the answers said; db check ok. The nodes taken."""
    taken = list(callers.answers.values())
    assert len(taken) == len(set(taken)), collections.Counter(
        taken).most_common(3)
    held = allocation_items(cluster)
    # Each success holds exactly CUSTOM_GOLD=1 on the node it was told.
    for uuid, (host, node) in callers.answers.items():
        assert held.get(uuid) == [(host, node, RESOURCE_CLASS, 1)], (
            uuid, (host, node), held.get(uuid))
    # A refused call holds nothing; a call that never got an answer may
    # hold one node (its client does not know), and then only CUSTOM_GOLD.
    for uuid in callers.no_valid_host:
        assert uuid not in held, (uuid, held[uuid])
    strays = set(held) - set(callers.answers)
    assert strays <= set(callers.errors), strays - set(callers.errors)
    nodes = [(host, node) for items in held.values()
             for host, node, _rc, _amount in items]
    assert len(nodes) == len(set(nodes)) == len(held), held
    inventories = gold_inventories(cluster)
    assert {key for key, used in inventories.items() if used} == set(nodes)
    assert set(inventories.values()) <= {0, 1}, inventories
    checks.assert_db_check_passes(cluster)
    return nodes


def report(what, callers, seconds):
    print('\n%s: calls=%d successes=%d NoValidHost=%d other errors=%d '
          '(%s) seconds=%.1f' % (
              what, REQUESTS, len(callers.answers),
              len(callers.no_valid_host), len(callers.errors),
              sorted({type(error).__name__
                      for error in callers.errors.values()}), seconds))


def test_pool_of_50_nodes_given_once_under_4_schedulers(tmp_path,
                                                         rpc_transport):
    started = time.monotonic()
    with cluster_mod.Cluster(tmp_path, 'postgresql') as cluster:
        start_cloud(cluster)
        up = time.monotonic() - started
        with test_faults.client(
                lambda c: rpc_transport(c, rpc_response_timeout=30),
                cluster):
            callers = Callers(record_instances(cluster, REQUESTS))
            calls_started = time.monotonic()
            callers.start()
            callers.join()
            seconds = time.monotonic() - calls_started
            report('pool race (start-up %.1fs)' % up, callers, seconds)
        assert callers.errors == {}
        assert len(callers.answers) == POOL
        assert len(callers.no_valid_host) == REQUESTS - POOL
        nodes = assert_pool_given_once(cluster, callers)
        assert len(nodes) == POOL


def test_pool_given_once_when_a_scheduler_is_killed(tmp_path,
                                                    rpc_transport, caplog):
    started = time.monotonic()
    with cluster_mod.Cluster(tmp_path, 'postgresql') as cluster:
        schedulers = start_cloud(cluster)
        up = time.monotonic() - started
        with test_faults.client(
                lambda c: rpc_transport(c,
                                        rpc_response_timeout=CALL_TIMEOUT),
                cluster):
            callers = Callers(record_instances(cluster, REQUESTS))
            calls_started = time.monotonic()
            callers.start()
            # Calls are answered in milliseconds: look often.
            deadline = time.monotonic() + 60
            while callers.answered() < KILL_AFTER_ANSWERS:
                assert time.monotonic() < deadline, callers.answered()
                time.sleep(0.01)
            victim = schedulers[0]
            os.kill(victim.popen.pid, signal.SIGKILL)
            killed_after = callers.answered()
            callers.join()
            seconds = time.monotonic() - calls_started
            asked_again = sum('asking again' in record.getMessage()
                              for record in caplog.records)
            report('pool race, %s killed after %d answers, %d calls sent '
                   'again (start-up %.1fs)' % (victim.name, killed_after,
                                               asked_again, up),
                   callers, seconds)
        assert victim.popen.wait(10) == -signal.SIGKILL
        assert all(process.alive() for process in schedulers[1:])
        # The scheduler died with calls in hand, which were sent again.
        assert asked_again >= 1
        assert len(callers.answers) <= POOL
        nodes = assert_pool_given_once(cluster, callers)
        assert len(nodes) <= POOL

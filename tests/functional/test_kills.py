"""Nothing leaks when a daemon is killed mid-work.

Real daemons, RabbitMQ and a real database; builds are cast to the
conductor from this process as any RPC client would. After each kill the
end state must be clean: no instance left building, every claim held by
an ACTIVE instance on its host, ``gantt-manage db check`` ok.

* A scheduler hung (SIGSTOP) then SIGKILLed with requests in hand: the
  conductor's call times out and is sent again to a live scheduler
  (claims are keyed on the instance, so the second claim replaces any
  the dead one made).
* A conductor SIGKILLed after it asked for claims and before it cast the
  builds: the scheduler claims for instances nobody will build; a new
  conductor times them out (``[DEFAULT] instance_build_timeout``) and
  releases the claims.
"""

import signal
import threading
import time

from oslo_utils import uuidutils
import pytest

from conductor import rpcapi as conductor_rpcapi
from conductor.tasks import reaper
from scheduler import context as gantt_context
from scheduler.objects import request_spec
from tests.functional import checks
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

BIG = dict(vcpus=1024, memory_mb=1 << 20, local_gb=1 << 20)


def tiny_spec():
    return request_spec.RequestSpec(
        num_instances=1,
        flavor=request_spec.Flavor(name='tiny', vcpus=1, memory_mb=1,
                                   root_gb=1))


def cast_builds(count):
    """Cast ``count`` one-instance builds; their UUIDs."""
    api = conductor_rpcapi.ComputeTaskAPI()
    ctxt = gantt_context.get_admin_context()
    uuids = [uuidutils.generate_uuid() for _ in range(count)]
    for uuid in uuids:
        api.build_instances(ctxt, [uuid], tiny_spec())
    return uuids


def states(cluster):
    return {row.uuid: row for row in cluster.instances()}


def count_states(cluster, vm_state=None):
    return sum(1 for row in cluster.instances()
               if vm_state is None or row.vm_state == vm_state)


def start_cluster(c, hosts):
    for host in hosts:
        c.start_compute(host, **BIG)
    c.wait_for_computes(hosts)


def assert_clean(c):
    """No instance building; allocations only for ACTIVE instances, one
    each, on their node; usage columns agree."""
    assert count_states(c, 'building') == 0
    checks.assert_usage_matches_servers(c)
    checks.assert_db_check_passes(c)


def test_scheduler_killed_mid_requests(tmp_path, rpc_transport):
    builds = 4 * 60
    # Heartbeats go through the conductor, whose calls to the stopped
    # scheduler hang for rpc_response_timeout each: its backlog may exceed
    # the harness's 10 s service_down_time, which would take every host
    # out of ComputeFilter. Nova's default window is 60 s.
    # The calls the stopped scheduler held are all sent again at about
    # the same moment, to the two live schedulers, whose claims on the
    # three hosts then queue behind each other: on the shared 2-core
    # machine that burst took over 5 s to answer once (the build failed,
    # its claim released, as it should), so each call gets 10 s.
    with cluster_mod.Cluster(tmp_path, 'mariadb',
                             extra_conf='[DEFAULT]\nservice_down_time = 60\n'
                             ) as c:
        conductor = c.start_conductor_with_conf(
            'conductor', '[DEFAULT]\nrpc_response_timeout = 10\n')
        start_cluster(c, ['cmp-1', 'cmp-2', 'cmp-3'])
        schedulers = [c.start_scheduler('sched-%d' % index)
                      for index in range(3)]
        c.discover_hosts()
        rpc_transport(c)

        uuids = []
        lock = threading.Lock()

        def client():
            cast = cast_builds(builds // 4)
            with lock:
                uuids.extend(cast)

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        # Kill one scheduler with requests in hand. A scheduler answers
        # in milliseconds, so it is first stopped (SIGSTOP) while builds
        # keep coming: the calls it took hang until the conductor's times
        # out and asks again elsewhere. Then it is killed.
        victim = schedulers[0]
        c.wait_until(lambda: count_states(c) >= builds // 4, 30,
                     'builds to be under way', conductor)
        victim.signal_group(signal.SIGSTOP)
        late = 30
        extra = cast_builds(late)
        with lock:
            uuids.extend(extra)
        c.wait_until(lambda: 'asking again' in conductor.log(), 60,
                     'the conductor to ask another scheduler', conductor)
        victim.kill_group()
        killed_at = count_states(c, 'active')
        for thread in threads:
            thread.join(30)

        c.wait_until(lambda: count_states(c) == builds + late and
                     count_states(c, 'building') == 0, 60,
                     'every build to end', conductor)
        rows = states(c)
        assert sorted(rows) == sorted(uuids)
        assert {row.vm_state for row in rows.values()} == {'active'}, [
            row.fault for row in rows.values() if row.fault][:3]
        assert_clean(c)
        # The scheduler died busy: it had answered some requests, and
        # the conductor asked again for those it took with it.
        assert 'Filter DiskFilter returned' in victim.log()
        assert killed_at < builds + late
        assert 'asking again' in conductor.log()
        for process in schedulers[1:]:
            assert process.alive()


def test_conductor_killed_between_claim_and_cast(tmp_path, rpc_transport):
    with cluster_mod.Cluster(tmp_path, 'postgresql') as c:
        first = c.start_conductor('conductor-1')
        start_cluster(c, ['cmp-1', 'cmp-2'])
        scheduler = c.start_scheduler('sched')
        c.discover_hosts()
        rpc_transport(c)

        built = cast_builds(5)
        c.wait_until(lambda: count_states(c, 'active') == 5, 30,
                     'the first builds', first)
        # Freeze the scheduler: the conductor records the next builds and
        # its calls wait in the scheduler's queue.
        scheduler.signal_group(signal.SIGSTOP)
        try:
            orphans = cast_builds(20)
            c.wait_until(lambda: count_states(c) == 25 and
                         c.queue_depths().get('scheduler', 0) >= 20, 30,
                         'the calls to wait for the scheduler', first)
            first.kill_group()
            first.popen.wait(10)
        finally:
            scheduler.signal_group(signal.SIGCONT)

        # The scheduler claims for every waiting call; its answers go to
        # a conductor that is gone.
        def leaked():
            rows = states(c)
            return {a.consumer_uuid for a in c.allocations()
                    if rows[a.consumer_uuid].vm_state == 'building'}

        c.wait_until(lambda: leaked() == set(orphans), 30,
                     'the scheduler to claim for the waiting calls',
                     scheduler)
        assert c.queue_depths().get('scheduler', 0) == 0

        second = c.start_conductor_with_conf('conductor-2', '''\
            [DEFAULT]
            instance_build_timeout = 5
            [conductor]
            periodic_task_interval = 1
            ''')
        started = time.monotonic()
        c.wait_until(lambda: count_states(c, 'building') == 0, 30,
                     'the stuck builds to time out', second)
        reaped_after = time.monotonic() - started

        rows = states(c)
        assert {uuid for uuid, row in rows.items()
                if row.vm_state == 'active'} == set(built)
        for uuid in orphans:
            assert rows[uuid].vm_state == 'error'
            assert rows[uuid].host is None
            assert rows[uuid].fault == reaper.FAULT % 5
        assert_clean(c)
        assert second.log().count('instance_build_timeout): now in '
                                  'ERROR; released 1 vCPU') == len(orphans)
        assert reaped_after < 15

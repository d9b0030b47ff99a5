"""A request sent again reaches another conductor: the same request.

Two real conductors, started with different ``PYTHONHASHSEED`` values so
that each serializes a request's sets (its objects' changed fields) in an
order of its own, share a broker and a PostgreSQL database. The same
``schedule_and_build_instances`` sent to one and then to the other (a
client's retry after a broker failover) builds once, and the second is
answered as the same request, not refused as "already exists".
"""

import json
import os
import subprocess
import sys

from oslo_utils import uuidutils
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler import exception
from tests.functional import cluster as cluster_mod
from tests.functional import test_faults
from tests.functional import test_rpc_api

pytestmark = pytest.mark.functional

# What a RequestSpec's changed fields come out as in a process whose hash
# seed is given (the order of a set of strings).
ORDER_OF_CHANGES = '''
import json
from tests.functional import test_faults
from tests.functional import test_rpc_api
spec = test_rpc_api.make_spec(num_instances=2, vcpus=1,
                              scheduler_hints={'a': ['1']})
print(json.dumps(spec.obj_to_primitive()['gantt_object.changes']))
'''


def _changes_under(seed):
    done = subprocess.run(
        [sys.executable, '-c', ORDER_OF_CHANGES], check=True,
        capture_output=True, text=True, timeout=60,
        cwd=cluster_mod.SOURCE_ROOT,
        env=dict(os.environ, PYTHONPATH=cluster_mod.SOURCE_ROOT,
                 PYTHONHASHSEED=seed, PYTHONWARNINGS='ignore'))
    return json.loads(done.stdout.strip().splitlines()[-1])


def _two_seeds_that_disagree():
    """Two hash seeds under which a spec's changes come in two orders."""
    first = _changes_under('1')
    for seed in range(2, 40):
        if _changes_under(str(seed)) != first:
            return '1', str(seed)
    pytest.fail('no two hash seeds ordered the changed fields apart')


def test_the_same_request_through_two_conductors_builds_once(
        tmp_path, rpc_transport):
    seeds = _two_seeds_that_disagree()
    with cluster_mod.Cluster(tmp_path, 'postgresql') as cluster:
        for name, seed in zip(('conductor-a', 'conductor-b'), seeds):
            process = cluster.start('gantt-conductor', name,
                                    '[DEFAULT]\nhost = %s\n' % name,
                                    env={'PYTHONHASHSEED': seed})
            cluster.wait_for_service(name, 'gantt-conductor', process)
        cluster.start_compute('cmp1', vcpus=8, memory_mb=16384)
        cluster.start_scheduler()
        cluster.wait_for_computes(['cmp1'])
        cluster.discover_hosts()
        # The client's connections are closed (and what kombu leaves of
        # them collected) before the cluster's vhost goes.
        with test_faults.client(rpc_transport, cluster):
            client = conductor_rpcapi.ComputeTaskAPI().client
            ctxt = gantt_context.get_admin_context()
            uuids = [uuidutils.generate_uuid() for _ in range(2)]
            spec = test_rpc_api.make_spec(num_instances=2, vcpus=1,
                                          scheduler_hints={'a': ['1']})
            answers = []
            for server in ('conductor-a', 'conductor-b'):
                answers.append(client.prepare(
                    version='1.2', server=server).call(
                        ctxt, 'schedule_and_build_instances',
                        instance_uuids=uuids, request_spec=spec))
            assert answers == [uuids, uuids]
            # A request that differs is still refused.
            other = test_rpc_api.make_spec(num_instances=2, vcpus=2)
            with pytest.raises(exception.InvalidRequest) as refused:
                client.prepare(version='1.2', server='conductor-b').call(
                    ctxt, 'schedule_and_build_instances',
                    instance_uuids=uuids, request_spec=other)
            assert 'already exists' in str(refused.value)

        cluster.wait_until(
            lambda: {row.vm_state for row in cluster.instances()} ==
            {'active'}, 60, 'the two instances to be active')
        rows = cluster.instances()
        assert sorted(row.uuid for row in rows) == sorted(uuids)
        assert len(cluster.allocations()) == 2

"""Check that Nova 34 reads Gantt's Nova-mode answers as its own.

Run where nova==34.0.0 is installed, on the file
tools/gantt_nova_answers.py wrote, or with the Python of Gantt's
environment, which then writes it; exits non-zero naming the first
answer Nova does not read as it reads its own scheduler's::

    python tools/check_nova_reads_gantt.py answers.json
    python tools/check_nova_reads_gantt.py /path/to/gantt-venv/bin/python

It deserializes the Selections with Nova's NovaObjectSerializer (as
Nova's conductor does with a reply), checks every field the conductor
reads, and rebuilds the failure as oslo.messaging does on Nova's side,
with Nova's allowed exception modules: it must be
``nova.exception.NoValidHost``.
"""

import json
import os
import subprocess
import sys
import tempfile

from oslo_messaging._drivers import common as driver_common
from oslo_serialization import jsonutils

from nova import exception
from nova import objects
from nova.objects import base as objects_base
from nova import rpc


def check(answers):
    serializer = objects_base.NovaObjectSerializer()
    host_lists = serializer.deserialize_entity(None, answers['selections'])
    for selection in host_lists[0]:
        assert isinstance(selection, objects.Selection), selection
        assert selection.VERSION == '1.1'
        assert selection.service_host == 'compute-1'
        assert selection.nodename == 'compute-1'
        assert selection.cell_uuid == '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'
        assert selection.availability_zone == 'az1'
        assert selection.allocation_request_version == '1.36'
        request = jsonutils.loads(selection.allocation_request)
        node = selection.compute_node_uuid
        assert request['allocations'][node]['resources'] == {
            'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 51, 'CUSTOM_GPU': 1}
        assert request['mappings'] == {'': [node]}
        assert isinstance(selection.limits, objects.SchedulerLimits)
        assert selection.limits.to_dict() == {
            'vcpu': 16, 'memory_mb': 98304, 'disk_gb': 900}
        assert selection.to_dict()['host'] == 'compute-1'
    numa = serializer.deserialize_entity(
        None, answers['numa_selections'])[0][0]
    limit = numa.limits.numa_topology
    assert isinstance(limit, objects.NUMATopologyLimits)
    assert (limit.cpu_allocation_ratio, limit.ram_allocation_ratio) == (
        16.0, 1.5)
    assert limit.network_metadata.physnets == set(['physnet1'])
    assert answers['legacy'] == [{'host': 'compute-1',
                                  'nodename': 'compute-1',
                                  'limits': {'vcpu': 16, 'memory_mb': 98304,
                                             'disk_gb': 900}}]
    failure = driver_common.deserialize_remote_exception(
        answers['failure'], rpc.get_allowed_exmods())
    assert isinstance(failure, exception.NoValidHost), type(failure)
    assert 'RamFilter 3 -> 0' in failure.kwargs['reason']
    return len(host_lists[0])


def _answers(source):
    """The answers of ``source``: a JSON file, or a Python to run
    tools/gantt_nova_answers.py with."""
    if source.endswith('.json'):
        with open(source) as handle:
            return json.load(handle)
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, 'answers.json')
        subprocess.run([source, os.path.join(here, 'gantt_nova_answers.py'),
                        path], check=True, cwd=os.path.dirname(here))
        with open(path) as handle:
            return json.load(handle)


def main(argv):
    objects.register_all()
    answers = _answers(argv[1])
    count = check(answers)
    sys.stdout.write('Nova 34 read %d Gantt Selections, NUMA limits, the '
                     'legacy dicts and a NoValidHost as its own\n' % count)


if __name__ == '__main__':
    main(sys.argv)

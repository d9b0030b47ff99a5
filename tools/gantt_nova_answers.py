"""Write what Gantt's Nova-mode endpoint answers, for Nova to read.

The first half of the interoperability check (the second is
tools/check_nova_reads_gantt.py, run where nova==34.0.0 is installed)::

    python tools/gantt_nova_answers.py answers.json      # Gantt's venv
    python tools/check_nova_reads_gantt.py answers.json  # Nova's venv

It encodes Selections (with and without NUMA limits) and the legacy
dicts as :mod:`scheduler.nova.selections` does, and a NoValidHost of
Gantt's as oslo.messaging serializes the remote exception of a call.
"""

import json
import sys

from oslo_messaging._drivers import common as driver_common

from scheduler import config
from scheduler import exception
from scheduler.nova import errors
from scheduler.nova import primitives
from scheduler.nova import selections
from scheduler.objects import selection as selection_obj
from scheduler import placement_types

NODE = '5f9cb0e7-d163-4caf-8e5a-6d7c8b9a0f1e'
CELL = '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'


class _Host:
    uuid = NODE
    host = 'compute-1'
    nodename = 'compute-1'
    cell_uuid = CELL


def answers():
    gantt = selection_obj.Selection.for_host(
        _Host(), placement_types.Resources(4, 4096, 51), True,
        limits={'vcpu': 16.0, 'memory_mb': 98304.0, 'disk_gb': 900.0},
        extra={'CUSTOM_GPU': 1})
    encoder = selections.Encoder(
        availability_zone_of={'compute-1': 'az1'}.get,
        ratios_of=lambda host, node: (16.0, 1.5))
    numa = selections.NumaRequest(primitives.decode(primitives.encode(
        'NetworkMetadata', '1.0', {'physnets': ['physnet1'],
                                   'tunneled': True}), 'network_metadata'))
    try:
        raise errors.for_nova(exception.NoValidHost(
            reason='0/3 hosts available: RamFilter 3 -> 0'))
    except errors.NoValidHost:
        failure = driver_common.serialize_remote_exception(sys.exc_info())
    return {'selections': encoder.answer([[gantt, gantt]], True),
            'numa_selections': encoder.answer([[gantt]], True, numa),
            'legacy': encoder.answer([[gantt]], False),
            'failure': failure}


def main(argv):
    config.register_opts()
    with open(argv[1], 'w') as handle:
        json.dump(answers(), handle, indent=1, sort_keys=True)


if __name__ == '__main__':
    main(sys.argv)

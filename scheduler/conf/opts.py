"""Entry point for oslo-config-generator: every option Gantt registers.

``etc/gantt/gantt-config-generator.conf`` names the namespace ``gantt``,
which resolves to :func:`list_opts` below.
"""

import collections

from scheduler.conf import api_database
from scheduler.conf import baremetal
from scheduler.conf import compute
from scheduler.conf import compute_resources
from scheduler.conf import conductor
from scheduler.conf import database
from scheduler.conf import default
from scheduler.conf import filter_scheduler
from scheduler.conf import metrics
from scheduler.conf import notifications
from scheduler.conf import nova_backend
from scheduler.conf import pci
from scheduler.conf import placement
from scheduler.conf import scheduler
from scheduler.conf import server_groups
from scheduler.conf import upgrade_levels
from scheduler.conf import workarounds

_MODULES = (default, database, api_database, scheduler, filter_scheduler,
            upgrade_levels, conductor, compute, metrics, server_groups,
            notifications, pci, baremetal, compute_resources, workarounds,
            placement, nova_backend)


def list_opts():
    """Return ``[(group, [opts])]`` as oslo-config-generator expects."""
    by_group = collections.OrderedDict()
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            key = group if isinstance(group, str) else group.name
            entry = by_group.setdefault(key, [group, []])
            entry[1].extend(opts)
    return [(group, opts) for group, opts in by_group.values()]

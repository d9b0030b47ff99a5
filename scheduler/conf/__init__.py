"""Gantt's configuration options, one module per option group.

Every service reads the same file (``/etc/gantt/gantt.conf``) whose groups and
option names follow nova.conf. Importing this package registers all options
on the global ``CONF`` object; nothing reads an option's value at import time.

Example::

    from scheduler import conf
    CONF = conf.CONF
    CONF(['--config-file', '/etc/gantt/gantt.conf'], project='gantt')
    print(CONF.scheduler.max_attempts)
"""

from oslo_config import cfg
from oslo_reports import opts as reports_opts

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

CONF = cfg.CONF

for _module in (default, database, api_database, scheduler,
                filter_scheduler, upgrade_levels, conductor, compute, metrics,
                server_groups, notifications, pci, baremetal,
                compute_resources, workarounds, placement, nova_backend):
    _module.register_opts(CONF)
# [oslo_reports]: where Guru Meditation Reports go (scheduler/reports.py).
reports_opts.set_defaults(CONF)

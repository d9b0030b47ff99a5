"""JsonFilter: hosts chosen by a query the request carries.

The ``query`` scheduler hint holds a JSON query over host attributes (see
:mod:`scheduler.filters.json_query` for the grammar); a host passes when
the query is true for it. Without the hint every host passes. The query
also sees disabled and down hosts: it is up to it (or to ComputeFilter) to
leave them out. A query that is not JSON, names an unknown command, or
names a variable outside the host attributes it may read, is refused with
InvalidRequest: nothing in it is ever executed::

    gantt-manage server create --flavor m1.small \\
        --hint query='["and", [">=", "$free_ram_mb", 4096],
                              ["=", "$hypervisor_type", "QEMU"]]'
"""

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.filters import json_query

LOG = logging.getLogger(__name__)


def _query(spec):
    text = spec.get_scheduler_hint('query')
    if not text:
        return None
    return json_query.parse(text)


class JsonFilter(filters.BaseHostFilter):
    """Passes hosts for which the ``query`` hint is true."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        query = _query(spec)
        if query is None or query.passes(host_state):
            return True
        LOG.debug('%s fails the JsonFilter query', host_state)
        return False

    def filter_all(self, host_table, mask, spec):
        if not mask.any():
            return mask  # no host to judge: the query is not read
        query = _query(spec)
        if query is None:
            return mask
        rows = np.flatnonzero(mask)
        passed = np.zeros(len(host_table), dtype=np.bool_)
        passed[rows] = query.passes_all(host_table, rows)
        return passed

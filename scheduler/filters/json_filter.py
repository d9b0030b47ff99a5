"""JsonFilter: hosts chosen by a query the request carries.

The ``query`` scheduler hint holds a JSON query over host attributes (see
:mod:`scheduler.filters.json_query` for the grammar); a host passes when
the query is true for it. Without the hint every host passes. The query
also sees disabled and down hosts: it is up to it (or to ComputeFilter) to
leave them out, for instance with ``$service.disabled``. A query that is
not JSON or names an unknown command is refused with InvalidRequest:
nothing in it is ever executed. A variable no host has (a typo such as
``$free_ram``) is read as null for every host, as Nova reads it; the
filter says so once per request in the log (INFO), in the reason it gives
for each host it removes, and in ``gantt-manage explain``'s notes::

    gantt-manage server create --flavor m1.small \\
        --hint query='["and", [">=", "$free_ram_mb", 4096],
                              ["=", "$hypervisor_type", "QEMU"],
                              ["not", "$service.disabled"]]'
"""

import threading
import weakref

from oslo_log import log as logging
import numpy as np

from scheduler import filters
from scheduler.filters import json_query

LOG = logging.getLogger(__name__)

# Requests whose unknown variables were logged: id(spec) -> weakref(spec).
_NOTED_LIMIT = 1024
_noted = {}
_noted_lock = threading.Lock()


def _first_time(spec):
    """True the first time it is asked about ``spec`` (while it lives)."""
    key = id(spec)
    with _noted_lock:
        known = _noted.get(key)
        if known is not None and known() is spec:
            return False
        if len(_noted) >= _NOTED_LIMIT:
            for dead in [k for k, ref in _noted.items() if ref() is None]:
                del _noted[dead]
            if len(_noted) >= _NOTED_LIMIT:
                _noted.clear()
        _noted[key] = weakref.ref(spec)
    return True


def _unknown_note(query):
    return ('the query names %s, which no host has: read as null and '
            'dropped, as Nova does' % ', '.join(query.unknown))


def _query(spec):
    text = spec.get_scheduler_hint('query')
    if not text:
        return None
    query = json_query.parse(text)
    if query.unknown and _first_time(spec):
        LOG.info('JsonFilter: %s (query %s)', _unknown_note(query), text)
    return query


class JsonFilter(filters.BaseHostFilter):
    """Passes hosts for which the ``query`` hint is true."""

    pure = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec):
        query = _query(spec)
        if query is None or query.passes(host_state):
            return True
        if query.unknown:
            LOG.debug('%s fails the JsonFilter query; %s', host_state,
                      _unknown_note(query))
        else:
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

    def request_notes(self, spec):
        """What ``gantt-manage explain`` should say about this request
        beyond the hosts removed: its unknown variables."""
        text = spec.get_scheduler_hint('query')
        if not text:
            return []
        query = json_query.parse(text)
        return [_unknown_note(query)] if query.unknown else []

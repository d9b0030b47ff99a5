"""Option values a request reads, at the cost of an attribute.

Reading ``CONF.filter_scheduler.host_subset_size`` takes oslo.config about
4-5 microseconds (two ``__getattr__`` layers, then its cache); a
``select_destinations`` read some sixty options, a quarter of a
millisecond of CPU per request on the benchmark machine (benchmarks/
README.md, session 40). :func:`group` answers an object whose
attributes are the group's options, each read through oslo.config once
and then kept as a plain attribute::

    from scheduler.conf import cached
    options = cached.group('filter_scheduler')
    options.host_subset_size        # read once, then an attribute
    cached.group(None).service_down_time      # [DEFAULT]

The values are dropped whenever oslo.config drops its own cache, which
it does on every change it knows of: ``set_override``,
``clear_override``, ``set_default``, registering options, parsing the
command line again, and ``mutate_config_files`` (the SIGHUP reload). A
mark left in that cache tells whether it was dropped since; an
oslo.config that keeps its cache elsewhere gets no caching here (every
call of :func:`group` reads afresh), never stale values.
"""

import threading

from scheduler import conf

CONF = conf.CONF

# Put in oslo.config's own cache beside its (group, name) keys, which it
# never equals.
_MARK = ('gantt.conf.cached', object())
_CACHE_ATTRIBUTE = '_ConfigOpts__cache'


class _Group:
    """The options of one group, each read on first use."""

    def __init__(self, conf_group):
        self._conf_group = conf_group

    def __getattr__(self, name):
        # Only for attributes not set yet: read the option, keep it.
        if name.startswith('__'):
            raise AttributeError(name)
        value = getattr(self._conf_group, name)
        setattr(self, name, value)
        return value


class _Groups:
    def __init__(self, conf_object):
        self._conf = conf_object
        self._lock = threading.Lock()
        self._marked = None
        self._groups = {}

    def _current(self):
        """The groups read since oslo.config last dropped its cache."""
        marked = getattr(self._conf, _CACHE_ATTRIBUTE, None)
        if marked is not None and marked is self._marked and \
                _MARK in marked:
            return self._groups
        with self._lock:
            if marked is None or not isinstance(marked, dict):
                return {}
            marked[_MARK] = True
            self._groups = {}
            self._marked = marked
            return self._groups

    def group(self, name):
        groups = self._current()
        try:
            return groups[name]
        except KeyError:
            pass
        found = _Group(self._conf if name is None
                       else getattr(self._conf, name))
        groups[name] = found
        return found


_GROUPS = _Groups(CONF)


def group(name):
    """The options of group ``name`` (None: ``[DEFAULT]``) as attributes,
    read through oslo.config once until it next changes."""
    return _GROUPS.group(name)

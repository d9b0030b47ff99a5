"""Plugin loading: scheduler drivers, host filters and host weighers.

Plugins are classes published as setuptools entry points, looked up by
stevedore in four namespaces:

* ``gantt.scheduler.driver``: drivers, chosen by ``[scheduler] driver``;
* ``gantt.scheduler.host_manager``: host managers, chosen by
  ``[scheduler] host_manager``;
* ``gantt.scheduler.filters``: host filters, one entry point per class,
  named like the class (``RamFilter``);
* ``gantt.scheduler.weighers``: host weighers (``RAMWeigher``).

A third-party package adds a filter by declaring an entry point in the
``gantt.scheduler.filters`` namespace, or the operator names its class by
dotted path in ``[filter_scheduler] available_filters``. Only the plugins
that are asked for are imported, so one broken plugin that nobody enables
cannot stop the service.

A nova.conf's dotted paths to Nova's own classes
(``nova.scheduler.filters.all_filters``,
``nova.scheduler.weights.ram.RAMWeigher``) name Gantt's classes of the same
names: each is logged once as deprecated.

A name nobody declared raises :class:`scheduler.exception.PluginNotFound`,
whose message lists what is installed; a plugin whose module fails to
import raises :class:`scheduler.exception.PluginLoadFailed` with the
import error. Example::

    from scheduler import loadables
    driver_cls = loadables.load_driver('filter_scheduler')
    manager_cls = loadables.load_host_manager('ironic_host_manager')
    filter_classes = loadables.load_filter_classes(
        ['all_filters'], ['ComputeFilter', 'RamFilter'])
    weigher_classes = loadables.load_weigher_classes(['all_weighers'])
"""

import importlib
import threading

from oslo_log import log as logging
from stevedore import named

from scheduler import exception

LOG = logging.getLogger(__name__)

DRIVER_NAMESPACE = 'gantt.scheduler.driver'
HOST_MANAGER_NAMESPACE = 'gantt.scheduler.host_manager'
FILTER_NAMESPACE = 'gantt.scheduler.filters'
WEIGHER_NAMESPACE = 'gantt.scheduler.weighers'

ALL_FILTERS = 'all_filters'
ALL_WEIGHERS = 'all_weighers'

# Nova names its plugins by dotted path below these packages; Gantt has
# classes of the same names.
NOVA_PACKAGES = {FILTER_NAMESPACE: 'nova.scheduler.filters',
                 WEIGHER_NAMESPACE: 'nova.scheduler.weights'}

# The Nova paths whose mapping was logged (once per process).
_logged_nova_paths = set()
_logged_lock = threading.Lock()


def entry_point_names(namespace):
    """Sorted names of the entry points declared in ``namespace``.

    Nothing is imported.
    """
    manager = named.NamedExtensionManager(
        namespace, names=[], on_missing_entrypoints_callback=None)
    return sorted({entry_point.name
                   for entry_point in manager.list_entry_points()})


def _load_entry_points(namespace, kind, names):
    """``{name: class}`` for the named entry points of ``namespace``."""
    failures = {}

    def _on_failure(_manager, entry_point, error):
        failures.setdefault(entry_point.name, error)

    manager = named.NamedExtensionManager(
        namespace, names=list(names), invoke_on_load=False,
        name_order=True, on_load_failure_callback=_on_failure,
        on_missing_entrypoints_callback=None)
    available = entry_point_names(namespace)
    for name in names:
        if name not in available:
            raise exception.PluginNotFound(kind=kind, name=name,
                                           available=', '.join(available))
        if name in failures:
            error = failures[name]
            raise exception.PluginLoadFailed(
                kind=kind, name=name,
                reason='%s: %s' % (type(error).__name__, error))
    return {extension.name: extension.plugin for extension in manager}


def _import_dotted(path, kind, available):
    """Import ``package.module.Class``; PluginNotFound if nothing is there."""
    module_name, _, class_name = path.rpartition('.')

    def _not_found():
        return exception.PluginNotFound(kind=kind, name=path,
                                        available=', '.join(available))

    if not module_name:
        raise _not_found()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        # Missing the module named: an unknown name. Missing one of the
        # module's own imports: a broken plugin.
        if error.name and (module_name == error.name
                           or module_name.startswith(error.name + '.')):
            raise _not_found()
        raise exception.PluginLoadFailed(kind=kind, name=path,
                                         reason='%s: %s' % (
                                             type(error).__name__, error))
    except Exception as error:
        raise exception.PluginLoadFailed(kind=kind, name=path,
                                         reason='%s: %s' % (
                                             type(error).__name__, error))
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise _not_found()


def _nova_equivalent(path, namespace, all_name):
    """The Gantt name of Nova's dotted ``path``, or None.

    ``nova.scheduler.filters.all_filters`` is ``all_filters``; a class path
    is the entry point named like its class, whatever Nova's module (Nova
    keeps several filters in one module, Gantt one per module, and Nova
    moved some between releases)."""
    package = NOVA_PACKAGES[namespace]
    if path == '%s.%s' % (package, all_name):
        return all_name
    class_name = path.rpartition('.')[2]
    if path.count('.') > package.count('.') + 1 and \
            class_name in entry_point_names(namespace):
        return class_name
    return None


def translate_nova_paths(namespace, kind, all_name, names, option):
    """``names`` with Nova's dotted paths (``nova.scheduler...``) replaced
    by the names of Gantt's own classes, each replacement logged once as
    deprecated; a Nova path Gantt has no class for raises PluginNotFound
    naming it."""
    package = NOVA_PACKAGES[namespace] + '.'
    translated = []
    for name in names:
        if not name.startswith(package):
            translated.append(name)
            continue
        gantt_name = _nova_equivalent(name, namespace, all_name)
        if gantt_name is None:
            raise exception.PluginNotFound(
                kind=kind, name=name,
                available=', '.join([all_name]
                                    + entry_point_names(namespace)))
        with _logged_lock:
            first = name not in _logged_nova_paths
            _logged_nova_paths.add(name)
        if first:
            LOG.warning('Deprecated: [filter_scheduler] %s names Nova\'s %s '
                        '%s; Gantt uses its own %s instead. Write %s.',
                        option, kind, name, gantt_name, gantt_name)
        translated.append(gantt_name)
    return translated


def load_driver(name):
    """The driver class published as ``name`` in ``gantt.scheduler.driver``.

    Raises PluginNotFound (listing the installed drivers) or
    PluginLoadFailed.
    """
    return _load_entry_points(DRIVER_NAMESPACE, 'scheduler driver',
                              [name])[name]


def load_host_manager(name):
    """The host manager class published as ``name`` in
    ``gantt.scheduler.host_manager``.

    Raises PluginNotFound (listing the installed host managers) or
    PluginLoadFailed.
    """
    return _load_entry_points(HOST_MANAGER_NAMESPACE, 'host manager',
                              [name])[name]


def _load_classes(namespace, kind, all_name, selections, wanted, check):
    """Resolve ``wanted`` names against the ``selections`` made available.

    ``selections`` holds ``all_name``, entry point names or dotted paths.
    A class is known both by its entry point name (or its ``__name__`` for
    a dotted path) and by the dotted path it was given as.
    """
    declared = entry_point_names(namespace)
    offered = set()
    dotted = {}
    for selection in selections:
        if selection == all_name:
            offered.update(declared)
        elif selection in declared:
            offered.add(selection)
        elif '.' in selection:
            dotted[selection] = None
        else:
            raise exception.PluginNotFound(
                kind=kind, name=selection,
                available=', '.join([all_name] + declared))
    for path in dotted:
        dotted[path] = _import_dotted(path, kind, declared)
    by_name = {}
    for path, cls in dotted.items():
        by_name[path] = cls
        by_name.setdefault(getattr(cls, '__name__', path), cls)
    entry_names = [name for name in wanted
                   if name in offered and name not in by_name]
    for name in wanted:
        if name not in offered and name not in by_name:
            available = sorted(offered | set(by_name))
            raise exception.PluginNotFound(kind=kind, name=name,
                                           available=', '.join(available))
    by_name.update(_load_entry_points(namespace, kind, entry_names))
    classes = [by_name[name] for name in wanted]
    for name, cls in zip(wanted, classes):
        problem = check(cls)
        if problem:
            raise exception.PluginLoadFailed(kind=kind, name=name,
                                             reason=problem)
    return classes


def _check_filter(cls):
    if not isinstance(cls, type) or not callable(
            getattr(cls, 'host_passes', None)):
        return '%r is not a host filter class (it has no host_passes)' % (
            cls,)
    return None


def _check_weigher(cls):
    if not isinstance(cls, type) or not callable(
            getattr(cls, '_weigh_object', None)):
        return '%r is not a host weigher class (it has no _weigh_object)' % (
            cls,)
    return None


def load_filter_classes(available_filters, enabled_filters):
    """Filter classes for ``enabled_filters``, in that order.

    :param available_filters: ``[filter_scheduler] available_filters``:
        ``all_filters``, entry point names, or dotted class paths.
    :param enabled_filters: ``[filter_scheduler] enabled_filters``: names
        of filters made available (a dotted path is known by its class
        name too).

    Nova's dotted paths (``nova.scheduler.filters.all_filters``,
    ``nova.scheduler.filters.compute_filter.ComputeFilter``) stand for
    Gantt's classes of the same names (see :func:`translate_nova_paths`).
    """
    available_filters = translate_nova_paths(
        FILTER_NAMESPACE, 'filter', ALL_FILTERS, available_filters,
        'available_filters')
    enabled_filters = translate_nova_paths(
        FILTER_NAMESPACE, 'filter', ALL_FILTERS, enabled_filters,
        'enabled_filters')
    return _load_classes(FILTER_NAMESPACE, 'filter', ALL_FILTERS,
                         available_filters, list(enabled_filters),
                         _check_filter)


def load_weigher_classes(weight_classes):
    """Weigher classes for ``[filter_scheduler] weight_classes``.

    ``all_weighers`` stands for every weigher entry point, in name order;
    other items are entry point names or dotted class paths. Nova's
    dotted paths stand for Gantt's classes of the same names.
    """
    weight_classes = translate_nova_paths(
        WEIGHER_NAMESPACE, 'weigher', ALL_WEIGHERS, weight_classes,
        'weight_classes')
    wanted = []
    for name in weight_classes:
        if name == ALL_WEIGHERS:
            wanted.extend(entry_point_names(WEIGHER_NAMESPACE))
        else:
            wanted.append(name)
    # Keep the first mention of each weigher: all_weighers plus a name
    # must not weigh twice.
    wanted = list(dict.fromkeys(wanted))
    selections = [ALL_WEIGHERS] + [name for name in wanted if '.' in name]
    return _load_classes(WEIGHER_NAMESPACE, 'weigher', ALL_WEIGHERS,
                         selections, wanted, _check_weigher)

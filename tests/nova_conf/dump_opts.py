"""Print, as JSON, the options of some oslo.config namespaces as a
project's sample config shows them (after its ``oslo.config.opts.defaults``
hook): ``python dump_opts.py PROJECT NAMESPACE...``.

Run in a process of its own: Nova and Gantt both register ``[DEFAULT]
host`` (and more) on oslo.config's global CONF, so one process cannot
load both projects' options.
"""

import importlib.metadata
import json
import sys


def _entry_point(group, name):
    for entry_point in importlib.metadata.entry_points(group=group,
                                                       name=name):
        return entry_point.load()
    raise SystemExit('no %s entry point %r is installed' % (group, name))


def _describe(value):
    """``value`` as JSON can hold it (a choices mapping as its keys)."""
    if isinstance(value, dict):
        return sorted(value, key=repr)
    if isinstance(value, (list, tuple)):
        return [_describe(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def dump(project, namespaces):
    _entry_point('oslo.config.opts.defaults', project)()
    options = {}
    for namespace in namespaces:
        for group, opts in _entry_point('oslo.config.opts', namespace)():
            name = 'DEFAULT' if group is None else getattr(group, 'name',
                                                           group)
            for opt in opts:
                options['[%s] %s' % (name, opt.dest)] = {
                    'namespace': namespace,
                    'opt': type(opt).__name__,
                    'type': type(opt.type).__name__,
                    'default': _describe(opt.default),
                    'min': _describe(getattr(opt.type, 'min', None)),
                    'max': _describe(getattr(opt.type, 'max', None)),
                    'choices': _describe(getattr(opt.type, 'choices',
                                                 None)),
                    'deprecated': sorted(
                        '[%s] %s' % (old.group or name,
                                     old.name or opt.dest)
                        for old in opt.deprecated_opts),
                }
    return options


if __name__ == '__main__':
    json.dump(dump(sys.argv[1], sys.argv[2:]), sys.stdout, indent=1,
              sort_keys=True)

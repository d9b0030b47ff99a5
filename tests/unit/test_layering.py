"""Which parts of Gantt may import which.

* The conductor claims through :mod:`scheduler.db.claims`, as the drivers
  do; it imports nothing from ``scheduler/drivers/``.
* Filters and weighers (plugins) see hosts through the host view
  (:mod:`scheduler.host_cache.host_table`,
  :mod:`scheduler.host_cache.host_instances`) and the
  shared :mod:`scheduler.placement_types`; they import nothing from the
  database layer or the scheduler core.
* Versioned objects import neither the database layer nor the scheduler
  core nor the host view.
* The host view itself does not reach into the database layer, and
  :mod:`scheduler.placement_types` imports nothing of Gantt's.
* The hardware libraries (:mod:`scheduler.numa`, :mod:`scheduler.pci`,
  :mod:`scheduler.hardware`) are pure: filters and claims both use them,
  so they import neither the core nor the host view.
* :mod:`scheduler.cells` (the mappings, discovery) sits on the database
  layer and under everything else: it imports neither the drivers, the
  host manager, the RPC layer nor the commands; the database layer does
  not import it.

Imports are read from the source (``ast``), including ones inside
functions, so that a lazy import cannot hide a dependency.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

CORE = ('scheduler.db', 'scheduler.drivers',
        'scheduler.host_cache.host_manager',
        'scheduler.host_cache.cell_gather', 'scheduler.host_cache.host_reads',
        'scheduler.host_cache.cell_reads',
        'scheduler.manager', 'scheduler.rpc', 'scheduler.rpcapi',
        'scheduler.service', 'scheduler.host_cache.instance_tracking',
        'scheduler.cmd', 'conductor', 'compute')
HOST_VIEW = ('scheduler.host_cache.host_table',
             'scheduler.host_cache.host_state',
             'scheduler.host_cache.host_table_per_state',
             'scheduler.host_cache.host_instances')

RULES = [
    # (files, forbidden module prefixes)
    ('conductor/**/*.py', ('scheduler.drivers',)),
    ('scheduler/filters/**/*.py', CORE),
    ('scheduler/weights/**/*.py', CORE),
    ('scheduler/objects/**/*.py', CORE + HOST_VIEW),
    ('scheduler/host_cache/host_table.py', CORE),
    ('scheduler/host_cache/host_state.py', CORE),
    ('scheduler/host_cache/host_table_per_state.py', CORE),
    ('scheduler/host_cache/host_instances.py', CORE),
    ('scheduler/placement_types.py', ('scheduler', 'conductor', 'compute')),
    ('scheduler/numa/**/*.py', CORE + HOST_VIEW),
    ('scheduler/pci/**/*.py', CORE + HOST_VIEW),
    ('scheduler/hardware.py', CORE + HOST_VIEW),
    ('scheduler/cells/**/*.py',
     tuple(prefix for prefix in CORE if prefix != 'scheduler.db')
     + HOST_VIEW),
    ('scheduler/db/**/*.py', ('scheduler.cells',)),
]


def imported_modules(path):
    """Every module ``path`` imports, as dotted names (``from a import b``
    gives both ``a`` and ``a.b``: ``b`` may be a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update('%s.%s' % (node.module, alias.name)
                         for alias in node.names)
    return names


def _matches(name, prefix):
    return name == prefix or name.startswith(prefix + '.')


def violations(pattern, forbidden):
    found = []
    files = sorted(ROOT.glob(pattern))
    assert files, 'no file matches %s' % pattern
    for path in files:
        for name in sorted(imported_modules(path)):
            if any(_matches(name, prefix) for prefix in forbidden):
                found.append('%s imports %s'
                             % (path.relative_to(ROOT), name))
    return found


@pytest.mark.parametrize('pattern,forbidden', RULES,
                         ids=[rule[0] for rule in RULES])
def test_layer_imports_nothing_forbidden(pattern, forbidden):
    assert violations(pattern, forbidden) == []


def test_the_check_sees_a_forbidden_import(tmp_path, monkeypatch):
    # The rule above must be able to fail: a lazy import inside a
    # function is found.
    package = tmp_path / 'scheduler' / 'filters'
    package.mkdir(parents=True)
    (package / 'bad.py').write_text(
        'def f():\n    from scheduler.db import claims\n    return claims\n')
    monkeypatch.setitem(globals(), 'ROOT', tmp_path)
    assert violations('scheduler/filters/**/*.py', CORE) == [
        'scheduler/filters/bad.py imports scheduler.db',
        'scheduler/filters/bad.py imports scheduler.db.claims']

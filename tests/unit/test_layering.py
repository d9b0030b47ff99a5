"""Which parts of Gantt may import which.

* The conductor claims through :mod:`scheduler.db.claims`, as the drivers
  do; it imports nothing from ``scheduler/drivers/``.
* The host cache (``scheduler/host_cache/``) has one door, its package
  (:mod:`scheduler.host_cache`): nothing outside the package imports its
  modules (the HostManager, its reads, the host table...), only the
  names the door exports. Its own tests
  (``tests/unit/scheduler/host_cache/``) may look inside.
* Within the package there is no import cycle, lazy imports included.
* Filters and weighers (plugins) see hosts through that door (the host
  view: HostTable, HostState...) and the shared
  :mod:`scheduler.placement_types`; they import nothing from the
  database layer or the scheduler core.
* Versioned objects import neither the database layer nor the scheduler
  core nor the host cache.
* The host view inside the package (the host table, its columns and
  lookups, the host states, the instances on them) does not reach into
  the database layer nor into the rest of the host cache (the manager
  and its reads), and :mod:`scheduler.placement_types` imports nothing of
  Gantt's.
* The hardware libraries (:mod:`scheduler.numa`, :mod:`scheduler.pci`,
  :mod:`scheduler.hardware`) are pure: filters and claims both use them,
  so they import neither the core nor the host cache.
* :mod:`scheduler.cells` (the mappings, discovery) sits on the database
  layer and under everything else: it imports neither the drivers, the
  host cache, the RPC layer nor the commands; the database layer does
  not import it.

Imports are read from the source (``ast``), including ones inside
functions, so that a lazy import cannot hide a dependency.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

DOOR = 'scheduler.host_cache'
# Where the host cache's modules live, and the tests that may import them.
PACKAGE_DIR = ('scheduler', 'host_cache')
INSIDE = (PACKAGE_DIR, ('tests', 'unit', 'scheduler', 'host_cache'))
# The trees whose imports of the host cache go through its door.
OUTSIDE = ('scheduler', 'conductor', 'compute', 'benchmarks', 'tests')

CORE = ('scheduler.db', 'scheduler.drivers',
        'scheduler.manager', 'scheduler.rpc', 'scheduler.rpcapi',
        'scheduler.service', 'scheduler.cmd', 'conductor', 'compute')
# The host cache's modules that are not the host view: its owner and
# its reads.
HOST_CACHE_OWNER = tuple(DOOR + '.' + name for name in (
    'host_manager', 'refreshing', 'applying', 'refresh_changes',
    'collector', 'switching', 'instance_tracking', 'host_reads', 'cell_gather',
    'cell_refresh', 'cell_reads'))
HOST_VIEW_FILES = ('host_table', 'table_columns', 'table_lookups',
                   'host_state', 'host_table_per_state', 'host_instances')

RULES = [
    # (files, forbidden module prefixes)
    ('conductor/**/*.py', ('scheduler.drivers',)),
    ('scheduler/filters/**/*.py', CORE),
    ('scheduler/weights/**/*.py', CORE),
    ('scheduler/objects/**/*.py', CORE + (DOOR,)),
] + [
    ('scheduler/host_cache/%s.py' % name, CORE + HOST_CACHE_OWNER)
    for name in HOST_VIEW_FILES
] + [
    ('scheduler/placement_types.py', ('scheduler', 'conductor', 'compute')),
    ('scheduler/numa/**/*.py', CORE + (DOOR,)),
    ('scheduler/pci/**/*.py', CORE + (DOOR,)),
    ('scheduler/hardware.py', CORE + (DOOR,)),
    ('scheduler/cells/**/*.py',
     tuple(prefix for prefix in CORE if prefix != 'scheduler.db')
     + (DOOR,)),
    ('scheduler/db/**/*.py', ('scheduler.cells', DOOR)),
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


# -- the host cache's door ---------------------------------------------------


def _package_modules(root):
    """The dotted names of the host cache's modules under ``root``."""
    package = root.joinpath(*PACKAGE_DIR)
    return {DOOR + '.' + path.stem for path in package.glob('*.py')
            if path.stem != '__init__'}


def imported_package_modules(path, modules):
    """The modules of ``modules`` (the host cache's, and its door) that
    ``path`` imports: ``from scheduler.host_cache import HostManager``
    imports the door, ``from scheduler.host_cache import host_table`` the
    module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = []
            for alias in node.names:
                name = '%s.%s' % (node.module, alias.name)
                names.append(name if name in modules or name == DOOR
                             else node.module)
        else:
            continue
        for name in names:
            while name not in modules and name != DOOR and '.' in name:
                # ``import scheduler.host_cache.host_table.x`` and the like.
                name = name.rsplit('.', 1)[0]
            if name in modules or name == DOOR:
                found.add(name)
    return found


def door_violations(root):
    """Files outside the host cache (and its tests) that import one of
    its modules instead of its door."""
    modules = _package_modules(root)
    found = []
    for top in OUTSIDE:
        for path in sorted(root.joinpath(top).glob('**/*.py')):
            relative = path.relative_to(root)
            if any(relative.parts[:len(inside)] == inside
                   for inside in INSIDE):
                continue
            for name in sorted(imported_package_modules(path, modules)):
                if name != DOOR:
                    found.append('%s imports %s' % (relative, name))
    return sorted(found)


def test_outsiders_use_the_host_cache_s_door_only():
    assert door_violations(ROOT) == []


def import_cycles(root):
    """The import cycles among the host cache's modules (its door
    included, which imports them all), each as the list of modules along
    it, the first repeated at the end."""
    modules = _package_modules(root)
    package = root.joinpath(*PACKAGE_DIR)
    edges = {}
    for name in modules | {DOOR}:
        stem = '__init__' if name == DOOR else name.rsplit('.', 1)[1]
        edges[name] = sorted(imported_package_modules(
            package / (stem + '.py'), modules) - {name})
    cycles = []
    state = {}       # name -> 'open' while on the path, 'done' after

    def visit(name, path):
        state[name] = 'open'
        path.append(name)
        for target in edges[name]:
            if state.get(target) == 'open':
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path)
        path.pop()
        state[name] = 'done'

    for name in sorted(edges):
        if name not in state:
            visit(name, [])
    return cycles


def test_the_host_cache_has_no_import_cycle():
    assert import_cycles(ROOT) == []


def _fake_tree(root, files):
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for top in OUTSIDE:
        (root / top).mkdir(exist_ok=True)


def test_the_door_check_sees_a_module_imported_past_the_door(tmp_path):
    # The door itself and a name from it pass; a module of the package,
    # however imported (lazily too), does not; the package's own tests
    # may.
    _fake_tree(tmp_path, {
        'scheduler/host_cache/__init__.py': '',
        'scheduler/host_cache/host_table.py': '',
        'scheduler/filters/good.py': (
            'from scheduler import host_cache\n'
            'from scheduler.host_cache import HostTable\n'),
        'scheduler/filters/bad.py': (
            'def f():\n'
            '    from scheduler.host_cache import host_table\n'
            '    return host_table\n'),
        'conductor/bad.py': 'import scheduler.host_cache.host_table\n',
        'tests/unit/scheduler/host_cache/test_table.py': (
            'from scheduler.host_cache import host_table\n'),
    })
    assert door_violations(tmp_path) == [
        'conductor/bad.py imports scheduler.host_cache.host_table',
        'scheduler/filters/bad.py imports scheduler.host_cache.host_table']


def test_the_cycle_check_sees_a_lazy_cycle_and_one_through_the_door(
        tmp_path):
    _fake_tree(tmp_path, {
        'scheduler/host_cache/__init__.py': (
            'from scheduler.host_cache import a\n'),
        'scheduler/host_cache/a.py': 'from scheduler.host_cache import b\n',
        'scheduler/host_cache/b.py': (
            'def f():\n'
            '    from scheduler.host_cache import a\n'
            '    return a\n'),
        'scheduler/host_cache/c.py': 'from scheduler import host_cache\n',
    })
    assert import_cycles(tmp_path) == [
        ['scheduler.host_cache.a', 'scheduler.host_cache.b',
         'scheduler.host_cache.a']]
    # c imports the door, which does not import c: no cycle yet.
    (tmp_path / 'scheduler/host_cache/__init__.py').write_text(
        'from scheduler.host_cache import c\n')
    (tmp_path / 'scheduler/host_cache/b.py').write_text('')
    assert import_cycles(tmp_path) == [
        ['scheduler.host_cache', 'scheduler.host_cache.c',
         'scheduler.host_cache']]

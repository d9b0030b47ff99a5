"""Cells benchmark: gathering host states from 1, 4 and 10 cells.

The same number of mapped compute nodes (10,000, with live services) is
split evenly over 1, 4 or 10 cell databases; every layout is mapped in
one API database, and only the cells of the layout measured are
enabled. One HostManager per layout is timed:

* **cold load**: the first snapshot (every cell read at once, one thread
  per cell), median over the rounds with a new HostManager each;
* **refresh, 100 changed**: one incremental refresh after 100 nodes
  (spread over the cells) were written, p50 over the refreshes, paced
  one ``[scheduler] host_state_refresh_interval`` apart as the
  background refresh is.

The layouts take turns round by round, so that a shared machine's other
work weighs on each alike. Each figure is given as wall time and as the
CPU time of the whole process (every reading thread; not the database
server's), which that other work disturbs less, and printed beside the
1-cell figure of the same run with the ratio. The target is that the
cost follows the hosts, not the number of cells (ratios near 1, at most
1.5)::

    python benchmarks/cells.py --db postgresql --hosts 10000 --cells 1 4 10
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import host_cache as bench_cache  # noqa: E402

from scheduler import cells  # noqa: E402
from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import mappings  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler import host_cache  # noqa: E402
from scheduler import objects  # noqa: E402

CONF = conf.CONF


def new_database(backend, workdir, name):
    if backend == 'sqlite':
        return 'sqlite:///%s/%s.sqlite' % (workdir, name)
    from tests.fixtures import databases
    return databases.create_database(backend)


def build_layout(backend, workdir, hosts, count, rng, first_cell):
    """``count`` cells holding ``hosts`` nodes between them, mapped
    (disabled) from cell number ``first_cell``; ``{cell uuid: (url,
    node ids)}``."""
    per_cell = hosts // count
    layout = {}
    for index in range(count):
        number = first_cell + index
        url = new_database(backend, workdir, 'cell%d' % number)
        with db_api.target_cell(url):
            migration.db_sync()
            bench_cache.bulk_populate(per_cell, rng, first=index * per_cell)
            with db_api.reader() as session:
                ids = [node_id for (node_id,) in session.execute(
                    sa.select(models.ComputeNode.id))]
        uuid = '%08d-0000-0000-0000-000000000001' % number
        with db_api.api_writer() as session:
            mappings.create_cell(session, uuid, 'cell%d' % number, None,
                                 url, disabled=True)
        layout[uuid] = (url, ids)
    return layout


def use(layout):
    """Enable the cells of ``layout`` only (as gantt-manage cell_v2
    update_cell would, and its cache cleared as that does)."""
    table = mappings.api_models.CellMapping.__table__
    with db_api.api_writer() as session:
        session.execute(table.update().values(
            disabled=table.c.uuid.not_in(list(layout))))
    cells.clear_cache()
    cells.get_cells()


def timed(call):
    """``(wall ms, process CPU ms)`` of ``call()``."""
    started, used = time.perf_counter(), time.process_time()
    call()
    return ((time.perf_counter() - started) * 1000,
            (time.process_time() - used) * 1000)


def measure(layouts, rounds, refreshes, changes, rng):
    """``{count: (cold ms, its CPU ms, refresh ms, its CPU ms)}``,
    medians, the layouts taking turns."""
    samples = {count: ([], [], [], []) for count in layouts}
    for _ in range(rounds):
        for count, layout in layouts.items():
            use(layout)
            manager = host_cache.HostManager(auto_refresh=False)
            wall, cpu = timed(manager.snapshot)
            assert len(manager.snapshot()) == sum(
                len(ids) for _url, ids in layout.values())
            manager.stop()
            samples[count][0].append(wall)
            samples[count][1].append(cpu)
    managers = {}
    for count, layout in layouts.items():
        use(layout)
        managers[count] = host_cache.HostManager(auto_refresh=False)
        managers[count].snapshot()
    time.sleep(host_cache.WRITE_SLACK + 0.5)
    interval = CONF.scheduler.host_state_refresh_interval
    began = time.monotonic()
    for _ in range(refreshes + 1):
        for count, layout in layouts.items():
            use(layout)
            per_cell = max(1, changes // count)
            for url, ids in layout.values():
                with db_api.target_cell(url):
                    bench_cache.write_nodes(rng.sample(ids, per_cell), rng)
            time.sleep(max(0.0, began + interval - time.monotonic()))
            began = time.monotonic()
            wall, cpu = timed(managers[count].refresh)
            samples[count][2].append(wall)
            samples[count][3].append(cpu)
    for count, manager in managers.items():
        manager.stop()
        # The first refreshes read what was written before the pause.
        del samples[count][2][0], samples[count][3][0]
    return {count: tuple(statistics.median(values) for values in figures)
            for count, figures in samples.items()}


def run(backend, hosts, cell_counts, rounds, refreshes, changes):
    rng = random.Random(7)
    workdir = tempfile.mkdtemp(prefix='gantt-bench-cells-')
    urls = []
    try:
        api_url = new_database(backend, workdir, 'api')
        urls.append(api_url)
        CONF.set_override('connection', api_url, group='api_database')
        # [database]: the aggregates (none), the same for every layout.
        main_url = new_database(backend, workdir, 'main')
        urls.append(main_url)
        CONF.set_override('connection', main_url, group='database')
        db_api.dispose_engine()
        migration.db_sync(database='api')
        migration.db_sync()
        layouts = {}
        for count in cell_counts:
            layouts[count] = build_layout(backend, workdir, hosts, count,
                                          rng, len(urls) - 1)
            urls.extend(url for url, _ids in layouts[count].values())
        results = measure(layouts, rounds, refreshes, changes, rng)
    finally:
        db_api.dispose_engine()
        if backend != 'sqlite':
            from tests.fixtures import databases
            for url in urls:
                databases.drop_database(url)
        shutil.rmtree(workdir, ignore_errors=True)
    reference = results[cell_counts[0]]
    print('%d hosts on %s, cold load: median of %d; refresh: p50 of %d, '
          '%d changed node(s) each, %.1f s apart; layouts in turn'
          % (hosts, backend, rounds, refreshes, changes,
             CONF.scheduler.host_state_refresh_interval))
    figures = ('cold load', 'same, process CPU',
               'refresh, %d changed' % changes, 'same, process CPU')
    for index, figure in enumerate(figures):
        for count in cell_counts:
            value = results[count][index]
            print('  %-24s %2d cell(s) %9.1f ms   reference (%d cell) '
                  '%9.1f ms   ratio %.2f'
                  % (figure, count, value, cell_counts[0],
                     reference[index], value / reference[index]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--cells', type=int, nargs='+', default=[1, 4, 10])
    parser.add_argument('--rounds', type=int, default=5,
                        help='cold loads per cell count')
    parser.add_argument('--refreshes', type=int, default=20,
                        help='incremental refreshes per cell count')
    parser.add_argument('--changes', type=int, default=100)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='postgresql')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    run(args.db, args.hosts, args.cells, args.rounds, args.refreshes,
        args.changes)


if __name__ == '__main__':
    main()

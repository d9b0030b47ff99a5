"""Cells benchmark: gathering host states from 1, 4 and 10 cells.

The same 10,000 mapped compute nodes (with live services) are split
evenly over 1, 4 or 10 cell databases, mapped in an API database, and
one HostManager is timed:

* **cold load**: the first snapshot (every cell read at once, one thread
  per cell), median over the rounds with a new HostManager each;
* **refresh, 100 changed**: one incremental refresh after 100 nodes
  (spread over the cells) were written, p50 over the rounds.

Each figure is printed beside the 1-cell figure with the ratio; the
target is that the cost follows the hosts, not the number of cells
(ratios near 1)::

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

import host_cache  # noqa: E402

from scheduler import cells  # noqa: E402
from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import mappings  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler.db import models  # noqa: E402
from scheduler import host_manager  # noqa: E402
from scheduler import objects  # noqa: E402

CONF = conf.CONF


def new_database(backend, workdir, name):
    if backend == 'sqlite':
        return 'sqlite:///%s/%s.sqlite' % (workdir, name)
    from tests.fixtures import databases
    return databases.create_database(backend)


def build_cells(backend, workdir, hosts, count, rng):
    """``count`` cells holding ``hosts`` nodes between them; the cell
    URLs with their node ids."""
    urls = [new_database(backend, workdir, 'cell%d' % index)
            for index in range(count)]
    per_cell = hosts // count
    node_ids = {}
    for index, url in enumerate(urls):
        with db_api.target_cell(url):
            migration.db_sync()
            host_cache.bulk_populate(per_cell, rng, first=index * per_cell)
            with db_api.reader() as session:
                node_ids[url] = [node_id for (node_id,) in session.execute(
                    sa.select(models.ComputeNode.id))]
    with db_api.api_writer() as session:
        for index, url in enumerate(urls):
            mappings.create_cell(session, '%08d-0000-0000-0000-000000000001'
                                 % (index + 1), 'cell%d' % index, None, url)
    cells.clear_cache()
    return node_ids


def measure(rounds, changes, node_ids, rng):
    cold = []
    for _ in range(rounds):
        manager = host_manager.HostManager(auto_refresh=False)
        started = time.perf_counter()
        table = manager.snapshot()
        cold.append((time.perf_counter() - started) * 1000)
    assert len(table) == sum(len(ids) for ids in node_ids.values())
    time.sleep(host_manager.WRITE_SLACK + 0.5)
    manager.refresh()
    per_cell = max(1, changes // len(node_ids))
    busy = []
    for _ in range(rounds):
        for url, ids in node_ids.items():
            with db_api.target_cell(url):
                host_cache.write_nodes(rng.sample(ids, per_cell), rng)
        started = time.perf_counter()
        manager.refresh()
        busy.append((time.perf_counter() - started) * 1000)
    return statistics.median(cold), statistics.median(busy)


def run(backend, hosts, cell_counts, rounds, changes):
    rng = random.Random(7)
    results = {}
    for count in cell_counts:
        workdir = tempfile.mkdtemp(prefix='gantt-bench-cells-')
        api_url = new_database(backend, workdir, 'api')
        CONF.set_override('connection', api_url, group='api_database')
        db_api.dispose_engine()
        node_ids = {}
        try:
            migration.db_sync(database='api')
            node_ids = build_cells(backend, workdir, hosts, count, rng)
            CONF.set_override('connection', next(iter(node_ids)),
                              group='database')
            results[count] = measure(rounds, changes, node_ids, rng)
        finally:
            db_api.dispose_engine()
            if backend != 'sqlite':
                from tests.fixtures import databases
                for url in [api_url] + list(node_ids):
                    databases.drop_database(url)
            shutil.rmtree(workdir, ignore_errors=True)
    reference = results[cell_counts[0]]
    print('%d hosts on %s, %d round(s), %d changed node(s) per refresh'
          % (hosts, backend, rounds, changes))
    for index, figure in enumerate(('cold load', 'refresh, %d changed'
                                    % changes)):
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
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--changes', type=int, default=100)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='postgresql')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    run(args.db, args.hosts, args.cells, args.rounds, args.changes)


if __name__ == '__main__':
    main()

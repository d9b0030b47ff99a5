"""The database work of one build: one cell, or through the super-conductor.

On the local PostgreSQL (or MariaDB, or SQLite files), ``--builds``
single-instance builds are recorded one after another, as the conductor
does before and after it asks the scheduler (no scheduler, no claim):

* one cell (the reference): ``BuildTask.accept`` records the instance
  in ``[database]``;
* super-conductor: ``SuperBuildTask.accept`` writes the build request
  and the instance mapping in the API database, then the instance is
  created in the cell database, mapped and its build request deleted
  (what :mod:`conductor.tasks.super_build` does once a host is chosen).

Printed: builds per second of each and their ratio (the super-conductor
does three transactions on two databases where one cell does one)::

    python benchmarks/super_build.py --db postgresql --builds 500
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from oslo_utils import uuidutils  # noqa: E402

from conductor.tasks import build  # noqa: E402
from conductor.tasks import super_build  # noqa: E402
from scheduler import cells  # noqa: E402
from scheduler import conf  # noqa: E402
from scheduler.db import api as db_api  # noqa: E402
from scheduler.db import mappings  # noqa: E402
from scheduler.db import migration  # noqa: E402
from scheduler import objects  # noqa: E402
from scheduler.objects import request_spec  # noqa: E402

CONF = conf.CONF
CELL1 = '11111111-1111-1111-1111-111111111111'


def spec():
    return request_spec.RequestSpec(
        num_instances=1, project_id='bench',
        flavor=request_spec.Flavor(vcpus=1, memory_mb=512, root_gb=1))


def per_second(builds, one_build):
    started = time.monotonic()
    for _ in range(builds):
        one_build()
    return builds / (time.monotonic() - started)


def one_cell_build():
    build.BuildTask(None, None).accept([uuidutils.generate_uuid()], spec())


def super_build_of(cell):
    task = super_build.SuperBuildTask(None, None)

    def one():
        uuid = uuidutils.generate_uuid()
        request = spec()
        task.accept([uuid], request)
        with cells.target(cell):
            assert super_build._create_in_cell(uuid, request, cell,
                                               task.leases.owner)
        task.leases.drop([uuid])
    return one


def _database(backend, name, databases):
    if backend == 'sqlite':
        path = '/tmp/gantt-bench-super-%s.sqlite' % name
        if os.path.exists(path):
            os.unlink(path)
        return 'sqlite:///' + path
    return databases.create_database(backend)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--builds', type=int, default=500)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mariadb'],
                        default='postgresql')
    args = parser.parse_args(argv)
    CONF([], project='gantt')
    objects.register_all()
    from tests.fixtures import databases
    cell_url = _database(args.db, 'cell1', databases)
    api_url = _database(args.db, 'api', databases)
    try:
        CONF.set_override('connection', cell_url, group='database')
        migration.db_sync()
        per_second(20, one_cell_build)                  # warm-up
        alone = per_second(args.builds, one_cell_build)

        CONF.set_override('connection', api_url, group='api_database')
        db_api.dispose_engine()
        migration.db_sync(database='api')
        with db_api.api_writer() as session:
            mappings.create_cell(session, CELL1, 'cell1', None, cell_url)
        cell = cells.get_cell(CELL1)
        per_second(20, super_build_of(cell))            # warm-up
        through_super = per_second(args.builds, super_build_of(cell))
        print('%d builds of one instance on %s, one after another'
              % (args.builds, args.db))
        print('  %-44s %10s' % ('', 'builds/s'))
        print('  %-44s %10.0f' % ('one cell: record (reference)', alone))
        print('  %-44s %10.0f' % ('super-conductor: accept, create, map',
                                  through_super))
        print('  ratio %.2f' % (through_super / alone))
    finally:
        db_api.dispose_engine()
        for url in (cell_url, api_url):
            if args.db == 'sqlite':
                os.unlink(url[len('sqlite:///'):])
            else:
                databases.drop_database(url)


if __name__ == '__main__':
    main()
